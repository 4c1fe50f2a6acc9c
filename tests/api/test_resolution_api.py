"""Resolution over the API: the disagreement queue, an item side by side, decisions with their
version check, the discussion and tie-breakers, and who may do which. Labels are made through
the labeling services, as the labeling page makes them."""

import json
import os

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from labeling.models import Assignment, Resolution, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator, study_member_add

# Two annotators who agree on everything but the root cause and the training stage.
FIRST = {
    "screening": ["include"],
    "symptom": ["crash"],
    "root_cause": ["api_misuse"],
    "fix_pattern": ["fix_api_usage"],
    "training_stage": ["checkpointing"],
}
SECOND = {**FIRST, "root_cause": ["configuration_error"], "training_stage": ["data_loading"]}
OPEN_DIMENSIONS = {"root_cause", "training_stage"}


def label(study, user, answers: dict[str, list[str]]) -> Assignment:
    """The user's next item of the study, labeled and submitted."""
    assignment = item_next_for_annotator(study=study, user=user)
    assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
        submit=True,
    )
    return assignment


@pytest.fixture
def api(people):
    def as_user(user_or_name) -> APIClient:
        client = APIClient()
        client.force_authenticate(people.get(user_or_name) or user_or_name)
        return client

    return as_user


@pytest.fixture
def disputed(study, people) -> StudyItem:
    """An item both annotators submitted, disagreeing on two dimensions."""
    first = label(study, people["annotator1"], FIRST)
    second = label(study, people["annotator2"], SECOND)
    assert first.item_id == second.item_id
    return StudyItem.objects.get(pk=first.item_id)


def item_url(item: StudyItem, route: str) -> str:
    return f"/api/studies/demo/items/{item.id}/{route}/"


def decide(client, item, dimension, categories, *, version=0, method="adjudicated", note=""):
    return client.post(
        item_url(item, "resolutions"),
        {
            "dimension": dimension,
            "categories": categories,
            "method": method,
            "note": note,
            "version": version,
        },
        format="json",
    )


# ----------------------------------------------------------------------------- end to end


def test_disagreements_list_the_open_dimensions_with_their_conflict_and_counts(api, disputed):
    body = api("adjudicator").get("/api/studies/demo/disagreements/").json()

    assert body["count"] == 2
    rows = {row["dimension"]: row for row in body["results"]}
    assert set(rows) == OPEN_DIMENSIONS
    root_cause = rows["root_cause"]
    issue = disputed.issue
    assert root_cause["item"] == disputed.id
    assert root_cause["issue"] == f"{issue.repository.full_name}#{issue.number}"
    assert root_cause["title"] == issue.title
    assert root_cause["url"] == issue.html_url
    assert root_cause["repository"] == issue.repository.full_name
    assert root_cause["round"] == disputed.round.name
    assert root_cause["conflict"] == "api_misuse vs configuration_error"
    assert root_cause["answers"] == {
        "annotator1": ["api_misuse"],
        "annotator2": ["configuration_error"],
    }
    assert rows["training_stage"]["conflict"] == "checkpointing vs data_loading"
    assert body["counts"] == {
        "dimension": {"root_cause": 1, "training_stage": 1},
        "conflict": {"api_misuse vs configuration_error": 1, "checkpointing vs data_loading": 1},
        "round": {disputed.round.name: 2},
        "repository": {issue.repository.full_name: 2},
    }


def test_disagreement_filters_narrow_the_rows_and_count_the_other_choices(api, disputed):
    client = api("manager")

    body = client.get("/api/studies/demo/disagreements/", {"dimension": "root_cause"}).json()
    assert [row["dimension"] for row in body["results"]] == ["root_cause"]
    assert body["count"] == 1
    # The dimension filter's own counts ignore it, so that every choice shows its number.
    assert body["counts"]["dimension"] == {"root_cause": 1, "training_stage": 1}
    assert body["counts"]["conflict"] == {"api_misuse vs configuration_error": 1}

    body = client.get(
        "/api/studies/demo/disagreements/", {"conflict": "checkpointing vs data_loading"}
    ).json()
    assert [row["dimension"] for row in body["results"]] == ["training_stage"]
    # A round or repository the study does not have is a 400 naming it, as for agreement.
    for parameter, value in (("round", "nope"), ("repository", "a/b")):
        refused = client.get("/api/studies/demo/disagreements/", {parameter: value})
        assert refused.status_code == 400
        assert parameter in refused.json()["error"]["details"]


