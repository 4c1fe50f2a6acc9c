"""One error shape under /api/, whoever answers: a path no route matches, a body over
DATA_UPLOAD_MAX_MEMORY_SIZE, a request without credentials (a 401 with its challenge), a body
that is not JSON, a server error. Pages keep Django's HTML. And the schema and the API agree on
what they both state: pages from 1, a bounded time spent, fields that may not be blank, the
error statuses of every operation."""

import json

import pytest
from django.conf import settings
from django.test import RequestFactory
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.test import APIClient

from api.exception_handler import server_error
from labeling.models import Annotation, Assignment
from labeling.services.annotations import MAX_SECONDS_SPENT
from tests.conftest import PASSWORD

OVER_THE_LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024 * 1024  # 6 MB


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


@pytest.fixture
def annotator(people) -> APIClient:
    client = APIClient()
    client.force_authenticate(people["annotator1"])
    return client


@pytest.fixture
def assignment(study, people) -> Assignment:
    return Assignment.objects.filter(annotator=people["annotator1"]).order_by("item_id").first()


@pytest.fixture(scope="module")
def schema() -> dict:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


# Answers Django gives before or after a view


@pytest.mark.parametrize("path", ["/api/no-such-route/", "/api/tokens/1.5/", "/api/studies/a/b/c/"])
def test_a_path_no_route_matches_is_a_json_404(annotator, path):
    assert error_of(annotator.get(path), 404)["code"] == "not_found"


def test_a_page_that_does_not_exist_stays_html(client, people):
    client.force_login(people["manager"])
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_body_over_the_upload_limit_is_a_json_400_and_saves_nothing(annotator, assignment):
    body = json.dumps(
        {"version": assignment.version, "answers": {}, "padding": "x" * OVER_THE_LIMIT}
    )
    response = annotator.post(
        f"/api/assignments/{assignment.id}/draft/", body, content_type="application/json"
    )

    error = error_of(response, 400)
    assert error["code"] == "request_too_large"
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes" in error["message"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.TODO


