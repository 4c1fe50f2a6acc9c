"""Ordinal dimensions through the database: the codebook's scale values reach the report, the
kappa weights in force are stated, and weights asked for a nominal dimension are refused."""

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from labeling.agreement import dimension_agreement
from labeling.agreement_report import study_agreement_report
from labeling.services.studies import study_create
from taxonomy.codebook_file import CodebookFileError, codebook_parse
from taxonomy.services import codebook_load
from tests.labeling.test_agreement_report import fifty_issues, imported

__all__ = ["fifty_issues", "severity_study"]

SEVERITY = ["minor", "major", "critical"]
SEVERITY_CODEBOOK = {
    "name": "Severity",
    "version": "1.0",
    "dimensions": [
        {"key": "kind", "name": "Kind", "categories": [{"key": "bug", "name": "Bug"},
                                                       {"key": "question", "name": "Question"}]},
        {
            "key": "severity",
            "name": "Severity",
            "ordinal": True,
            "categories": [
                {"key": "minor", "name": "Minor", "value": 1},
                {"key": "major", "name": "Major", "value": 4},
                {"key": "critical", "name": "Critical", "value": 10},
            ],
        },
    ],
}  # fmt: skip
# (annotator a, annotator b) severities of twelve issues.
ANSWERS = [
    ("minor", "minor"), ("minor", "major"), ("major", "major"), ("major", "critical"),
    ("critical", "critical"), ("minor", "minor"), ("major", "minor"), ("critical", "major"),
    ("major", "major"), ("critical", "critical"), ("minor", "major"), ("major", "major"),
]  # fmt: skip


@pytest.fixture
def severity_study(db, people, sample_issues, fifty_issues, tmp_path):
    version, _ = codebook_load(data=SEVERITY_CODEBOOK, publish=True)
    study = study_create(
        slug="severity", name="Severity", codebook_version=version, k=2,
        managers=[people["manager"]],
    )  # fmt: skip
    rows = []
    for issue, (a, b) in zip(fifty_issues, ANSWERS, strict=False):
        reference = f"{issue.repository.full_name}#{issue.number}"
        rows += [
            (reference, "reader_a", "kind", "bug"),
            (reference, "reader_b", "kind", "bug"),
            (reference, "reader_a", "severity", a),
            (reference, "reader_b", "severity", b),
        ]
    imported(study, rows, tmp_path)
    return study


def test_the_codebooks_scale_values_reach_the_interval_and_ratio_alphas(severity_study):
    report = study_agreement_report(study=severity_study)
    severity = report["dimensions"]["severity"]
    item_ids, annotators, label_sets = [], [], []
    for item, (a, b) in enumerate(ANSWERS):
        item_ids += [item, item]
        annotators += ["reader_a", "reader_b"]
        label_sets += [{a}, {b}]
    expected = dimension_agreement(
        item_ids, annotators, label_sets, categories=SEVERITY, multi_label=False, ordinal=True,
        weights="linear", scale_values=[1, 4, 10],
    )  # fmt: skip
    assert severity["ordinal"] is True and severity["kappa_weights"] == "linear"
    assert report["filters"]["weights"] == "linear"  # the default in force, stated
    for level in ("ordinal", "interval", "ratio"):
        key = f"krippendorff_alpha_{level}"
        assert severity[key] == pytest.approx(expected[key])
    positions = dimension_agreement(
        item_ids, annotators, label_sets, categories=SEVERITY, multi_label=False, ordinal=True,
        weights="linear",
    )  # fmt: skip
    # The values, not the positions, make the interval alpha.
    assert severity["krippendorff_alpha_interval"] != pytest.approx(
        positions["krippendorff_alpha_interval"]
    )
    assert report["dimensions"]["kind"]["kappa_weights"] is None
    assert "krippendorff_alpha_ordinal" not in report["dimensions"]["kind"]


def test_weights_for_a_nominal_dimension_are_refused(severity_study, people):
    with pytest.raises(CommandError, match="ordinal"):
        call_command("agreement", "--study", "severity", "--dimension", "kind",
                     "--weights", "quadratic")  # fmt: skip
    call_command("agreement", "--study", "severity", "--dimension", "severity",
                 "--weights", "quadratic", "--json")  # fmt: skip
    client = APIClient()
    client.force_authenticate(people["manager"])
    refused = client.get("/api/studies/severity/agreement/?dimension=kind&weights=linear")
    assert refused.status_code == 400
    assert "weights" in refused.json()["error"]["details"]
    answered = client.get("/api/studies/severity/agreement/?weights=quadratic")
    assert answered.status_code == 200
    assert answered.json()["dimensions"]["severity"]["kappa_weights"] == "quadratic"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1, 2, None], "not for critical"),
        ([1, "two", 3], "expected a number"),
        ([1, True, 3], "expected a number"),
    ],
)
def test_a_scale_value_must_be_a_number_on_every_category(values, message):
    data = {**SEVERITY_CODEBOOK, "dimensions": [dict(SEVERITY_CODEBOOK["dimensions"][1])]}
    data["dimensions"][0]["categories"] = [
        {"key": key, "name": key.title(), **({"value": value} if value is not None else {})}
        for key, value in zip(SEVERITY, values, strict=True)
    ]
    with pytest.raises(CodebookFileError, match=message):
        codebook_parse(data)


def test_a_scale_value_on_a_nominal_dimension_is_an_error():
    data = {**SEVERITY_CODEBOOK, "dimensions": [dict(SEVERITY_CODEBOOK["dimensions"][0])]}
    data["dimensions"][0]["categories"] = [
        {"key": "bug", "name": "Bug", "value": 1},
        {"key": "question", "name": "Question", "value": 2},
    ]
    with pytest.raises(CodebookFileError, match="ordinal dimension only"):
        codebook_parse(data)
