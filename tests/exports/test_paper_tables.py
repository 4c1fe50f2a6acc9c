"""The paper's tables of a study, checked against gold labels known in advance
(tests/exports/paper_study.py): counts and percentages per system, leaf and parent level,
multi-label dimensions, cross-tab sums, filters, and a codebook other than the starter one."""

import pytest

from common.exceptions import ApplicationError
from common.tables import CountShare, table_csv, table_latex, table_markdown
from exports.tables import (
    NONE_APPLIES,
    PAPER_BOOTSTRAP,
    PAPER_SEED,
    SYSTEM,
    TIMES,
    TOTAL,
    ReportFilters,
    agreement_by_round_table,
    crosstab_table,
    distribution_table,
    funnel_table,
    paper_table_specs,
    paper_tables,
    report_filters_parse,
)
from labeling.agreement_report import LabelTableFilter, study_agreement_report
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.services import codebook_load
from tests.exports.paper_study import DEEPSPEED, MEGATRON, paper_study, submit


@pytest.fixture
def study(codebook_version, sample_issues, people):
    return paper_study(
        codebook_version=codebook_version, sample_issues=sample_issues, people=people
    )[0]


def by_category(table) -> dict[str, dict]:
    return {row["category"]: row for row in table.rows}


def share(count, whole):
    return CountShare(count, 100 * count / whole)


def test_distribution_counts_and_percentages_per_system_at_leaf_level(study):
    table = distribution_table(study=study, dimension_key="root_cause")
    rows = by_category(table)
    assert [column.title for column in table.columns] == [
        "Root cause", MEGATRON, DEEPSPEED, "All systems",
    ]  # fmt: skip
    # DeepSpeed: D1, D2, D3 have a gold root cause (D4 was screened out); Megatron: M1, M2.
    assert rows["External Library API Misuse"] == {
        "category": "External Library API Misuse",
        DEEPSPEED: share(1, 3),
        MEGATRON: share(1, 2),
        TOTAL: share(2, 5),
    }
    assert rows["Wrong Default Value"][MEGATRON] == share(1, 2)  # the adjudicator's choice
    assert rows["Config Parsing / Propagation Error"][MEGATRON] == CountShare(0, 0.0)
    assert rows["Race Condition"][DEEPSPEED] == share(1, 3)
    # Every category of the codebook is a row, in codebook order, parents included.
    assert list(rows)[:3] == ["API Misuse", "External Library API Misuse", "Internal API Misuse"]
    assert rows["API Misuse"][TOTAL] == CountShare(0, 0.0)
    assert table.footer == [
        {
            "category": "Items with a gold label",
            DEEPSPEED: CountShare(3, None),
            MEGATRON: CountShare(2, None),
            TOTAL: CountShare(5, None),
        }
    ]
    # Single-label: each system's column sums to its items.
    for system in (DEEPSPEED, MEGATRON, TOTAL):
        assert sum(row[system].count for row in table.rows) == table.footer[0][system].count
    assert "multi-label" not in table.caption


def test_distribution_rolls_categories_up_to_their_parent(study):
    table = distribution_table(
        study=study, dimension_key="root_cause", filters=ReportFilters(level=0)
    )
    rows = by_category(table)
    assert "External Library API Misuse" not in rows
    assert rows["API Misuse"] == {
        "category": "API Misuse",
        DEEPSPEED: share(2, 3),
        MEGATRON: share(1, 2),
        TOTAL: share(3, 5),
    }
    assert rows["Configuration Error"][MEGATRON] == share(1, 2)
    assert rows["Concurrency Error"][DEEPSPEED] == share(1, 3)
    assert "rolled up to their top-level category" in table.caption


