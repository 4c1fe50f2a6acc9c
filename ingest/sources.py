"""Sources: what slice of a GitHub repository the corpus keeps (add, find, change one), and which
stored issues a source's filter selects."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError, ConflictError
from common.services import model_update
from common.text import repository_full_name_parse
from corpus.models import Issue, Repository
from corpus.selectors import issues_of_repository, repository_by_name
from corpus.services import repository_for_name
from ingest.models import MAX_INTERVAL_MINUTES, MIN_INTERVAL_MINUTES, Source, SyncRun

logger = logging.getLogger(__name__)

MAX_LABELS = 20
MAX_LABEL_LENGTH = 50  # GitHub's own limit on label names
# Asking GitHub whether a repository exists happens while a person waits for the page: a short
# timeout and one retry, not the sync's patience.
UPSTREAM_CHECK_TIMEOUT_SECONDS = 5
UPSTREAM_CHECK_RETRIES = 1


def repository_name_parse(*, text: str) -> tuple[str, str]:
    """Parse OWNER/NAME, or a github.com URL of the repository, into (owner, name)."""
    try:
        return repository_full_name_parse(text or "")
    except ValueError:
        raise ApplicationError(
            "A repository is written OWNER/NAME, for example microsoft/DeepSpeed.",
            {"repository": text},
        ) from None


def labels_clean(*, labels: Iterable[str]) -> list[str]:
    """Label names stripped, without repeats (ignoring case), in the order given."""
    if isinstance(labels, str):
        raise ApplicationError("Labels are a list of label names.")
    cleaned: list[str] = []
    seen: set[str] = set()
    for label in labels:
        if not isinstance(label, str):
            raise ApplicationError("Labels are a list of label names.", {"label": repr(label)})
        name = label.strip()
        if not name:
            continue
        if len(name) > MAX_LABEL_LENGTH:
            raise ApplicationError(
                f"A label name has at most {MAX_LABEL_LENGTH} characters.", {"label": name}
            )
        if "," in name:
            # GitHub's labels filter is a comma-separated list, so such a label cannot be asked for.
            raise ApplicationError("A label name cannot contain a comma.", {"label": name})
        if name.lower() not in seen:
            seen.add(name.lower())
            cleaned.append(name)
    if len(cleaned) > MAX_LABELS:
        raise ApplicationError(f"A source names at most {MAX_LABELS} labels.")
    return cleaned


def _since_check(since: datetime | None) -> None:
    if since is None:
        return
    if timezone.is_naive(since):
        raise ApplicationError("`since` needs a time zone, for example 2024-01-01T00:00:00Z.")
    if since > timezone.now():
        raise ApplicationError("`since` lies in the future.")


def _interval_check(interval_minutes: int) -> None:
    if not MIN_INTERVAL_MINUTES <= interval_minutes <= MAX_INTERVAL_MINUTES:
        raise ApplicationError(
            f"The interval is between {MIN_INTERVAL_MINUTES} and {MAX_INTERVAL_MINUTES} minutes.",
            {"interval_minutes": interval_minutes},
        )


def _same_source(
    *, repository: Repository, state: str, labels: list[str], include_pull_requests: bool
) -> Source | None:
    wanted = sorted(label.lower() for label in labels)
    for source in Source.objects.filter(
        repository=repository, state=state, include_pull_requests=include_pull_requests
    ):
        if sorted(label.lower() for label in source.labels) == wanted:
            return source
    return None


def _options_check(
    *,
    repository: str,
    state: str,
    labels: Iterable[str],
    since: datetime | None,
    interval_minutes: int,
) -> tuple[str, str, list[str]]:
    """The checks of a new source that need neither the database nor GitHub; returns the
    repository's (owner, name) and the cleaned label names."""
    owner, name = repository_name_parse(text=repository)
    if state not in Source.State.values:
        raise ApplicationError(f"The state is one of {', '.join(Source.State.values)}.")
    label_names = labels_clean(labels=labels)
    _since_check(since)
    _interval_check(interval_minutes)
    return owner, name, label_names


def _duplicate_check(
    *, repository: Repository, state: str, labels: list[str], include_pull_requests: bool
) -> None:
    if _same_source(
        repository=repository,
        state=state,
        labels=labels,
        include_pull_requests=include_pull_requests,
    ):
        raise ApplicationError(
            f"{repository.full_name} has a source with this state and these labels already."
        )


@transaction.atomic
def source_create(
    *,
    repository: str,
    state: str = Source.State.CLOSED,
    labels: Iterable[str] = (),
    since: datetime | None = None,
    include_pull_requests: bool = False,
    interval_minutes: int = 60,
    enabled: bool = True,
    created_by: AbstractBaseUser | None = None,
) -> Source:
    """Add a source. The same repository, state, labels and pull-request choice twice is an
    error (the second would only repeat the first's requests). GitHub is not asked: see
    `source_add` for the pages and the API."""
    owner, name, label_names = _options_check(
        repository=repository,
        state=state,
        labels=labels,
        since=since,
        interval_minutes=interval_minutes,
    )
    repository_row = repository_for_name(owner=owner, name=name)
    _duplicate_check(
        repository=repository_row,
        state=state,
        labels=label_names,
        include_pull_requests=include_pull_requests,
    )
    return Source.objects.create(
        repository=repository_row,
        state=state,
        labels=label_names,
        since=since,
        include_pull_requests=include_pull_requests,
        interval_minutes=interval_minutes,
        enabled=enabled,
        created_by=created_by if created_by and created_by.is_authenticated else None,
    )


