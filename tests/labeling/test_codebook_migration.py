"""Moving a study to a new codebook version on real labels: renames and merges follow (each a
revision), splits and removals are flagged for the annotators and adjudicators concerned, and
nothing is deleted. Labels are made through the same services as the pages."""

import pytest

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.agreement_report import LabelTableFilter, study_agreement_report
from labeling.codebook_history import agreement_by_version, study_label_versions
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Resolution,
    ResolutionRevision,
    StudyItem,
)
from labeling.rereview import (
    recheck_list_for_annotator,
    recheck_summary,
    resolutions_to_recheck,
)
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.codebook_migration import study_codebook_migrate
from labeling.services.resolutions import resolution_decide
from taxonomy.drafts import (
    codebook_draft_create,
    codebook_draft_publish,
    draft_category_merge,
    draft_category_remove,
    draft_category_split,
    draft_category_update,
)
from taxonomy.models import Category, CodebookVersion
from taxonomy.services import codebook_load
from tests.conftest import SCREENED_IN


def submit(item, user, **changes):
    assignment = Assignment.objects.get(item=item, annotator=user)
    answers = {**SCREENED_IN, **changes}
    return assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
        submit=True,
    )


def labels(item, user) -> dict[str, list[str]]:
    return {
        a.dimension.key: sorted(c.key for c in a.categories.all())
        for a in Annotation.objects.filter(assignment__item=item, assignment__annotator=user)
    }


def annotation(item, user, dimension) -> Annotation:
    return Annotation.objects.get(
        assignment__item=item, assignment__annotator=user, dimension__key=dimension
    )


def category(version, dimension, key):
    return Category.objects.get(dimension__version=version, dimension__key=dimension, key=key)


@pytest.fixture
def labeled(study, people):
    """Four items submitted by both annotators: A agrees (resolved), B disagrees on a root cause
    that gets merged, C on a symptom that gets split, D uses a symptom that gets removed."""
    first, second = people["annotator1"], people["annotator2"]
    items = list(study.items.order_by("id")[:4])
    a, b, c, d = items
    submit(a, first)
    submit(a, second)
    submit(b, first, root_cause=["typo_wrong_identifier"])
    submit(b, second, root_cause=["type_error"])
    submit(c, first, symptom=["hang"])
    submit(c, second, symptom=["memory_issue"])
    submit(d, first, symptom=["performance_degradation"])
    submit(d, second, symptom=["performance_degradation"])
    return items


@pytest.fixture
def second_version(codebook_version):
    draft = codebook_draft_create(version=codebook_version, label="2.0")
    root_cause = draft.dimensions.get(key="root_cause")
    symptom = draft.dimensions.get(key="symptom")
    draft_category_update(
        category=category(draft, "root_cause", "api_misuse"), key="api_usage", name="API usage"
    )
    draft_category_merge(
        dimension=root_cause, source_keys=["type_error"], target_key="typo_wrong_identifier"
    )
    draft_category_split(
        dimension=symptom, source_key="hang", parts=[("deadlock", "Deadlock"), ("stall", "Stall")]
    )
    draft_category_remove(category=category(draft, "symptom", "performance_degradation"))
    draft_category_update(category=category(draft, "symptom", "build_failure"), deprecated=True)
    return codebook_draft_publish(version=draft)


def test_renames_and_merges_follow_as_revisions(study, people, labeled, second_version):
    a, b, _, _ = labeled
    first, second = people["annotator1"], people["annotator2"]
    revisions_before = AnnotationRevision.objects.count()
    change = study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    study.refresh_from_db()
    assert study.codebook_version == second_version
    assert labels(a, first)["root_cause"] == ["api_usage"]
    assert labels(b, second)["root_cause"] == ["typo_wrong_identifier"]
    migrated = annotation(b, second, "root_cause")
    assert migrated.dimension.version == second_version
    assert {c.dimension.version_id for c in migrated.categories.all()} == {second_version.id}
    assert migrated.needs_review_since is None
    revision = migrated.revisions.order_by("-id").first()
    assert revision.reason == "codebook migrated to 2.0"
    assert revision.category_keys == ["typo_wrong_identifier"]
    assert revision.changed_by == people["manager"]
    # Unchanged keys move to the new rows without a revision of their own.
    unchanged = annotation(b, first, "root_cause")
    assert unchanged.categories.get().dimension.version == second_version
    assert unchanged.revisions.filter(reason__startswith="codebook").count() == 0
    # Only the labels whose keys changed got a revision: the six api_misuse root causes of a, c
    # and d, and b's merge.
    assert AnnotationRevision.objects.count() - revisions_before == 7
    gold = Resolution.objects.get(item=a, dimension__key="root_cause")
    assert [c.key for c in gold.categories.all()] == ["api_usage"]
    gold_revision = ResolutionRevision.objects.filter(resolution=gold).order_by("-id").first()
    assert (gold_revision.previous_category_keys, gold_revision.category_keys) == (
        ["api_misuse"],
        ["api_usage"],
    )
    assert change.counts["annotations_migrated"] == 7
    assert change.counts["resolutions_migrated"] == 3  # the agreed root causes of a, c, d
    assert change.from_version.label == "0.1.0" and change.to_version == second_version


