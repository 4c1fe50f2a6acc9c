"""Setting a study up over the API: creating one by a selection and a seeded rule, the live
count, who may create, bad input, the dashboard, members joining, leaving and handing work on,
and the issue search. Data is made through the services, as the pages and the CLI make it."""

from collections import Counter

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone
from rest_framework.test import APIClient

from labeling.models import Assignment, Membership, Study
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator

REPOSITORIES = ["NVIDIA/Megatron-LM", "huggingface/transformers", "microsoft/DeepSpeed"]


@pytest.fixture
def creator(make_user):
    """A user given the add-study permission, as an admin would in a user's permissions."""
    user = make_user("creator")
    user.user_permissions.add(Permission.objects.get(codename="add_study"))
    return user


@pytest.fixture
def api(people, creator):
    def as_user(user_or_name) -> APIClient:
        client = APIClient()
        if isinstance(user_or_name, str):
            user_or_name = creator if user_or_name == "creator" else people[user_or_name]
        client.force_authenticate(user_or_name)
        return client

    return as_user


def body(version, **changes) -> dict:
    """A paper-like setup: 5 issues per repository with seed 7, a 6-issue pilot, the rest."""
    data = {
        "slug": "paper",
        "name": "Paper replication",
        "description": "As in the paper.",
        "codebook_version": version.id,
        "k": 2,
        "overlap": 1.0,
        "blind": True,
        "resolution_rule": "adjudication",
        "selection": {
            "repositories": REPOSITORIES,
            "state": "any",
            "labels": [],
            "labels_match": "any",
            "created_after": None,
            "created_before": None,
            "has_fix": None,
            "query": "",
        },
        "sampling": {"method": "stratified", "per_repository": 5, "seed": 7},
        "rounds": [{"name": "Pilot", "kind": "pilot", "size": 6}, {"name": "Main"}],
        "annotators": ["annotator1", "annotator2"],
        "managers": [],
        "adjudicators": ["adjudicator"],
    }
    return {**data, **changes}


def references_of(slug: str) -> set[str]:
    return {str(item.issue) for item in Study.objects.get(slug=slug).items.select_related(
        "issue__repository"
    )}  # fmt: skip


def roles_of(slug: str, username: str) -> set[str]:
    return set(
        Membership.objects.filter(study__slug=slug, user__username=username).values_list(
            "role", flat=True
        )
    )


