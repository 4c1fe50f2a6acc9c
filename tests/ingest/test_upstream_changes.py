"""An issue that changed on GitHub after it was labeled: the sync (against the stand-in GitHub,
over real HTTP) keeps the version that was labeled, and the labeling page, the adjudication page
and the API show what changed beside the labels."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from corpus.models import Issue
from labeling.models import Annotation, Assignment, StudyItem, UpstreamChange
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.upstream_changes import ValueChange, item_upstream_change
from tests.conftest import PASSWORD

DEEPSPEED = "microsoft/DeepSpeed"
NUMBER = 1896  # closed (completed), labels bug and training, three comments
NEW_TITLE = "[BUG] zero_to_fp32.py drops layers <script>alert(1)</script>"
NEW_LINE = "Update: fixed in 0.14 <img src=x onerror=alert(1)>"
NEW_COMMENT = "Still broken on <b>0.15</b>"


@pytest.fixture
def item(study) -> StudyItem:
    return StudyItem.objects.get(study=study, issue__number=NUMBER)


@pytest.fixture
def source(sample_github, make_source, sync):
    source = make_source(DEEPSPEED, state="all")
    assert sync(source).counts.get("updated", 0) == 0  # the imported sample is up to date
    return source


def draft(item: StudyItem, user) -> Assignment:
    return assignment_save(
        assignment=item.assignments.get(annotator=user),
        user=user,
        answers={"symptom": DimensionAnswer(category_keys=["crash"])},
        submit=False,
    )


def change_upstream(github, issue: Issue) -> None:
    """Retitle, add a line to the body, relabel and reopen the issue, and comment on it."""
    github.edit_issue(
        "microsoft",
        "DeepSpeed",
        NUMBER,
        title=NEW_TITLE,
        body=f"{issue.body}\n{NEW_LINE}",
        labels=["bug", "wontfix"],
        state="open",
    )
    github.add_comment("microsoft", "DeepSpeed", NUMBER, body=NEW_COMMENT, user="reporter")


def login(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


def test_a_sync_keeps_the_labeled_version_and_tells_what_changed(
    sample_github, source, sync, item, people
):
    draft(item, people["annotator1"])
    labels_before = list(
        Annotation.objects.filter(assignment__item=item).values_list("id", "categories__key")
    )
    issue = Issue.objects.get(pk=item.issue_id)
    earlier_comments = set(issue.comments.values_list("github_id", flat=True))
    change_upstream(sample_github, issue)

    run = sync(source)

    assert run.counts["updated"] == 1
    item.refresh_from_db()
    change = UpstreamChange.objects.get(item=item)
    assert change.cleared_at is None and item.changed_upstream_at == change.detected_at
    assert change.before["title"] == issue.title
    assert change.before["body"] == issue.body
    assert change.before["labels"] == ["bug", "training"]
    assert (change.before["state"], change.before["state_reason"]) == ("closed", "completed")
    assert {int(key) for key in change.before["comments"]} == earlier_comments
    diff = item_upstream_change(item=item)
    assert diff.title == ValueChange(issue.title, NEW_TITLE)
    assert diff.state == ValueChange("closed (completed)", "open (reopened)")
    assert (diff.labels_added, diff.labels_removed) == (["wontfix"], ["training"])
    assert [(line.kind, line.text) for line in diff.body if line.kind != "context"][-1] == (
        "added",
        NEW_LINE,
    )
    assert [comment.body for comment in diff.comments_added] == [NEW_COMMENT]
    assert diff.comments_count == ValueChange("3", "4")
    assert not diff.comments_edited and diff.comments_removed == 0
    # The labels are the annotator's: never touched.
    after = Annotation.objects.filter(assignment__item=item).values_list("id", "categories__key")
    assert list(after) == labels_before


def test_a_second_change_keeps_the_version_that_was_labeled(
    sample_github, source, sync, item, people
):
    draft(item, people["annotator1"])
    labeled_title = Issue.objects.get(pk=item.issue_id).title
    sample_github.edit_issue("microsoft", "DeepSpeed", NUMBER, title="First edit")
    sync(source)
    sample_github.edit_issue("microsoft", "DeepSpeed", NUMBER, title="Second edit")

    sync(source)

    assert UpstreamChange.objects.filter(item=item).count() == 1
    assert item_upstream_change(item=StudyItem.objects.get(pk=item.pk)).title == ValueChange(
        labeled_title, "Second edit"
    )


def test_an_issue_gone_from_github_is_shown_as_gone(
    client, sample_github, source, sync, item, people
):
    draft(item, people["annotator1"])
    sample_github.delete_issue("microsoft", "DeepSpeed", NUMBER)

    run = sync(source, reconcile=True)

    assert run.counts["gone_kept"] == 1
    change = UpstreamChange.objects.get(item=item)
    assert change.gone and change.before["title"]
    html = login(client, "manager").get(f"/studies/demo/items/{item.id}/resolve/")
    assert "GitHub no longer has this issue" in html.content.decode()


def test_the_labeling_page_shows_the_change_to_the_annotator_who_labeled_it(
    client, sample_github, source, sync, item, people
):
    draft(item, people["annotator1"])
    change_upstream(sample_github, Issue.objects.get(pk=item.issue_id))
    sync(source)

    html = login(client, "annotator1").get(f"/studies/demo/items/{item.id}/").content.decode()

    panel = html[html.index('id="upstream-change"') :]
    panel = panel[: panel.index("</section>")]
    assert "<del>[BUG] DeepSpeed zero_to_fp32.py" in panel
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in panel and "<script>alert" not in html
    assert "<ins>+ Update: fixed in 0.14 &lt;img src=x onerror=alert(1)&gt;</ins>" in panel
    assert '<ins class="gh-label">+ wontfix</ins>' in panel
    assert '<del class="gh-label">- training</del>' in panel
    assert "Still broken on &lt;b&gt;0.15&lt;/b&gt;" in panel
    assert "submit them again" in panel
    # annotator2 had not started: they label the new version, there is nothing to compare.
    client.logout()
    other = login(client, "annotator2").get(f"/studies/demo/items/{item.id}/")
    assert 'id="upstream-change"' not in other.content.decode()


def test_the_adjudication_page_and_the_api_show_the_change(
    client, sample_github, source, sync, item, people
):
    draft(item, people["annotator1"])
    change_upstream(sample_github, Issue.objects.get(pk=item.issue_id))
    sync(source)

    html = login(client, "manager").get(f"/studies/demo/items/{item.id}/resolve/").content.decode()
    assert "Still to submit their labels again: annotator1" in html
    assert "Reviewed, labels still hold" in html
    manager = APIClient()
    manager.force_authenticate(people["manager"])
    view = manager.get(f"/api/studies/demo/items/{item.id}/resolution/").json()
    change = view["item"]["upstream_change"]
    assert change["title"]["now"] == NEW_TITLE and change["gone"] is False
    assert change["labels"] == {"added": ["wontfix"], "removed": ["training"]}
    assert change["state"] == {"before": "closed (completed)", "now": "open (reopened)"}
    assert {"kind": "added", "text": NEW_LINE} in change["body"]["diff"]
    assert [comment["body"] for comment in change["comments"]["added"]] == [NEW_COMMENT]
    assert view["upstream_waiting_for"] == ["annotator1"]
    assert [record["cleared_at"] for record in view["upstream_changes"]] == [None]
    annotator = APIClient()
    annotator.force_authenticate(people["annotator1"])
    labeling = annotator.get(f"/api/studies/demo/items/{item.id}/labeling/").json()
    assert labeling["upstream_change"]["title"]["before"] == change["title"]["before"]
