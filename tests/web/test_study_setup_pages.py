"""Setting a study up through the pages (test client): who may open /studies/new/, creating a
study by a seeded stratified rule with a pilot round, the live count, form errors, the study
dashboard and who sees it, the members page, and the "Label next item" button."""

import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from corpus.selectors import IssueSelection
from labeling.models import Assignment, Membership, Study
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.setup import SamplingRule, study_sample_preview, study_setup
from labeling.services.studies import study_create, study_member_add
from tests.conftest import PASSWORD, SCREENED_IN

CLOSED_WITH_FIX = IssueSelection(state="closed", has_fix=True)


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def creator(people):
    manager = people["manager"]
    manager.user_permissions.add(Permission.objects.get(codename="add_study"))
    return manager


def setup_post(codebook_version, people, **changes) -> dict:
    data = {
        "name": "Closed issues with a fix",
        "slug": "fixes",
        "description": "As in the paper.",
        "codebook_version": codebook_version.pk,
        "k": "2",
        "overlap": "100",
        "blind": "on",
        "resolution_rule": "adjudication",
        "state": "closed",
        "labels": "",
        "labels_match": "any",
        "has_fix": "yes",
        "query": "",
        "method": "per_repository",
        "sample_size": "2",
        "seed": "7",
        "pilot_size": "2",
        "annotators": [people["annotator1"].pk, people["annotator2"].pk],
        "adjudicators": [people["adjudicator"].pk],
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def rule_of(per_repository=2, seed=7) -> SamplingRule:
    return SamplingRule(
        selection=CLOSED_WITH_FIX, method="stratified", per_repository=per_repository, seed=seed
    )


# Who may set a study up


def test_superuser_may_open_the_setup_page_and_finds_it_from_home(client, make_user, sample_issues):
    admin = make_user("admin", is_superuser=True, is_staff=True)
    login(client, admin)
    home = client.get("/")
    assert 'href="/studies/new/"' in home.content.decode()
    page = client.get("/studies/new/")
    assert page.status_code == 200
    html = page.content.decode()
    for name in ("NVIDIA/Megatron-LM", "huggingface/transformers", "microsoft/DeepSpeed"):
        assert f'value="{name}"' in html


def test_user_with_the_add_study_permission_may_open_the_setup_page(client, creator, db):
    login(client, creator)
    assert client.get("/studies/new/").status_code == 200
    assert client.get("/studies/new/preview/").status_code == 200


def test_plain_user_may_not_set_a_study_up(client, people, codebook_version, sample_issues):
    login(client, people["outsider"])
    assert client.get("/studies/new/").status_code == 403
    assert client.post("/studies/new/", setup_post(codebook_version, people)).status_code == 403
    assert client.get("/studies/new/preview/").status_code == 403
    assert 'href="/studies/new/"' not in client.get("/").content.decode()
    assert not Study.objects.exists()


def test_anonymous_user_is_sent_to_log_in(client, db):
    response = client.get("/studies/new/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


# Creating a study


def test_create_stratified_with_seed_and_pilot_round(
    client, creator, people, codebook_version, sample_issues
):
    expected = study_sample_preview(rule=rule_of())
    login(client, creator)
    response = client.post("/studies/new/", setup_post(codebook_version, people))
    assert response.status_code == 302
    assert response["Location"] == "/studies/fixes/"
    study = Study.objects.get(slug="fixes")
    assert study.k == 2 and study.blind and study.description == "As in the paper."
    # Items per round and per repository, exactly: 2 of each repository, the first 2 drawn in
    # the pilot round.
    per_repository: dict[str, int] = {}
    rounds: dict[str, list[str]] = {}
    for item in study.items.select_related("issue__repository", "round").order_by("id"):
        reference = str(item.issue)
        per_repository[item.issue.repository.full_name] = (
            per_repository.get(item.issue.repository.full_name, 0) + 1
        )
        rounds.setdefault(item.round.name, []).append(reference)
    assert per_repository == {
        "NVIDIA/Megatron-LM": 2,
        "huggingface/transformers": 2,
        "microsoft/DeepSpeed": 2,
    }
    assert sorted(rounds["Pilot"]) == sorted(expected.references[:2])
    assert sorted(rounds["Main"]) == sorted(expected.references[2:])
    assert [(r.name, r.kind) for r in study.rounds.order_by("position")] == [
        ("Pilot", "pilot"),
        ("Main", "main"),
    ]
    # The rule and the seed are stored with the study.
    sampling = study.sampling
    assert sampling["method"] == "stratified" and sampling["per_repository"] == 2
    assert sampling["seed"] == 7
    assert sampling["selection"]["state"] == "closed" and sampling["selection"]["has_fix"] is True
    assert sampling["sampled"] == expected.sampled
    # Members: the creator manages; every item has k annotators.
    roles = set(study.memberships.values_list("user__username", "role"))
    assert ("manager", "manager") in roles
    assert {("annotator1", "annotator"), ("annotator2", "annotator")} <= roles
    assert ("adjudicator", "adjudicator") in roles
    assert Assignment.objects.filter(item__study=study).count() == 6 * 2
    overview = client.get(response["Location"])
    assert "6 items drawn" in overview.content.decode()


def test_proportional_and_random_rules_reach_the_service(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    client.post(
        "/studies/new/",
        setup_post(codebook_version, people, method="proportional", sample_size="4", slug="p"),
    )
    assert Study.objects.get(slug="p").sampling["size"] == 4
    assert Study.objects.get(slug="p").items.count() == 4
    client.post(
        "/studies/new/",
        setup_post(
            codebook_version, people, method="random", sample_size="3", slug="r", pilot_size=""
        ),
    )
    study = Study.objects.get(slug="r")
    assert study.sampling["method"] == "random" and study.items.count() == 3
    assert list(study.rounds.values_list("name", flat=True)) == ["Main"]


def test_preview_counts_equal_what_is_drawn(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    data = setup_post(codebook_version, people)
    preview = client.post("/studies/new/preview/", data)
    assert preview.status_code == 200
    html = preview.content.decode()
    expected = study_sample_preview(rule=rule_of())
    for system, candidates in expected.candidates.items():
        cells = r'<th scope="row">.*?</th><td>(\d+)</td><td>(\d+)</td>'
        row = re.search(rf'data-system="{re.escape(system)}">{cells}', html)
        assert row, system
        assert (int(row[1]), int(row[2])) == (candidates, expected.sampled[system])
    total = re.search(
        r'data-system="all"><th scope="row">All</th><td>(\d+)</td><td>(\d+)</td>', html
    )
    assert (int(total[1]), int(total[2])) == (8, 6)
    client.post("/studies/new/", data)
    study = Study.objects.get(slug="fixes")
    drawn = sorted(str(item.issue) for item in study.items.select_related("issue__repository"))
    assert drawn == sorted(expected.references)
    # The same endpoint answers a GET (query string) as well.
    assert (
        client.get(
            "/studies/new/preview/",
            {"state": "any", "labels_match": "any", "method": "all", "seed": "7"},
        ).status_code
        == 200
    )


def test_preview_of_an_incomplete_rule_says_what_is_missing(client, creator, sample_issues):
    login(client, creator)
    html = client.post(
        "/studies/new/preview/",
        {"state": "any", "labels_match": "any", "method": "random", "seed": "7"},
    ).content.decode()
    assert "Complete the rule" in html and "N" in html


def test_bad_form_keeps_the_input_and_shows_the_error(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    response = client.post(
        "/studies/new/",
        setup_post(codebook_version, people, resolution_rule="majority", query="cuda oom"),
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "A majority decides only with k of 3 or more." in html
    assert 'value="Closed issues with a fix"' in html
    assert 'value="cuda oom"' in html
    assert re.search(r'<option value="per_repository" selected>', html)
    assert not Study.objects.exists()


def test_a_taken_slug_and_a_rule_without_n_are_errors_next_to_their_fields(
    client, creator, people, codebook_version, sample_issues
):
    study_create(slug="fixes", name="Other", codebook_version=codebook_version)
    login(client, creator)
    html = client.post(
        "/studies/new/", setup_post(codebook_version, people, sample_size="")
    ).content.decode()
    assert "A study with this slug exists already." in html
    assert "This sampling method needs N." in html


def test_a_selection_that_matches_nothing_is_reported(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    response = client.post(
        "/studies/new/", setup_post(codebook_version, people, query="no-such-word-anywhere")
    )
    assert response.status_code == 400
    assert "The selection matches no issue of the corpus." in response.content.decode()


# The dashboard


@pytest.fixture
def setup_study(codebook_version, sample_issues, people):
    return study_setup(
        slug="fixes",
        name="Fixes",
        codebook_version=codebook_version,
        rule=rule_of(),
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
    )


def submit(study, user, count=1) -> list[Assignment]:
    answers = {key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()}
    done = []
    for assignment in Assignment.objects.filter(item__study=study, annotator=user).order_by(
        "item_id"
    )[:count]:
        done.append(
            assignment_save(
                assignment=assignment, user=user, answers=answers, submit=True, seconds_spent=90
            )
        )
    return done


DASHBOARD_HEADINGS = (
    "Funnel per system",
    "Progress per annotator",
    "Progress per round",
    "Changed upstream since labeled",
)


@pytest.mark.parametrize("role", ["manager", "adjudicator"])
def test_dashboard_for_managers_and_adjudicators(client, setup_study, people, role):
    submit(setup_study, people["annotator1"], count=2)
    html = login(client, people[role]).get("/studies/fixes/").content.decode()
    for heading in DASHBOARD_HEADINGS:
        assert heading in html
    assert "Stratified, 2 per repository, seed 7, of closed issues with a linked fix" in html
    assert "annotator1" in html and "3 min 00 s" in html  # 2 x 90 s
    assert "1 min 30 s" in html  # the median
    assert "Label next item" not in html
    assert ("/studies/fixes/members/" in html) == (role == "manager")


def test_annotator_sees_only_their_own_progress(client, setup_study, people):
    html = login(client, people["annotator1"]).get("/studies/fixes/").content.decode()
    for heading in DASHBOARD_HEADINGS:
        assert heading not in html
    assert "annotator2" not in html
    assert "seed 7" not in html
    assert "Your progress" in html and "Label next item" in html


def test_funnel_counts_per_system(client, setup_study, people):
    html = login(client, people["manager"]).get("/studies/fixes/").content.decode()
    row = re.search(r"<th scope=\"row\">NVIDIA/Megatron-LM</th>\s*((?:<td>.*?</td>)+)", html)
    cells = re.findall(r"<td>(.*?)</td>", row[1])
    assert cells[:2] == ["2", "2"]  # candidates, sampled
    total = re.search(r"<th scope=\"row\">All</th>\s*((?:<td>.*?</td>)+)", html)
    assert re.findall(r"<td>(.*?)</td>", total[1])[:2] == ["8", "6"]


def test_items_changed_upstream_are_linked(client, setup_study, people):
    from django.utils import timezone

    item = setup_study.items.select_related("issue__repository").first()
    item.changed_upstream_at = timezone.now()
    item.save(update_fields=["changed_upstream_at"])
    html = login(client, people["manager"]).get("/studies/fixes/").content.decode()
    assert reverse("item_resolve", args=["fixes", item.pk]) in html
    assert item.issue.html_url in html


def _study_of_size(codebook_version, people, issues, slug):
    return study_create(
        slug=slug,
        name=slug,
        codebook_version=codebook_version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        managers=[people["manager"]],
        issues=issues,
    )


def test_overview_queries_do_not_grow_with_items(
    client, codebook_version, sample_issues, people, django_assert_max_num_queries
):
    small = _study_of_size(codebook_version, people, sample_issues[:3], "small")
    large = _study_of_size(codebook_version, people, sample_issues, "large")
    for study in (small, large):
        submit(study, people["annotator1"], count=3)
    login(client, people["manager"])
    client.get("/studies/small/")  # warm the codebook cache
    with django_assert_max_num_queries(20) as small_queries:
        assert client.get("/studies/small/").status_code == 200
    with django_assert_max_num_queries(len(small_queries.captured_queries)):
        assert client.get("/studies/large/").status_code == 200


# Members


def test_members_page_is_for_managers(client, setup_study, people):
    assert login(client, people["manager"]).get("/studies/fixes/members/").status_code == 200
    client.logout()
    assert login(client, people["adjudicator"]).get("/studies/fixes/members/").status_code == 403
    client.logout()
    assert login(client, people["annotator1"]).get("/studies/fixes/members/").status_code == 403
    client.logout()
    assert login(client, people["outsider"]).get("/studies/fixes/members/").status_code == 404


def test_adding_an_annotator_gives_them_their_share(client, setup_study, people, make_user):
    newcomer = make_user("annotator3")
    login(client, people["manager"])
    response = client.post(
        "/studies/fixes/members/",
        {"action": "add", "username": "annotator3", "role": "annotator"},
        follow=True,
    )
    got = Assignment.objects.filter(item__study=setup_study, annotator=newcomer).count()
    assert got > 0
    assert f"annotator3 joined as annotator and got {got} assignments." in response.content.decode()
    assert Membership.objects.filter(study=setup_study, user=newcomer, role="annotator").exists()


def test_adding_an_adjudicator_and_an_unknown_user(client, setup_study, people):
    login(client, people["manager"])
    client.post(
        "/studies/fixes/members/", {"action": "add", "username": "outsider", "role": "adjudicator"}
    )
    assert Membership.objects.filter(
        study=setup_study, user=people["outsider"], role="adjudicator"
    ).exists()
    response = client.post(
        "/studies/fixes/members/", {"action": "add", "username": "nobody", "role": "annotator"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "No active user is called &#x27;nobody&#x27;." in html
    assert 'value="nobody"' in html


def test_removing_an_annotator_keeps_their_submitted_labels(client, setup_study, people, make_user):
    third = make_user("annotator3")
    login(client, people["manager"])
    client.post(
        "/studies/fixes/members/", {"action": "add", "username": "annotator3", "role": "annotator"}
    )
    submitted = submit(setup_study, people["annotator1"], count=1)
    unfinished = Assignment.objects.filter(
        item__study=setup_study, annotator=people["annotator1"], status="todo"
    ).count()
    response = client.post(
        "/studies/fixes/members/",
        {"action": "remove", "annotator": people["annotator1"].pk},
        follow=True,
    )
    html = response.content.decode()
    assert re.search(r"annotator1 no longer annotates this study: (\d+) unfinished", html)
    moved = int(re.search(r"annotator1 no longer annotates this study: (\d+)", html)[1])
    assert 0 < moved <= unfinished
    assert not Membership.objects.filter(
        study=setup_study, user=people["annotator1"], role="annotator"
    ).exists()
    kept = Assignment.objects.get(pk=submitted[0].pk)
    assert kept.status == Assignment.Status.SUBMITTED and kept.annotator == people["annotator1"]
    assert kept.annotations.exists()
    assert not Assignment.objects.filter(
        item__study=setup_study, annotator=people["annotator1"], status__in=["todo", "draft"]
    ).exists()
    assert third.pk


def test_reassigning_open_items_to_someone_or_automatically(client, setup_study, people, make_user):
    third = make_user("annotator3")
    login(client, people["manager"])
    client.post(
        "/studies/fixes/members/", {"action": "add", "username": "annotator3", "role": "annotator"}
    )
    open_of_2 = Assignment.objects.filter(
        item__study=setup_study, annotator=people["annotator2"], status="todo"
    ).count()
    response = client.post(
        "/studies/fixes/members/",
        {"action": "reassign", "annotator": people["annotator2"].pk, "to": third.pk},
        follow=True,
    )
    moved = int(
        re.search(
            r"(\d+) unfinished items? of annotator2 went to annotator3", response.content.decode()
        )[1]
    )
    assert (
        moved
        == Assignment.objects.filter(
            item__study=setup_study, annotator=third, selection_reason="reassigned from annotator2"
        ).count()
    )
    assert (
        Assignment.objects.filter(
            item__study=setup_study, annotator=people["annotator2"], status="todo"
        ).count()
        == open_of_2 - moved
    )
    response = client.post(
        "/studies/fixes/members/",
        {"action": "reassign", "annotator": third.pk, "to": ""},
        follow=True,
    )
    assert "went to the least loaded annotators" in response.content.decode()


def test_members_forms_need_csrf(setup_study, people):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    login(client, people["manager"])
    response = client.post(
        "/studies/fixes/members/", {"action": "remove", "annotator": people["annotator1"].pk}
    )
    assert response.status_code == 403
    assert 'name="csrfmiddlewaretoken"' in client.get("/studies/fixes/members/").content.decode()


# "Label next item" only for annotators


def test_label_next_item_only_for_annotators(client, setup_study, people):
    for role, shown in (("annotator1", True), ("manager", False), ("adjudicator", False)):
        login(client, people[role])
        home = client.get("/").content.decode()
        overview = client.get("/studies/fixes/").content.decode()
        assert ("Label next item" in home) == shown, role
        assert ("Label next item" in overview) == shown, role
        client.logout()


def test_next_item_sends_a_non_annotator_to_the_overview(client, setup_study, people):
    response = login(client, people["manager"]).get("/studies/fixes/next/", follow=True)
    assert response.redirect_chain[-1][0] == "/studies/fixes/"
    assert "only its annotators get items" in response.content.decode()


def test_managers_and_adjudicators_are_removed_but_never_the_last_manager(
    client, setup_study, people, make_user
):
    second_manager = make_user("manager2")
    study_member_add(study=setup_study, user=second_manager, role="manager")
    login(client, people["manager"])
    url = "/studies/fixes/members/"
    for member, role in ((people["adjudicator"], "adjudicator"), (second_manager, "manager")):
        response = client.post(url, {"action": "remove_role", "role": role, "member": member.pk})
        assert response.status_code == 302
        assert not Membership.objects.filter(study=setup_study, user=member, role=role).exists()
    response = client.post(
        url,
        {"action": "remove_role", "role": "manager", "member": people["manager"].pk},
        follow=True,
    )
    assert "A study keeps at least one manager." in response.content.decode()
    assert Membership.objects.filter(study=setup_study, role="manager").count() == 1
    for bad in (
        {"role": "annotator", "member": people["annotator1"].pk},
        {"role": "manager", "member": "x"},
    ):
        response = client.post(url, {"action": "remove_role", **bad}, follow=True)
        assert "Choose a manager or an adjudicator" in response.content.decode()


def test_who_labels_what_a_screen_in_opens_is_a_setting_shown_on_the_study_page(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    form = client.get("/studies/new/").content.decode()
    assert 'name="screen_in_override"' in form
    response = client.post(
        "/studies/new/", setup_post(codebook_version, people, screen_in_override="adjudicator")
    )
    assert response.status_code == 302
    assert Study.objects.get(slug="fixes").screen_in_override == "adjudicator"
    overview = client.get(response["Location"]).content.decode()
    assert "Screened in over the annotators" in overview
    assert "the adjudicator decides" in overview

    default = client.post(
        "/studies/new/", setup_post(codebook_version, people, slug="other", name="Other")
    )
    assert default.status_code == 302
    assert Study.objects.get(slug="other").screen_in_override == "relabel"
    overview = client.get(default["Location"]).content.decode()
    assert "who have not seen the item" in overview


def test_gold_labels_of_similar_issues_are_a_setting_of_the_new_study_page(
    client, creator, people, codebook_version, sample_issues
):
    login(client, creator)
    assert 'name="show_similar_gold"' in client.get("/studies/new/").content.decode()
    response = client.post(
        "/studies/new/", setup_post(codebook_version, people, show_similar_gold="on")
    )
    assert response.status_code == 302
    assert Study.objects.get(slug="fixes").show_similar_gold is True
    overview = client.get(response["Location"]).content.decode()
    assert "Similar issues show gold labels" in overview
    default = client.post(
        "/studies/new/", setup_post(codebook_version, people, slug="other", name="Other")
    )
    assert default.status_code == 302
    assert Study.objects.get(slug="other").show_similar_gold is False