def submit_one(study, user) -> Assignment:
    """The user's next item of the study, labeled and submitted."""
    assignment = item_next_for_annotator(study=study, user=user)
    assignment_save(
        assignment=assignment,
        user=user,
        answers={"screening": DimensionAnswer(category_keys=["not_a_bug"])},
        submit=True,
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    return assignment


# Creating a study


def test_create_draws_a_stratified_seeded_sample_into_a_pilot_and_a_main_round(
    api, codebook_version, sample_issues, people
):
    response = api("creator").post("/api/studies/", body(codebook_version), format="json")

    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["slug"] == "paper"
    assert created["n_items"] == 15
    assert [(r["name"], r["kind"]) for r in created["rounds"]] == [
        ("Pilot", "pilot"),
        ("Main", "main"),
    ]
    sampling = created["sampling"]
    assert sampling["seed"] == 7
    assert sampling["method"] == "stratified"
    assert sampling["per_repository"] == 5
    assert sampling["selection"]["repositories"] == REPOSITORIES
    assert sampling["candidates"] == dict.fromkeys(REPOSITORIES, 15)
    assert sampling["sampled"] == dict.fromkeys(sorted(REPOSITORIES), 5)
    study = Study.objects.get(slug="paper")
    assert study.sampling == sampling
    items = study.items.select_related("round", "issue__repository")
    assert Counter(item.round.name for item in items) == {"Pilot": 6, "Main": 9}
    assert Counter(item.issue.repository.full_name for item in items) == dict.fromkeys(
        REPOSITORIES, 5
    )
    assert Assignment.objects.filter(item__study=study).count() == 30  # k=2 for every item
    assert roles_of("paper", "creator") == {"manager"}
    assert roles_of("paper", "adjudicator") == {"adjudicator"}
    assert roles_of("paper", "annotator1") == {"annotator"}


def test_the_same_rule_under_another_slug_draws_the_same_issues(
    api, codebook_version, sample_issues
):
    client = api("creator")
    assert client.post("/api/studies/", body(codebook_version), format="json").status_code == 201
    again = body(codebook_version, slug="paper-again")
    assert client.post("/api/studies/", again, format="json").status_code == 201

    assert references_of("paper") == references_of("paper-again")
    other_seed = body(codebook_version, slug="paper-seed-8")
    other_seed["sampling"] = {**other_seed["sampling"], "seed": 8}
    assert client.post("/api/studies/", other_seed, format="json").status_code == 201
    assert references_of("paper-seed-8") != references_of("paper")


def test_the_preview_counts_what_creating_draws(api, codebook_version, sample_issues):
    setup = body(codebook_version)
    client = api("creator")
    preview = client.post(
        "/api/studies/preview/",
        {"selection": setup["selection"], "sampling": setup["sampling"]},
        format="json",
    )

    assert preview.status_code == 200, preview.json()
    counts = preview.json()
    assert counts["candidates"] == dict.fromkeys(REPOSITORIES, 15)
    assert counts["sampled"] == dict.fromkeys(sorted(REPOSITORIES), 5)
    assert counts["total_candidates"] == 45
    assert counts["total_sampled"] == len(counts["references"]) == 15
    assert client.post("/api/studies/", setup, format="json").status_code == 201
    assert set(counts["references"]) == references_of("paper")
    study = Study.objects.get(slug="paper")
    pilot = {str(item.issue) for item in study.items.filter(round__name="Pilot")}
    assert pilot == set(counts["references"][:6])  # the pilot takes the sample in rank order


def test_a_preview_narrows_by_state_labels_and_words(api, sample_issues):
    selection = {"labels": ["BUG"], "labels_match": "all", "state": "closed"}
    counts = api("creator").post("/api/studies/preview/", {"selection": selection}, format="json")

    assert counts.status_code == 200
    expected = [
        i
        for i in sample_issues
        if i.state == "closed" and "bug" in {label.lower() for label in i.labels}
    ]
    assert counts.json()["total_sampled"] == len(expected) > 0
    nothing = {"query": "no-such-word-anywhere-in-the-corpus"}
    counts = api("creator").post("/api/studies/preview/", {"selection": nothing}, format="json")
    assert counts.json()["total_candidates"] == 0


def test_a_random_sample_of_a_size(api, codebook_version, sample_issues):
    setup = body(
        codebook_version,
        selection={},
        sampling={"method": "random", "size": 10, "seed": 3},
        rounds=[{"name": "Main"}],
        k=3,
        overlap=0.5,
        resolution_rule="majority",
        annotators=["annotator1", "annotator2", "manager"],
    )
    response = api("creator").post("/api/studies/", setup, format="json")

    assert response.status_code == 201, response.json()
    study = Study.objects.get(slug="paper")
    assert study.items.count() == 10
    assert (study.k, study.overlap, study.resolution_rule) == (3, 0.5, "majority")
    assert sorted(study.items.values_list("annotators_needed", flat=True)) == [1] * 5 + [3] * 5


# Who may create


def test_an_outsider_without_the_permission_may_not_create_or_preview(
    api, codebook_version, sample_issues
):
    for url, data in (
        ("/api/studies/", body(codebook_version)),
        ("/api/studies/preview/", {"selection": {}}),
    ):
        response = api("outsider").post(url, data, format="json")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"
    assert not Study.objects.exists()


def test_a_manager_of_another_study_without_the_permission_may_not_create(
    api, codebook_version, study
):
    response = api("manager").post("/api/studies/", body(codebook_version), format="json")
    assert response.status_code == 403


def test_a_superuser_creates_and_becomes_manager(
    codebook_version, sample_issues, people, make_user
):
    client = APIClient()
    client.force_authenticate(make_user("root", is_superuser=True, is_staff=True))
    setup = body(codebook_version, managers=["manager"])

    response = client.post("/api/studies/", setup, format="json")

    assert response.status_code == 201
    assert roles_of("paper", "root") == {"manager"}
    assert roles_of("paper", "manager") == {"manager"}


def test_the_created_study_is_the_creators_to_read(api, codebook_version, sample_issues):
    client = api("creator")
    client.post("/api/studies/", body(codebook_version), format="json")

    study = client.get("/api/studies/paper/").json()
    assert study["sampling"]["seed"] == 7
    assert study["overlap"] == 1.0
    assert api("outsider").get("/api/studies/paper/").status_code == 404


# Bad input


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"sampling": {"method": "random", "size": 5, "seed": -1}}, "sampling"),
        ({"sampling": {"method": "random", "size": 5, "seed": 2**63}}, "sampling"),
        ({"sampling": {"method": "random", "size": 0}}, "sampling"),
        ({"sampling": {"method": "random"}}, "sampling"),
        ({"sampling": {"method": "stratified"}}, "sampling"),
        ({"sampling": {"method": "stratified", "per_repository": 0}}, "sampling"),
        ({"sampling": {"method": "cluster"}}, "sampling"),
        ({"overlap": 2}, "overlap"),
        ({"overlap": -0.1}, "overlap"),
        ({"k": 0}, "k"),
        ({"slug": "not a slug"}, "slug"),
        ({"codebook_version": 999_999}, "codebook_version"),
        ({"rounds": []}, "rounds"),
        ({"rounds": [{"name": "Pilot", "size": 0}, {"name": "Main"}]}, "rounds"),
        ({"selection": {"state": "merged"}}, "selection"),
        ({"selection": {"repositories": ["nobody/nothing"]}}, "selection"),
        (
            {
                "selection": {
                    "created_after": "2025-01-01T00:00:00Z",
                    "created_before": "2024-01-01T00:00:00Z",
                }
            },
            "selection",
        ),
    ],
)
def test_invalid_input_is_a_400_naming_the_field(
    api, codebook_version, sample_issues, changes, field
):
    response = api("creator").post(
        "/api/studies/", body(codebook_version, **changes), format="json"
    )

    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["details"]
    assert not Study.objects.exists()