def test_splits_and_removals_flag_labels_and_keep_them(study, people, labeled, second_version):
    _, _, c, d = labeled
    first, second = people["annotator1"], people["annotator2"]
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    split = annotation(c, first, "symptom")
    assert [x.key for x in split.categories.all()] == ["hang"]  # kept: nothing is guessed
    assert split.categories.get().dimension.version.label == "0.1.0"
    assert split.needs_review_since is not None
    assert "split Hang (hang) into Deadlock (deadlock), Stall (stall)" in split.review_note
    assert annotation(c, second, "symptom").needs_review_since is None
    removed = annotation(d, second, "symptom")
    assert "removed" in removed.review_note and removed.needs_review_since
    gold = Resolution.objects.get(item=d, dimension__key="symptom")
    assert [x.key for x in gold.categories.all()] == ["performance_degradation"]
    assert list(resolutions_to_recheck(study=study)) == [gold]
    assert [a.assignment.item for a in recheck_list_for_annotator(study=study, user=first)] == [
        c,
        d,
    ]
    assert recheck_summary(study=study) == {"annotations": 3, "annotators": 2, "resolutions": 1}


def test_the_annotator_rechecks_even_under_resolution_and_the_flag_clears(
    study, people, labeled, second_version
):
    _, _, c, d = labeled
    first = people["annotator1"]
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    assert StudyItem.objects.get(pk=c.pk).status == StudyItem.Status.IN_RESOLUTION
    assignment = Assignment.objects.get(item=c, annotator=first)
    # An empty answer keeps the old label and its flag; other dimensions of a final item stay.
    assignment_save(
        assignment=assignment,
        user=first,
        answers={
            "symptom": DimensionAnswer(category_keys=[]),
            "root_cause": DimensionAnswer(category_keys=["numerical_error"]),
        },
        submit=False,
    )
    assert labels(c, first)["symptom"] == ["hang"]
    assert labels(c, first)["root_cause"] == ["api_usage"]
    assert annotation(c, first, "symptom").needs_review_since is not None
    assignment_save(
        assignment=assignment,
        user=first,
        answers={"symptom": DimensionAnswer(category_keys=["deadlock"])},
        submit=True,
    )
    rechecked = annotation(c, first, "symptom")
    assert [x.key for x in rechecked.categories.all()] == ["deadlock"]
    assert rechecked.needs_review_since is None and rechecked.review_note == ""
    assert rechecked.revisions.order_by("-id").first().category_keys == ["deadlock"]
    # Once nothing waits, the final item's labels are final again.
    with pytest.raises(ApplicationError, match="can no longer change"):
        assignment_save(
            assignment=assignment,
            user=first,
            answers={"symptom": DimensionAnswer(category_keys=["stall"])},
            submit=False,
        )
    # A gold label is settled by a new decision.
    resolution_decide(
        item=d,
        dimension_key="symptom",
        user=people["adjudicator"],
        category_keys=["numerical_anomaly"],
        method="adjudicated",
        expected_version=Resolution.objects.get(item=d, dimension__key="symptom").version,
    )
    assert list(resolutions_to_recheck(study=study)) == []


def test_nothing_is_deleted(study, people, labeled, second_version):
    counts = (
        Annotation.objects.count(),
        AnnotationRevision.objects.count(),
        Resolution.objects.count(),
        ResolutionRevision.objects.count(),
        Category.objects.filter(dimension__version__label="0.1.0").count(),
    )
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    assert Annotation.objects.count() == counts[0]
    assert AnnotationRevision.objects.count() > counts[1]
    assert Resolution.objects.count() == counts[2]
    assert ResolutionRevision.objects.count() > counts[3]
    assert Category.objects.filter(dimension__version__label="0.1.0").count() == counts[4]
    # The assignments keep the version they were submitted under.
    assert set(
        Assignment.objects.filter(status="submitted").values_list(
            "codebook_version__label", flat=True
        )
    ) == {"0.1.0"}


