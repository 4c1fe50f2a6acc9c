"""The resolution pages through the test client: the disagreement queue, the adjudication page
of an item, the discussion, tie-breakers, and what an annotator sees once they submitted."""

import re

import pytest
from django.utils.html import escape

from labeling.models import Assignment, DiscussionComment, Membership, Resolution, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.resolutions import resolution_decide
from labeling.services.studies import study_member_add
from tests.conftest import PASSWORD, SCREENED_IN


def submit(item, user, rationale: str = "", **changes) -> Assignment:
    """Submit `user`'s labels on `item`: SCREENED_IN with `changes` applied."""
    answers = {
        key: DimensionAnswer(category_keys=keys, rationale=rationale)
        for key, keys in {**SCREENED_IN, **changes}.items()
    }
    return assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=user),
        user=user,
        answers=answers,
        submit=True,
    )


def disagree(item, people, **second_changes) -> None:
    """Both annotators submit; annotator2 differs by `second_changes` (root cause by default)."""
    submit(item, people["annotator1"], rationale="the optimizer API was called wrongly")
    submit(
        item,
        people["annotator2"],
        rationale="a config flag was wrong",
        **(second_changes or {"root_cause": ["configuration_error"]}),
    )


def login(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


@pytest.fixture
def items(study):
    return list(study.items.order_by("id"))


@pytest.fixture
def item(items):
    return items[0]


def resolve_url(item) -> str:
    return f"/studies/demo/items/{item.id}/resolve/"


def form_version(html: str, dimension_key: str) -> str:
    form = re.search(
        rf'name="dimension" value="{dimension_key}">\s*<input type="hidden" name="version" '
        r'value="(\d+)"',
        html,
    )
    assert form, f"no decision form for {dimension_key}"
    return form.group(1)


# The queue


@pytest.mark.parametrize(
    ("username", "status"),
    [("manager", 200), ("adjudicator", 200), ("annotator1", 403), ("outsider", 404)],
)
def test_the_queue_is_for_managers_and_adjudicators(client, study, people, username, status):
    assert login(client, username).get("/studies/demo/disagreements/").status_code == status


def test_the_queue_lists_disagreements_with_filters_and_counts(client, items, people):
    first, second = items[0], items[1]
    disagree(first, people)
    disagree(second, people, symptom=["hang"])
    client = login(client, "adjudicator")

    page = client.get("/studies/demo/disagreements/")
    html = page.content.decode()
    assert "2 open disagreements" in html
    assert f"#{first.issue.number}" in html and f"#{second.issue.number}" in html
    assert f'href="/studies/demo/items/{first.id}/resolve/#dimension-root_cause"' in html
    # Filters carry a count per choice, with category names for the conflicts.
    assert re.search(r'<option value="root_cause"\s*>Root cause \(1\)</option>', html)
    assert re.search(r'<option value="symptom"\s*>Symptom \(1\)</option>', html)
    assert "API Misuse vs Configuration Error (1)" in html
    assert "Crash vs Hang (1)" in html
    # Each annotator's answer, by name.
    assert "<dt>annotator1</dt><dd>API Misuse</dd>" in html
    assert "<dt>annotator2</dt><dd>Configuration Error</dd>" in html

    filtered = client.get("/studies/demo/disagreements/", {"dimension": "root_cause"})
    html = filtered.content.decode()
    assert "1 open disagreement matching the filters" in html
    assert f"/items/{first.id}/resolve/" in html and f"/items/{second.id}/resolve/" not in html
    # The other filters count what the chosen dimension leaves.
    assert "API Misuse vs Configuration Error (1)" in html and "Crash vs Hang" not in html
    # The resolve link keeps the queue's filters.
    assert f"/items/{first.id}/resolve/?dimension=root_cause#dimension-root_cause" in html

    by_conflict = client.get(
        "/studies/demo/disagreements/", {"conflict": "crash vs hang", "round": "", "repository": ""}
    )
    assert f"/items/{second.id}/resolve/" in by_conflict.content.decode()
    assert f"/items/{first.id}/resolve/" not in by_conflict.content.decode()


def test_the_overview_counts_items_in_resolution_and_links_the_queue(client, items, people):
    disagree(items[0], people)
    submit(items[1], people["annotator1"])
    submit(items[1], people["annotator2"])
    html = login(client, "manager").get("/studies/demo/").content.decode()
    assert "1 in resolution, 1 resolved" in html
    assert 'href="/studies/demo/disagreements/"' in html
    annotator_html = login(client, "annotator1").get("/studies/demo/").content.decode()
    assert "/disagreements/" not in annotator_html


# The adjudication page


def test_the_page_shows_the_labels_side_by_side(client, item, people):
    disagree(item, people)
    html = login(client, "adjudicator").get(resolve_url(item)).content.decode()
    assert escape(item.issue.title) in html
    assert item.issue.repository.full_name in html
    assert "annotator1" in html and "annotator2" in html
    assert "the optimizer API was called wrongly" in html
    assert "a config flag was wrong" in html
    assert "s on the item" in html  # time spent
    assert "Definitions of the categories involved" in html
    assert 'aria-label="Decision on Root cause"' in html
    # Any category of the dimension may be chosen, each labelled with its name.
    assert re.search(r'type="radio" name="categories" value="tensor_management_error"', html)
    assert "Tensor Management Error" in html
    assert "csrfmiddlewaretoken" in html


@pytest.mark.parametrize(
    ("username", "status"), [("annotator1", 404), ("outsider", 404), ("manager", 200)]
)
def test_the_page_is_for_overseers_only(client, item, people, username, status):
    disagree(item, people)
    assert login(client, username).get(resolve_url(item)).status_code == status


def test_an_adjudicator_cannot_open_an_item_still_being_labeled(client, item, people):
    submit(item, people["annotator1"])
    assert login(client, "adjudicator").get(resolve_url(item)).status_code == 404


def test_a_decision_resolves_the_item_and_opens_the_next_disagreement(client, items, people):
    first, second = items[0], items[1]
    disagree(first, people)
    disagree(second, people)
    client = login(client, "adjudicator")
    html = client.get(resolve_url(first)).content.decode()
    response = client.post(
        resolve_url(first),
        {
            "action": "decide",
            "dimension": "root_cause",
            "version": form_version(html, "root_cause"),
            "categories": "configuration_error",
            "method": "adjudicated",
            "note": "the flag was the cause",
        },
    )
    assert response.status_code == 302
    assert response.url == f"/studies/demo/items/{second.id}/resolve/#dimension-root_cause"
    resolution = Resolution.objects.get(item=first, dimension__key="root_cause")
    assert resolution.method == "adjudicated"
    assert resolution.decided_by == people["adjudicator"]
    assert [c.key for c in resolution.categories.all()] == ["configuration_error"]
    first.refresh_from_db()
    assert first.status == StudyItem.Status.RESOLVED
    followed = client.get(response.url)
    assert "is resolved" in followed.content.decode()

    # The last one goes back to the queue, which is empty.
    html = followed.content.decode()
    response = client.post(
        resolve_url(second),
        {
            "action": "decide",
            "dimension": "root_cause",
            "version": form_version(html, "root_cause"),
            "categories": "api_misuse",
            "method": "discussion",
        },
    )
    assert response.url == "/studies/demo/disagreements/"
    queue = client.get(response.url).content.decode()
    assert "No open disagreements left" in queue and "0 open disagreements" in queue

    # The history shows who changed what.
    html = client.get(resolve_url(first)).content.decode()
    assert "History of Root cause" in html
    assert "Adjudicator decision by adjudicator" in html


def test_two_adjudicators_at_once_the_second_sees_the_first_decision(client, item, people):
    disagree(item, people)
    study_member_add(study=item.study, user=people["manager"], role=Membership.Role.ADJUDICATOR)
    first = login(client, "adjudicator")
    version = form_version(first.get(resolve_url(item)).content.decode(), "root_cause")
    from django.test import Client

    second = login(Client(), "manager")
    assert form_version(second.get(resolve_url(item)).content.decode(), "root_cause") == version

    decision = {"action": "decide", "dimension": "root_cause", "version": version}
    response = first.post(
        resolve_url(item), decision | {"categories": "api_misuse", "method": "adjudicated"}
    )
    assert response.status_code == 302
    response = second.post(
        resolve_url(item),
        decision
        | {
            "categories": "tensor_management_error",
            "method": "discussion",
            "note": "my long reasoning that must not be lost",
        },
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "decided meanwhile" in html
    # The first decision is shown ...
    assert re.search(r'gold-chip">API Misuse<', html)
    assert "Adjudicator decision by adjudicator" in html
    # ... and what the second one entered is kept, with the version they now saw.
    assert "my long reasoning that must not be lost" in html
    assert re.search(r'value="tensor_management_error" checked', html)
    assert re.search(r'<option value="discussion" selected>', html)
    assert form_version(html, "root_cause") == str(int(version) + 1)
    resolution = Resolution.objects.get(item=item, dimension__key="root_cause")
    assert [c.key for c in resolution.categories.all()] == ["api_misuse"]


def test_a_wrong_decision_keeps_the_form(client, item, people):
    disagree(item, people)
    client = login(client, "adjudicator")
    response = client.post(
        resolve_url(item),
        {
            "action": "decide",
            "dimension": "debugging_practice",
            "version": "0",
            "categories": "not_a_category",
            "method": "adjudicated",
            "note": "kept",
        },
    )
    assert response.status_code == 400
    assert "not a category" in response.content.decode()


# Discussion


def discussion_url(item) -> str:
    return f"/studies/demo/items/{item.id}/discussion/"


def test_an_annotator_joins_the_discussion_only_after_submitting(client, item, people):
    submit(item, people["annotator1"])
    annotator2 = login(client, "annotator2")
    assert annotator2.post(discussion_url(item), {"body": "early"}).status_code == 403
    from django.test import Client

    outsider = login(Client(), "outsider")
    assert outsider.post(discussion_url(item), {"body": "hello"}).status_code == 404

    annotator1 = login(Client(), "annotator1")
    response = annotator1.post(discussion_url(item), {"body": "I went for the API"})
    assert response.status_code == 302
    assert response.url == f"/studies/demo/items/{item.id}/#discussion"
    assert list(DiscussionComment.objects.values_list("author__username", "body")) == [
        ("annotator1", "I went for the API")
    ]
    assert not DiscussionComment.objects.filter(body__in=["early", "hello"]).exists()


def test_adjudicators_post_from_the_adjudication_page(client, item, people):
    disagree(item, people)
    client = login(client, "adjudicator")
    response = client.post(discussion_url(item), {"body": "Why a config error?"})
    assert response.url == f"/studies/demo/items/{item.id}/resolve/#discussion"
    html = client.get(resolve_url(item)).content.decode()
    assert "Why a config error?" in html
    assert "Added to the discussion" in html


def test_the_discussion_needs_a_post_and_a_body(client, item, people):
    disagree(item, people)
    client = login(client, "adjudicator")
    assert client.get(discussion_url(item)).status_code == 405
    response = client.post(discussion_url(item), {"body": "   "}, follow=True)
    assert "Write something" in response.content.decode()
    assert not DiscussionComment.objects.exists()


# Tie-breakers


def test_request_another_annotator(client, item, people, make_user):
    disagree(item, people)
    third = make_user("annotator3")
    study_member_add(study=item.study, user=third, role=Membership.Role.ANNOTATOR)
    client = login(client, "adjudicator")
    html = client.get(resolve_url(item)).content.decode()
    assert '<option value="annotator3">annotator3' in html
    response = client.post(resolve_url(item), {"action": "tiebreaker", "annotator": ""})
    assert response.status_code == 302
    tiebreaker = Assignment.objects.get(item=item, annotator=third)
    assert tiebreaker.is_tiebreaker
    html = client.get(response.url).content.decode()
    assert "Asked annotator3" in html
    assert "Waiting for annotator3 (tie-breaker" in html

    again = client.post(resolve_url(item), {"action": "tiebreaker", "annotator": "annotator3"})
    assert again.status_code == 400
    assert Assignment.objects.filter(item=item).count() == 3


def test_annotators_cannot_request_a_tiebreaker(client, item, people):
    disagree(item, people)
    response = login(client, "annotator1").post(resolve_url(item), {"action": "tiebreaker"})
    assert response.status_code == 404
    assert Assignment.objects.filter(item=item).count() == 2


# What an annotator sees


def label_page(client, item) -> str:
    response = client.get(f"/studies/demo/items/{item.id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_outcome_appears_only_after_the_annotators_own_submission(client, item, people):
    submit(item, people["annotator2"], root_cause=["configuration_error"])
    DiscussionComment.objects.create(item=item, author=people["annotator2"], body="secret view")
    client = login(client, "annotator1")
    html = label_page(client, item)
    assert "Outcome of this item" not in html
    assert "secret view" not in html

    submit(item, people["annotator1"])
    html = label_page(client, item)
    assert "Outcome of this item" in html
    assert "secret view" in html
    assert "Consensus" in html  # the dimensions they agreed on
    assert "Add to the discussion" in html

    resolution_decide(
        item=item,
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["configuration_error"],
        method="adjudicated",
        note="the flag decides",
    )
    html = label_page(client, item)
    assert re.search(r'Root cause</th>\s*<td><span class="chip gold-chip">Configuration', html)
    assert "the flag decides" in html
    assert "adjudicator" in html


def test_no_outcome_while_nothing_happened(client, item, people):
    submit(item, people["annotator1"])
    assert "Outcome of this item" not in label_page(login(client, "annotator1"), item)


# Queries do not grow with the study: the same bound holds for both sizes (it is the count
# measured, so one query more per item or per comment fails the larger size).


@pytest.mark.parametrize("size", [2, 6])
def test_queue_queries_do_not_grow(client, items, people, size, django_assert_max_num_queries):
    for item in items[:size]:
        disagree(item, people)
    client = login(client, "adjudicator")
    with django_assert_max_num_queries(12):  # with the top bar's study switcher
        response = client.get("/studies/demo/disagreements/")
    assert response.content.decode().count("Resolve</a>") == size


@pytest.mark.parametrize("comments", [1, 5])
def test_resolve_page_queries_do_not_grow(
    client, item, people, make_user, comments, django_assert_max_num_queries
):
    disagree(item, people)
    for number in range(comments):
        DiscussionComment.objects.create(item=item, author=people["manager"], body=f"c{number}")
    for number in range(comments):
        study_member_add(
            study=item.study, user=make_user(f"extra{number}"), role=Membership.Role.ANNOTATOR
        )
    client = login(client, "adjudicator")
    with django_assert_max_num_queries(24):  # the changes found upstream (none), the switcher
        response = client.get(resolve_url(item))
    assert response.status_code == 200


def test_labels_of_an_item_in_resolution_are_read_only_on_the_page(client, item, people):
    client = login(client, "annotator1")
    submit(item, people["annotator1"])
    html = label_page(client, item)
    assert "Submit and open next" in html  # submitted, the item still open: revisable
    assert "labeling.js" in html

    submit(item, people["annotator2"], root_cause=["configuration_error"])
    html = label_page(client, item)
    assert "your labels are final" in html
    assert "Submit and open next" not in html and "Save draft" not in html
    assert "labeling.js" not in html
    fieldsets = re.findall(r'<fieldset [^>]*class="dimension', html)
    assert fieldsets and all(tag.startswith("<fieldset disabled ") for tag in fieldsets)


# An adjudicator screens in an item both annotators screened out


def browser_form(html: str, answers: dict[str, list[str]]) -> dict:
    """What the labeling form posts: every dimension of the codebook (the page's fieldsets, and
    empty fields for those it does not show, as answers_from_form reads them), the version."""
    version = re.search(r'name="version" value="(\d+)"', html).group(1)
    data: dict = {"action": "submit", "version": version, "seconds_spent": "30"}
    for key, keys in answers.items():
        data[f"dim-{key}"] = keys
        data[f"rationale-{key}"] = ""
    return data


def test_screening_in_sends_the_opened_dimensions_to_new_annotators_blind(
    client, item, people, make_user
):
    for user in (people["annotator1"], people["annotator2"]):
        submit(item, user, rationale="not about training", screening=["not_a_bug"])
    newcomers = [make_user("annotator3"), make_user("annotator4")]
    for user in (*newcomers, people["adjudicator"]):
        study_member_add(study=item.study, user=user, role=Membership.Role.ANNOTATOR)

    adjudicator = login(client, "adjudicator")
    html = adjudicator.get(resolve_url(item)).content.decode()
    response = adjudicator.post(
        resolve_url(item),
        {
            "action": "decide",
            "dimension": "screening",
            "categories": ["include"],
            "method": "adjudicated",
            "note": "the fix is in DeepSpeed",
            "version": form_version(html, "screening"),
        },
    )
    assert response.status_code == 302
    html = adjudicator.get(response.url).content.decode()
    assert "annotator3" in html and "annotator4" in html and "have not seen" in html
    html = adjudicator.get(resolve_url(item)).content.decode()
    assert "being labeled by annotators who have not seen the item" in html
    assert "Waiting for annotator3 (blind relabeling" in html
    assert 'aria-label="Decision on Root cause"' not in html  # nothing to decide meanwhile
    assert '<option value="adjudicator">' not in html  # never their tie-breaker

    answers = {
        "symptom": ["crash"],
        "root_cause": ["api_misuse"],
        "fix_pattern": ["fix_api_usage"],
        "debugging_practice": ["error_message_analysis"],
        "testing_practice": ["no_test_change"],
        "training_stage": ["model_initialization"],
    }
    for user, root_cause in zip(newcomers, ("api_misuse", "configuration_error"), strict=True):
        client.logout()
        page = label_page(login(client, user.username), item)
        # Only the dimensions the screening opened, with the condition settled.
        assert 'data-dimension="screening"' not in page
        assert 'data-dimension="root_cause"' in page
        assert "applies only when" not in page
        assert "not about training" not in page and "the fix is in DeepSpeed" not in page
        posted = client.post(
            f"/studies/demo/items/{item.id}/",
            browser_form(page, {**answers, "root_cause": [root_cause]}),
        )
        assert posted.status_code == 302, posted.content.decode()[:2000]
    assert (
        Assignment.objects.filter(
            item=item, dimension_keys__isnull=False, status=Assignment.Status.SUBMITTED
        ).count()
        == 2
    )

    client.logout()
    html = login(client, "adjudicator").get(resolve_url(item)).content.decode()
    assert 'aria-label="Decision on Root cause"' in html
    assert Resolution.objects.get(item=item, dimension__key="symptom").method == "consensus"
    item.refresh_from_db()
    assert item.status == StudyItem.Status.IN_RESOLUTION
