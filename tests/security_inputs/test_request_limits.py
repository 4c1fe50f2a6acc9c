"""Hostile requests get a clear 4xx, never a 500: JSON nested thousands deep, ids beyond any
database integer (run on SQLite and PostgreSQL)."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from api.parsers import MAX_DEPTH, json_depth
from labeling.models import Assignment

TOO_BIG_ID = "99999999999999999999"  # over 2^63: SQLite raised OverflowError


@pytest.fixture
def annotator_assignment(study, people):
    return Assignment.objects.filter(annotator=people["annotator1"]).first()


@pytest.mark.parametrize("action", ["draft", "submit"])
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nested_3000_deep_is_a_400_in_the_error_shape(
    people, annotator_assignment, action, opening
):
    client = APIClient()
    client.force_authenticate(people["annotator1"])
    closing = "]" if opening == "[" else "}"
    body = opening * 3000 + "1" + closing * 3000
    response = client.post(
        f"/api/assignments/{annotator_assignment.id}/{action}/",
        body,
        content_type="application/json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert f"nested deeper than {MAX_DEPTH} levels" in error["message"]
    annotator_assignment.refresh_from_db()
    assert annotator_assignment.status == Assignment.Status.TODO


def test_json_just_over_the_depth_cap_is_refused_and_at_it_accepted(people, annotator_assignment):
    client = APIClient()
    client.force_authenticate(people["annotator1"])
    url = f"/api/assignments/{annotator_assignment.id}/draft/"
    deep = {"version": annotator_assignment.version, "answers": {}}
    nested: dict = deep
    for _ in range(MAX_DEPTH - 1):
        nested["x"] = {}
        nested = nested["x"]
    assert json_depth(deep) == MAX_DEPTH
    at_the_cap = client.post(url, deep, format="json")
    assert at_the_cap.status_code == 200, at_the_cap.json()
    nested["x"] = {}
    response = client.post(url, deep, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "parse_error"


def test_json_depth_counts_lists_and_objects():
    assert json_depth(1) == 0
    assert json_depth([]) == 1
    assert json_depth({"a": [1, {"b": []}]}) == 4


@pytest.mark.parametrize(
    "url",
    [
        f"/studies/demo/items/{TOO_BIG_ID}/",
        f"/studies/demo/items/{TOO_BIG_ID}/resolve/",
        f"/codebooks/versions/{TOO_BIG_ID}/",
        f"/api/assignments/{TOO_BIG_ID}/",
        f"/api/issues/{TOO_BIG_ID}/",
    ],
)
def test_an_id_over_2_to_the_63_is_a_404(client, people, study, url):
    client.force_login(people["manager"])
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_item_id_over_2_to_the_63_on_the_labeling_pages_is_a_404(client, people, study, method):
    client.force_login(people["annotator1"])
    for path in ("", "draft/", "discussion/"):
        response = getattr(client, method)(f"/studies/demo/items/{TOO_BIG_ID}/{path}")
        assert response.status_code in {404, 405}, path


def test_ids_still_reverse_and_resolve(client, people, annotator_assignment):
    url = reverse("label_item", args=["demo", annotator_assignment.item_id])
    assert url == f"/studies/demo/items/{annotator_assignment.item_id}/"
    client.force_login(people["annotator1"])
    assert client.get(url).status_code == 200
    assert client.get(f"/studies/demo/items/{2**63 - 1}/").status_code == 404
