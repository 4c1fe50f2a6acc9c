"""Study follows: a study takes in the matching issues of a source, when the follow is made
(`include_existing`) and after each page a sync stores."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.exceptions import ApplicationError, PermissionDeniedError
from corpus.models import Issue
from corpus.selectors import issue_ids_with_linked_fix, issues_with_ids
from ingest.models import Source, StudyFollow
from ingest.sources import labels_clean, source_issues
from labeling.access import MANAGER, study_roles
from labeling.models import Study
from labeling.services.studies import study_items_add


def _follow_matches(follow: StudyFollow, issue: Issue, *, has_fix: bool) -> bool:
    if issue.is_pull_request:
        return False
    if follow.state != StudyFollow.State.ANY and issue.state != follow.state:
        return False
    issue_labels = {label.lower() for label in issue.labels}
    if any(label.lower() not in issue_labels for label in follow.labels):
        return False
    return has_fix or not follow.requires_linked_fix


def _follows_apply(*, follows: Sequence[StudyFollow], issues: list[Issue], fixed: set[int]) -> int:
    """Add the issues each follow's rule selects to its study. `fixed`: ids with a linked fix."""
    added = 0
    for follow in follows:
        if follow.study.status != Study.Status.ACTIVE:
            continue
        matching = [i for i in issues if _follow_matches(follow, i, has_fix=i.id in fixed)]
        if matching:
            added += study_items_add(study=follow.study, issue_ids=[issue.id for issue in matching])
    return added


def follows_apply(*, follows: Sequence[StudyFollow], issue_ids: list[int]) -> int:
    """Add the stored issues of these ids (just written by a sync) to the studies whose follow
    selects them. Returns the number of study items added. Runs in the caller's transaction."""
    if not follows or not issue_ids:
        return 0
    issues = issues_with_ids(issue_ids=issue_ids, include_pull_requests=False)
    fixed = issue_ids_with_linked_fix(issue_ids=issue_ids)
    return _follows_apply(follows=follows, issues=issues, fixed=fixed)


@transaction.atomic
def study_follow_create(
    *,
    source: Source,
    study: Study,
    state: str = StudyFollow.State.ANY,
    labels: Iterable[str] = (),
    requires_linked_fix: bool = False,
    include_existing: bool = False,
    created_by: AbstractBaseUser | None = None,
) -> StudyFollow:
    """Let a study take in the source's matching issues from now on; with `include_existing`,
    the matching issues stored already are added at once too. When `created_by` is given, they
    must manage the study."""
    if created_by is not None and MANAGER not in study_roles(study=study, user=created_by):
        raise PermissionDeniedError("Only the study's managers may let it follow a source.")
    if state not in StudyFollow.State.values:
        raise ApplicationError(f"The state is one of {', '.join(StudyFollow.State.values)}.")
    if StudyFollow.objects.filter(source=source, study=study).exists():
        raise ApplicationError(f"The study {study.slug} follows this source already.")
    follow = StudyFollow.objects.create(
        source=source,
        study=study,
        state=state,
        labels=labels_clean(labels=labels),
        requires_linked_fix=requires_linked_fix,
        created_by=created_by,
    )
    if include_existing:
        issues = source_issues(source=source)
        fixed = issue_ids_with_linked_fix(issue_ids=[issue.id for issue in issues])
        _follows_apply(follows=[follow], issues=issues, fixed=fixed)
    return follow