def test_bad_moves_are_refused_with_nothing_changed(study, people, labeled, second_version):
    before = {a.pk: sorted(c.key for c in a.categories.all()) for a in Annotation.objects.all()}
    draft = codebook_draft_create(version=second_version, label="3.0-draft")
    other, _ = codebook_load(
        data={
            "name": "Other",
            "version": "1.0",
            "dimensions": [{"key": "x", "name": "X", "categories": [{"key": "y", "name": "Y"}]}],
        },
        publish=True,
    )
    cases = [
        (draft, people["manager"], ApplicationError, "is a draft"),
        (other, people["manager"], ApplicationError, "belongs to Other"),
        (study.codebook_version, people["manager"], ApplicationError, "uses version 0.1.0 already"),
        (second_version, people["annotator1"], PermissionDeniedError, "managers"),
        (second_version, people["adjudicator"], PermissionDeniedError, "managers"),
    ]
    for version, user, error, message in cases:
        with pytest.raises(error, match=message):
            study_codebook_migrate(study=study, to_version=version, by=user)
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    first_version = CodebookVersion.objects.get(label="0.1.0", codebook=second_version.codebook)
    with pytest.raises(ApplicationError, match="does not descend"):
        study_codebook_migrate(study=study, to_version=first_version, by=people["manager"])
    study.refresh_from_db()
    assert study.codebook_version == second_version
    assert study.codebook_changes.count() == 1
    assert len(before) == Annotation.objects.count()


def test_deprecated_categories_take_no_new_labels_but_kept_ones_stay(
    study, people, codebook_version
):
    first = people["annotator1"]
    items = list(study.items.order_by("id")[:2])
    submit(items[0], first, symptom=["build_failure"])
    draft = codebook_draft_create(version=codebook_version, label="1.1")
    draft_category_update(category=category(draft, "symptom", "build_failure"), deprecated=True)
    study_codebook_migrate(
        study=study, to_version=codebook_draft_publish(version=draft), by=people["manager"]
    )
    with pytest.raises(ApplicationError, match="build_failure is deprecated") as refused:
        submit(items[1], first, symptom=["build_failure"])
    assert refused.value.extra == {"dimension": "symptom", "categories": ["build_failure"]}
    assert labels(items[1], first) == {}
    # The label that had it before may keep it when saved again.
    assignment = Assignment.objects.get(item=items[0], annotator=first)
    assignment_save(
        assignment=assignment,
        user=first,
        answers={"symptom": DimensionAnswer(category_keys=["build_failure"], rationale="still so")},
        submit=False,
    )
    assert labels(items[0], first)["symptom"] == ["build_failure"]


def test_agreement_is_reported_per_version(study, people, labeled, second_version):
    first, second = people["annotator1"], people["annotator2"]
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    study.refresh_from_db()
    # Flagged labels keep their old category and still count (under its key) until re-checked.
    assert study_agreement_report(study=study)["dimensions"]["symptom"]["n_items"] == 4
    later = list(study.items.order_by("id")[4:6])
    for item in later:
        submit(item, first, root_cause=["api_usage"], symptom=["deadlock"])
        submit(item, second, root_cause=["api_usage"], symptom=["stall"])
    assert [(v.label, n) for v, n in study_label_versions(study=study)] == [
        ("0.1.0", 8),
        ("2.0", 4),
    ]
    reports = agreement_by_version(study=study)
    assert list(reports) == ["0.1.0", "2.0"]
    assert reports["0.1.0"]["dimensions"]["symptom"]["n_items"] == 4
    assert reports["2.0"]["dimensions"]["symptom"]["n_items"] == 2
    assert reports["2.0"]["dimensions"]["symptom"]["percent_agreement"] == 0.0
    assert reports["2.0"]["dimensions"]["root_cause"]["percent_agreement"] == 1.0
    # The filter the report takes directly.
    only_new = study_agreement_report(
        study=study, filters=LabelTableFilter(codebook_version_id=second_version.pk)
    )
    assert only_new == reports["2.0"]