def repository_upstream_check(*, owner: str, name: str) -> str:
    """Ask GitHub whether the repository exists. GitHub's "not found" (it does not exist, or
    the token cannot see it) is an ApplicationError; any other failure (unreachable, rate
    limit, 5xx) is no answer and comes back as a note for the caller to show, since an offline
    machine may still add a source and its first sync will tell. Returns "" when GitHub knows
    the repository."""
    # Imported here, as in ingest.dispatch: the URLconf reaches this module, and PyGithub
    # would otherwise be imported at every start of the server.
    from ingest.github import GitHubClient, GitHubError, NotFound

    client = GitHubClient(
        settings.GITHUB_API_URL,
        token=settings.GITHUB_TOKEN or None,
        timeout=UPSTREAM_CHECK_TIMEOUT_SECONDS,
        max_retries=UPSTREAM_CHECK_RETRIES,
    )
    with client:
        try:
            client.repository(owner, name)
        except NotFound:
            raise ApplicationError(
                f"GitHub has no repository {owner}/{name} (or the token cannot see it): "
                "check the owner and the name.",
                {"repository": [f"{owner}/{name} was not found on GitHub."]},
            ) from None
        except GitHubError as error:
            logger.warning("could not ask GitHub about %s/%s: %s", owner, name, error)
            return f"GitHub could not be asked whether {owner}/{name} exists ({error})."
    return ""


@dataclass(frozen=True)
class SourceAdded:
    source: Source
    # Why GitHub could not confirm the repository ("" when it did).
    unchecked: str = ""


def source_add(
    *,
    repository: str,
    state: str = Source.State.CLOSED,
    labels: Iterable[str] = (),
    since: datetime | None = None,
    include_pull_requests: bool = False,
    interval_minutes: int = 60,
    enabled: bool = True,
    created_by: AbstractBaseUser | None = None,
) -> SourceAdded:
    """Add a source at a person's request (the Sources page, the API): `source_create` once
    GitHub has been asked whether the repository exists, so that a mistyped name is refused
    now instead of failing at its first sync. The options are checked first, so that a bad
    one costs no request; it opens no transaction of its own while GitHub answers."""
    owner, name, label_names = _options_check(
        repository=repository,
        state=state,
        labels=labels,
        since=since,
        interval_minutes=interval_minutes,
    )
    known = repository_by_name(owner=owner, name=name)
    if known is not None:
        _duplicate_check(
            repository=known,
            state=state,
            labels=label_names,
            include_pull_requests=include_pull_requests,
        )
    unchecked = repository_upstream_check(owner=owner, name=name)
    source = source_create(
        repository=f"{owner}/{name}",
        state=state,
        labels=label_names,
        since=since,
        include_pull_requests=include_pull_requests,
        interval_minutes=interval_minutes,
        enabled=enabled,
        created_by=created_by,
    )
    return SourceAdded(source, unchecked)


@transaction.atomic
def source_get_or_create(
    *,
    repository: str,
    state: str = Source.State.CLOSED,
    labels: Iterable[str] = (),
    since: datetime | None = None,
) -> tuple[Source, bool]:
    """The source with this repository, state and labels (pull requests left out), created when
    missing. A `since` given for an existing source replaces its own."""
    owner, name = repository_name_parse(text=repository)
    label_names = labels_clean(labels=labels)
    _since_check(since)
    repository_row = repository_for_name(owner=owner, name=name)
    source = _same_source(
        repository=repository_row, state=state, labels=label_names, include_pull_requests=False
    )
    if source is None:
        source = source_create(
            repository=repository_row.full_name, state=state, labels=label_names, since=since
        )
        return source, True
    if since is not None:
        source, _ = model_update(instance=source, fields=["since"], data={"since": since})
    return source, False


@transaction.atomic
def source_delete(*, source: Source) -> None:
    """Remove a source with its sync runs and the studies' follows of it. The issues it brought
    stay in the corpus (they belong to the repository, and studies may hold them).

    A run that is executing now (running, its lease held) is waited for: deleting under it would
    turn its next page into an error. Holds the source's row lock, as a sync request does.
    """
    locked = Source.objects.select_for_update().filter(pk=source.pk).first()
    if locked is None:
        return
    executing = locked.runs.filter(
        status=SyncRun.Status.RUNNING, lease_expires_at__gt=timezone.now()
    ).exists()
    if executing:
        raise ConflictError(
            f"A sync of {locked} is running; remove the source when it has stopped.",
            {"source": locked.pk},
        )
    locked.delete()


def source_update(*, source: Source, data: dict) -> Source:
    """Change how a source is scheduled (enabled, interval)."""
    if "interval_minutes" in data:
        _interval_check(data["interval_minutes"])
    source, _ = model_update(instance=source, fields=["enabled", "interval_minutes"], data=data)
    return source


def source_issues(*, source: Source) -> list[Issue]:
    """The stored issues of the source's repository that its filter selects, by number."""
    return issues_of_repository(
        repository_id=source.repository_id,
        state=None if source.state == Source.State.ALL else source.state,
        labels=source.labels,
        since=source.since,
        include_pull_requests=source.include_pull_requests,
    )
