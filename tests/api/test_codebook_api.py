"""The codebook editor and a study's codebook over the API: a draft edited, a mapping declared,
published, the diff as JSON, the study moved, proposals, re-checks, agreement per version; the
bad input (one error shape, nothing changed) and who may."""

import pytest
from rest_framework.test import APIClient

from labeling.models import Annotation, Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from taxonomy.models import Category, CategoryMapping, CodebookVersion
from tests.conftest import SCREENED_IN


@pytest.fixture
def api(people):
    def as_user(name: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(people[name])
        return client

    return as_user


def submit(item, user, **changes):
    return assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=user),
        user=user,
        answers={
            k: DimensionAnswer(category_keys=v) for k, v in {**SCREENED_IN, **changes}.items()
        },
        submit=True,
    )


def snapshot(version_id):
    return (
        list(
            Category.objects.filter(dimension__version_id=version_id)
            .order_by("id")
            .values_list("id", "key", "name", "parent_id", "position", "deprecated")
        ),
        list(CategoryMapping.objects.filter(to_version_id=version_id).values_list("id", "kind")),
    )


def test_a_merge_mid_study_over_the_api(api, study, people):
    manager = api("manager")
    items = list(study.items.order_by("id")[:2])
    submit(items[0], people["annotator1"], root_cause=["type_error"])
    submit(items[0], people["annotator2"], root_cause=["typo_wrong_identifier"])
    submit(items[1], people["annotator1"], symptom=["hang"])
    submit(items[1], people["annotator2"], symptom=["hang"])
    version_id = study.codebook_version_id
    response = manager.post(f"/api/codebook-versions/{version_id}/drafts/", {"label": "0.2.0"})
    assert response.status_code == 201, response.json()
    draft = response.json()
    assert draft["status"] == "draft" and draft["label"] == "0.2.0"
    base = f"/api/codebook-versions/{draft['id']}"
    response = manager.post(
        f"{base}/mapping/",
        {
            "dimension": "root_cause",
            "mapping": [{"from": "type_error", "kind": "merge", "to": ["typo_wrong_identifier"]}],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json() == [
        {
            "dimension": "root_cause",
            "kind": "merge",
            "to": "typo_wrong_identifier",
            "from": "type_error",
        }
    ]
    response = manager.post(
        f"{base}/split/",
        {
            "dimension": "symptom",
            "category": "hang",
            "parts": [{"key": "deadlock"}, {"key": "stall", "name": "Stall"}],
        },
        format="json",
    )
    assert response.status_code == 200
    response = manager.post(
        f"{base}/category/",
        {
            "dimension": "symptom",
            "category": "crash",
            "name": "Crash or abort",
            "deprecated": False,
        },
        format="json",
    )
    assert response.status_code == 200
    diff = manager.get(f"{base}/diff/").json()
    root_cause = next(d for d in diff["dimensions"] if d["key"] == "root_cause")
    assert root_cause["merged"] == [
        {
            "from": ["type_error"],
            "into": "typo_wrong_identifier",
            "into_was": "typo_wrong_identifier",
        }
    ]
    symptom = next(d for d in diff["dimensions"] if d["key"] == "symptom")
    assert symptom["split"] == [{"from": "hang", "into": ["deadlock", "stall"]}]
    assert symptom["renamed"][0]["to_name"] == "Crash or abort"
    assert manager.post(f"{base}/publish/").json()["status"] == "published"
    response = manager.post("/api/studies/demo/codebook-migrate/", {"version": draft["id"]})
    assert response.status_code == 200, response.json()
    counts = response.json()["counts"]
    assert counts["annotations_migrated"] == 1 and counts["annotations_flagged"] == 2
    assert [
        c.key
        for c in Annotation.objects.get(
            assignment__item=items[0],
            assignment__annotator=people["annotator1"],
            dimension__key="root_cause",
        ).categories.all()
    ] == ["typo_wrong_identifier"]
    recheck = api("annotator1").get("/api/studies/demo/recheck/").json()
    assert [(r["item"], r["dimension"], r["categories"]) for r in recheck["labels"]] == [
        (items[1].id, "symptom", ["hang"])
    ]
    assert recheck["gold"] == []
    gold = manager.get("/api/studies/demo/recheck/").json()["gold"]
    assert [(g["item"], g["categories"]) for g in gold] == [(items[1].id, ["hang"])]
    by_version = manager.get("/api/studies/demo/agreement-by-version/").json()
    assert list(by_version["versions"]) == ["0.1.0"]
    assert by_version["versions"]["0.1.0"]["dimensions"]["root_cause"]["n_items"] == 2


def test_bad_input_is_400_in_one_shape_and_changes_nothing(api, study):
    manager = api("manager")
    published = study.codebook_version_id
    draft = manager.post(f"/api/codebook-versions/{published}/drafts/", {"label": "0.2.0"}).json()
    base = f"/api/codebook-versions/{draft['id']}"
    before = snapshot(draft["id"]), snapshot(published)
    bad = [
        (
            f"{base}/mapping/",
            {
                "dimension": "root_cause",
                "mapping": [{"from": "type_error", "kind": "merge", "to": ["nowhere"]}],
            },
            "is not a category of Root cause in version 0.2.0",
        ),
        (
            f"{base}/mapping/",
            {
                "dimension": "root_cause",
                "mapping": [
                    {"from": "type_error", "kind": "merge", "to": ["boundary_error"]},
                    {"from": "type_error", "kind": "remove"},
                ],
            },
            "mapped twice",
        ),
        (
            f"{base}/mapping/",
            {
                "dimension": "root_cause",
                "mapping": [
                    {"from": "type_error", "kind": "merge", "to": ["boundary_error"]},
                    {"from": "boundary_error", "kind": "merge", "to": ["type_error"]},
                ],
            },
            "a cycle",
        ),
        (
            f"{base}/category/",
            {"dimension": "symptom", "category": "crash", "parent": "crash_native"},
            "cycle",
        ),
        (
            f"{base}/categories/",
            {"dimension": "symptom", "key": "hang", "name": "Again"},
            "already",
        ),
        (f"{base}/categories/", {"dimension": "nope", "key": "x", "name": "X"}, "not a dimension"),
        (
            f"/api/codebook-versions/{published}/category/",
            {"dimension": "symptom", "category": "crash", "name": "X"},
            "is published and cannot change",
        ),
        (f"/api/codebook-versions/{published}/publish/", {}, "is published and cannot change"),
        ("/api/studies/demo/codebook-migrate/", {"version": draft["id"]}, "is a draft"),
        ("/api/studies/demo/codebook-migrate/", {"version": 10**9}, "No such codebook version"),
    ]
    for url, body, message in bad:
        response = manager.post(url, body, format="json")
        assert response.status_code == 400, (url, body, response.json())
        error = response.json()["error"]
        assert error["code"] == "invalid" and message in error["message"], (message, error)
    assert (snapshot(draft["id"]), snapshot(published)) == before
    response = manager.post(
        f"{base}/mapping/",
        {"dimension": "root_cause", "mapping": [{"from": "x", "kind": "explode"}]},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"


def test_who_may(api, study, people, make_user):
    published = study.codebook_version_id
    draft = (
        api("manager")
        .post(f"/api/codebook-versions/{published}/drafts/", {"label": "0.2.0"})
        .json()
    )
    base = f"/api/codebook-versions/{draft['id']}"
    body = {"dimension": "symptom", "category": "crash", "name": "X"}
    for name in ("annotator1", "adjudicator", "outsider"):
        client = api(name)
        assert client.post(f"{base}/category/", body, format="json").status_code == 403, name
        assert client.get(f"{base}/diff/").status_code == 200  # codebooks are readable
        assert client.post(
            "/api/studies/demo/codebook-migrate/", {"version": published}
        ).status_code in (403, 404)
        assert client.get("/api/studies/demo/proposals/").status_code in (403, 404)
    assert api("outsider").get("/api/studies/demo/recheck/").status_code == 404
    assert api("annotator1").get("/api/studies/demo/agreement-by-version/").status_code == 403
    assert api("adjudicator").get("/api/studies/demo/agreement-by-version/").status_code == 200
    assert APIClient().get(f"{base}/diff/").status_code in (401, 403)
    assert (
        CodebookVersion.objects.get(pk=draft["id"])
        .dimensions.get(key="symptom")
        .categories.get(key="crash")
        .name
        != "X"
    )


def test_proposals_over_the_api_both_ways(api, study, people):
    first = people["annotator1"]
    item = study.items.order_by("id").first()
    assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=first),
        user=first,
        answers={"root_cause": DimensionAnswer(category_keys=[], proposal="Silent NaN")},
        submit=False,
    )
    manager = api("manager")
    listed = manager.get("/api/studies/demo/proposals/").json()
    group = listed["dimensions"][0]["proposals"][0]
    assert (group["text"], group["count"], group["examples"][0]["item"]) == (
        "silent nan",
        1,
        item.id,
    )
    decided = manager.post(
        "/api/studies/demo/proposals/decide/",
        {
            "dimension": "root_cause",
            "text": "Silent NaN",
            "action": "map",
            "category": "numerical_error",
        },
        format="json",
    ).json()
    assert (decided["kind"], decided["category"]) == ("mapped", "numerical_error")
    created = manager.post(
        "/api/studies/demo/proposals/decide/",
        {
            "dimension": "root_cause",
            "text": "silent nan",
            "action": "create",
            "key": "silent_nan",
            "name": "Silent NaN",
        },
        format="json",
    ).json()
    assert created["kind"] == "created" and created["version"]["label"] == "0.1.1"
    response = manager.post(
        "/api/studies/demo/proposals/decide/",
        {"dimension": "root_cause", "text": "silent nan", "action": "map"},
        format="json",
    )
    assert response.status_code == 400


def test_exports_and_schema(api, study):
    client = api("annotator1")
    version_id = study.codebook_version_id
    exported = client.get(f"/api/codebook-versions/{version_id}/export/").json()
    assert exported["version"] == "0.1.0" and exported["dimensions"][0]["key"] == "screening"
    yaml_text = client.get(f"/api/codebook-versions/{version_id}/export/?as=yaml").content.decode()
    assert yaml_text.startswith("name:")
    markdown = client.get(
        f"/api/codebook-versions/{version_id}/export/?as=markdown"
    ).content.decode()
    assert markdown.startswith("# ")
    assert client.get(f"/api/codebook-versions/{version_id}/export/?as=pdf").status_code == 400
    # The counts are for the study's managers and adjudicators.
    assert (
        client.get(
            f"/api/codebook-versions/{version_id}/export/?as=markdown&study=demo"
        ).status_code
        == 403
    )
    schema = client.get("/api/schema/").content.decode()
    for route in ("/api/codebook-versions/{id}/mapping/", "/api/studies/{slug}/codebook-migrate/"):
        assert route in schema, route
