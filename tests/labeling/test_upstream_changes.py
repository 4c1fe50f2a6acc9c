"""Clearing the "changed on GitHub since labeled" flag once people looked again: every annotator
who had labeled the item submits again, or a manager confirms the labels (page or API), each
look kept as the change's audit trail. The change comes in through the issue import, which finds
changes the way the sync does (corpus.services)."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from corpus.models import Issue
from corpus.services import issues_import
from labeling.models import Assignment, StudyItem, UpstreamChange, UpstreamChangeCheck
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.upstream_changes import item_upstream_change
from tests.conftest import PASSWORD, SCREENED_IN


@pytest.fixture
def item(study) -> StudyItem:
    return study.items.order_by("id").first()


def save(item: StudyItem, user, *, submit: bool) -> Assignment:
    return assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=user),
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()},
        submit=submit,
    )


def change_upstream(item: StudyItem, **fields) -> None:
    """The issue as GitHub has it a day later, with `fields` changed, imported."""
    issue = Issue.objects.get(pk=item.issue_id)
    later = (issue.updated_at + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    report = issues_import(
        objects=[(1, {**issue.raw, "body": issue.body, **fields, "updated_at": later})]
    )
    assert report.updated == 1, report.errors


def flagged(item: StudyItem) -> bool:
    return StudyItem.objects.get(pk=item.pk).changed_upstream_at is not None


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_flag_clears_once_everyone_who_had_labeled_submitted_again(item, people):
    save(item, people["annotator1"], submit=True)
    save(item, people["annotator2"], submit=False)
    change_upstream(item, title="Retitled upstream")
    assert flagged(item)

    save(item, people["annotator1"], submit=True)  # still open: they may revise

    assert flagged(item)  # annotator2 has not looked again yet
    save(item, people["annotator2"], submit=True)

    assert not flagged(item)
    change = UpstreamChange.objects.get(item=item)
    assert change.cleared_at is not None
    assert list(change.checks.order_by("pk").values_list("user__username", "kind")) == [
        ("annotator1", "resubmitted"),
        ("annotator2", "resubmitted"),
    ]


def test_a_draft_saved_after_the_change_does_not_clear_it(item, people):
    save(item, people["annotator1"], submit=False)
    change_upstream(item, title="Retitled upstream")

    save(item, people["annotator1"], submit=False)

    assert flagged(item)
    assert not UpstreamChangeCheck.objects.exists()


def test_a_manager_confirms_the_labels_on_the_adjudication_page(client, item, people):
    save(item, people["annotator1"], submit=True)
    save(item, people["annotator2"], submit=True)  # in resolution: the labels are final
    change_upstream(item, labels=["bug", "wontfix"])
    assert client.login(username="manager", password=PASSWORD)

    response = client.post(
        f"/studies/demo/items/{item.id}/upstream-review/", {"note": "Only a triage label <b>"}
    )

    assert response.status_code == 302 and response.url == f"/studies/demo/items/{item.id}/resolve/"
    assert not flagged(item)
    check = UpstreamChangeCheck.objects.get()
    assert (check.user, check.kind, check.note) == (
        people["manager"],
        UpstreamChangeCheck.Kind.REVIEWED,
        "Only a triage label <b>",
    )
    html = client.get(response.url).content.decode()
    assert "Earlier changes on GitHub (1)" in html
    assert "manager reviewed: the labels still hold" in html
    assert "Only a triage label &lt;b&gt;" in html
    assert "Reviewed, labels still hold" not in html  # nothing left to review
    # Twice: a message, nothing recorded again.
    again = client.post(f"/studies/demo/items/{item.id}/upstream-review/", follow=True)
    assert "has not changed on GitHub since it was labeled or reviewed" in again.content.decode()
    assert UpstreamChangeCheck.objects.count() == 1


def test_only_managers_confirm_the_labels(client, item, people):
    save(item, people["annotator1"], submit=True)
    save(item, people["annotator2"], submit=True)
    change_upstream(item, state="open")
    url = f"/api/studies/demo/items/{item.id}/upstream-review/"

    assert api(people["adjudicator"]).post(url).status_code == 403
    assert api(people["annotator1"]).post(url).status_code == 403
    assert api(people["outsider"]).post(url).status_code == 404
    assert client.login(username="adjudicator", password=PASSWORD)
    page = client.post(f"/studies/demo/items/{item.id}/upstream-review/")
    assert page.status_code == 403
    html = client.get(f"/studies/demo/items/{item.id}/resolve/").content.decode()
    assert 'id="upstream-change"' in html and "Reviewed, labels still hold" not in html
    assert flagged(item) and not UpstreamChangeCheck.objects.exists()


def test_the_api_review_answers_with_the_audit_trail(item, people):
    save(item, people["annotator1"], submit=True)
    change_upstream(item, title="Retitled upstream")
    url = f"/api/studies/demo/items/{item.id}/upstream-review/"

    too_long = api(people["manager"]).post(url, {"note": "x" * 2001}, format="json")
    assert too_long.status_code == 400 and flagged(item)
    response = api(people["manager"]).post(url, {"note": "checked"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["cleared_at"] is not None and body["gone"] is False
    assert [(c["user"], c["kind"], c["note"]) for c in body["checks"]] == [
        ("manager", "reviewed", "checked")
    ]
    assert api(people["manager"]).post(url).status_code == 400  # nothing open any more
    view = api(people["manager"]).get(f"/api/studies/demo/items/{item.id}/resolution/").json()
    assert view["item"]["upstream_change"] is None
    assert len(view["upstream_changes"]) == 1


def test_an_item_flagged_before_changes_were_kept_can_be_reviewed(client, item, people):
    StudyItem.objects.filter(pk=item.pk).update(changed_upstream_at=item.created_at)
    item.refresh_from_db()
    diff = item_upstream_change(item=item)
    assert diff is not None and not diff.known
    assert client.login(username="manager", password=PASSWORD)
    html = client.get(f"/studies/demo/items/{item.id}/resolve/").content.decode()
    assert "The earlier version was not kept" in html

    client.post(f"/studies/demo/items/{item.id}/upstream-review/")

    assert not flagged(item)
    assert UpstreamChange.objects.get(item=item).checks.get().kind == "reviewed"