def test_the_adjudicator_resolves_the_item_through_the_api(api, disputed):
    client = api("adjudicator")
    view = client.get(item_url(disputed, "resolution")).json()
    assert view["item"]["status"] == "in_resolution"
    states = {row["dimension"]: row["state"] for row in view["dimensions"]}
    assert {key for key, state in states.items() if state == "open"} == OPEN_DIMENSIONS
    assert states["screening"] == "resolved"  # recorded as consensus on submit

    first = decide(client, disputed, "root_cause", ["api_misuse"], note="the traceback says so")
    assert first.status_code == 200, first.json()
    assert first.json() == {
        **first.json(),
        "dimension": "root_cause",
        "categories": ["api_misuse"],
        "method": "adjudicated",
        "note": "the traceback says so",
        "decided_by": "adjudicator",
        "version": 1,
    }
    assert client.get("/api/studies/demo/disagreements/").json()["count"] == 1

    second = decide(client, disputed, "training_stage", ["checkpointing"], method="discussion")
    assert second.status_code == 200, second.json()

    disputed.refresh_from_db()
    assert disputed.status == StudyItem.Status.RESOLVED
    assert client.get("/api/studies/demo/disagreements/").json()["count"] == 0
    view = client.get(item_url(disputed, "resolution")).json()
    assert view["item"]["status"] == "resolved"
    gold = {row["dimension"]: row["resolution"] for row in view["dimensions"] if row["resolution"]}
    assert set(gold) == set(
        Resolution.objects.filter(item=disputed).values_list("dimension__key", flat=True)
    )
    for resolution in gold.values():
        assert resolution["method"] in {"consensus", "adjudicated", "discussion"}
        assert "decided_by" in resolution
    assert gold["root_cause"]["decided_by"] == "adjudicator"
    assert gold["training_stage"] == {
        **gold["training_stage"],
        "categories": ["checkpointing"],
        "method": "discussion",
        "decided_by": "adjudicator",
    }
    assert gold["screening"]["method"] == "consensus"
    assert gold["screening"]["decided_by"] is None


def test_the_side_by_side_view_shows_every_annotators_answer_and_the_definitions(
    api, disputed, django_assert_max_num_queries
):
    with django_assert_max_num_queries(20):
        view = api("adjudicator").get(item_url(disputed, "resolution")).json()

    assert view["item"]["id"] == disputed.id
    assert view["item"]["issue"] == str(disputed.issue)
    row = next(row for row in view["dimensions"] if row["dimension"] == "root_cause")
    answers = {answer["annotator"]: answer for answer in row["answers"]}
    assert set(answers) == {"annotator1", "annotator2"}
    assert answers["annotator1"]["categories"] == ["api_misuse"]
    assert set(answers["annotator1"]) == {
        "annotator", "applies", "categories", "unsure", "rationale", "evidence", "proposal",
        "seconds_spent", "is_tiebreaker",
    }  # fmt: skip
    assert {category["key"] for category in row["involved"]} == {
        "api_misuse",
        "configuration_error",
    }
    assert all(category["definition"] for category in row["involved"])
    assert set(row["involved"][0]) == {"key", "name", "definition", "include", "exclude"}
    assert row["resolution"] is None and row["revisions"] == []
    assert view["tiebreaker_candidates"] == []  # both annotators of the study labeled it
    assert view["waiting_for"] == []
    assert view["discussion"] == []


def test_the_disagreement_queue_reads_a_fixed_number_of_queries(
    api, study, people, django_assert_max_num_queries
):
    label(study, people["annotator1"], FIRST)
    label(study, people["annotator2"], SECOND)
    with CaptureQueriesContext(connection) as one_item:
        assert api("adjudicator").get("/api/studies/demo/disagreements/").json()["count"] == 2
    for _ in range(3):
        label(study, people["annotator1"], FIRST)
        label(study, people["annotator2"], SECOND)
    with django_assert_max_num_queries(len(one_item)):
        body = api("adjudicator").get("/api/studies/demo/disagreements/").json()
    assert body["count"] == 8


# ----------------------------------------------------------------------------- the conflict


