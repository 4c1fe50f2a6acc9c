from datetime import timedelta
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from corpus.models import Issue, IssueComment
from exports.dataset import dataset_rows, dataset_shape
from labeling.agreement_report import study_agreement_report
from labeling.management.commands.demo import demo_set_up_already
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    DiscussionComment,
    Membership,
    Resolution,
    Round,
    Study,
    StudyItem,
)
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.demo import demo_pilot_read
from labeling.services.resolutions import resolution_decide
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
        "annotations": list(
            AnnotationRevision.objects.values_list("annotation_id", "changed_at").order_by("id")
        ),
        "resolutions": list(Resolution.objects.values_list("id", "version").order_by("id")),
        "discussion": DiscussionComment.objects.count(),
        "item_states": list(StudyItem.objects.values_list("id", "status").order_by("id")),
    }


def test_demo_twice_equals_demo_once(db):
    call_command("demo")
    once = snapshot()
    call_command("demo")
    assert snapshot() == once
    assert once["categories"] == 102
    study = Study.objects.get(slug="demo")
    assert study.blind and study.k == 2
    # The study to label is left empty: 45 items, each to do by both annotators.
    assert study.items.count() == 45
    assert set(Assignment.objects.filter(item__study=study).values_list("status", flat=True)) == {
        Assignment.Status.TODO
    }
    assert Assignment.objects.filter(item__study=study).count() == 90


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


def test_demo_pilot_is_labeled_partly_resolved_and_marked_illustrative(db):
    call_command("demo")
    pilot = demo_pilot_read()
    study = Study.objects.get(slug=pilot.slug)

    round_ = study.rounds.get()
    assert round_.kind == Round.Kind.PILOT and round_.target_kappa == pilot.target_kappa
    assert study.items.count() == len(pilot.items)
    # Both demo annotators submitted every item, through the labeling page's service.
    assignments = Assignment.objects.filter(item__study=study)
    assert {a.annotator.username for a in assignments} == {"annotator1", "annotator2"}
    assert set(assignments.values_list("status", flat=True)) == {Assignment.Status.SUBMITTED}
    assert all(a.codebook_version_id == study.codebook_version_id for a in assignments)
    # Some disagreements are resolved into gold with a discussion, some are open.
    statuses = set(study.items.values_list("status", flat=True))
    assert statuses == {StudyItem.Status.RESOLVED, StudyItem.Status.IN_RESOLUTION}
    methods = set(Resolution.objects.filter(item__study=study).values_list("method", flat=True))
    assert {"consensus", "adjudicated", "discussion"} <= methods
    assert DiscussionComment.objects.filter(item__study=study).exists()
    # Agreement has something to say: kappa on every dimension, never perfect nor nil.
    report = study_agreement_report(study=study)
    kappas = {key: d["cohen_kappa"]["mean"] for key, d in report["dimensions"].items()}
    assert all(kappa is not None and 0 < kappa < 1 for kappa in kappas.values()), kappas

    for text in (study.slug, study.name, study.description):
        assert "illustrative" in text.lower()
    shape = dataset_shape(study=study, raw=True)
    rows = list(dataset_rows(shape=shape))
    assert len(rows) == len(pilot.items)
    assert all("illustrative" in row["study"] for row in rows)
    assert "not research data" in shape.study_settings["description"]


def test_demo_again_keeps_what_was_done_in_both_studies(db):
    call_command("demo")
    pilot = Study.objects.get(slug=demo_pilot_read().slug)
    annotator = get_user_model().objects.get(username="annotator1")
    assignment = Assignment.objects.filter(item__study__slug="demo", annotator=annotator).first()
    assignment_save(
        assignment=assignment,
        user=annotator,
        answers={"screening": DimensionAnswer(category_keys=["include"])},
        submit=False,
    )
    open_item = pilot.items.filter(status=StudyItem.Status.IN_RESOLUTION).order_by("id").first()
    resolution_decide(
        item=open_item,
        dimension_key="screening",
        user=get_user_model().objects.get(username="manager"),
        category_keys=["not_a_bug"],
        method="adjudicated",
    )
    # A missing account makes demo set up again, yet what exists is kept as it is.
    get_user_model().objects.filter(username="adjudicator").delete()
    call_command("demo")
    done = snapshot()

    call_command("demo")

    assert snapshot() == done
    assert Annotation.objects.filter(assignment=assignment).exists()
    assert Resolution.objects.filter(item=open_item, dimension__key="screening").exists()
    assert Study.objects.get(slug=pilot.slug).pk == pilot.pk
