"""The assignments API: blind, versioned, in the one error shape."""

import pytest
from rest_framework.test import APIClient

from labeling.models import Assignment


@pytest.fixture
def as_user(people):
    def client_for(name: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(people[name])
        return client

    return client_for


FULL_ANSWERS = {
    "screening": {"categories": ["include"]},
    "symptom": {"categories": ["crash"]},
    "root_cause": {"categories": ["api_misuse"], "unsure": True, "rationale": "wrong call"},
    "fix_pattern": {"categories": ["fix_api_usage"]},
    "training_stage": {"categories": ["installation_build"]},
    "debugging_practice": {"categories": ["error_message_analysis"]},
}


def test_next_then_draft_then_submit(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    assert assignment["annotator"] == "annotator1" and assignment["status"] == "todo"
    url = f"/api/assignments/{assignment['id']}/"
    draft = client.post(
        url + "draft/",
        {"version": assignment["version"], "answers": {"symptom": {"categories": ["hang"]}}},
        format="json",
    ).json()
    assert draft["status"] == "draft"
    assert draft["annotations"] == [
        {
            "dimension": "symptom",
            "categories": ["hang"],
            "unsure": False,
            "rationale": "",
            "evidence": "",
            "proposal": "",
        }
    ]
    submitted = client.post(
        url + "submit/", {"version": draft["version"], "answers": FULL_ANSWERS}, format="json"
    )
    assert submitted.status_code == 200, submitted.json()
    assert submitted.json()["status"] == "submitted"
    assert client.get(url).json()["status"] == "submitted"


def test_the_lists_rows_are_the_detail_of_each_assignment(study, as_user):
    """The list and the queue build their rows from plain values (api.assignments.
    rows_with_labels): each row is what the detail route, a serializer over models, answers."""
    client = as_user("annotator1")
    for _ in range(2):
        assignment = client.post("/api/studies/demo/next/").json()
        client.post(
            f"/api/assignments/{assignment['id']}/submit/",
            {"version": assignment["version"], "answers": FULL_ANSWERS},
            format="json",
        )
    client.post(
        f"/api/assignments/{client.post('/api/studies/demo/next/').json()['id']}/draft/",
        {"version": 0, "answers": {"symptom": {"categories": ["hang"], "unsure": True}}},
        format="json",
    )
    queue = client.get("/api/studies/demo/queue/?page_size=5").json()["results"]
    listed = client.get("/api/assignments/?page_size=5").json()["results"]
    assert queue == listed
    assert sum(bool(row["annotations"]) for row in listed) == 3
    for row in listed:
        assert row == client.get(f"/api/assignments/{row['id']}/").json()


def test_stale_version_is_a_409_in_the_error_shape(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    url = f"/api/assignments/{assignment['id']}/draft/"
    client.post(url, {"version": 0, "answers": {}}, format="json")
    stale = client.post(url, {"version": 0, "answers": {}}, format="json")
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "conflict"


def test_bad_labels_are_a_400_and_nothing_changes(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    response = client.post(
        f"/api/assignments/{assignment['id']}/draft/",
        {"answers": {"symptom": {"categories": ["api_misuse"]}}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "not a category of Symptom" in response.json()["error"]["message"]
    incomplete = client.post(
        f"/api/assignments/{assignment['id']}/submit/", {"answers": {}}, format="json"
    )
    assert incomplete.status_code == 400
    assert Assignment.objects.get(pk=assignment["id"]).status != "submitted"


def test_submit_with_a_missing_dimension_keeps_a_draft_and_answers_the_new_version(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    answers = {key: value for key, value in FULL_ANSWERS.items() if key != "fix_pattern"}
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/",
        {"version": assignment["version"], "answers": answers},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "Fix pattern" in error["message"]
    assert error["details"]["missing"] == ["Fix pattern"]
    kept = client.get(f"/api/assignments/{assignment['id']}/").json()
    assert kept["status"] == "draft"
    assert error["details"]["version"] == kept["version"] == assignment["version"] + 1
    labels = {a["dimension"]: a["categories"] for a in kept["annotations"]}
    assert labels["root_cause"] == ["api_misuse"]
    # With the new version and the missing dimension, the submit goes through.
    done = client.post(
        f"/api/assignments/{assignment['id']}/submit/",
        {"version": error["details"]["version"], "answers": FULL_ANSWERS},
        format="json",
    )
    assert done.status_code == 200 and done.json()["status"] == "submitted"


def test_over_long_text_is_a_400_naming_the_dimension(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    response = client.post(
        f"/api/assignments/{assignment['id']}/draft/",
        {"answers": {"fix_pattern": {"evidence": "x" * 20_001}}},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("The evidence of Fix pattern is 20,001 characters long")
    assert error["details"] == {
        "dimension": "fix_pattern",
        "field": "evidence",
        "max_length": 20_000,
    }
    assert Assignment.objects.get(pk=assignment["id"]).status == "todo"


def test_blind_other_annotators_cannot_read_or_write(study, as_user):
    first = as_user("annotator1")
    assignment = first.post("/api/studies/demo/next/").json()
    first.post(
        f"/api/assignments/{assignment['id']}/draft/",
        {"answers": {"root_cause": {"categories": ["api_misuse"], "rationale": "secret"}}},
        format="json",
    )
    second = as_user("annotator2")
    assert second.get(f"/api/assignments/{assignment['id']}/").status_code == 404
    assert "secret" not in str(second.get("/api/assignments/").json())
    write = second.post(
        f"/api/assignments/{assignment['id']}/draft/", {"answers": {}}, format="json"
    )
    assert write.status_code == 404
    assert as_user("outsider").get("/api/assignments/").json()["results"] == []
    # The manager sees every assignment of the study but cannot write someone else's.
    manager = as_user("manager")
    assert manager.get(f"/api/assignments/{assignment['id']}/").status_code == 200
    assert (
        manager.post(
            f"/api/assignments/{assignment['id']}/submit/", {"answers": {}}, format="json"
        ).status_code
        == 404
    )


def test_skip_needs_a_reason(study, as_user):
    client = as_user("annotator1")
    assignment = client.post("/api/studies/demo/next/").json()
    url = f"/api/assignments/{assignment['id']}/skip/"
    assert client.post(url, {}, format="json").status_code == 400
    skipped = client.post(url, {"reason": "duplicate of another issue"}, format="json").json()
    assert skipped["status"] == "skipped" and skipped["skip_reason"] == "duplicate of another issue"


def test_next_is_204_when_nothing_is_left(codebook_version, people, as_user):
    from labeling.services.studies import study_create

    study_create(
        slug="empty",
        name="empty",
        codebook_version=codebook_version,
        annotators=[people["annotator1"]],
        k=1,
    )
    assert as_user("annotator1").post("/api/studies/empty/next/").status_code == 204


def test_nul_bytes_are_a_clear_error_in_the_api_and_dropped_from_forms(study, as_user, client):
    api = as_user("annotator1")
    assignment = api.post("/api/studies/demo/next/").json()
    response = api.post(
        f"/api/assignments/{assignment['id']}/draft/",
        {"answers": {"root_cause": {"categories": [], "rationale": "log\u0000 line"}}},
        format="json",
    )
    assert response.status_code == 400
    assert "Null characters" in str(response.json()["error"]["details"])
    # The labeling form goes straight to the service, which drops them.
    client.force_login(Assignment.objects.get(pk=assignment["id"]).annotator)
    page = client.post(
        f"/studies/demo/items/{assignment['item']}/",
        {"action": "draft", "rationale-root_cause": "log\x00 line"},
    )
    assert page.status_code == 302
    stored = Assignment.objects.get(pk=assignment["id"]).annotations.get(
        dimension__key="root_cause"
    )
    assert stored.rationale == "log line"