def test_a_multi_label_dimension_counts_items_and_says_percentages_may_exceed_100(study):
    table = distribution_table(study=study, dimension_key="parallel_feature")
    rows = by_category(table)
    assert rows["Data Parallelism"][DEEPSPEED] == share(2, 3)
    assert rows["Tensor Parallelism"][TOTAL] == share(2, 5)
    assert rows["Pipeline Parallelism"][MEGATRON] == share(2, 2)
    # D3's gold label is empty: "none applies" is a row of its own.
    assert rows[NONE_APPLIES][DEEPSPEED] == share(1, 3)
    assert rows[NONE_APPLIES][MEGATRON] == CountShare(0, 0.0)
    megatron_total = sum(row[MEGATRON].percent for row in table.rows)
    assert megatron_total == pytest.approx(150.0)
    assert "multi-label" in table.caption and "more than 100%" in table.caption
    assert "more than 100\\%" in table_latex(table)


def test_screening_counts_every_item_with_a_gold_screening(study):
    rows = by_category(distribution_table(study=study, dimension_key="screening"))
    assert rows["Include"][DEEPSPEED] == share(3, 4)
    assert rows["Not a Bug (False Positive)"][DEEPSPEED] == share(1, 4)
    assert rows["Include"][TOTAL] == share(5, 6)
    assert NONE_APPLIES not in rows


def test_crosstab_of_two_dimensions_sums_to_its_totals(study):
    table = crosstab_table(study=study, row_dimension="symptom", column_dimension="root_cause")
    titles = [column.title for column in table.columns]
    # Only the categories some item has, in codebook order.
    assert titles == [
        "Symptom", "External Library API Misuse", "Internal API Misuse", "Wrong Default Value",
        "Race Condition", "Total",
    ]  # fmt: skip
    key = {column.title: column.key for column in table.columns}
    rows = by_category(table)
    assert list(rows) == ["Runtime Exception", "Native / Device Crash", "Hang", "Out of Memory"]
    exception = rows["Runtime Exception"]  # D1 external API misuse, M2 wrong default
    assert exception[key["External Library API Misuse"]] == 1
    assert exception[key["Wrong Default Value"]] == 1
    assert exception[TOTAL] == 2
    count_keys = [column.key for column in table.columns[1:-1]]
    for row in table.rows:
        assert sum(row[k] for k in count_keys) == row[TOTAL]
    footer = table.footer[0]
    for k in count_keys:
        assert footer[k] == sum(row[k] for row in table.rows)
    assert footer[TOTAL] == 5 == sum(row[TOTAL] for row in table.rows)


def test_crosstab_by_system_and_at_parent_level(study):
    table = crosstab_table(
        study=study,
        row_dimension="root_cause",
        column_dimension=SYSTEM,
        filters=ReportFilters(level=0),
    )
    key = {column.title: column.key for column in table.columns}
    rows = by_category(table)
    assert rows["API Misuse"][key[DEEPSPEED]] == 2
    assert rows["API Misuse"][key[MEGATRON]] == 1
    assert rows["Configuration Error"][TOTAL] == 1
    assert table.footer[0][key[DEEPSPEED]] == 3
    assert table.title == f"Root cause {TIMES} System"


def test_crosstab_with_a_multi_label_dimension_counts_an_item_once_per_category(study):
    table = crosstab_table(
        study=study, row_dimension="parallel_feature", column_dimension="training_stage"
    )
    key = {column.title: column.key for column in table.columns}
    rows = by_category(table)
    # D1 (data + tensor) and M2 (pipeline) are at model initialisation.
    assert rows["Data Parallelism"][key["Model Initialization / Loading"]] == 1
    assert rows["Pipeline Parallelism"][key["Model Initialization / Loading"]] == 1
    assert table.footer[0][key["Model Initialization / Loading"]] == 2  # items, not labels
    assert table.footer[0][TOTAL] == 5
    assert sum(row[TOTAL] for row in table.rows) == 7  # D1 and M1 count twice
    assert "multi-label" in table.caption