def test_unknown_usernames_are_a_400_naming_them(api, codebook_version, sample_issues):
    setup = body(codebook_version, annotators=["annotator1", "ghost", "phantom"])

    response = api("creator").post("/api/studies/", setup, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"annotators": ["No such user: ghost, phantom."]}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"selection": {"query": "no-such-word-anywhere"}}, "matches no issue"),
        (
            {"rounds": [{"name": "Main"}, {"name": "Rest"}]},
            "Only the last round takes the rest",
        ),
        ({"rounds": [{"name": "A", "size": 3}, {"name": "A"}]}, "different names"),
        ({"resolution_rule": "majority"}, "k = 3"),
        ({"overlap": 0.5, "k": 1}, "k of 2"),
    ],
)
def test_rules_of_the_domain_are_400s(api, codebook_version, sample_issues, changes, message):
    response = api("creator").post(
        "/api/studies/", body(codebook_version, **changes), format="json"
    )

    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not Study.objects.exists()


def test_a_taken_slug_is_a_400(api, codebook_version, study):
    response = api("creator").post(
        "/api/studies/", body(codebook_version, slug="demo"), format="json"
    )
    assert response.status_code == 400
    assert "exists already" in response.json()["error"]["message"]


# The dashboard


def test_the_dashboard_of_a_created_study(api, codebook_version, sample_issues):
    client = api("creator")
    client.post("/api/studies/", body(codebook_version), format="json")

    response = client.get("/api/studies/paper/dashboard/")

    assert response.status_code == 200
    dashboard = response.json()
    assert set(dashboard) == {"funnel", "annotators", "rounds", "changed_upstream"}
    by_system = {row["system"]: row for row in dashboard["funnel"]}
    assert list(by_system) == [*sorted(REPOSITORIES), "all"]
    assert by_system["all"]["candidates"] == 45
    assert by_system["all"]["sampled"] == 15
    assert by_system["microsoft/DeepSpeed"] == {
        "system": "microsoft/DeepSpeed",
        "candidates": 15,
        "sampled": 5,
        "screened_in": 0,
        "labeled": 0,
        "resolved": 0,
    }
    assert [row["annotator"] for row in dashboard["annotators"]] == ["annotator1", "annotator2"]
    assert dashboard["annotators"][0]["assigned"] == 15
    assert dashboard["annotators"][0]["percent"] == 0
    assert [(r["name"], r["n_items"]) for r in dashboard["rounds"]] == [("Pilot", 6), ("Main", 9)]
    assert dashboard["changed_upstream"] == []


