"""Machine annotators where people read agreement: the agreement page (tables, the delegation
chart, downloads), the API's schema, the paper tables and the dataset export. The human figures
and tables stay what they were."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.machines.test_machine_agreement import (  # noqa: F401 (a fixture)
    GOLD,
    _machine,
    _marker,
    labeled_study,
)


@pytest.fixture
def two_machines(labeled_study, endpoint):  # noqa: F811
    study, items = labeled_study
    gold_of = {_marker(item): cause for item, cause in zip(items, GOLD, strict=True)}

    def follows_gold(prompt: str) -> str:
        return next((c for marker, c in gold_of.items() if marker in prompt), "api_misuse")

    _machine(study, endpoint, "good", follows_gold)
    _machine(study, endpoint, "always-api-misuse", lambda prompt: "api_misuse")
    return study


def _manager(people) -> Client:
    client = Client()
    client.force_login(people["manager"])
    return client


def test_the_agreement_page_shows_machines_apart(two_machines, people):
    client = _manager(people)
    page = client.get("/studies/demo/agreement/?dimension=root_cause").content.decode()
    section = page[page.index('id="machines-heading"') :]
    for text in ("κ vs gold", "Mean κ vs humans", "κ vs annotator1", "Precision", "Recall"):
        assert text in section
    assert "always-api-misuse" in section and "good" in section
    assert "Delegation" in section and "<polyline" in section
    assert "Agreement with gold" in section and "Share taken" in section
    assert "Machine against machine" in section
    # The human pair table names people only.
    pairs = page[page.index("Pairs of annotators") : page.index('id="machines-heading"')]
    assert "always-api-misuse" not in pairs

    download = client.get(
        "/studies/demo/agreement/?dimension=root_cause&download=csv&table=machines"
    )
    assert download.status_code == 200
    lines = [line for line in download.content.decode().splitlines() if not line.startswith("#")]
    assert lines[0].startswith("Dimension,Machine,Items,With gold,κ vs gold,Mean κ vs humans")
    assert "Root cause,good,45,8,1.0,1.0,1.0,1.0,1.0,1.0" in lines
    delegation = client.get(
        "/studies/demo/agreement/?dimension=root_cause&download=md&table=machine-delegation"
    )
    assert delegation.status_code == 200 and "Agreement with gold" in delegation.content.decode()


def test_a_page_without_machines_has_no_machine_section(labeled_study, people):  # noqa: F811
    page = _manager(people).get("/studies/demo/agreement/").content.decode()
    assert 'id="machines-heading"' not in page


def test_the_schema_names_the_machine_figures(db, people):
    client = _manager(people)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    dimension = components["DimensionAgreement"]["properties"]
    assert {"machines", "machine_pairs"} <= set(dimension)
    machine = components["MachineAgreement"]["properties"]
    assert {"kappa_vs_gold", "kappa_vs_humans", "precision", "recall", "delegation"} <= set(machine)
    assert {"threshold", "share", "agreement_with_gold"} <= set(
        components["DelegationRow"]["properties"]
    )
    assert {"a", "b", "n", "kappa"} <= set(components["MachinePair"]["properties"])


def test_the_paper_tables_carry_the_machines_and_the_human_ones_stay(two_machines):
    from common.tables import table_latex
    from exports.charts import table_chart_svg
    from exports.tables import ReportFilters, paper_table_specs, paper_tables

    specs = paper_table_specs(study=two_machines)
    keys = [spec.key for spec in specs]
    assert keys[-2:] == ["machine-annotation", "machine-delegation"]
    assert "agreement-by-round" in keys and "funnel" in keys
    annotation, delegation = paper_tables(
        study=two_machines,
        filters=ReportFilters(),
        keys=["machine-annotation", "machine-delegation"],
    )
    rows = {(row["dimension"], row["machine"]): row for row in annotation.rows}
    good = rows[("Root cause", "good")]
    assert (good["kappa_vs_gold"], good["mean_kappa_vs_humans"]) == (1.0, 1.0)
    assert (good["precision"], good["recall"]) == (1.0, 1.0)
    assert rows[("Root cause", "always-api-misuse")]["kappa_vs_gold"] == 0.0
    good_root_cause = [
        row["agreement_with_gold"]
        for row in delegation.rows
        if (row["dimension"], row["machine"]) == ("Root cause", "good")
    ]
    assert set(good_root_cause) == {100.0}
    for spec, table in zip(specs[-2:], (annotation, delegation), strict=True):
        assert "\\begin{tabular}" in table_latex(table)
        assert table_chart_svg(spec.kind, table).startswith("<svg")


def test_the_export_carries_machine_labels_apart_with_each_runs_record(two_machines, people):
    import csv
    import io
    import json
    import zipfile

    client = _manager(people)
    assert "Machine labels (CSV)" in client.get("/studies/demo/export/").content.decode()
    response = client.get("/studies/demo/export/machines/?file=labels")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {row["machine"] for row in rows} == {"good", "always-api-misuse"}
    assert {row["kind"] for row in rows} == {"llm"}
    root_causes = [r for r in rows if r["dimension"] == "root_cause" and r["machine"] == "good"]
    assert len(root_causes) == 45 and root_causes[0]["confidence"] == "1.0"

    runs = json.loads(client.get("/studies/demo/export/machines/?file=runs").content)["runs"]
    assert [run["machine"] for run in runs] == ["good", "always-api-misuse"]
    first = runs[0]
    assert first["model"] == "good" and first["endpoint_host"].startswith("127.0.0.1:")
    assert len(first["prompt_hash"]) == 64 and first["parameters"]["temperature"] == 0.0
    assert first["started_at"] and first["codebook"]["version"]
    assert client.get("/studies/demo/export/machines/").status_code == 400

    from exports.report_files import report_zip
    from exports.tables import ReportFilters

    archive = report_zip(study=two_machines, filters=ReportFilters())
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert "demo-machine-labels.csv" in names and "demo-machine-runs.json" in names
    assert any(name.startswith("demo-machine-annotation") for name in names)


def test_the_one_human_replaced_design_is_recorded_and_stated(two_machines, people):
    import json

    from labeling.agreement_report import study_agreement_report
    from labeling.agreement_tables import dimension_table
    from machines.models import MachineAnnotator

    before = study_agreement_report(study=two_machines)
    assert "one human replaced" not in dimension_table(before).caption
    client = _manager(people)
    good = MachineAnnotator.objects.get(name="good")
    response = client.post("/studies/demo/machines/", {"action": "rater", "annotator": good.pk})
    assert response.status_code == 302
    page = client.get("/studies/demo/machines/").content.decode()
    assert "<strong>good</strong> is chosen as one of the study's k raters" in page
    other = MachineAnnotator.objects.get(name="always-api-misuse")
    client.post("/studies/demo/machines/", {"action": "rater", "annotator": other.pk})
    assert list(MachineAnnotator.objects.filter(counts_toward_k=True)) == [other]
    client.post("/studies/demo/machines/", {"action": "rater", "annotator": good.pk})

    report = study_agreement_report(study=two_machines)
    machines = report["dimensions"]["root_cause"]["machines"]
    assert machines["good"]["counts_as_rater"] is True
    assert machines["always-api-misuse"]["counts_as_rater"] is False
    assert (
        "design: one human replaced, the machine annotator good" in dimension_table(report).caption
    )
    agreement = client.get("/studies/demo/agreement/?dimension=root_cause").content.decode()
    assert "Design: one human replaced" in agreement
    runs = json.loads(client.get("/studies/demo/export/machines/?file=runs").content)
    assert (runs["design"], runs["machine_rater"]) == ("one_human_replaced", "good")

    client.post("/studies/demo/machines/", {"action": "rater", "annotator": ""})
    assert not MachineAnnotator.objects.filter(counts_toward_k=True).exists()
