import pytest

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from labeling.models import Annotation, AnnotationRevision, Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator, study_create


def first_assignment(study, user) -> Assignment:
    return item_next_for_annotator(study=study, user=user)


def test_labels_from_another_dimension_are_rejected(study, people):
    assignment = first_assignment(study, people["annotator1"])
    with pytest.raises(ApplicationError, match="not a category of Symptom"):
        assignment_save(
            assignment=assignment,
            user=people["annotator1"],
            answers={"symptom": DimensionAnswer(category_keys=["api_misuse"])},
            submit=False,
        )
    assert not Annotation.objects.exists()


def test_single_label_dimension_takes_one_category(study, people):
    assignment = first_assignment(study, people["annotator1"])
    with pytest.raises(ApplicationError, match="takes one category"):
        assignment_save(
            assignment=assignment,
            user=people["annotator1"],
            answers={"symptom": DimensionAnswer(category_keys=["crash", "hang"])},
            submit=False,
        )


def test_unknown_dimension_is_rejected(study, people):
    assignment = first_assignment(study, people["annotator1"])
    with pytest.raises(ApplicationError, match="Unknown dimension"):
        assignment_save(
            assignment=assignment,
            user=people["annotator1"],
            answers={"mood": DimensionAnswer()},
            submit=False,
        )


def test_only_the_assigned_annotator_may_save(study, people):
    assignment = first_assignment(study, people["annotator1"])
    with pytest.raises(PermissionDeniedError):
        assignment_save(
            assignment=assignment,
            user=people["annotator2"],
            answers={"symptom": DimensionAnswer(category_keys=["crash"])},
            submit=False,
        )


def test_every_change_is_a_revision_and_unchanged_saves_add_none(study, people):
    user = people["annotator1"]
    assignment = first_assignment(study, user)
    for keys in (["crash"], ["crash"], ["hang"]):
        assignment = assignment_save(
            assignment=assignment,
            user=user,
            answers={"symptom": DimensionAnswer(category_keys=keys)},
            submit=False,
            expected_version=assignment.version,
        )
    revisions = AnnotationRevision.objects.order_by("id").values_list("category_keys", flat=True)
    assert list(revisions) == [["crash"], ["hang"]]


def test_stale_version_is_a_conflict(study, people):
    user = people["annotator1"]
    assignment = first_assignment(study, user)
    assignment_save(assignment=assignment, user=user, answers={}, submit=False, expected_version=0)
    with pytest.raises(ConflictError):
        assignment_save(
            assignment=assignment, user=user, answers={}, submit=False, expected_version=0
        )


def test_pull_requests_never_become_items(codebook_version, sample_issues, people):
    pull_request = sample_issues[0]
    pull_request.is_pull_request = True
    pull_request.save(update_fields=["is_pull_request"])
    study = study_create(
        slug="s",
        name="s",
        codebook_version=codebook_version,
        k=1,
        annotators=[people["annotator1"]],
        issues=sample_issues,
    )
    assert study.items.count() == len(sample_issues) - 1
    assert not study.items.filter(issue=pull_request).exists()


def test_items_are_claimed_least_annotated_first_never_twice(
    codebook_version, sample_issues, people, make_user
):
    from labeling.services.studies import study_member_add

    study = study_create(
        slug="open", name="open", codebook_version=codebook_version, k=2, issues=sample_issues[:3]
    )
    for name in ("annotator1", "annotator2"):
        study_member_add(study=study, user=people[name], role="annotator")
    first = item_next_for_annotator(study=study, user=people["annotator1"])
    assert first.selection_reason.startswith("least-annotated (0 of 2")
    # Least-annotated first: annotator2 gets a fresh item, not the one annotator1 holds.
    second = item_next_for_annotator(study=study, user=people["annotator2"])
    assert second.item_id != first.item_id
    # An annotator with an unfinished item gets that one back.
    assert item_next_for_annotator(study=study, user=people["annotator1"]).pk == first.pk
    # Nobody gets the same item twice, and nobody gets more items than exist.
    seen = set()
    for _ in range(5):
        assignment = item_next_for_annotator(study=study, user=people["annotator1"])
        if assignment is None:
            break
        assert assignment.item_id not in seen
        seen.add(assignment.item_id)
        assignment.status = "submitted"
        assignment.save(update_fields=["status"])
    assert len(seen) == 3


