"""Agreement from the database: the CSV import, the label table, the report in its three
interfaces (command, API, page), calibration rounds."""

import itertools
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils.text import slugify
from rest_framework.test import APIClient

from labeling.agreement import dimension_agreement
from labeling.agreement_report import LabelTableFilter, study_agreement_report, study_label_table
from labeling.models import Annotation, Assignment, Round, StudyItem
from labeling.services.studies import study_create
from taxonomy.services import codebook_load

# Cohen's kappa worked example (Wikipedia, "Cohen's kappa"): 50 proposals read by two people,
# A and B said yes to 20 together, no to 15 together; A yes / B no 5, A no / B yes 10: 0.4.
YES_YES, NO_NO, YES_NO, NO_YES = 20, 15, 5, 10

GRANT_CODEBOOK = {
    "name": "grants",
    "version": "1",
    "dimensions": [
        {
            "key": "decision",
            "name": "Decision",
            "categories": [{"key": "yes", "name": "Yes"}, {"key": "no", "name": "No"}],
        },
        {
            "key": "reason",
            "name": "Reason",
            "applies_when": {"decision": ["no"]},
            "categories": [
                {
                    "key": "budget",
                    "name": "Budget",
                    "children": [{"key": "too_high", "name": "Too high"}],
                },
                {"key": "scope", "name": "Scope"},
            ],
        },
        {
            "key": "topics",
            "name": "Topics",
            "multi_label": True,
            "categories": [{"key": "ml", "name": "ML"}, {"key": "se", "name": "SE"}],
        },
    ],
}


@pytest.fixture
def grant_study(db, sample_issues, people):
    version, _ = codebook_load(data=GRANT_CODEBOOK, publish=True)
    return study_create(
        slug="grants",
        name="Grants",
        codebook_version=version,
        k=2,
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
    )


def write_csv(path, rows) -> str:
    path.write_text(
        "issue,annotator,dimension,labels\n" + "".join(",".join(row) + "\n" for row in rows)
    )
    return str(path)


def cohen_rows(issues) -> list[tuple[str, str, str, str]]:
    pairs = (
        [("yes", "yes")] * YES_YES
        + [("no", "no")] * NO_NO
        + [("yes", "no")] * YES_NO
        + [("no", "yes")] * NO_YES
    )
    rows = []
    for issue, (a, b) in zip(issues, pairs, strict=False):
        reference = f"{issue.repository.full_name}#{issue.number}"
        rows += [(reference, "reader_a", "decision", a), (reference, "reader_b", "decision", b)]
    return rows


@pytest.fixture
def fifty_issues(db, tmp_path):
    """50 issues: the 45 sample issues and 5 more made from them."""
    from corpus.issue_import import issue_file_lines
    from corpus.models import Issue
    from corpus.services import issues_import
    from tests.conftest import SAMPLE_ISSUES_FILE

    records = [json.loads(line) for line in SAMPLE_ISSUES_FILE.read_text().splitlines()]
    extra = []
    for offset, record in enumerate(records[:5], start=1):
        copy = dict(record, number=900_000 + offset, comments_data=[])
        extra.append(json.dumps(copy))
    path = tmp_path / "extra.jsonl"
    path.write_text("\n".join(extra))
    with path.open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    return list(Issue.objects.select_related("repository").order_by("id"))[:50]


def test_textbook_cohen_kappa_through_import_and_agreement_json(
    grant_study, fifty_issues, tmp_path, capsys
):
    path = write_csv(tmp_path / "grants.csv", cohen_rows(fifty_issues))
    call_command("import_annotations", "--study", "grants", path, "--create-users")
    capsys.readouterr()
    call_command("agreement", "--study", "grants", "--dimension", "decision", "--json")
    report = json.loads(capsys.readouterr().out)
    decision = report["dimensions"]["decision"]
    assert decision["n_items"] == 50 and decision["n_annotators"] == 2
    assert decision["cohen_kappa"]["mean"] == pytest.approx(0.4)
    assert decision["percent_agreement"] == pytest.approx(0.7)
    assert decision["cohen_kappa"]["pairs"][0]["n"] == 50


def test_created_annotators_are_inactive_and_items_added_unassigned_to_others(
    grant_study, fifty_issues, tmp_path, people
):
    path = write_csv(tmp_path / "grants.csv", cohen_rows(fifty_issues)[:4])
    call_command("import_annotations", "--study", "grants", path, "--create-users")
    from django.contrib.auth import get_user_model

    reader = get_user_model().objects.get(username="reader_a")
    assert not reader.is_active and not reader.has_usable_password()
    assert StudyItem.objects.filter(study=grant_study).count() == 2
    assert set(
        Assignment.objects.filter(item__study=grant_study).values_list(
            "annotator__username", flat=True
        )
    ) == {"reader_a", "reader_b"}
    assert all(a.status == "submitted" for a in Assignment.objects.filter(item__study=grant_study))