def test_the_dashboard_is_for_managers_and_adjudicators(api, study, people):
    submitted = submit_one(study, people["annotator1"])
    changed = submitted.item
    changed.changed_upstream_at = timezone.now()
    changed.save(update_fields=["changed_upstream_at"])

    seen = api("adjudicator").get("/api/studies/demo/dashboard/")

    assert seen.status_code == 200
    dashboard = seen.json()
    assert dashboard["funnel"][-1]["candidates"] is None  # made from a list of issues
    assert dashboard["annotators"][0]["submitted"] == 1
    assert dashboard["changed_upstream"] == [
        {
            "item": changed.id,
            "issue": str(changed.issue),
            "title": changed.issue.title,
            "changed_upstream_at": dashboard["changed_upstream"][0]["changed_upstream_at"],
        }
    ]
    assert api("manager").get("/api/studies/demo/dashboard/").status_code == 200
    assert api("annotator1").get("/api/studies/demo/dashboard/").status_code == 403
    assert api("outsider").get("/api/studies/demo/dashboard/").status_code == 404
    assert api("manager").get("/api/studies/nope/dashboard/").status_code == 404


# Members


def test_a_new_annotator_gets_a_share_of_the_work(api, study, make_user):
    make_user("annotator3")

    response = api("manager").post(
        "/api/studies/demo/members/", {"username": "annotator3", "role": "annotator"}, format="json"
    )

    assert response.status_code == 201
    added = response.json()
    held = Assignment.objects.filter(item__study=study, annotator__username="annotator3").count()
    assert added == {"username": "annotator3", "role": "annotator", "assigned": held}
    assert held == 30  # 90 assignments evened out over three annotators
    assert roles_of("demo", "annotator3") == {"annotator"}


def test_adding_a_manager_or_adjudicator(api, study, people):
    response = api("manager").post(
        "/api/studies/demo/members/", {"username": "outsider", "role": "adjudicator"}, format="json"
    )

    assert response.status_code == 201
    assert response.json() == {"username": "outsider", "role": "adjudicator", "assigned": None}
    assert roles_of("demo", "outsider") == {"adjudicator"}
    listed = api("manager").get("/api/studies/demo/members/").json()["results"]
    assert {"username": "outsider", "role": "adjudicator"} in listed
    assert {"username": "manager", "role": "manager"} in listed


@pytest.mark.parametrize(
    "data, field",
    [
        ({"username": "ghost", "role": "annotator"}, "username"),
        ({"username": "outsider", "role": "owner"}, "role"),
        ({"role": "annotator"}, "username"),
    ],
)
def test_adding_a_member_with_bad_input_is_a_400(api, study, data, field):
    response = api("manager").post("/api/studies/demo/members/", data, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]


def test_members_are_for_the_managers(api, study):
    data = {"username": "outsider", "role": "annotator"}
    for role in ("annotator1", "adjudicator"):
        assert api(role).post("/api/studies/demo/members/", data, format="json").status_code == 403
        assert api(role).get("/api/studies/demo/members/").status_code == 403
    assert (
        api("outsider").post("/api/studies/demo/members/", data, format="json").status_code == 404
    )
    assert not roles_of("demo", "outsider")


