"""Reads of the corpus for the apps built on it: which issues a repository holds, what a selection
rule needs to know about them, which of them have a linked fix."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from corpus.models import Issue, IssueComment, LinkedFix

# What a selection rule (a source's filter, a study's follow) reads of an issue.
RULE_FIELDS = ["id", "number", "state", "labels", "is_pull_request", "updated_at"]


def issues_updated_at(*, repository_id: int, numbers: Iterable[int]) -> dict[int, datetime]:
    """number -> stored `updated_at`, for the numbers of the repository the corpus holds."""
    return dict(
        Issue.objects.filter(repository_id=repository_id, number__in=list(numbers)).values_list(
            "number", "updated_at"
        )
    )


def issues_of_repository(
    *,
    repository_id: int,
    state: str | None = None,
    labels: Sequence[str] = (),
    since: datetime | None = None,
    include_pull_requests: bool = True,
) -> list[Issue]:
    """The stored issues of a repository in `state` (None: any), updated at or after `since`,
    carrying every one of `labels` (matched without regard to case, as GitHub does), by number.
    Only the fields a selection rule reads are loaded."""
    issues = Issue.objects.filter(repository_id=repository_id).only(*RULE_FIELDS)
    if not include_pull_requests:
        issues = issues.filter(is_pull_request=False)
    if state is not None:
        issues = issues.filter(state=state)
    if since is not None:
        issues = issues.filter(updated_at__gte=since)
    wanted = [label.lower() for label in labels]
    return [
        issue
        for issue in issues.order_by("number")
        if all(label in {name.lower() for name in issue.labels} for label in wanted)
    ]


def issues_with_ids(*, issue_ids: Iterable[int], include_pull_requests: bool = True) -> list[Issue]:
    """The issues of these ids, with only the fields a selection rule reads."""
    issues = Issue.objects.filter(id__in=list(issue_ids))
    if not include_pull_requests:
        issues = issues.filter(is_pull_request=False)
    return list(issues.only(*RULE_FIELDS))


def issue_ids_with_linked_fix(*, issue_ids: Iterable[int]) -> set[int]:
    """Those of the issue ids that have at least one linked fix."""
    return set(
        LinkedFix.objects.filter(issue_id__in=list(issue_ids)).values_list("issue_id", flat=True)
    )


@dataclass(frozen=True)
class IssueThread:
    fixes: list[LinkedFix]
    comments: list[IssueComment]


def issue_thread(*, issue: Issue) -> IssueThread:
    """An issue's linked fixes and comments, as the pages show them beside it: two queries."""
    return IssueThread(
        fixes=list(LinkedFix.objects.filter(issue=issue).order_by("kind", "ref")),
        comments=list(IssueComment.objects.filter(issue=issue).order_by("created_at", "github_id")),
    )
