"""The OpenAPI schema: valid, free of drf-spectacular warnings, every operation with a unique
id and a described response, no free-form object where the shape is known; the docs page
loads from the installed package."""

import json
import re

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.test import APIClient

from accounts.services import api_token_create

# JSON fields whose content is free by design: a codebook's own metadata, an error's details,
# how a study was sampled (its record differs between a setup and an import), a sync's
# bookmark and the details of an act of a study's activity log (they differ by act).
FREE_FORM = {
    "Category.metadata",
    "ErrorBody.details",
    "StudyDetail.sampling",
    "Source.cursor",
    "StudyEvent.details",
}


@pytest.fixture(scope="module")
def schema() -> dict:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


def test_the_schema_validates_without_warnings(tmp_path):
    # --fail-on-warn turns every drf-spectacular warning (an unresolved serializer, a guessed
    # path parameter type, an operation id collision) into a failure.
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert out.read_text().startswith("openapi: 3")


def test_operation_ids_are_unique_and_every_operation_says_what_it_answers(schema):
    ids = [
        operation["operationId"]
        for methods in schema["paths"].values()
        for operation in methods.values()
    ]
    assert len(ids) == len(set(ids))
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            assert operation.get("responses"), f"{method.upper()} {path}"


def _free_objects(node, where: str):
    if isinstance(node, dict):
        if (
            node.get("type") == "object"
            and "properties" not in node
            and node.get("additionalProperties") in (None, {}, True)
        ):
            yield where
        for key, value in node.items():
            yield from _free_objects(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _free_objects(value, f"{where}[{index}]")


# Answers of the codebook editor's routes that are still free-form objects: to be described by
# serializers of their own (listed so that no other route joins them unnoticed).
FREE_FORM_ANSWERS = {
    "GET /api/codebook-versions/{id}/diff/",
    "GET /api/codebook-versions/{id}/export/",
    "GET /api/studies/{slug}/agreement-by-version/",
    "POST /api/studies/{slug}/codebook-migrate/",
    "GET /api/studies/{slug}/proposals/",
    "POST /api/studies/{slug}/proposals/decide/",
    "GET /api/studies/{slug}/recheck/",
}


def test_no_response_or_request_is_a_free_form_object(schema):
    free = {
        f"{method.upper()} {path}"
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if list(_free_objects(operation, ""))
    }
    assert free <= FREE_FORM_ANSWERS, free - FREE_FORM_ANSWERS
    untyped = sorted(
        f"{name}.{field}"
        for name, component in schema["components"]["schemas"].items()
        for field, spec in (component.get("properties") or {}).items()
        if not {"type", "$ref", "allOf", "oneOf", "anyOf"} & set(spec)
    )
    assert set(untyped) <= FREE_FORM, set(untyped) - FREE_FORM
    # A paper table's rows: their columns are the table's own (named in its `columns`).
    rows = {
        "components/schemas/Table/properties/rows/items",
        "components/schemas/Table/properties/footer/items",
        "components/schemas/StudyEvent/properties/details",  # differ by act (FREE_FORM)
    }
    assert set(_free_objects(schema["components"], "components")) <= rows


def test_token_and_session_authentication_are_documented(schema):
    schemes = schema["components"]["securitySchemes"]
    assert schemes["tokenAuth"]["name"] == "Authorization"
    assert "Token <key>" in schemes["tokenAuth"]["description"]
    assert "cookieAuth" in schemes
    info = schema["info"]
    assert info["title"] == "IssueCoder API" and info["version"]
    assert "/account/tokens/" in info["description"]


def test_the_docs_page_and_the_schema_load_for_a_signed_in_user(make_user):
    client = APIClient()
    assert client.get("/api/docs/").status_code == 401
    client.force_login(make_user("reader"))
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b"swagger-ui" in page.content
    # Swagger UI comes from this server's static files, not a CDN. The URLs are checked, not
    # the text: the page's random CSRF token may spell "cdn".
    sources = re.findall(rb'(?:src|href)="([^"]*)"', page.content)
    assert sources and all(source.startswith(b"/static/") for source in sources), sources
    served = client.get("/api/schema/?format=json")
    assert served.status_code == 200
    assert "/api/tokens/" in served.json()["paths"]


def test_a_token_reads_the_schema_too(make_user):
    _, key = api_token_create(user=make_user("robot"), name="docs")
    response = APIClient().get("/api/schema/?format=json", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