def test_a_second_adjudicator_with_a_stale_version_gets_409_and_the_first_decision(
    api, study, disputed, make_user
):
    other = make_user("adjudicator2")
    study_member_add(study=study, user=other, role="adjudicator")
    first = decide(api("adjudicator"), disputed, "root_cause", ["api_misuse"], note="first")
    assert first.status_code == 200

    stale = decide(api(other), disputed, "root_cause", ["configuration_error"], note="second")

    assert stale.status_code == 409
    error = stale.json()["error"]
    assert error["code"] == "conflict"
    assert error["details"]["resolution"] == first.json()
    resolution = Resolution.objects.get(item=disputed, dimension__key="root_cause")
    assert [c.key for c in resolution.categories.all()] == ["api_misuse"]
    assert resolution.note == "first" and resolution.version == 1

    retried = decide(
        api(other),
        disputed,
        "root_cause",
        ["configuration_error"],
        version=error["details"]["resolution"]["version"],
        note="second, having read the first",
    )

    assert retried.status_code == 200
    assert retried.json()["version"] == 2
    assert retried.json()["decided_by"] == "adjudicator2"
    view = api("adjudicator").get(item_url(disputed, "resolution")).json()
    row = next(row for row in view["dimensions"] if row["dimension"] == "root_cause")
    assert row["resolution"]["categories"] == ["configuration_error"]
    assert [
        (r["changed_by"], r["previous_categories"], r["categories"], r["method"], r["note"])
        for r in row["revisions"]
    ] == [
        ("adjudicator", None, ["api_misuse"], "adjudicated", "first"),
        (
            "adjudicator2",
            ["api_misuse"],
            ["configuration_error"],
            "adjudicated",
            "second, having read the first",
        ),
    ]
    assert all(r["changed_at"] for r in row["revisions"])


@pytest.mark.parametrize(
    "decision, message",
    [
        ({"dimension": "root_cause", "categories": ["no_such_category"]}, "not a category"),
        ({"dimension": "root_cause", "categories": ["api_misuse", "type_error"]}, "one category"),
        ({"dimension": "no_such_dimension", "categories": []}, "Unknown dimension"),
        ({"dimension": "root_cause", "categories": ["api_misuse"], "method": "consensus"}, ""),
        ({"categories": ["api_misuse"]}, ""),
        ({"dimension": "root_cause", "categories": ["api_misuse"], "version": -1}, ""),
    ],
)
def test_a_bad_decision_is_400_and_changes_nothing(api, disputed, decision, message):
    response = api("adjudicator").post(item_url(disputed, "resolutions"), decision, format="json")

    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not Resolution.objects.filter(item=disputed, dimension__key="root_cause").exists()


def test_an_item_still_being_labeled_cannot_be_resolved(api, study, people):
    assignment = label(study, people["annotator1"], FIRST)
    item = assignment.item

    response = decide(api("manager"), item, "root_cause", ["api_misuse"])
    assert response.status_code == 400
    assert "still being labeled" in response.json()["error"]["message"]
    # An adjudicator does not even see an item that is still blind.
    assert decide(api("adjudicator"), item, "root_cause", ["api_misuse"]).status_code == 404
    assert api("adjudicator").get(item_url(item, "resolution")).status_code == 404


# ----------------------------------------------------------------------------- tie-breakers


def test_a_tiebreaker_goes_to_an_annotator_who_has_not_seen_the_item_and_the_majority_decides(
    api, study, people, disputed, make_user
):
    third = make_user("annotator3")
    study_member_add(study=study, user=third, role="annotator")
    client = api("adjudicator")
    assert client.get(item_url(disputed, "resolution")).json()["tiebreaker_candidates"] == [
        "annotator3"
    ]

    for seen in ("annotator1", "annotator2", "manager", "nobody"):
        refused = client.post(item_url(disputed, "tiebreaker"), {"annotator": seen}, format="json")
        assert refused.status_code == 400, seen
        assert refused.json()["error"]["details"] == {"annotator": seen}

    response = client.post(item_url(disputed, "tiebreaker"), {}, format="json")

    assert response.status_code == 201
    created = response.json()
    assert created["annotator"] == "annotator3" and created["item"] == disputed.id
    assert created["is_tiebreaker"] is True
    assert Assignment.objects.get(pk=created["id"]).annotator == third
    view = client.get(item_url(disputed, "resolution")).json()
    assert view["waiting_for"] == ["annotator3"] and view["tiebreaker_candidates"] == []
    none_left = client.post(item_url(disputed, "tiebreaker"), {}, format="json")
    assert none_left.status_code == 400

    tiebreak = label(study, third, FIRST)

    assert tiebreak.id == created["id"]
    disputed.refresh_from_db()
    assert disputed.status == StudyItem.Status.RESOLVED
    view = client.get(item_url(disputed, "resolution")).json()
    rows = {row["dimension"]: row for row in view["dimensions"]}
    for key in OPEN_DIMENSIONS:
        assert rows[key]["resolution"]["method"] == "majority"
        assert rows[key]["resolution"]["categories"] == FIRST[key]
    answers = {a["annotator"]: a["is_tiebreaker"] for a in rows["root_cause"]["answers"]}
    assert answers == {"annotator1": False, "annotator2": False, "annotator3": True}
    # A resolved item takes no more tie-breakers.
    assert client.post(item_url(disputed, "tiebreaker"), {}, format="json").status_code == 400