def test_filters_restrict_items_to_a_round_and_a_repository(study):
    pilot = distribution_table(
        study=study, dimension_key="root_cause", filters=ReportFilters(round_name="Pilot")
    )
    assert pilot.footer[0][TOTAL] == CountShare(2, None)  # D1 and M1
    assert by_category(pilot)["External Library API Misuse"][TOTAL] == share(2, 2)
    assert "Round Pilot" in pilot.caption

    megatron = distribution_table(
        study=study, dimension_key="symptom", filters=ReportFilters(repository=MEGATRON)
    )
    assert [column.title for column in megatron.columns] == ["Symptom", MEGATRON, "All systems"]
    assert megatron.footer[0][TOTAL] == CountShare(2, None)

    funnel = funnel_table(study=study, filters=ReportFilters(repository=DEEPSPEED))
    assert funnel.rows == [
        {
            "system": DEEPSPEED,
            "candidates": None,
            "sampled": 4,
            "screened_in": 3,
            "labeled": 4,
            "resolved": 4,
        }
    ]
    assert funnel.footer == []
    both = funnel_table(study=study)
    assert both.footer[0]["system"] == "All systems"
    assert both.footer[0]["sampled"] == 6 and both.footer[0]["screened_in"] == 5


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"round_name": "Nope"}, "round"),
        ({"repository": "someone/else"}, "repository"),
        ({"level": "middle"}, "level"),
    ],
)
def test_an_unknown_filter_value_is_an_error_naming_it(study, arguments, parameter):
    with pytest.raises(ApplicationError) as raised:
        report_filters_parse(study=study, **arguments)
    assert list(raised.value.extra) == [parameter]


def test_an_unknown_dimension_is_an_error_naming_it(study):
    with pytest.raises(ApplicationError) as raised:
        distribution_table(study=study, dimension_key="nope")
    assert list(raised.value.extra) == ["dimension"]
    with pytest.raises(ApplicationError) as raised:
        crosstab_table(study=study, row_dimension="symptom", column_dimension="nope")
    assert list(raised.value.extra) == ["dimension"]


def test_report_filters_parse_keeps_known_values(study):
    filters = report_filters_parse(
        study=study, round_name="Main", repository=MEGATRON, level="parent"
    )
    assert filters == ReportFilters(round_name="Main", repository=MEGATRON, level=0)
    assert filters.query() == {"round": "Main", "repository": MEGATRON, "level": "parent"}
    assert report_filters_parse(study=study, level="") == ReportFilters()


def test_agreement_by_round_reads_the_agreement_report_of_each_round(study):
    table = agreement_by_round_table(study=study)
    rows = {(row["dimension"], row["round"]): row for row in table.rows}
    assert {r for _, r in rows} == {"Pilot", "Main", "All rounds"}
    for round_name in ("Pilot", "Main", None):
        report = study_agreement_report(
            study=study,
            filters=LabelTableFilter(round_name=round_name),
            bootstrap=PAPER_BOOTSTRAP,
            seed=PAPER_SEED,
        )["dimensions"]["root_cause"]
        row = rows[("Root cause", round_name or "All rounds")]
        assert row["n_items"] == report["n_items"]
        assert row["percent_agreement"] == pytest.approx(100 * report["percent_agreement"])
        # The headline with its interval, and which statistic it is.
        assert row["headline_kappa"] == report["headline"]["value"]
        interval = report["headline"]["ci95"] or [None, None]
        assert [row["headline_ci95_low"], row["headline_ci95_high"]] == interval
        assert row["cohen_kappa"] == report["cohen_kappa"]["mean"]
        assert row["krippendorff_alpha"] == report["krippendorff_alpha"]
        alpha_interval = report["krippendorff_alpha_ci95"] or [None, None]
        assert [row["alpha_ci95_low"], row["alpha_ci95_high"]] == alpha_interval
    # Main: D2 and D3 agree, M2 does not (D4 was screened out by both: no root cause).
    assert rows[("Root cause", "Main")]["n_items"] == 3
    assert rows[("Root cause", "Main")]["percent_agreement"] == pytest.approx(200 / 3)
    assert rows[("Root cause", "Pilot")]["percent_agreement"] == pytest.approx(100.0)
    stated = study_agreement_report(study=study)["filters"].get("min_pair_items")
    if stated:
        assert f"sharing at least {stated} items" in table.caption
    only_pilot = agreement_by_round_table(study=study, filters=ReportFilters(round_name="Pilot"))
    assert {row["round"] for row in only_pilot.rows} == {"Pilot"}