def test_a_claim_takes_an_item_nobody_holds_then_the_least_annotated(
    codebook_version, sample_issues, people, make_user
):
    from labeling.services.studies import study_member_add

    study = study_create(
        slug="order", name="order", codebook_version=codebook_version, k=2, issues=sample_issues[:3]
    )
    annotators = [make_user(f"claimer{n}") for n in range(4)]
    for user in annotators:
        study_member_add(study=study, user=user, role="annotator")
    item_ids = sorted(study.items.values_list("id", flat=True))

    def claim_and_submit(user):
        assignment = item_next_for_annotator(study=study, user=user)
        Assignment.objects.filter(pk=assignment.pk).update(status="submitted")
        return assignment

    # Items nobody holds go first, in id order; an item held once waits until none is left.
    claimed = [claim_and_submit(user) for user in annotators[:3]]
    assert [a.item_id for a in claimed] == item_ids
    assert all(a.selection_reason == "least-annotated (0 of 2 before)" for a in claimed)
    # Then the least-annotated, never one the annotator has: the first item others hold once.
    fourth = claim_and_submit(annotators[3])
    assert (fourth.item_id, fourth.selection_reason) == (
        item_ids[0],
        "least-annotated (1 of 2 before)",
    )
    again = claim_and_submit(annotators[0])
    assert again.item_id == item_ids[1]
    # An item with all its annotators is given to nobody else.
    assert claim_and_submit(annotators[1]).item_id == item_ids[2]
    assert item_next_for_annotator(study=study, user=annotators[2]) is None


def test_balanced_pre_assignment_gives_each_item_k_distinct_annotators(study):
    for item in study.items.prefetch_related("assignments"):
        annotators = [a.annotator_id for a in item.assignments.all()]
        assert len(annotators) == len(set(annotators)) == 2


def test_a_screened_out_item_needs_no_other_dimension(study, people):
    user = people["annotator1"]
    assignment = first_assignment(study, user)
    assignment = assignment_save(
        assignment=assignment,
        user=user,
        answers={"root_cause": DimensionAnswer(category_keys=["api_misuse"])},
        submit=False,
    )
    assignment = assignment_save(
        assignment=assignment,
        user=user,
        answers={"screening": DimensionAnswer(category_keys=["not_a_bug"])},
        submit=True,
    )
    assert assignment.status == "submitted"
    root_cause = Annotation.objects.get(assignment=assignment, dimension__key="root_cause")
    assert not root_cause.categories.exists()
    # What it held before is kept in its history.
    assert list(root_cause.revisions.values_list("category_keys", flat=True)) == [
        ["api_misuse"],
        [],
    ]


def test_an_included_item_needs_its_required_dimensions(study, people):
    user = people["annotator1"]
    with pytest.raises(ApplicationError, match="Symptom, Root cause, Fix pattern, Stage"):
        assignment_save(
            assignment=first_assignment(study, user),
            user=user,
            answers={"screening": DimensionAnswer(category_keys=["include"])},
            submit=True,
        )


def test_rounds_are_appended_and_targets_bounded(study):
    from labeling.services.studies import round_save

    pilot = round_save(study=study, name="Pilot 2", kind="pilot", target_kappa=0.8)
    assert pilot.position == 1
    with pytest.raises(ApplicationError, match="between -1 and 1"):
        round_save(study=study, name="Bad", target_kappa=1.5)
    changed = round_save(study=study, name="Pilot two", kind="pilot", target_kappa=0.7, round=pilot)
    assert (changed.name, changed.target_kappa) == ("Pilot two", 0.7)
