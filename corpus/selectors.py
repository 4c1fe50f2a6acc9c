"""Reads of the corpus for the apps built on it: which issues a repository holds, what a selection
rule needs to know about them, which of them have a linked fix."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef, Q

from common.prepared import PreparedQuery, prefetched_carry
from corpus.models import Issue, IssueComment, LinkedFix, Repository

# What a selection rule (a source's filter, a study's follow) reads of an issue.
RULE_FIELDS = ["id", "number", "state", "labels", "is_pull_request", "updated_at"]
# The columns a list of issues never shows: their texts and GitHub's record can be large, and
# reading and decoding them for each row of a long list costs more than the rest of the page.
ISSUE_TEXT_FIELDS = ("body", "body_html", "raw", "facets")


def issue_text_fields_of(path: str) -> list[str]:
    """ISSUE_TEXT_FIELDS under a relation's path (``item__issue``), for ``defer()``."""
    return [f"{path}__{name}" for name in ISSUE_TEXT_FIELDS]


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
    """An issue's linked fixes and comments, as the pages show them beside it: two queries.
    The comments come without their Markdown source (`body`): the pages show the sanitised HTML,
    and the source of a pasted log can run to megabytes."""
    return IssueThread(
        fixes=_ISSUE_FIXES(issue_id=issue.pk), comments=_ISSUE_COMMENTS(issue_id=issue.pk)
    )


def issue_get_with_thread(*, issue_id: int) -> Issue:
    """The issue with its repository, its comments (their Markdown source too) and its linked
    fixes, carried as `prefetch_related` carries them (`issue.comments.all()` reads no more):
    three queries, kept compiled, for the API's item, which reads them at every request. As
    `.get()`, Issue.DoesNotExist when there is no such issue."""
    found = _ISSUE_WITH_REPOSITORY(issue_id=issue_id)
    if not found:
        raise Issue.DoesNotExist(f"No issue {issue_id}.")
    issue = found[0]
    prefetched_carry(issue, "comments", _ISSUE_COMMENTS(issue_id=issue_id, with_source=True))
    prefetched_carry(issue, "linked_fixes", _ISSUE_FIXES(issue_id=issue_id))
    return issue


# Every labeling page reads them: built and compiled once (common.prepared).
_ISSUE_WITH_REPOSITORY = PreparedQuery(
    lambda *, issue_id: Issue.objects.select_related("repository").filter(pk=issue_id),
    values=("issue_id",),
)
_ISSUE_FIXES = PreparedQuery(
    lambda *, issue_id: LinkedFix.objects.filter(issue_id=issue_id).order_by("kind", "ref"),
    values=("issue_id",),
)
_ISSUE_COMMENTS = PreparedQuery(
    lambda *, issue_id, with_source=False: (
        IssueComment.objects.filter(issue_id=issue_id)
        .defer(*() if with_source else ("body",))
        .order_by("created_at", "github_id")
    ),
    values=("issue_id",),
)


# Selecting issues for a study


@dataclass(frozen=True)
class IssueSelection:
    """Which issues of the corpus a study draws from, as papers describe it: repositories, state,
    GitHub labels (any or all of them, compared without regard to case), a creation date range,
    whether a fix is linked, and words of the title or body. Pull requests never count."""

    repositories: tuple[str, ...] = ()  # "owner/name"; empty: every repository
    state: str = "any"  # any | open | closed
    labels: tuple[str, ...] = ()
    labels_match: str = "any"  # any | all
    created_after: datetime | None = None
    created_before: datetime | None = None
    has_fix: bool | None = None  # None: either
    query: str = ""


@dataclass(frozen=True)
class SelectedIssue:
    id: int
    owner: str
    name: str
    number: int

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def reference(self) -> str:
        return f"{self.owner}/{self.name}#{self.number}"


def issue_selection(*, selection: IssueSelection) -> list[SelectedIssue]:
    """The issues the selection matches, by repository and number. Labels are compared here
    rather than in SQL, since a JSON list is queried differently on SQLite and PostgreSQL."""
    issues = Issue.objects.filter(is_pull_request=False)
    if selection.repositories:
        wanted = Q()
        for full_name in selection.repositories:
            owner, _, name = full_name.partition("/")
            wanted |= Q(repository__owner=owner, repository__name=name)
        issues = issues.filter(wanted)
    if selection.state in ("open", "closed"):
        issues = issues.filter(state=selection.state)
    if selection.created_after is not None:
        issues = issues.filter(created_at__gte=selection.created_after)
    if selection.created_before is not None:
        issues = issues.filter(created_at__lt=selection.created_before)
    if selection.has_fix is not None:
        with_fix = Exists(LinkedFix.objects.filter(issue=OuterRef("pk")))
        issues = issues.filter(with_fix if selection.has_fix else ~with_fix)
    for word in selection.query.split():
        issues = issues.filter(Q(title__icontains=word) | Q(body__icontains=word))
    wanted_labels = {label.strip().lower() for label in selection.labels if label.strip()}
    rows = issues.order_by("repository__owner", "repository__name", "number").values_list(
        "id", "repository__owner", "repository__name", "number", "labels"
    )
    selected = []
    for issue_id, owner, name, number, labels in rows:
        if wanted_labels:
            present = {str(label).lower() for label in labels or []}
            matched = (
                wanted_labels <= present
                if selection.labels_match == "all"
                else bool(wanted_labels & present)
            )
            if not matched:
                continue
        selected.append(SelectedIssue(issue_id, owner, name, number))
    return selected


def repository_names() -> list[str]:
    """Every repository of the corpus, "owner/name", in order."""
    return [
        f"{owner}/{name}"
        for owner, name in Repository.objects.order_by("owner", "name").values_list("owner", "name")
    ]


def repository_by_name(*, owner: str, name: str) -> Repository | None:
    """The repository the corpus knows by that name, compared without regard to case (as GitHub
    does): its own name, else the name GitHub gave it after a rename, else one of its aliases."""
    return (
        Repository.objects.filter(owner__iexact=owner, name__iexact=name).first()
        or Repository.objects.filter(renamed_to__iexact=f"{owner}/{name}").first()
        or Repository.objects.filter(aliases__owner__iexact=owner, aliases__name__iexact=name)
        .distinct()
        .first()
    )


def repositories_unidentified(
    *, owners: Iterable[str], names: Iterable[str], excluding: int, limit: int
) -> list[Repository]:
    """Repositories other than `excluding` whose GitHub id is not known yet and that share an
    owner or a name (without regard to case) with the given ones, oldest first, at most
    `limit`: those a rename may have made the same repository as one GitHub just named."""
    shared = Q()
    for owner in set(owners):
        shared |= Q(owner__iexact=owner)
    for name in set(names):
        shared |= Q(name__iexact=name)
    if not shared:
        return []
    unidentified = Repository.objects.filter(shared, github_id__isnull=True).exclude(pk=excluding)
    return list(unidentified.order_by("id")[:limit])
