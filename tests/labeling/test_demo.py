import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from corpus.models import Issue, IssueComment
from labeling.management.commands.demo import demo_set_up_already
from labeling.models import Annotation, Assignment, Membership, Study, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
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


def test_demo_again_on_a_set_up_database_only_reads_and_keeps_labels(
    db, django_assert_max_num_queries
):
    call_command("demo")
    annotator = get_user_model().objects.get(username="annotator1")
    assignment = Assignment.objects.filter(annotator=annotator).order_by("id").first()
    assignment_save(
        assignment=assignment,
        user=annotator,
        answers={"symptom": DimensionAnswer(category_keys=["crash"])},
        submit=False,
    )
    labeled = snapshot()
    output = StringIO()

    # A second `make run`: the migration plan, the codebook, the accounts, the study and the
    # sample issues are read (a handful of queries), nothing is imported or rendered again.
    with django_assert_max_num_queries(10):
        call_command("demo", stdout=output)

    assert snapshot() == labeled
    assert Annotation.objects.filter(assignment=assignment).exists()
    assert "Set up already" in output.getvalue()
    assert "annotator1 / annotator1-demo" in output.getvalue()


def test_demo_sets_up_again_what_is_missing_or_older_than_the_sample(db):
    call_command("demo")
    issue = Issue.objects.order_by("id").first()
    Issue.objects.filter(pk=issue.pk).update(
        title="An older copy", updated_at=issue.updated_at - timedelta(days=1)
    )
    get_user_model().objects.filter(username="adjudicator").delete()
    assert demo_set_up_already() is None
    output = StringIO()

    call_command("demo", stdout=output)

    assert "Set up already" not in output.getvalue()
    issue.refresh_from_db()
    assert issue.title != "An older copy"
    assert get_user_model().objects.filter(username="adjudicator").exists()
    assert demo_set_up_already() is not None


def test_demo_is_not_set_up_while_a_migration_is_unapplied(db):
    call_command("demo")
    recorder = MigrationRecorder(connection)
    last = recorder.migration_qs.filter(app="labeling").order_by("-name").first()
    last.delete()  # as after pulling a new migration; the test's transaction puts it back

    assert demo_set_up_already() is None


def test_loading_the_urlconf_does_not_import_scikit_learn():
    """runserver's start (its checks load the URLconf) and every management command's checks
    would otherwise spend about 2 s importing it; agreement imports it at its first kappa."""
    code = (
        "import sys, django; django.setup(); from django.urls import get_resolver; "
        "get_resolver().url_patterns; print('sklearn' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "False"