def test_a_removed_annotator_hands_unfinished_work_on_and_keeps_submitted_labels(
    api, study, people, make_user
):
    submitted = submit_one(study, people["annotator1"])
    make_user("annotator3")
    client = api("manager")
    client.post(
        "/api/studies/demo/members/", {"username": "annotator3", "role": "annotator"}, format="json"
    )
    open_before = Assignment.objects.filter(
        item__study=study, annotator=people["annotator1"], status=Assignment.Status.TODO
    ).count()

    response = client.delete("/api/studies/demo/members/annotator1/annotator/")

    assert response.status_code == 200
    assert 0 < response.json()["moved"] <= open_before
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED
    assert submitted.annotator == people["annotator1"]
    assert submitted.annotations.filter(dimension__key="screening").exists()
    assert not Assignment.objects.filter(
        item__study=study,
        annotator=people["annotator1"],
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    ).exists()
    assert roles_of("demo", "annotator1") == set()
    again = client.delete("/api/studies/demo/members/annotator1/annotator/")
    assert again.status_code == 404


def test_the_last_manager_stays(api, study, people):
    client = api("manager")

    last = client.delete("/api/studies/demo/members/manager/manager/")

    assert last.status_code == 400
    assert "at least one manager" in last.json()["error"]["message"]
    assert roles_of("demo", "manager") == {"manager"}
    client.post(
        "/api/studies/demo/members/", {"username": "adjudicator", "role": "manager"}, format="json"
    )
    assert client.delete("/api/studies/demo/members/manager/manager/").status_code == 200
    assert roles_of("demo", "manager") == set()
    assert roles_of("demo", "adjudicator") == {"manager", "adjudicator"}


def test_removing_an_adjudicator(api, study):
    response = api("manager").delete("/api/studies/demo/members/adjudicator/adjudicator/")
    assert response.status_code == 200
    assert response.json() == {"moved": 0}
    assert roles_of("demo", "adjudicator") == set()


def test_removing_who_is_not_a_member_in_that_role_is_a_404(api, study):
    client = api("manager")
    assert client.delete("/api/studies/demo/members/outsider/annotator/").status_code == 404
    assert client.delete("/api/studies/demo/members/ghost/manager/").status_code == 404
    assert client.delete("/api/studies/demo/members/manager/owner/").status_code == 404


def test_reassigning_an_annotators_open_items(api, study, people, make_user):
    make_user("annotator3")
    client = api("manager")
    client.post(
        "/api/studies/demo/members/", {"username": "annotator3", "role": "annotator"}, format="json"
    )
    submit_one(study, people["annotator1"])

    response = client.post(
        "/api/studies/demo/members/annotator1/reassign/", {"to": "annotator3"}, format="json"
    )

    assert response.status_code == 200
    moved = response.json()["moved"]
    assert moved > 0
    assert (
        Assignment.objects.filter(
            item__study=study, annotator=people["annotator1"], status=Assignment.Status.SUBMITTED
        ).count()
        == 1
    )
    assert (
        Assignment.objects.filter(item__study=study, annotator__username="annotator3").count()
        == 30 + moved
    )
    left_with_1 = Assignment.objects.filter(
        item__study=study,
        annotator=people["annotator1"],
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    ).values_list("item_id", flat=True)
    held_by_3 = Assignment.objects.filter(
        item__study=study, annotator__username="annotator3"
    ).values_list("item_id", flat=True)
    assert set(left_with_1) <= set(held_by_3)  # what stayed could not go to annotator3
    assert roles_of("demo", "annotator1") == {"annotator"}  # still an annotator


def test_reassigning_with_bad_input(api, study, people):
    client = api("manager")
    unknown = client.post(
        "/api/studies/demo/members/annotator1/reassign/", {"to": "ghost"}, format="json"
    )
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"] == {"to": ["No such user: ghost."]}
    not_annotator = client.post(
        "/api/studies/demo/members/annotator1/reassign/", {"to": "outsider"}, format="json"
    )
    assert not_annotator.status_code == 400
    assert "not another annotator" in not_annotator.json()["error"]["message"]
    assert (
        client.post(
            "/api/studies/demo/members/adjudicator/reassign/", {}, format="json"
        ).status_code
        == 404
    )
    assert (
        api("annotator2")
        .post("/api/studies/demo/members/annotator1/reassign/", {}, format="json")
        .status_code
        == 403
    )


