"""Writes about issues that changed on GitHub after they were labeled: keeping what the issue
was when the change is found, and clearing the item's flag once people looked again (the
annotators who labeled it submitted again, or a manager confirmed the labels), with a check
kept for each look. Labels are never touched. Reads are in `labeling.upstream_changes`."""

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError, PermissionDeniedError
from corpus.models import Issue, IssueComment
from labeling.access import MANAGER, study_roles
from labeling.models import Assignment, StudyItem, UpstreamChange, UpstreamChangeCheck
from labeling.services.lifecycle import study_check_open
from labeling.upstream_changes import LABELED, upstream_change_waiting_for

MAX_REVIEW_NOTE = 2000


def item_upstream_changes_record(*, issue_ids: Sequence[int], gone: bool = False) -> int:
    """Flag the study items of these issues that someone labeled already (a draft counts) and
    keep, for each newly flagged item, the issue as it is stored now: the caller writes the new
    version after this (`corpus.signals.issues_changed_upstream`). An item flagged already keeps
    its earlier version, the one that was labeled; `gone` is added to it. Returns how many
    items were newly flagged.

    Runs inside the caller's transaction (the corpus's write).
    """
    labeled = (
        Assignment.objects.filter(item__issue_id__in=issue_ids, status__in=LABELED)
        .values("item_id")
        .distinct()
    )
    items = list(
        StudyItem.objects.select_for_update()
        .filter(pk__in=labeled)
        .order_by("pk")
        .values_list("pk", "issue_id", "changed_upstream_at")
    )
    if gone:
        UpstreamChange.objects.filter(
            item_id__in=[pk for pk, _, flagged in items if flagged], cleared_at__isnull=True
        ).update(gone=True)
    new = [(pk, issue_id) for pk, issue_id, flagged in items if flagged is None]
    if not new:
        return 0
    now = timezone.now()
    earlier = _issues_as_stored({issue_id for _, issue_id in new})
    UpstreamChange.objects.bulk_create(
        (
            UpstreamChange(item_id=pk, detected_at=now, before=earlier.get(issue_id, {}), gone=gone)
            for pk, issue_id in new
        ),
        # An item unflagged by hand keeps its open change (the earlier version), and the sync
        # that found the change goes on rather than fail on the one-open-change constraint.
        ignore_conflicts=True,
    )
    return StudyItem.objects.filter(pk__in=[pk for pk, _ in new]).update(changed_upstream_at=now)


def _issues_as_stored(issue_ids: set[int]) -> dict[int, dict[str, Any]]:
    """What the pages compare of an issue, as stored: its texts, labels, state and comments
    (by GitHub id, with when each was last edited). Two queries."""
    found = {
        row["id"]: {
            "title": row["title"],
            "body": row["body"],
            "labels": row["labels"],
            "state": row["state"],
            "state_reason": row["state_reason"],
            "comments_count": row["comments_count"],
            "updated_at": row["updated_at"].isoformat(),
            "comments": {},
        }
        for row in Issue.objects.filter(pk__in=issue_ids).values(
            "id", "title", "body", "labels", "state", "state_reason", "comments_count", "updated_at"
        )
    }
    for issue_id, github_id, updated_at in IssueComment.objects.filter(
        issue_id__in=issue_ids
    ).values_list("issue_id", "github_id", "updated_at"):
        # JSON object keys are strings.
        found[issue_id]["comments"][str(github_id)] = updated_at.isoformat()
    return found


@transaction.atomic
def item_upstream_review(
    *, item: StudyItem, user: AbstractBaseUser, note: str = ""
) -> UpstreamChange:
    """A manager looked at what changed on GitHub and the item's labels still hold: the change
    is cleared and the item's flag with it; the check keeps who, when and why."""
    item = StudyItem.objects.select_for_update(of=("self",)).select_related("study").get(pk=item.pk)
    if MANAGER not in study_roles(study=item.study, user=user):
        raise PermissionDeniedError("Only the study's managers confirm labels after a change.")
    study_check_open(study_id=item.study_id)
    note = note.strip()
    if len(note) > MAX_REVIEW_NOTE:
        raise ApplicationError(
            f"The note is longer than {MAX_REVIEW_NOTE} characters.", extra={"note": len(note)}
        )
    change = _open_change(item)
    if change is None:
        raise ApplicationError(
            "Nothing to review: the issue has not changed on GitHub since it was labeled or "
            "reviewed."
        )
    UpstreamChangeCheck.objects.create(
        change=change, user=user, kind=UpstreamChangeCheck.Kind.REVIEWED, note=note
    )
    _clear(item, change)
    return change


def item_upstream_resubmitted(*, assignment: Assignment) -> None:
    """An annotator submitted the labels of an item whose issue changed: their look again is
    kept, and once everyone who had labeled the item before the change did so, the change is
    cleared. Called by the submit, inside its transaction, with the assignment's row locked."""
    item = StudyItem.objects.select_for_update(of=("self",)).get(pk=assignment.item_id)
    change = _open_change(item)
    if change is None:
        return
    UpstreamChangeCheck.objects.create(
        change=change, user_id=assignment.annotator_id, kind=UpstreamChangeCheck.Kind.RESUBMITTED
    )
    if not upstream_change_waiting_for(change=change):
        _clear(item, change)


def _open_change(item: StudyItem) -> UpstreamChange | None:
    """The item's open change; one is made for an item flagged without one (flagged by hand)."""
    change = UpstreamChange.objects.filter(item=item, cleared_at__isnull=True).first()
    if change is None and item.changed_upstream_at is not None:
        change = UpstreamChange.objects.create(item=item, detected_at=item.changed_upstream_at)
    return change


def _clear(item: StudyItem, change: UpstreamChange) -> None:
    change.cleared_at = timezone.now()
    change.save(update_fields=["cleared_at"])
    item.changed_upstream_at = None
    item.save(update_fields=["changed_upstream_at"])