# ----------------------------------------------------------------------------- who may do what


def test_annotators_neither_resolve_nor_see_the_queue(api, disputed):
    client = api("annotator1")
    assert client.get("/api/studies/demo/disagreements/").status_code == 403
    response = decide(client, disputed, "root_cause", ["api_misuse"])
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert client.post(item_url(disputed, "tiebreaker"), {}, format="json").status_code == 403
    assert not Resolution.objects.filter(item=disputed, dimension__key="root_cause").exists()


def test_an_annotator_sees_nothing_of_the_item_before_submitting(api, study, people):
    assignment = label(study, people["annotator2"], SECOND)
    client = api("annotator1")  # has the same item, not submitted

    assert client.get(item_url(assignment.item, "resolution")).status_code == 404
    assert client.get(item_url(assignment.item, "discussion")).status_code == 404
    posted = client.post(item_url(assignment.item, "discussion"), {"body": "hm"}, format="json")
    assert posted.status_code == 404


def test_an_annotator_who_submitted_sees_only_the_gold_labels_and_the_discussion(
    api, study, people
):
    mine = label(study, people["annotator1"], FIRST)
    client = api("annotator1")
    before = client.get(item_url(mine.item, "resolution")).json()
    assert before["gold"] == [] and before["item"]["status"] == "open"

    label(study, people["annotator2"], SECOND)
    api("adjudicator").post(
        item_url(mine.item, "discussion"), {"body": "Why configuration?"}, format="json"
    )
    body = client.get(item_url(mine.item, "resolution")).json()

    assert set(body) == {"item", "gold", "discussion"}
    assert body["item"]["status"] == "in_resolution"
    gold = {resolution["dimension"]: resolution for resolution in body["gold"]}
    assert gold["screening"]["categories"] == ["include"]
    assert gold["screening"]["method"] == "consensus"
    assert not OPEN_DIMENSIONS & set(gold)
    assert [comment["body"] for comment in body["discussion"]] == ["Why configuration?"]
    text = json.dumps(body)
    assert (
        "annotator2" not in text
        and "configuration_error" not in text
        and "data_loading" not in text
    )

    posted = client.post(item_url(mine.item, "discussion"), {"body": "The log."}, format="json")
    assert posted.status_code == 201
    assert posted.json()["author"] == "annotator1"
    listed = api("annotator2").get(item_url(mine.item, "discussion")).json()["results"]
    assert [(c["author"], c["body"]) for c in listed] == [
        ("adjudicator", "Why configuration?"),
        ("annotator1", "The log."),
    ]
    # Their own assignments, as ever; never the other annotator's labels.
    assignments = client.get("/api/assignments/", {"item__study__slug": "demo"}).json()
    assert {row["annotator"] for row in assignments["results"]} == {"annotator1"}


def test_an_empty_comment_is_400(api, disputed):
    response = api("manager").post(item_url(disputed, "discussion"), {"body": "  "}, format="json")
    assert response.status_code == 400


def test_an_annotator_of_the_study_who_was_not_given_the_item_sees_nothing_of_it(
    api, study, disputed, make_user
):
    third = make_user("annotator3")
    study_member_add(study=study, user=third, role="annotator")
    for route in ("resolution", "discussion"):
        assert api(third).get(item_url(disputed, route)).status_code == 404
    response = api(third).post(item_url(disputed, "discussion"), {"body": "?"}, format="json")
    assert response.status_code == 404


def test_outsiders_and_other_studies_items_are_404(api, disputed, people, make_user):
    outsider = api("outsider")
    for route in ("resolution", "discussion"):
        assert outsider.get(item_url(disputed, route)).status_code == 404
    assert outsider.get("/api/studies/demo/disagreements/").status_code == 404
    assert decide(outsider, disputed, "root_cause", ["api_misuse"]).status_code == 404
    assert outsider.post(item_url(disputed, "tiebreaker"), {}, format="json").status_code == 404
    for route in ("resolution", "discussion"):
        assert api("manager").get(f"/api/studies/demo/items/999999/{route}/").status_code == 404
        assert api("manager").get(f"/api/studies/demo/items/nope/{route}/").status_code == 404


