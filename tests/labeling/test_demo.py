from django.contrib.auth import get_user_model
from django.core.management import call_command

from corpus.models import Issue, IssueComment
from labeling.models import Assignment, Membership, Study, StudyItem
from taxonomy.models import Category, CodebookVersion


def snapshot() -> dict:
    return {
        "versions": list(CodebookVersion.objects.values_list("id", "label", "status")),
        "categories": Category.objects.count(),
        "issues": list(Issue.objects.values_list("id", "updated_at").order_by("id")),
        "comments": IssueComment.objects.count(),
        "users": list(get_user_model().objects.values_list("username", "password").order_by("id")),
        "studies": list(Study.objects.values_list("slug", "k", "blind")),
        "items": StudyItem.objects.count(),
        "assignments": list(Assignment.objects.values_list("item_id", "annotator_id")),
        "memberships": Membership.objects.count(),
    }


def test_demo_twice_equals_demo_once(db):
    call_command("demo")
    once = snapshot()
    call_command("demo")
    assert snapshot() == once
    assert once["categories"] == 102
    assert once["items"] == 45
    assert len(once["assignments"]) == 90
    study = Study.objects.get(slug="demo")
    assert study.blind and study.k == 2


def test_demo_accounts_can_log_in(db, client):
    call_command("demo")
    for username in ("manager", "annotator1", "annotator2", "adjudicator"):
        assert client.login(username=username, password=f"{username}-demo")