# The issue search


def test_issues_are_searched_by_words_of_the_title_or_body(api, study, sample_issues):
    issue = sample_issues[0]
    word = max(issue.title.split(), key=len)

    found = api("manager").get("/api/issues/", {"search": word}).json()

    expected = [
        i.id
        for i in sample_issues
        if word.lower() in i.title.lower() or word.lower() in (i.body or "").lower()
    ]
    assert sorted(row["id"] for row in found["results"]) == sorted(expected)
    assert issue.id in expected
    two_words = api("manager").get("/api/issues/", {"search": f"{word} zzzqqq-nothing"}).json()
    assert two_words["results"] == []


def test_issues_are_filtered_by_labels(api, study, sample_issues):
    found = api("manager").get("/api/issues/", {"labels": "Bug,training"}).json()

    expected = [
        i.id for i in sample_issues if {"bug", "training"} <= {label.lower() for label in i.labels}
    ]
    assert sorted(row["id"] for row in found["results"]) == sorted(expected)


def test_the_search_is_only_over_what_the_user_may_see(api, study, sample_issues):
    word = max(sample_issues[0].title.split(), key=len)
    assert api("outsider").get("/api/issues/", {"search": word}).json()["results"] == []


def test_the_schema_describes_the_setup_endpoints(api, study):
    schema = api("manager").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"201", "400", "403"} <= set(paths["/api/studies/"]["post"]["responses"])
    for path in (
        "/api/studies/preview/",
        "/api/studies/{slug}/dashboard/",
        "/api/studies/{slug}/members/",
        "/api/studies/{slug}/members/{username}/{role}/",
        "/api/studies/{slug}/members/{username}/reassign/",
    ):
        assert path in paths, path
    issue_filters = {parameter["name"] for parameter in paths["/api/issues/"]["get"]["parameters"]}
    assert {"search", "labels"} <= issue_filters


def test_who_labels_what_a_screen_in_opens_is_set_at_creation(api, codebook_version, sample_issues):
    response = api("creator").post(
        "/api/studies/",
        body(codebook_version, screen_in_override="adjudicator"),
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["screen_in_override"] == "adjudicator"
    assert Study.objects.get(slug="paper").screen_in_override == "adjudicator"

    wrong = api("creator").post(
        "/api/studies/",
        body(codebook_version, slug="wrong", screen_in_override="annotators"),
        format="json",
    )
    assert wrong.status_code == 400
    assert "screen_in_override" in wrong.json()["error"]["details"]

    default = api("creator").post(
        "/api/studies/", body(codebook_version, slug="default"), format="json"
    )
    assert default.json()["screen_in_override"] == "relabel"


def test_gold_labels_of_similar_issues_are_a_setting_off_by_default(
    api, codebook_version, sample_issues
):
    default = api("creator").post("/api/studies/", body(codebook_version), format="json")
    assert default.status_code == 201, default.json()
    assert default.json()["show_similar_gold"] is False
    shown = api("creator").post(
        "/api/studies/", body(codebook_version, slug="shown", show_similar_gold=True), format="json"
    )
    assert shown.status_code == 201, shown.json()
    assert Study.objects.get(slug="shown").show_similar_gold is True


@pytest.mark.parametrize("slug", ["new", "restore"])
def test_a_slug_that_names_a_page_is_a_400(api, codebook_version, sample_issues, slug):
    """/studies/new/ and /studies/restore/ are pages: a study of that slug could not be opened."""
    response = api("creator").post(
        "/api/studies/", body(codebook_version, slug=slug), format="json"
    )
    assert response.status_code == 400
    assert "names a page of the product" in response.json()["error"]["message"]
    assert not Study.objects.exists()