def test_any_bad_line_imports_nothing_and_lists_line_numbers(grant_study, fifty_issues, tmp_path):
    good = cohen_rows(fifty_issues)[:2]
    reference = good[0][0]
    rows = [
        *good,
        ("nobody/nothing#1", "reader_a", "decision", "yes"),  # line 4: unknown issue
        (reference, "stranger", "decision", "yes"),  # line 5: unknown annotator
        (reference, "reader_a", "mood", "yes"),  # line 6: unknown dimension
        (reference, "reader_a", "topics", "ml;quantum"),  # line 7: unknown category
        (reference, "reader_a", "decision", "yes;no"),  # line 8: single-label
        (reference, "reader_a", "decision", "no"),  # line 9: same as line 2
        ("not a reference", "reader_a", "decision", "no"),  # line 10: malformed
    ]
    path = write_csv(tmp_path / "bad.csv", rows)
    from django.contrib.auth import get_user_model

    for name in ("reader_a", "reader_b"):
        get_user_model().objects.create_user(name)
    with pytest.raises(CommandError) as error:
        call_command("import_annotations", "--study", "grants", path)
    message = str(error.value)
    assert "bad.csv:10: issue must be owner/name#number" in message
    assert not Annotation.objects.exists()

    rows.pop()  # without the malformed line, the checks against the database run
    path = write_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(CommandError) as error:
        call_command("import_annotations", "--study", "grants", path)
    message = str(error.value)
    for expected in (
        ":4: unknown issue nobody/nothing#1",
        ":5: unknown annotator 'stranger'",
        ":6: unknown dimension 'mood'",
        ":7: unknown category quantum of topics",
        ":8: decision takes one category",
        ":9: same issue, annotator and dimension as line 2",
    ):
        assert expected in message
    assert not Annotation.objects.exists()
    assert not StudyItem.objects.filter(study=grant_study).exists()