def test_the_default_set_follows_the_codebook_and_renders_in_every_format(study):
    specs = paper_table_specs(study=study)
    keys = [spec.key for spec in specs]
    assert keys[:9] == [
        f"distribution-{key}"
        for key in (
            "screening", "symptom", "root_cause", "fix_pattern", "debugging_practice",
            "testing_practice", "test_escape_reason", "training_stage", "parallel_feature",
        )
    ]  # fmt: skip
    assert keys[9:] == [
        "crosstab-symptom-root_cause",
        "crosstab-root_cause-fix_pattern",
        "crosstab-symptom-system",
        "crosstab-symptom-training_stage",
        "crosstab-root_cause-system",
        "crosstab-root_cause-training_stage",
        "crosstab-fix_pattern-system",
        "crosstab-fix_pattern-training_stage",
        "agreement-by-round",
        "funnel",
    ]
    tables = paper_tables(study=study, filters=ReportFilters(level=0))
    assert [table.key for table in tables] == keys
    for table in tables:
        assert table_csv(table) and table_markdown(table)
        assert "\\begin{tabular}" in table_latex(table)


def test_each_table_costs_a_fixed_number_of_queries(study, django_assert_max_num_queries):
    study_dimensions_warm = paper_table_specs(study=study)  # the codebook cache, once
    assert study_dimensions_warm
    with django_assert_max_num_queries(5):
        distribution_table(study=study, dimension_key="parallel_feature")
    with django_assert_max_num_queries(8):
        crosstab_table(study=study, row_dimension="symptom", column_dimension="root_cause")
    with django_assert_max_num_queries(8):
        crosstab_table(study=study, row_dimension="symptom", column_dimension=SYSTEM)


OTHER_CODEBOOK = {
    "name": "flaky-tests",
    "version": "1",
    "dimensions": [
        {
            "key": "cause",
            "name": "Cause",
            "categories": [
                {
                    "key": "timing",
                    "name": "Timing",
                    "children": [{"key": "sleep", "name": "Sleep"}],
                },
                {"key": "order", "name": "Test order"},
            ],
        },
        {
            "key": "tags",
            "name": "Tags",
            "multi_label": True,
            "required": False,
            "categories": [{"key": "ci", "name": "CI"}, {"key": "gpu", "name": "GPU"}],
        },
    ],
}


def test_a_codebook_without_the_starter_dimensions_gets_its_distributions(sample_issues, people):
    import json

    version, _ = codebook_load(
        data=codebook_file_read(json.dumps(OTHER_CODEBOOK).encode()), publish=True
    )
    other = study_create(
        slug="flaky",
        name="Flaky",
        codebook_version=version,
        k=1,
        annotators=[people["annotator1"]],
        managers=[people["manager"]],
        issues=sample_issues[:2],
    )
    first, second = other.items.order_by("id")
    submit(first, people["annotator1"], {"cause": ["sleep"], "tags": ["ci", "gpu"]})
    submit(second, people["annotator1"], {"cause": ["order"], "tags": []})
    keys = [spec.key for spec in paper_table_specs(study=other)]
    assert keys == ["distribution-cause", "distribution-tags", "agreement-by-round", "funnel"]
    tables = paper_tables(study=other, filters=ReportFilters(level=0))
    cause = by_category(tables[0])
    system = sample_issues[0].repository.full_name
    assert cause["Timing"][system] == share(1, 2)
    assert cause["Test order"][TOTAL] == share(1, 2)
    crosstab = crosstab_table(study=other, row_dimension="cause", column_dimension="tags")
    assert [column.title for column in crosstab.columns] == [
        "Cause", "CI", "GPU", NONE_APPLIES, "Total",
    ]  # fmt: skip
    assert crosstab.footer[0][TOTAL] == 2
    funnel = tables[-1]
    assert funnel.footer[0]["screened_in"] is None  # no screening dimension
