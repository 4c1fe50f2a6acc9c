"""The paper's tables over the API: the list of a study's tables, one table as JSON or as a file
under the report's filters, who may read them, and the errors in the one error shape."""

import csv
import io
import os

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from common.tables import table_json
from exports.report_files import FORMATS
from exports.tables import ReportFilters, distribution_table, paper_table_specs
from tests.exports.paper_study import DEEPSPEED, MEGATRON, paper_study

LIST = "/api/studies/paper/tables/"
ROOT_CAUSE = "/api/studies/paper/tables/distribution-root_cause/"


@pytest.fixture
def study(codebook_version, sample_issues, people):
    return paper_study(
        codebook_version=codebook_version, sample_issues=sample_issues, people=people
    )[0]


@pytest.fixture
def api(people):
    def as_user(username: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(people[username])
        return client

    return as_user


@pytest.mark.parametrize(
    ("username", "status"),
    [("manager", 200), ("adjudicator", 200), ("annotator1", 403), ("outsider", 404)],
)
def test_the_tables_are_for_managers_and_adjudicators(api, study, username, status):
    assert api(username).get(LIST).status_code == status
    response = api(username).get(ROOT_CAUSE, {"format": "csv"})
    assert response.status_code == status
    if status != 200:
        assert set(response.json()["error"]) == {"code", "message", "details"}


def test_anonymous_requests_are_refused(study):
    response = APIClient().get(LIST)
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"


def test_the_list_names_every_table_of_the_report(api, study):
    body = api("manager").get(LIST).json()
    assert body["study"] == "paper"
    assert body["formats"] == ["json", "csv", "md", "tex", "svg"]
    assert [table["id"] for table in body["tables"]] == [
        spec.key for spec in paper_table_specs(study=study)
    ]
    assert {"id": "funnel", "title": "Screening funnel per system", "kind": "funnel"} in body[
        "tables"
    ]


def test_a_table_as_json_under_filters(api, study):
    response = api("manager").get(ROOT_CAUSE, {"repository": MEGATRON, "level": "parent"})
    assert response.status_code == 200
    body = response.json()
    expected = table_json(
        distribution_table(
            study=study,
            dimension_key="root_cause",
            filters=ReportFilters(repository=MEGATRON, level=0),
        )
    )
    assert body == expected | {"filters": {"repository": MEGATRON, "level": "parent"}}
    assert [column["key"] for column in body["columns"]] == ["category", MEGATRON, "total"]
    api_misuse = next(row for row in body["rows"] if row["category"] == "API Misuse")
    assert api_misuse[MEGATRON] == {"count": 1, "percent": 50.0}
    assert body["footer"][0]["total"] == {"count": 2, "percent": None}


@pytest.mark.parametrize("file_format", list(FORMATS))
def test_a_table_as_a_file(api, study, file_format):
    response = api("adjudicator").get(
        ROOT_CAUSE, {"format": file_format, "round": "Pilot", "repository": DEEPSPEED}
    )
    assert response.status_code == 200
    assert response["Content-Type"] == FORMATS[file_format].content_type
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == (
        'attachment; filename="paper-distribution-root_cause-pilot-microsoftdeepspeed.'
        f'{file_format}"'
    )
    if file_format == "csv":
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        # Pilot, DeepSpeed: D1 alone, external API misuse.
        assert ["External Library API Misuse", "1", "100.0", "1", "100.0"] in rows
    if file_format == "svg":
        assert b"<script" not in response.content


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"round": "Nope"}, "round"),
        ({"repository": "someone/else"}, "repository"),
        ({"level": "middle"}, "level"),
        ({"format": "exe"}, "format"),
        ({"format": "csv", "round": "Nope"}, "round"),
    ],
)
def test_a_bad_filter_or_format_is_a_400_naming_it(api, study, query, parameter):
    response = api("manager").get(ROOT_CAUSE, query)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert list(error["details"]) == [parameter]


def test_an_unknown_table_is_a_404(api, study):
    response = api("manager").get("/api/studies/paper/tables/nope/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_schema_describes_the_table_endpoints(api, study):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    schema = api("manager").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    listing = schema["paths"]["/api/studies/{slug}/tables/"]["get"]
    assert {"200", "403", "404"} <= set(listing["responses"])
    table = schema["paths"]["/api/studies/{slug}/tables/{table_id}/"]["get"]
    assert {
        "application/json",
        "text/csv",
        "text/markdown",
        "application/x-tex",
        "image/svg+xml",
    } == (set(table["responses"]["200"]["content"]))
    assert {parameter["name"] for parameter in table["parameters"]} >= {
        "slug", "table_id", "format", "round", "repository", "level",
    }  # fmt: skip