def test_missing_columns_is_an_error(grant_study, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("issue,who,labels\nx/y#1,a,b\n")
    with pytest.raises(CommandError, match="missing columns: annotator, dimension"):
        call_command("import_annotations", "--study", "grants", str(path))


def imported(study, rows, tmp_path) -> None:
    call_command(
        "import_annotations",
        "--study",
        study.slug,
        write_csv(tmp_path / "rows.csv", rows),
        "--create-users",
    )


def test_report_matches_the_pure_module_on_the_same_table(grant_study, fifty_issues, tmp_path):
    rows = cohen_rows(fifty_issues)
    for reference, annotator, _, decision in rows[:20]:
        rows.append((reference, annotator, "topics", "ml;se" if decision == "yes" else "ml"))
    imported(grant_study, rows, tmp_path)
    table = study_label_table(study=grant_study)["topics"]
    expected = dimension_agreement(
        table.item_ids,
        table.annotators,
        table.label_sets,
        categories=["ml", "se"],
        multi_label=True,
    )
    report = study_agreement_report(study=grant_study)["dimensions"]["topics"]
    assert {k: report[k] for k in expected} == expected
    assert report["n_items"] == 10


def test_condition_keeps_only_ratings_where_the_dimension_applies(
    grant_study, fifty_issues, tmp_path
):
    a, b = (f"{i.repository.full_name}#{i.number}" for i in fifty_issues[:2])
    imported(
        grant_study,
        [
            (a, "reader_a", "decision", "no"),
            (a, "reader_a", "reason", "scope"),
            (a, "reader_b", "decision", "yes"),
            (a, "reader_b", "reason", "budget"),
            (b, "reader_a", "decision", "no"),
            (b, "reader_a", "reason", "too_high"),
            (b, "reader_b", "decision", "no"),
            (b, "reader_b", "reason", "budget"),
        ],
        tmp_path,
    )
    table = study_label_table(study=grant_study)["reason"]
    # reader_b said "yes" on a, so reason does not apply to that rating.
    assert sorted(zip(table.annotators, map(sorted, table.label_sets), strict=True)) == [
        ("reader_a", ["scope"]),
        ("reader_a", ["too_high"]),
        ("reader_b", ["budget"]),
    ]
    leaves = study_agreement_report(study=grant_study)["dimensions"]["reason"]
    rolled = study_agreement_report(study=grant_study, level=0)["dimensions"]["reason"]
    assert leaves["percent_agreement"] == 0.0
    assert rolled["percent_agreement"] == 1.0  # too_high rolls up to budget
    assert set(rolled["per_category"]) == {"budget", "scope"}


def test_label_table_takes_a_few_queries(
    grant_study, fifty_issues, tmp_path, django_assert_max_num_queries
):
    imported(grant_study, cohen_rows(fifty_issues), tmp_path)
    with django_assert_max_num_queries(4):
        study_label_table(study=grant_study)


def test_round_filter_and_calibration_target(grant_study, fifty_issues, tmp_path):
    from labeling.agreement_report import study_round_statuses

    imported(grant_study, cohen_rows(fifty_issues), tmp_path)
    main = grant_study.rounds.get()
    pilot = Round.objects.create(
        study=grant_study, name="Pilot", position=1, kind="pilot", target_kappa=0.99
    )
    pilot_items = StudyItem.objects.filter(study=grant_study).order_by("id")[:30]
    StudyItem.objects.filter(id__in=[i.id for i in pilot_items]).update(round=pilot)
    by_round = study_agreement_report(
        study=grant_study, filters=LabelTableFilter(round_name="Pilot")
    )
    decision = by_round["dimensions"]["decision"]
    assert decision["n_items"] == 30
    statuses = {s.round.name: s for s in study_round_statuses(study=grant_study)}
    assert statuses[main.name].passed is None  # no target
    assert statuses[main.name].verdict == "no target"
    pilot_status = statuses["Pilot"]
    assert pilot_status.kappa_by_dimension["decision"] == decision["cohen_kappa"]["mean"] < 0.99
    assert pilot_status.passed is False
    assert pilot_status.failing == ["Decision"]
    # Dimensions with no ratings in the round are not judged, with the reason, never failed.
    assert pilot_status.undetermined == {
        "Reason": "no item with two or more ratings",
        "Topics": "no item with two or more ratings",
    }
    assert pilot_status.wording == (
        "target κ 0.99 not passed on: Decision; not judged: Reason (no item with two or more "
        "ratings), Topics (no item with two or more ratings)"
    )
    Round.objects.filter(pk=pilot.pk).update(target_kappa=-1.0)
    pilot_status = {s.round.name: s for s in study_round_statuses(study=grant_study)}["Pilot"]
    assert pilot_status.failing == []
    assert pilot_status.passed is None and pilot_status.verdict == "not judged"
    grant_study.required_dimensions = ["decision"]
    grant_study.save(update_fields=["required_dimensions"])
    pilot_status = {s.round.name: s for s in study_round_statuses(study=grant_study)}["Pilot"]
    assert pilot_status.passed is True and pilot_status.verdict == "passed"
    assert pilot_status.wording == "target κ -1.00 passed on every required dimension"


@pytest.fixture
def filled_grant_study(grant_study, fifty_issues, tmp_path):
    imported(grant_study, cohen_rows(fifty_issues), tmp_path)
    return grant_study


@pytest.mark.parametrize(
    ("who", "status"),
    [("manager", 200), ("adjudicator", 200), ("annotator1", 404), ("outsider", 404)],
)
def test_api_agreement_permissions(filled_grant_study, people, who, status):
    client = APIClient()
    client.force_authenticate(people[who])
    response = client.get("/api/studies/grants/agreement/")
    assert response.status_code == status
    if status == 200:
        assert response.json()["dimensions"]["decision"]["cohen_kappa"]["mean"] == pytest.approx(
            0.4
        )
    else:
        assert response.json()["error"]["code"] == "not_found"


def test_api_annotator_member_is_forbidden(filled_grant_study, people):
    from labeling.services.studies import study_member_add

    study_member_add(study=filled_grant_study, user=people["annotator1"], role="annotator")
    client = APIClient()
    client.force_authenticate(people["annotator1"])
    response = client.get("/api/studies/grants/agreement/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_api_agreement_with_intervals_and_bad_parameters(filled_grant_study, people):
    client = APIClient()
    client.force_authenticate(people["manager"])
    response = client.get("/api/studies/grants/agreement/?dimension=decision&bootstrap=200&seed=3")
    kappa = response.json()["dimensions"]["decision"]["cohen_kappa"]
    low, high = kappa["ci95"]
    assert low <= kappa["mean"] <= high
    assert list(response.json()["dimensions"]) == ["decision"]
    again = client.get("/api/studies/grants/agreement/?dimension=decision&bootstrap=200&seed=3")
    assert again.json() == response.json()
    bad = client.get("/api/studies/grants/agreement/?bootstrap=-5&weights=cubic")
    assert bad.status_code == 400
    assert set(bad.json()["error"]["details"]) == {"bootstrap", "weights"}


def test_agreement_page_and_downloads(filled_grant_study, people, client):
    client.force_login(people["manager"])
    page = client.get("/studies/grants/agreement/?dimension=decision")
    assert page.status_code == 200
    html = page.content.decode()
    assert "0.400" in html and "fair" in html
    assert "<svg" in html and "Confusion matrix of reader_a and reader_b" in html
    csv_download = client.get("/studies/grants/agreement/?download=csv")
    assert csv_download["Content-Disposition"].endswith('grants-agreement.csv"')
    csv_lines = csv_download.content.decode().splitlines()
    assert csv_lines[0].startswith("# Inter-annotator agreement per dimension. Study grants;")
    # The headline is the one pair's κ, 0.4, with its Wald interval 0.4 +- 1.96 * 0.127 (the
    # standard error statsmodels gives for Wikipedia's grant example).
    assert (
        "Decision,50,2,1,1,70.0,0.4,0.151092,0.648908,one pair,0.4,0.4,0.393939,0.393939,0.4,fair"
        in csv_lines
    )
    assert (
        "| Decision | 50 | 2 | 1 | 1 | 70.0% | 0.400 | 0.151 | 0.649 | one pair | 0.400 | 0.400 "
        "| 0.394 | 0.394 | 0.400 | fair |"
        in client.get("/studies/grants/agreement/?download=md").content.decode()
    )
    latex = client.get("/studies/grants/agreement/?download=tex").content.decode()
    assert "\\toprule" in latex and "Decision & 50 & 2 & 1 & 1 & 70.0\\% & 0.400" in latex


def test_agreement_page_is_for_managers_and_adjudicators(filled_grant_study, people, client):
    from labeling.services.studies import study_member_add

    study_member_add(study=filled_grant_study, user=people["annotator1"], role="annotator")
    client.force_login(people["annotator1"])
    assert client.get("/studies/grants/agreement/").status_code == 403
    client.force_login(people["outsider"])
    assert client.get("/studies/grants/agreement/").status_code == 404


def test_study_page_tells_whether_the_round_passed(filled_grant_study, people, client):
    Round.objects.filter(study=filled_grant_study).update(target_kappa=0.8)
    client.force_login(people["manager"])
    html = client.get("/studies/grants/").content.decode()
    # Decision's kappa of 0.4 fails the target; Reason and Topics, without ratings, are not
    # judged: an undefined kappa never fails a round.
    assert (
        "target κ 0.80 not passed on: Decision; not judged: Reason (no item with two or more "
        "ratings), Topics (no item with two or more ratings)"
    ) in html
    assert "/studies/grants/agreement/" in html


def test_date_filter_in_command_and_api(filled_grant_study, people, capsys):
    from django.utils import timezone

    Assignment.objects.filter(item__study=filled_grant_study).update(
        submitted_at=timezone.now() - timezone.timedelta(days=10)
    )
    call_command("agreement", "--study", "grants", "--since", "2000-01-01", "--json")
    assert json.loads(capsys.readouterr().out)["dimensions"]["decision"]["n_items"] == 50
    recent = (timezone.now() - timezone.timedelta(days=1)).date().isoformat()
    call_command("agreement", "--study", "grants", "--since", recent, "--json")
    assert json.loads(capsys.readouterr().out)["dimensions"]["decision"]["n_items"] == 0
    client = APIClient()
    client.force_authenticate(people["manager"])
    response = client.get(f"/api/studies/grants/agreement/?submitted_after={recent}T00:00:00Z")
    assert response.json()["dimensions"]["decision"]["n_items"] == 0
    with pytest.raises(CommandError):
        call_command("agreement", "--study", "grants", "--since", "yesterday")


def test_agreement_link_only_for_those_who_may_see_it(filled_grant_study, people, client):
    from labeling.services.studies import study_member_add

    study_member_add(study=filled_grant_study, user=people["annotator1"], role="annotator")
    client.force_login(people["annotator1"])
    assert "/studies/grants/agreement/" not in client.get("/studies/grants/queue/").content.decode()
    client.force_login(people["manager"])
    assert "/studies/grants/agreement/" in client.get("/studies/grants/").content.decode()


# ------------------------------------------------------------------------------------------
# Which pairs count, in every interface (issue 13): the report, the API, the command, the page
# ------------------------------------------------------------------------------------------

# reader_a and reader_b share 40 items with a kappa of 23/48 = 0.479; reader_c labels one more
# item with reader_a and disagrees. Counting that one-item pair took the mean to 0.240.
ISSUE_CELLS = [("yes", "yes", 11), ("yes", "no", 5), ("no", "yes", 5), ("no", "no", 19)]
ISSUE_KAPPA = 23 / 48


def issue_rows(issues) -> list[tuple[str, str, str, str]]:
    pairs = [(a, b) for a, b, count in ISSUE_CELLS for _ in range(count)]
    references = [f"{issue.repository.full_name}#{issue.number}" for issue in issues]
    rows = []
    for reference, (a, b) in zip(references, pairs, strict=False):
        rows += [(reference, "reader_a", "decision", a), (reference, "reader_b", "decision", b)]
    one_item = references[len(pairs)]
    rows += [(one_item, "reader_a", "decision", "yes"), (one_item, "reader_c", "decision", "no")]
    return rows


@pytest.fixture
def issue_study(grant_study, fifty_issues, tmp_path):
    imported(grant_study, issue_rows(fifty_issues), tmp_path)
    return grant_study


def manager_api(people) -> APIClient:
    client = APIClient()
    client.force_authenticate(people["manager"])
    return client


def test_the_issue_a_one_item_pair_no_longer_moves_the_mean(issue_study, people, capsys):
    decision = study_agreement_report(study=issue_study)["dimensions"]["decision"]
    kappa = decision["cohen_kappa"]
    assert kappa["mean"] == pytest.approx(ISSUE_KAPPA) and round(kappa["mean"], 3) == 0.479
    assert kappa["weighted_mean"] == pytest.approx(ISSUE_KAPPA)
    assert (kappa["n_pairs"], kappa["n_pairs_counted"], kappa["min_pair_items"]) == (3, 1, 10)
    pairs = {(p["a"], p["b"]): p for p in kappa["pairs"]}
    assert pairs["reader_a", "reader_c"]["n"] == 1
    assert pairs["reader_a", "reader_c"]["kappa"] == 0.0
    assert pairs["reader_a", "reader_c"]["counted"] is False
    assert pairs["reader_a", "reader_b"]["counted"] is True
    assert (
        "1 of 3 pairs share fewer than 10 items and are left out of the mean kappa."
        in (decision["warnings"])
    )

    # The API says the same, and counting every pair brings back the issue's 0.240.
    api = manager_api(people)
    body = api.get("/api/studies/grants/agreement/?dimension=decision").json()
    assert body["dimensions"]["decision"]["cohen_kappa"] == kappa
    assert body["filters"]["min_pair_items"] == 10
    every_pair = api.get("/api/studies/grants/agreement/?dimension=decision&min_pair_items=1")
    kappa_of_all = every_pair.json()["dimensions"]["decision"]["cohen_kappa"]
    assert round(kappa_of_all["mean"], 3) == 0.240
    assert kappa_of_all["weighted_mean"] == pytest.approx(40 * ISSUE_KAPPA / 41)

    call_command("agreement", "--study", "grants", "--dimension", "decision", "--json")
    assert json.loads(capsys.readouterr().out)["dimensions"]["decision"]["cohen_kappa"] == kappa
    call_command(
        "agreement",
        "--study",
        "grants",
        "--min-pair-items",
        "1",
        "--json",
        "--dimension",
        "decision",
    )
    report = json.loads(capsys.readouterr().out)
    assert report["filters"]["min_pair_items"] == 1
    assert report["dimensions"]["decision"]["cohen_kappa"]["mean"] == kappa_of_all["mean"]


@pytest.mark.parametrize("value", ["0", "100001", "many"])
def test_the_minimum_overlap_is_bounded_in_the_api_page_and_command(
    issue_study, people, client, value
):
    response = manager_api(people).get(f"/api/studies/grants/agreement/?min_pair_items={value}")
    assert response.status_code == 400
    assert set(response.json()["error"]["details"]) == {"min_pair_items"}
    client.force_login(people["manager"])
    page = client.get(f"/studies/grants/agreement/?min_pair_items={value}")
    assert page.status_code == 400 and "min_pair_items: " in page.content.decode()
    with pytest.raises(CommandError, match="min-pair-items"):
        call_command("agreement", "--study", "grants", "--min-pair-items", value)


def test_the_command_prints_intervals_weighted_mean_pairs_counted_and_warnings(issue_study, capsys):
    call_command("agreement", "--study", "grants", "--dimension", "decision")
    plain = capsys.readouterr().out
    assert "mean κ 95% CI" not in plain  # the headline's Wald interval is always there
    assert "Cohen's κ (weighted)" in plain and "Pairs counted" in plain
    assert "at least 10 items" in plain  # the minimum overlap is stated
    assert "* Decision: 1 of 3 pairs share fewer than 10 items" in plain

    call_command("agreement", "--study", "grants", "--dimension", "decision", "--intervals")
    lines = capsys.readouterr().out.splitlines()
    assert "95% intervals from 1,000 bootstrap resamples" in lines[1]
    assert "mean κ 95% CI low" in lines[3] and "weighted κ 95% CI high" in lines[3]
    assert lines[4].split()[:4] == ["Decision", "*", "41", "3"]  # items, annotators
    report = study_agreement_report(study=issue_study, dimension_keys=["decision"], bootstrap=1000)
    kappa = report["dimensions"]["decision"]["cohen_kappa"]
    for value in (*kappa["ci95"], *kappa["weighted_ci95"]):
        assert f"{value:.3f}" in lines[4]

    call_command("agreement", "--study", "grants", "--bootstrap", "200", "--dimension", "decision")
    assert "200 bootstrap resamples" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--intervals needs"):
        call_command("agreement", "--study", "grants", "--intervals", "--bootstrap", "0")


def page_links(html: str) -> list[dict[str, list[str]]]:
    """The query of every link of the page that stays on it ("?..."), parsed."""
    from html import unescape
    from urllib.parse import parse_qs

    return [parse_qs(unescape(href)[1:]) for href in re.findall(r'href="(\?[^"]*)"', html)]


def chosen_filters(study) -> dict[str, str]:
    """Every filter of the page set to something other than its default."""
    repository = min(item.issue.repository.full_name for item in study.items.all())
    return {"round": "Main", "repository": repository, "level": "0", "min_pair_items": "5"}


def test_every_link_of_the_page_keeps_the_filters(issue_study, people, client):
    chosen = chosen_filters(issue_study) | {"intervals": "on", "bootstrap": "50"}
    client.force_login(people["manager"])
    page = client.get("/studies/grants/agreement/", chosen | {"dimension": "decision"})
    assert page.status_code == 200
    links = page_links(page.content.decode())
    kinds = {
        "dimension tab": [q for q in links if "download" not in q and "pair" not in q],
        "pair": [q for q in links if "pair" in q],
        "download": [q for q in links if "download" in q],
    }
    assert len(kinds["dimension tab"]) == 3  # decision, reason, topics
    assert kinds["pair"] and len(kinds["download"]) == 5 * 3  # five tables, three formats
    tables = {q["table"][0] for q in kinds["download"]}
    assert tables == {"dimensions", "pairs", "categories", "rounds", "repositories"}
    for query in links:
        for name, value in chosen.items():
            assert query.get(name) == [value], (name, query)
    for query in kinds["pair"]:
        assert query["dimension"] == ["decision"]


def test_the_per_repository_table_equals_the_report_filtered_by_each_repository(
    issue_study, people, client, django_assert_max_num_queries
):
    from labeling.agreement_report import study_repository_agreement

    main = issue_study.rounds.get()
    for options in ({}, {"min_pair_items": 1}, {"level": 0, "min_pair_items": 3}):
        with django_assert_max_num_queries(6):  # one read of the labels, whatever the repositories
            by_repository = study_repository_agreement(study=issue_study, **options)
        assert len(by_repository) == 3
        for repository, dimensions in by_repository.items():
            filtered = study_agreement_report(
                study=issue_study,
                filters=LabelTableFilter(round_name=main.name, repository=repository),
                **options,
            )["dimensions"]
            for key, summary in dimensions.items():
                kappa = filtered[key]["cohen_kappa"]
                assert summary["n_items"] == filtered[key]["n_items"]
                assert summary["mean"] == kappa["mean"]
                assert summary["weighted_mean"] == kappa["weighted_mean"]
                assert summary["n_pairs_counted"] == kappa["n_pairs_counted"]
                assert summary["warnings"] == filtered[key]["warnings"]
    assert sum(d["decision"]["n_items"] for d in by_repository.values()) == 41

    # The page shows them side by side: one column group per repository.
    client.force_login(people["manager"])
    html = client.get("/studies/grants/agreement/?min_pair_items=3").content.decode()
    for repository in by_repository:
        group = f'<th scope="colgroup" colspan="3" style="text-align: center;">{repository}</th>'
        assert group in html


def test_the_page_reads_the_labels_once_for_its_report_rounds_and_repositories(
    issue_study, people, client, django_assert_max_num_queries
):
    from labeling.agreement_report import (
        study_agreement_views,
        study_repository_agreement,
        study_round_statuses,
    )

    pilot = Round.objects.create(study=issue_study, name="Pilot", position=1, kind="pilot")
    StudyItem.objects.filter(id__in=issue_study.items.order_by("id")[:15]).update(round=pilot)
    repository = min(item.issue.repository.full_name for item in issue_study.items.all())
    for filters in (
        LabelTableFilter(),
        LabelTableFilter(round_name="Pilot"),
        LabelTableFilter(round_name="Main", repository=repository),
    ):
        options = {"filters": filters, "level": 0, "min_pair_items": 3}
        with django_assert_max_num_queries(6):
            views = study_agreement_views(study=issue_study, bootstrap=20, **options)
        assert views.report == study_agreement_report(study=issue_study, bootstrap=20, **options)
        assert views.by_repository == study_repository_agreement(study=issue_study, **options)
        assert [vars(s) for s in views.round_statuses] == [
            vars(s) for s in study_round_statuses(study=issue_study, **options)
        ]
    client.force_login(people["manager"])
    # Session, user, study, dimensions, the form's rounds and repositories, then one read of
    # the labels (categories, labels, usernames) and the items' rounds and repositories, and
    # the machine annotators' labels (machines.report), the top bar's studies.
    with django_assert_max_num_queries(15):
        assert client.get("/studies/grants/agreement/?round=Pilot").status_code == 200


@pytest.mark.parametrize("table", ["dimensions", "pairs", "categories", "rounds", "repositories"])
def test_every_table_downloads_with_its_filters(issue_study, people, client, table):
    query = chosen_filters(issue_study) | {"dimension": "decision", "table": table}
    repository = query["repository"]
    client.force_login(people["manager"])
    stated = [
        f"repository {repository}",
        "categories rolled up to the top level",
        "counts toward the mean κ when it shares at least 5 items",
    ]
    round_stated = "every round" if table == "rounds" else "round Main"
    csv_file = client.get("/studies/grants/agreement/", query | {"download": "csv"})
    assert csv_file.status_code == 200
    first_line = csv_file.content.decode().splitlines()[0]
    assert first_line.startswith("# ") and round_stated in first_line
    assert all(words in first_line for words in stated)
    name = csv_file["Content-Disposition"]
    assert "main" in name and slugify(repository) in name and "top-level-min5" in name
    markdown = client.get("/studies/grants/agreement/", query | {"download": "md"})
    caption = next(
        line for line in markdown.content.decode().splitlines() if line.startswith("Table: ")
    )
    assert round_stated in caption and all(words in caption for words in stated)
    latex = client.get("/studies/grants/agreement/", query | {"download": "tex"}).content.decode()
    caption = next(line for line in latex.splitlines() if line.startswith("\\caption{"))
    assert round_stated in caption and f"repository {repository}" in caption
    assert "at least 5 items" in caption


def test_an_unknown_table_is_a_400_naming_the_tables(issue_study, people, client):
    client.force_login(people["manager"])
    response = client.get("/studies/grants/agreement/?download=csv&table=nope")
    assert response.status_code == 400
    assert response.content.decode() == (
        "Unknown table: nope. One of: dimensions, pairs, categories, rounds, repositories, "
        "machines, machine-delegation, machine-pairs."
    )


def test_the_tables_say_which_pairs_count_and_note_the_warnings(issue_study, people, client):
    client.force_login(people["manager"])
    html = client.get("/studies/grants/agreement/?dimension=decision").content.decode()
    assert "no: fewer than 10 shared items" in html
    assert "1 of 3 pairs share fewer than 10 items and are left out of the mean kappa." in html
    assert "Cohen&#x27;s κ of the one pair of annotators, 1 of 3 pairs counted" in html
    assert '<dd class="value">0.479' in html
    pairs = client.get("/studies/grants/agreement/?download=csv&table=pairs&dimension=decision")
    lines = pairs.content.decode().splitlines()
    assert "reader_a,reader_c,1,0.0,,,,no: fewer than 10 shared items" in lines
    assert any(line.startswith("# Mean κ over the 1 of 3 pairs counted: 0.479") for line in lines)
    main = client.get("/studies/grants/agreement/?download=md").content.decode()
    assert "| Decision \\* | 41 |" in main
    assert "\\* Decision: 1 of 3 pairs share fewer than 10 items" in main


# ------------------------------------------------------------------------------------------
# Calibration rounds are never failed on an undefined kappa
# ------------------------------------------------------------------------------------------


def calibration(study) -> dict:
    from labeling.agreement_report import study_round_statuses

    return {status.round.name: status for status in study_round_statuses(study=study)}


@pytest.fixture
def decision_only(grant_study):
    grant_study.required_dimensions = ["decision"]
    grant_study.save(update_fields=["required_dimensions"])
    Round.objects.filter(study=grant_study).update(target_kappa=0.6)
    return grant_study


def test_an_undefined_kappa_leaves_the_round_not_judged(
    decision_only, fifty_issues, tmp_path, people, client
):
    # 40 items, everyone says "yes": kappa is 0/0, not a low kappa.
    rows = []
    for issue in fifty_issues[:40]:
        reference = f"{issue.repository.full_name}#{issue.number}"
        rows += [
            (reference, "reader_a", "decision", "yes"),
            (reference, "reader_b", "decision", "yes"),
        ]
    imported(decision_only, rows, tmp_path)
    (status,) = calibration(decision_only).values()
    assert status.kappa_by_dimension["decision"] is None
    assert status.failing == [] and status.passed is None and status.verdict == "not judged"
    assert status.undetermined == {"Decision": "kappa undefined (one category used throughout)"}
    client.force_login(people["manager"])
    expected = "target κ 0.60 not judged: Decision (kappa undefined (one category used throughout))"
    assert expected in client.get("/studies/grants/").content.decode()
    assert expected in client.get("/studies/grants/agreement/").content.decode()
    rounds = client.get("/studies/grants/agreement/?download=csv&table=rounds").content.decode()
    assert expected in rounds


def test_too_few_items_or_no_pair_with_enough_overlap_leave_the_round_not_judged(
    decision_only, fifty_issues, tmp_path
):
    # 20 items with a kappa of 0.5, below the target: too few to fail the round on.
    cells = [("yes", "yes")] * 8 + [("no", "no")] * 7 + [("yes", "no")] * 2 + [("no", "yes")] * 3
    rows = []
    for issue, (a, b) in zip(fifty_issues, cells, strict=False):
        reference = f"{issue.repository.full_name}#{issue.number}"
        rows += [(reference, "reader_a", "decision", a), (reference, "reader_b", "decision", b)]
    imported(decision_only, rows, tmp_path)
    (status,) = calibration(decision_only).values()
    decision = status.dimensions["decision"]
    assert decision["n_items"] == 20 and decision["mean"] == pytest.approx(0.5)
    assert status.failing == [] and status.passed is None
    assert status.undetermined == {"Decision": "20 items with two or more ratings, fewer than 30"}


def test_no_pair_sharing_enough_items_leaves_the_round_not_judged(
    decision_only, fifty_issues, tmp_path
):
    # Three readers, each pair sharing 8 of 48 items... and the pairs' kappas are defined.
    readers = ["reader_a", "reader_b", "reader_c", "reader_d"]
    rows = []
    for position, issue in enumerate(fifty_issues[:48]):
        reference = f"{issue.repository.full_name}#{issue.number}"
        first, second = (position // 8) % 6, position % 2
        a, b = list(itertools.combinations(readers, 2))[first]
        rows += [
            (reference, a, "decision", "yes" if position % 3 else "no"),
            (reference, b, "decision", "yes" if second else "no"),
        ]
    imported(decision_only, rows, tmp_path)
    (status,) = calibration(decision_only).values()
    summary = status.dimensions["decision"]
    assert summary["n_items"] == 48 and summary["n_pairs"] == 6 and summary["mean"] is None
    assert status.passed is None
    assert status.undetermined == {"Decision": "no pair of annotators shares 10 or more items"}


def test_a_defined_kappa_below_the_target_still_fails_the_round(filled_grant_study):
    filled_grant_study.required_dimensions = ["decision"]
    filled_grant_study.save(update_fields=["required_dimensions"])
    Round.objects.filter(study=filled_grant_study).update(target_kappa=0.6)
    (status,) = calibration(filled_grant_study).values()
    assert status.failing == ["Decision"] and status.passed is False and not status.undetermined
    Round.objects.filter(study=filled_grant_study).update(target_kappa=0.4)
    (status,) = calibration(filled_grant_study).values()
    assert status.passed is True  # 0.4 reaches 0.4