def test_anonymous_requests_are_refused_as_elsewhere(disputed):
    client = APIClient()
    for response in (
        client.get("/api/studies/demo/disagreements/"),
        client.get(item_url(disputed, "resolution")),
        client.get(item_url(disputed, "discussion")),
        client.post(item_url(disputed, "resolutions"), {}, format="json"),
        client.post(item_url(disputed, "tiebreaker"), {}, format="json"),
    ):
        assert response.status_code in (401, 403)
        assert response.json()["error"]["code"] == "not_authenticated"


def test_the_schema_is_valid_without_warnings():
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)


def test_the_schema_describes_the_resolution_endpoints(api, study):
    schema = api("manager").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/studies/{slug}/disagreements/",
        "/api/studies/{slug}/items/{item_id}/resolution/",
        "/api/studies/{slug}/items/{item_id}/resolutions/",
        "/api/studies/{slug}/items/{item_id}/discussion/",
        "/api/studies/{slug}/items/{item_id}/tiebreaker/",
    ):
        assert path in schema["paths"], path
    decision = schema["paths"]["/api/studies/{slug}/items/{item_id}/resolutions/"]["post"]
    assert {"200", "400", "403", "404", "409"} <= set(decision["responses"])


@pytest.mark.parametrize("route", ["resolution", "discussion"])
def test_an_item_id_beyond_any_database_integer_is_a_404(client, study, people, route):
    client.force_login(people["manager"])
    response = client.get(f"/api/studies/demo/items/{2**64}/{route}/")
    assert response.status_code == 404


# ------------------------------------------------- an adjudicator screens in a screened-out item

OPENED = {key: keys for key, keys in FIRST.items() if key != "screening"}
NOT_A_BUG = {"screening": ["not_a_bug"]}


def test_screening_in_over_the_api_sends_the_opened_dimensions_to_new_blind_annotators(
    api, study, people, make_user
):
    first = label(study, people["annotator1"], NOT_A_BUG)
    second = label(study, people["annotator2"], NOT_A_BUG)
    item = StudyItem.objects.get(pk=first.item_id)
    assert second.item_id == item.id
    newcomers = [make_user("annotator3"), make_user("annotator4")]
    for user in (*newcomers, people["adjudicator"]):
        study_member_add(study=study, user=user, role="annotator")
    client = api("adjudicator")
    view = client.get(item_url(item, "resolution")).json()
    (screening,) = [row for row in view["dimensions"] if row["dimension"] == "screening"]

    decided = decide(
        client, item, "screening", ["include"], version=screening["resolution"]["version"]
    )

    assert decided.status_code == 200, decided.json()
    view = client.get(item_url(item, "resolution")).json()
    assert view["item"]["status"] == "in_resolution"
    states = {row["dimension"]: row["state"] for row in view["dimensions"]}
    assert states.pop("screening") == "resolved"
    assert set(states.values()) == {"relabeling"}
    assert view["waiting_for"] == ["annotator3", "annotator4"]
    assert view["tiebreaker_candidates"] == []
    early = decide(client, item, "root_cause", ["api_misuse"])
    assert early.status_code == 400 and "have not seen" in early.json()["error"]["message"]

    for user, root_cause in zip(newcomers, ("api_misuse", "configuration_error"), strict=True):
        own = api(user)
        asked = own.get(item_url(item, "labeling")).json()
        assert "screening" not in [row["key"] for row in asked["dimensions"]]
        assert own.get(item_url(item, "resolution")).status_code == 404  # blind until submitted
        assignment = asked["assignment"]["id"]
        refused = own.post(
            f"/api/assignments/{assignment}/submit/",
            {"answers": {"screening": {"categories": ["include"]}}},
            format="json",
        )
        assert refused.status_code == 400
        answers = {**OPENED, "root_cause": [root_cause]}
        submitted = own.post(
            f"/api/assignments/{assignment}/submit/",
            {"answers": {key: {"categories": keys} for key, keys in answers.items()}},
            format="json",
        )
        assert submitted.status_code == 200, submitted.json()

    rows = client.get("/api/studies/demo/disagreements/").json()["results"]
    assert [(row["dimension"], row["answers"]) for row in rows] == [
        ("root_cause", {"annotator3": ["api_misuse"], "annotator4": ["configuration_error"]})
    ]
    tiebreak = client.post(
        item_url(item, "tiebreaker"), {"annotator": "adjudicator"}, format="json"
    )
    assert tiebreak.status_code == 400
    assert decide(client, item, "root_cause", ["api_misuse"]).status_code == 200
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
