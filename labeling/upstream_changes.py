"""Reads about issues that changed on GitHub after they were labeled: what changed, between the
version that was labeled (kept when the change was found, `UpstreamChange.before`) and the
issue as stored now; who looked again. Writes are in `labeling.services.upstream_changes`."""

import difflib
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Prefetch

from corpus.models import Issue, IssueComment
from labeling.models import Assignment, StudyItem, UpstreamChange, UpstreamChangeCheck

LABELED = (Assignment.Status.DRAFT, Assignment.Status.SUBMITTED)

# A body rewritten from top to bottom is shown in part: the issue below has all of it.
MAX_BODY_DIFF_LINES = 200


@dataclass(frozen=True)
class ValueChange:
    before: str
    now: str


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "added", "removed", "context", "hunk" (a "@@ -a,b +c,d @@" line) or "note"
    text: str


@dataclass
class UpstreamDiff:
    """What changed in an item's issue since it was labeled. `known` is false when the earlier
    version was not kept (an item flagged before changes were kept): only the date is known."""

    change: UpstreamChange
    known: bool
    title: ValueChange | None = None
    state: ValueChange | None = None
    labels_added: list[str] = field(default_factory=list)
    labels_removed: list[str] = field(default_factory=list)
    body: list[DiffLine] = field(default_factory=list)
    body_cut: bool = False
    comments_count: ValueChange | None = None
    comments_added: list[IssueComment] = field(default_factory=list)
    comments_edited: list[IssueComment] = field(default_factory=list)
    comments_removed: int = 0

    @property
    def detected_at(self) -> datetime:
        return self.change.detected_at

    @property
    def gone(self) -> bool:
        return self.change.gone

    @property
    def body_changed(self) -> bool:
        return bool(self.body)

    @property
    def shown_fields_changed(self) -> bool:
        """Whether anything the pages compare changed (GitHub also updates an issue for its
        assignees, milestone or linked pull requests)."""
        return bool(
            self.title
            or self.state
            or self.labels_added
            or self.labels_removed
            or self.body
            or self.comments_added
            or self.comments_edited
            or self.comments_removed
        )


def item_upstream_change(*, item: StudyItem) -> UpstreamDiff | None:
    """The open change of the item's issue, compared with the issue as stored; None when the
    item is not flagged (no query then). Three queries."""
    if item.changed_upstream_at is None:
        return None
    change = UpstreamChange.objects.filter(item_id=item.pk, cleared_at__isnull=True).first()
    if change is None:  # flagged without a record (by hand): only the date is known
        change = UpstreamChange(item=item, detected_at=item.changed_upstream_at)
    if not change.before:
        return UpstreamDiff(change=change, known=False)
    issue = Issue.objects.only(
        "title", "body", "labels", "state", "state_reason", "comments_count"
    ).get(pk=item.issue_id)
    comments = list(
        IssueComment.objects.filter(issue_id=item.issue_id)
        .only("github_id", "author", "body", "created_at", "updated_at")
        .order_by("created_at", "github_id")
    )
    return _diff(change, issue, comments)


def item_upstream_change_for_annotator(*, assignment: Assignment) -> UpstreamDiff | None:
    """The open change as the annotator of `assignment` sees it on the labeling page: only when
    they labeled the item before the change (who starts after it labels the new version)."""
    item = assignment.item
    if (
        item.changed_upstream_at is None
        or assignment.started_at is None
        or assignment.started_at > item.changed_upstream_at
    ):
        return None
    return item_upstream_change(item=item)


def item_upstream_history(*, item: StudyItem) -> list[UpstreamChange]:
    """Every change of the item's issue found since it was labeled, newest first, each with its
    checks (who looked again, how, when): the audit trail. One query, two with checks."""
    return list(
        UpstreamChange.objects.filter(item_id=item.pk)
        .defer("before")
        .prefetch_related(
            Prefetch(
                "checks",
                queryset=UpstreamChangeCheck.objects.select_related("user").order_by(
                    "checked_at", "pk"
                ),
            )
        )
        .order_by("-detected_at", "-pk")
    )


def upstream_change_waiting_for(*, change: UpstreamChange) -> list[Assignment]:
    """The assignments whose annotator labeled the item before the change and has not submitted
    again since (skipped ones aside): who still has to look again."""
    looked = set(
        change.checks.filter(kind=UpstreamChangeCheck.Kind.RESUBMITTED).values_list(
            "user_id", flat=True
        )
    )
    return [
        assignment
        for assignment in Assignment.objects.filter(
            item_id=change.item_id, status__in=LABELED, started_at__lte=change.detected_at
        )
        .select_related("annotator")
        .order_by("pk")
        if assignment.annotator_id not in looked
    ]


def item_upstream_waiting_for(*, item: StudyItem) -> list[str]:
    """Usernames of the annotators who labeled the item before its open change and have not
    submitted again since (for the study's overseers: annotators are blind to each other)."""
    if item.changed_upstream_at is None:
        return []
    change = UpstreamChange.objects.filter(item_id=item.pk, cleared_at__isnull=True).first()
    if change is None:
        return []
    return [a.annotator.get_username() for a in upstream_change_waiting_for(change=change)]


def _state(state: str, reason: str) -> str:
    return f"{state} ({reason})" if reason else state


def _diff(change: UpstreamChange, issue: Issue, comments: list[IssueComment]) -> UpstreamDiff:
    before = change.before
    diff = UpstreamDiff(change=change, known=True)
    if before.get("title", "") != issue.title:
        diff.title = ValueChange(before.get("title", ""), issue.title)
    earlier_state = _state(before.get("state", ""), before.get("state_reason", ""))
    state = _state(issue.state, issue.state_reason)
    if earlier_state != state:
        diff.state = ValueChange(earlier_state, state)
    earlier_labels, labels = list(before.get("labels") or []), list(issue.labels or [])
    diff.labels_added = [label for label in labels if label not in earlier_labels]
    diff.labels_removed = [label for label in earlier_labels if label not in labels]
    diff.body, diff.body_cut = _body_diff(before.get("body", ""), issue.body)
    earlier_count = before.get("comments_count")
    if earlier_count is not None and earlier_count != issue.comments_count:
        diff.comments_count = ValueChange(str(earlier_count), str(issue.comments_count))
    earlier_comments: dict[str, str] = before.get("comments") or {}
    for comment in comments:
        edited_at = earlier_comments.get(str(comment.github_id))
        if edited_at is None:
            diff.comments_added.append(comment)
        elif datetime.fromisoformat(edited_at) != comment.updated_at:
            diff.comments_edited.append(comment)
    still_there = {str(comment.github_id) for comment in comments}
    diff.comments_removed = len(earlier_comments.keys() - still_there)
    return diff


def _body_diff(before: str, now: str) -> tuple[list[DiffLine], bool]:
    """A unified diff of two bodies, line by line (two lines of context), and whether it was
    cut at MAX_BODY_DIFF_LINES."""
    if before == now:
        return [], False
    lines: list[DiffLine] = []
    unified = difflib.unified_diff(before.splitlines(), now.splitlines(), lineterm="", n=2)
    for number, line in enumerate(unified):
        if number < 2:
            continue  # the "---" and "+++" file headers
        if len(lines) == MAX_BODY_DIFF_LINES:
            return lines, True
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("added", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("removed", line[1:]))
        else:
            lines.append(DiffLine("context", line[1:]))
    if not lines:  # the bodies differ only in line endings or a final newline
        lines.append(DiffLine("note", "Only line endings changed."))
    return lines, False