def test_a_request_without_credentials_is_a_401_with_its_challenge(db):
    response = APIClient().get("/api/studies/")

    assert error_of(response, 401)["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Token"


def test_a_signed_in_session_still_reads_the_api(client, people):
    assert client.login(username="manager", password=PASSWORD)
    assert client.get("/api/studies/").status_code == 200


def test_a_server_error_under_the_api_is_json_and_a_page_s_html(db):
    factory = RequestFactory()
    error = error_of(server_error(factory.get("/api/studies/")), 500)
    assert error["code"] == "server_error"
    page = server_error(factory.get("/studies/"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


# Bodies: JSON only


@pytest.mark.parametrize("body_format", ["multipart", "form"])
def test_a_draft_that_is_not_json_is_refused_not_saved_without_its_answers(
    annotator, assignment, body_format
):
    answers = json.dumps({"symptom": {"categories": ["crash"]}})
    data = {"version": assignment.version, "answers": answers}
    if body_format == "multipart":
        response = annotator.post(
            f"/api/assignments/{assignment.id}/draft/", data, format="multipart"
        )
    else:
        response = annotator.post(
            f"/api/assignments/{assignment.id}/draft/",
            f"version={assignment.version}&answers={answers}",
            content_type="application/x-www-form-urlencoded",
        )

    assert error_of(response, 415)["code"] == "unsupported_media_type"
    assignment.refresh_from_db()
    assert (assignment.status, assignment.version) == (Assignment.Status.TODO, data["version"])
    assert not Annotation.objects.filter(assignment=assignment).exists()


# File uploads take multipart bodies; every other body is JSON.
UPLOADS = {
    "/api/studies/{slug}/annotation-import/",
    "/api/codebooks/import/",
    "/api/studies/restore/",
    "/api/studies/{slug}/issue-imports/",
}


def test_the_schema_offers_only_json_bodies(schema):
    media_types = {
        (path in UPLOADS, media_type)
        for path, methods in schema["paths"].items()
        for operation in methods.values()
        for media_type in (operation.get("requestBody") or {}).get("content", {})
    }
    assert media_types == {(False, "application/json"), (True, "multipart/form-data")}


# Time spent


def test_a_week_spent_on_an_item_is_refused_and_a_day_taken(annotator, assignment):
    url = f"/api/assignments/{assignment.id}/draft/"
    week = annotator.post(url, {"version": assignment.version, "seconds_spent": 7 * 24 * 3600})
    assert "seconds_spent" in error_of(week, 400)["details"]

    day = annotator.post(url, {"version": assignment.version, "seconds_spent": MAX_SECONDS_SPENT})
    assert day.status_code == 200
    assignment.refresh_from_db()
    assert assignment.seconds_spent == 24 * 3600


def test_the_schema_bounds_the_time_spent(schema):
    seconds = schema["components"]["schemas"]["SaveRequest"]["properties"]["seconds_spent"]
    assert (seconds["minimum"], seconds["maximum"]) == (0, 24 * 3600)


# Pages


@pytest.mark.parametrize(
    "query", ["page=0", "page=-1", "page=last", "page=", "page_size=0", "page_size=x"]
)
def test_a_page_or_page_size_below_one_is_a_400_naming_it(annotator, study, query):
    error = error_of(annotator.get(f"/api/assignments/?{query}"), 400)
    assert set(error["details"]) == {query.partition("=")[0]}


def test_a_page_past_the_last_is_a_404_and_a_large_page_size_is_capped(annotator, study):
    assert error_of(annotator.get("/api/assignments/?page=999"), 404)["code"] == "not_found"
    assert annotator.get("/api/assignments/?page_size=100000").status_code == 200


def test_the_schema_says_pages_start_at_one(schema):
    parameters = {
        parameter["name"]: parameter["schema"]
        for parameter in schema["paths"]["/api/assignments/"]["get"]["parameters"]
    }
    assert parameters["page"]["minimum"] == 1
    assert parameters["page_size"]["minimum"] == 1


# Empty query parameters


def test_an_optional_query_parameter_given_empty_counts_as_not_given(study, people, schema):
    manager = APIClient()
    manager.force_authenticate(people["manager"])
    given_empty = manager.get("/api/studies/demo/agreement/?repository=&round=")
    assert given_empty.status_code == 200, given_empty.content[:300]
    assert given_empty.json() == manager.get("/api/studies/demo/agreement/").json()
    parameters = {
        parameter["name"]: parameter["schema"]
        for parameter in schema["paths"]["/api/studies/{slug}/agreement/"]["get"]["parameters"]
    }
    assert "minLength" not in parameters["round"]
    assert parameters["repository"]["pattern"].startswith("^$|")


# Blank fields


def test_the_schema_says_which_fields_may_not_be_blank_as_the_api_does(annotator, assignment):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    reason = schema["components"]["schemas"]["SkipRequest"]["properties"]["reason"]
    assert reason["minLength"] == 1

    response = annotator.post(f"/api/assignments/{assignment.id}/skip/", {"reason": ""})
    assert "reason" in error_of(response, 400)["details"]


# Every operation documents its errors


def test_every_operation_documents_the_errors_it_can_answer(schema):
    missing = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            parameters = operation.get("parameters", [])
            expected = {"401", "403"}
            if any(parameter["in"] == "path" for parameter in parameters):
                expected.add("404")
            if "requestBody" in operation:
                expected |= {"400", "415"}
            if any(parameter["in"] == "query" for parameter in parameters):
                expected.add("400")
            missing += [f"{method.upper()} {path} {code}" for code in expected - set(responses)]
            for code, response in responses.items():
                if code >= "400":
                    content = response["content"]["application/json"]["schema"]
                    assert content == {"$ref": "#/components/schemas/Error"}, (path, code)
    assert missing == []
