"""Writes of the ingest layer: sources, study follows, and sync runs (request, claim, execute).

How a sync reads GitHub (see README.md, "GitHub ingestion", for the why):

* The issue list is read sorted by `updated` ascending, one page at a time, each page being the
  first page of a fresh listing with `since` = the newest `updated_at` committed so far. The
  list moves while it is read (an update sends an issue to its end), so page numbers would skip
  issues; `since` does not. Issues at exactly that timestamp come again and cost nothing.
* An issue whose `updated_at` equals the stored one costs no further request. A new or changed
  issue costs one timeline read (its comments and the events naming its fixes) plus one request
  per fix (files changed, additions, deletions).
* Each page is committed in one transaction together with the source's cursor, so a worker
  killed at any moment leaves a cursor that matches what is stored: the next run resumes after
  it with no duplicates (upserts by repository and number) and no gaps (`since` is inclusive,
  and starts a little before the cursor).
* A rate limit or a persistent server error first commits the part of the page already read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from common.exceptions import ApplicationError, PermissionDeniedError
from common.services import model_update
from corpus.issue_import import CommentRecord, FixRecord, IssueRecord
from corpus.models import Issue, LinkedFix, Repository
from corpus.services import (
    issue_texts_render,
    issues_remove_gone,
    issues_store,
)
from ingest.github import (
    CommentData,
    FixData,
    GitHubClient,
    GitHubError,
    IssueData,
    NotFound,
    RateLimited,
    RepositoryData,
    TransientGitHubError,
)
from ingest.models import MAX_INTERVAL_MINUTES, MIN_INTERVAL_MINUTES, Source, StudyFollow, SyncRun
from ingest.selectors import sources_due
from labeling.models import Membership, Study
from labeling.selectors import study_roles
from labeling.services.studies import study_items_add

logger = logging.getLogger(__name__)

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9_.-]{1,100}"
_FULL_NAME = re.compile(rf"^(?P<owner>{_OWNER})/(?P<name>{_NAME})$")
_GITHUB_WEB_PREFIX = re.compile(r"^(?:https?://)?(?:www\.)?github\.com/", re.IGNORECASE)
MAX_LABELS = 20
MAX_LABEL_LENGTH = 50  # GitHub's own limit on label names


# --------------------------------------------------------------------------- sources


def repository_name_parse(*, text: str) -> tuple[str, str]:
    """Parse OWNER/NAME, or a github.com URL of the repository, into (owner, name)."""
    cleaned = _GITHUB_WEB_PREFIX.sub("", (text or "").strip()).removesuffix(".git").rstrip("/")
    match = _FULL_NAME.match(cleaned)
    if match is None or match.group("name") in (".", ".."):
        raise ApplicationError(
            "A repository is written OWNER/NAME, for example microsoft/DeepSpeed.",
            {"repository": text},
        )
    return match.group("owner"), match.group("name")


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


def repository_for_name(*, owner: str, name: str) -> Repository:
    """The corpus repository of that name, matched without regard to case (as GitHub does) and
    also under the name it was renamed to; created when the corpus does not hold it yet."""
    repository = Repository.objects.filter(owner__iexact=owner, name__iexact=name).first()
    if repository is None:
        repository = Repository.objects.filter(renamed_to__iexact=f"{owner}/{name}").first()
    if repository is None:
        repository = Repository.objects.create(owner=owner, name=name)
    return repository


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
    error (the second would only repeat the first's requests)."""
    owner, name = repository_name_parse(text=repository)
    if state not in Source.State.values:
        raise ApplicationError(f"The state is one of {', '.join(Source.State.values)}.")
    label_names = labels_clean(labels=labels)
    _since_check(since)
    _interval_check(interval_minutes)
    repository_row = repository_for_name(owner=owner, name=name)
    if _same_source(
        repository=repository_row,
        state=state,
        labels=label_names,
        include_pull_requests=include_pull_requests,
    ):
        raise ApplicationError(
            f"{repository_row.full_name} has a source with this state and these labels already."
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


def source_update(*, source: Source, data: dict) -> Source:
    """Change how a source is scheduled (enabled, interval)."""
    if "interval_minutes" in data:
        _interval_check(data["interval_minutes"])
    source, _ = model_update(instance=source, fields=["enabled", "interval_minutes"], data=data)
    return source


# --------------------------------------------------------------------------- study follows


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
            added += len(study_items_add(study=follow.study, issues=matching))
    return added


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
    if created_by is not None and Membership.Role.MANAGER not in study_roles(
        study=study, user=created_by
    ):
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
        issues = list(_source_issues(source=source))
        fixed = set(LinkedFix.objects.filter(issue__in=issues).values_list("issue_id", flat=True))
        _follows_apply(follows=[follow], issues=issues, fixed=fixed)
    return follow


def _source_issues(*, source: Source) -> list[Issue]:
    """The stored issues of the source's repository that its filter selects."""
    issues = Issue.objects.filter(repository_id=source.repository_id).only(
        "id", "number", "state", "labels", "is_pull_request", "updated_at"
    )
    if not source.include_pull_requests:
        issues = issues.filter(is_pull_request=False)
    if source.state != Source.State.ALL:
        issues = issues.filter(state=source.state)
    if source.since is not None:
        issues = issues.filter(updated_at__gte=source.since)
    wanted = [label.lower() for label in source.labels]
    return [
        issue
        for issue in issues.order_by("number")
        if all(label in {name.lower() for name in issue.labels} for label in wanted)
    ]


# --------------------------------------------------------------------------- runs: lease


def worker_name(token: str | None = None) -> str:
    """Who holds a run: host, process and a token (the task id), so that a log line leads to it."""
    return f"{socket.gethostname()}:{os.getpid()}:{token or uuid.uuid4().hex[:12]}"


def _lease() -> timedelta:
    return timedelta(seconds=settings.INGEST_LEASE_SECONDS)


def _enqueue(run: SyncRun) -> None:
    """Send the task for the run once the current transaction commits.

    `robust`: a broker that is down must not turn a committed request into an error page; the
    run stays queued, its lease runs out, and the next request or beat tick queues it again.
    """
    from ingest.tasks import sync_source  # the tasks module imports this one

    send = partial(
        sync_source.apply_async,
        args=[run.source_id, run.id],
        task_id=run.task_id,
        queue=settings.INGEST_QUEUE,
    )
    transaction.on_commit(send, robust=True)


@transaction.atomic
def sync_request(
    *,
    source: Source,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = SyncRun.Trigger.MANUAL,
    enqueue: bool = True,
) -> SyncRun:
    """Ask for a sync of the source: the active run when there is one, else a new queued run
    whose task is sent after commit (`enqueue=False`: the caller executes it itself).

    The source row is locked, so two requests at once get the same run. An active run whose
    lease has expired lost its worker: it is marked failed and a new run takes its place,
    resuming from the source's cursor.
    """
    source = Source.objects.select_for_update().get(pk=source.pk)
    now = timezone.now()
    active = SyncRun.objects.filter(source=source, status__in=SyncRun.ACTIVE_STATUSES).first()
    if active is not None:
        if active.lease_expires_at is not None and active.lease_expires_at >= now:
            reset_passed = active.rate_limit_reset is not None and active.rate_limit_reset <= now
            if enqueue and active.status == SyncRun.Status.WAITING and reset_passed:
                # Its wake-up message may never come (inline tasks, a lost message); a second
                # message finds the run claimed and stops.
                active.task_id = uuid.uuid4().hex
                active.save(update_fields=["task_id"])
                _enqueue(active)
            return active
        active.status = SyncRun.Status.FAILED
        active.error = _lost_reason(active)
        active.finished_at = now
        active.lease_expires_at = None
        active.save(update_fields=["status", "error", "finished_at", "lease_expires_at"])
        logger.warning("sync run %s of source %s: %s", active.pk, source.pk, active.error)
    run = SyncRun.objects.create(
        source=source,
        trigger=trigger,
        requested_by=requested_by if requested_by and requested_by.is_authenticated else None,
        # A queued run may wait behind other syncs for a while before a worker takes it.
        lease_expires_at=now + timedelta(seconds=settings.INGEST_QUEUED_TIMEOUT_SECONDS),
        task_id=uuid.uuid4().hex if enqueue else "",
    )
    if enqueue:
        _enqueue(run)
    return run


def _lost_reason(run: SyncRun) -> str:
    if run.status == SyncRun.Status.RUNNING:
        return f"worker lost: {run.worker or 'its worker'} stopped reporting progress"
    if run.status == SyncRun.Status.WAITING:
        return "worker lost: nobody resumed the run after the rate-limit reset"
    return "worker lost: no worker took the run"


def sync_due_sources_request(*, now: datetime | None = None) -> list[SyncRun]:
    """Request a sync of every enabled source whose interval has passed, or whose active run
    lost its worker (beat's task calls this every minute)."""
    due = sources_due(now=now)
    sources = Source.objects.in_bulk([entry.source_id for entry in due])
    return [
        sync_request(source=sources[entry.source_id], trigger=SyncRun.Trigger.SCHEDULE)
        for entry in due
        if entry.source_id in sources
    ]


def sync_run_claim(*, run_id: int, worker: str) -> SyncRun | None:
    """Take the lease of a run with one conditional UPDATE, so two executions never hold it.

    Claimable: a queued run, a waiting run whose rate-limit reset has passed, a running run
    whose lease expired. None when the run is not claimable (done, failed, held by a live
    worker, waiting still).
    """
    now = timezone.now()
    claimable = (
        Q(status=SyncRun.Status.QUEUED)
        | Q(status=SyncRun.Status.WAITING, rate_limit_reset__isnull=True)
        | Q(status=SyncRun.Status.WAITING, rate_limit_reset__lte=now)
        | Q(status=SyncRun.Status.RUNNING, lease_expires_at__lt=now)
    )
    claimed = SyncRun.objects.filter(claimable, pk=run_id).update(
        status=SyncRun.Status.RUNNING,
        worker=worker,
        heartbeat_at=now,
        lease_expires_at=now + _lease(),
        started_at=Coalesce("started_at", Value(now, output_field=DateTimeField())),
        attempts=F("attempts") + 1,
        error="",
    )
    if not claimed:
        return None
    return SyncRun.objects.select_related("source__repository").get(pk=run_id)


def sync_run_fail(*, run_id: int, error: str) -> None:
    """Mark an active run failed (a task out of retries)."""
    SyncRun.objects.filter(pk=run_id, status__in=SyncRun.ACTIVE_STATUSES).update(
        status=SyncRun.Status.FAILED,
        error=error[:5000],
        finished_at=timezone.now(),
        lease_expires_at=None,
    )


# --------------------------------------------------------------------------- runs: execution


@dataclass(frozen=True)
class SyncOutcome:
    run_id: int
    # done, failed, waiting (come back at wait_until), queued (paused after its time budget: go
    # on at once), skipped (not claimable), lost (lease lost)
    status: str
    wait_until: datetime | None = None


SKIPPED = "skipped"
LOST = "lost"


class _LeaseLost(Exception):
    """This execution no longer holds the run (it was declared lost and replaced)."""


class _Paused(Exception):
    """This execution used its time budget; the run goes on in a new one."""


def github_client() -> GitHubClient:
    return GitHubClient(
        settings.GITHUB_API_URL,
        token=settings.GITHUB_TOKEN or None,
        per_page=settings.INGEST_PER_PAGE,
    )


def sync_run_execute(*, run_id: int, worker: str, reconcile: bool | None = None) -> SyncOutcome:
    """Claim the run and sync its source until done, a rate limit or an error.

    Returns "waiting" with the reset time on a rate limit (the caller comes back then; nothing
    sleeps here). Raises TransientGitHubError after committing what was read, with the run
    queued again, for the caller to retry later. `reconcile`: check stored issues against a full
    listing (None: when INGEST_RECONCILE_HOURS have passed since the last check).
    """
    run = sync_run_claim(run_id=run_id, worker=worker)
    if run is None:
        return SyncOutcome(run_id, SKIPPED)
    with github_client() as client:
        sync = _Sync(run=run, worker=worker, client=client)
        try:
            sync.execute(reconcile=reconcile)
        except _LeaseLost:
            logger.warning("sync run %s: lease lost, stopping", run_id)
            return SyncOutcome(run_id, LOST)
        except _Paused:
            sync.pause()
            return SyncOutcome(run_id, SyncRun.Status.QUEUED)
        except RateLimited as error:
            sync.wait_for(error.reset_at)
            return SyncOutcome(run_id, SyncRun.Status.WAITING, error.reset_at)
        except TransientGitHubError as error:
            sync.requeue(error)
            raise
        except (GitHubError, ApplicationError) as error:
            sync.fail(str(error))
            return SyncOutcome(run_id, SyncRun.Status.FAILED)
        except Exception as error:
            sync.fail(f"unexpected error: {error!r}")
            raise
    return SyncOutcome(run_id, SyncRun.Status.DONE)


def sync_run_to_completion(
    *,
    run_id: int,
    worker: str,
    reconcile: bool | None = None,
    max_transient_retries: int = 5,
    on_wait: Callable[[SyncOutcome], None] | None = None,
) -> SyncOutcome:
    """Execute a run in this process until it ends: sleep through rate-limit waits, retry
    transient errors with backoff and jitter (for the command line, tests and benchmarks; a
    worker reschedules instead of sleeping)."""
    failures = 0
    while True:
        waiting = SyncRun.objects.filter(pk=run_id, status=SyncRun.Status.WAITING).first()
        if waiting is not None and waiting.rate_limit_reset is not None:
            time.sleep(max(0.0, (waiting.rate_limit_reset - timezone.now()).total_seconds()))
        try:
            outcome = sync_run_execute(run_id=run_id, worker=worker, reconcile=reconcile)
        except TransientGitHubError as error:
            failures += 1
            if failures > max_transient_retries:
                sync_run_fail(run_id=run_id, error=f"GitHub kept failing: {error}")
                return SyncOutcome(run_id, SyncRun.Status.FAILED)
            backoff = min(settings.INGEST_RETRY_BACKOFF_MAX_SECONDS, 2**failures)
            time.sleep(random.uniform(0, backoff))
            continue
        if outcome.status == SyncRun.Status.QUEUED:
            continue
        if outcome.status != SyncRun.Status.WAITING:
            return outcome
        if on_wait is not None:
            on_wait(outcome)


class _Sync:
    """One execution of a run. Counts accumulate on the run across executions."""

    def __init__(self, *, run: SyncRun, worker: str, client: GitHubClient) -> None:
        self.run = run
        self.source = run.source
        self.repository = run.source.repository
        self.worker = worker
        self.client = client
        self.per_page = settings.INGEST_PER_PAGE
        self.counts: Counter[str] = Counter(run.counts)
        self.requests_before = run.requests_used
        self.progress = run.progress
        self.lease = _lease()
        self.deadline = time.monotonic() + settings.INGEST_EXECUTION_SECONDS
        self.beat_every = max(0.2, self.lease.total_seconds() / 6)
        self.last_beat = time.monotonic()
        # (number, updated_at) handled in this execution: listings overlap by design.
        self.handled: set[tuple[int, datetime]] = set()
        self.range_start: datetime | None = None
        self.range_end = timezone.now()
        self.newest_committed: datetime | None = None
        self.follows = list(self.source.follows.select_related("study"))
        lookup = self.repository.renamed_to or self.repository.full_name
        self.owner, self.name = lookup.split("/", 1)

    # ------------------------------------------------------------------ the phases

    def execute(self, *, reconcile: bool | None) -> None:
        self._note_repository(self.client.repository(self.owner, self.name))
        if reconcile is None:
            last = self.source.reconciled_at
            due = timedelta(hours=settings.INGEST_RECONCILE_HOURS)
            reconcile = last is None or last + due <= timezone.now()
            from_nothing = not self.source.cursor.get("since") and self.source.since is None
            if reconcile and last is None and from_nothing:
                # A first sync lists everything the filter selects, which is a reconciliation
                # of its own. Noted now, so that a first sync resumed later does not redo it.
                reconcile = False
                self._mark_reconciled()
        self._incremental()
        if reconcile:
            self._reconcile()
        self._finish()

    def _incremental(self) -> None:
        since = self._start_since()
        self.range_start = since
        page_number = 1
        while True:
            self._beat()
            listing = self._listing(since=since, page_number=page_number)
            try:
                page = next(listing, (0, []))[1]
                if not page:
                    return
                if self.range_start is None:
                    self.range_start = page[0].updated_at
                self._read_and_commit(page)
                if len(page) < self.per_page:
                    # GitHub fills every page but the last. A server that pages by fewer than
                    # asked links a next page, which the listing fetches only when linked.
                    if next(listing, None) is None:
                        return
                    self.per_page = len(page)
            finally:
                listing.close()
            if time.monotonic() >= self.deadline:
                # Stop at a page boundary, well before Celery's time limit, and let other
                # sources' syncs have the worker in between; the cursor says where to go on.
                raise _Paused
            newest = max(issue.updated_at for issue in page)
            if since is not None and newest <= since:
                # A whole page shares one timestamp: only a page number gets past it.
                page_number += 1
            else:
                since, page_number = newest, 1

    def _start_since(self) -> datetime | None:
        starts = []
        cursor = self.source.cursor.get("since")
        if cursor:
            overlap = timedelta(seconds=settings.INGEST_OVERLAP_SECONDS)
            starts.append(datetime.fromisoformat(cursor) - overlap)
        if self.source.since is not None:
            starts.append(self.source.since)
        return max(starts) if starts else None

    def _listing(
        self, *, since: datetime | None, page_number: int
    ) -> Iterator[tuple[int, list[IssueData]]]:
        """The issue list from `since`; only its first page is read, each page being the start
        of a fresh listing from the cursor (the list moves while it is read)."""
        return self.client.issue_pages(
            self.owner,
            self.name,
            state=self.source.state,
            labels=self.source.labels,
            since=since,
            start_page=page_number,
        )

    def _read_and_commit(self, page: list[IssueData]) -> None:
        """Read what changed on the page, then commit it with the cursor. On a GitHub error the
        part read so far is committed first (the list is in update order, so a prefix of it is
        a valid place for the cursor)."""
        stored = dict(
            Issue.objects.filter(
                repository=self.repository, number__in=[issue.number for issue in page]
            ).values_list("number", "updated_at")
        )
        read = _PageWork()
        try:
            for issue in page:
                key = (issue.number, issue.updated_at)
                if key not in self.handled:
                    self._read_issue(issue, stored.get(issue.number), read)
                read.handled.append(issue)
                self._beat()
        except GitHubError:
            self._commit(read, advance_cursor=True)
            raise
        self._commit(read, advance_cursor=True)

    def _read_issue(self, issue: IssueData, stored_at: datetime | None, read: _PageWork) -> None:
        read.counts["seen"] += 1
        if issue.is_pull_request and not self.source.include_pull_requests:
            read.counts["pull_requests_skipped"] += 1
            return
        if stored_at is not None and issue.updated_at <= stored_at:
            read.counts["unchanged"] += 1
            return
        try:
            comments, fixes = self.client.comments_and_fixes(self.owner, self.name, issue.number)
        except NotFound:
            self._repository_still_there()
            read.gone.append(issue.number)
            return
        read.records.append(_issue_record(self.repository, issue, comments, fixes))

    def _reconcile(self) -> None:
        """Find stored issues the filter selects that GitHub no longer lists: deleted or
        transferred ones go; ones that changed and left the filter (reopened, relabeled) are
        stored as they are now."""
        listed: set[int] = set()
        for _, issues in self.client.issue_pages(
            self.owner,
            self.name,
            state=self.source.state,
            labels=self.source.labels,
            since=self.source.since,
        ):
            listed.update(issue.number for issue in issues)
            self._beat()
        stored = {issue.number: issue.updated_at for issue in _source_issues(source=self.source)}
        read = _PageWork()
        try:
            for number in sorted(set(stored) - listed):
                read.counts["reconciled"] += 1
                try:
                    issue = self.client.issue(self.owner, self.name, number)
                except NotFound:
                    self._repository_still_there()
                    read.gone.append(number)
                    continue
                if issue.updated_at > stored[number]:
                    self._read_issue(issue, stored[number], read)
                self._beat()
        except GitHubError:
            self._commit(read, advance_cursor=False)
            raise
        self._commit(read, advance_cursor=False)
        self._mark_reconciled()

    def _repository_still_there(self) -> None:
        """A 404 on one issue is that issue gone, unless the whole repository went; that must
        fail the run instead of emptying the corpus."""
        self.client.repository(self.owner, self.name)

    # ------------------------------------------------------------------ writes

    def _commit(self, read: _PageWork, *, advance_cursor: bool) -> None:
        if not (read.handled or read.gone or read.records or read.counts):
            return
        with transaction.atomic():
            source = self._locked_source()
            written_ids: list[int] = []
            if read.records:
                report = issues_store(records=read.records, replace_threads=True)
                written_ids = report.written_issue_ids
                read.counts.update(
                    created=report.created,
                    updated=report.updated,
                    unchanged=report.unchanged,
                    comments=report.comments,
                    fixes=report.linked_fixes,
                )
                read.counts["followed"] += self._apply_follows(written_ids)
            if read.gone:
                read.counts.update(self._issues_gone(read.gone))
            if advance_cursor and read.handled:
                newest = max(issue.updated_at for issue in read.handled)
                cursor = source.cursor.get("since")
                if cursor is None or datetime.fromisoformat(cursor) < newest:
                    source.cursor = {"since": newest.isoformat()}
                    source.save(update_fields=["cursor", "updated_at"])
                self.source.cursor = source.cursor
                self.newest_committed = max(filter(None, [self.newest_committed, newest]))
                read.counts["pages"] += 1
            self.counts.update(read.counts)
            self._save_run(SyncRun.Status.RUNNING)
        self.handled.update((issue.number, issue.updated_at) for issue in read.handled)
        if written_ids:
            issue_texts_render(issue_ids=written_ids)

    def _locked_source(self) -> Source:
        """Lock the source and check the lease, so that a run replaced by a newer one never
        commits after it (sync_request takes the same lock to replace a run)."""
        source = Source.objects.select_for_update().get(pk=self.source.pk)
        held = SyncRun.objects.filter(
            pk=self.run.pk, worker=self.worker, status=SyncRun.Status.RUNNING
        ).exists()
        if not held:
            raise _LeaseLost
        return source

    def _apply_follows(self, issue_ids: list[int]) -> int:
        if not self.follows or not issue_ids:
            return 0
        issues = list(
            Issue.objects.filter(id__in=issue_ids, is_pull_request=False).only(
                "id", "number", "state", "labels", "is_pull_request"
            )
        )
        fixed = set(
            LinkedFix.objects.filter(issue_id__in=issue_ids).values_list("issue_id", flat=True)
        )
        return _follows_apply(follows=self.follows, issues=issues, fixed=fixed)

    def _issues_gone(self, numbers: list[int]) -> Counter[str]:
        """Issues GitHub answers 404/410 for (deleted, or transferred to another repository).

        An issue in no study leaves the corpus with its thread. An issue in a study stays: its
        labels are research data; its items are flagged as changed since labeled.
        """
        counts: Counter[str] = Counter(gone=len(numbers))
        kept = issues_remove_gone(repository_id=self.repository.pk, numbers=numbers)
        counts["gone_kept"] += len(kept)
        logger.info(
            "%s: issues gone upstream: %s (issue ids kept in studies: %s)",
            self.repository.full_name,
            sorted(numbers),
            sorted(kept),
        )
        return counts

    def _note_repository(self, remote: RepositoryData) -> None:
        """Record GitHub's id of the repository and, after a rename, its new name. The row
        keeps the name the corpus knows it by, so "owner/name#number" references and study
        items stay valid; lookups use `renamed_to` from then on."""
        repository = self.repository
        data: dict = {}
        if repository.github_id is None:
            clash = (
                Repository.objects.filter(github_id=remote.github_id)
                .exclude(pk=repository.pk)
                .first()
            )
            if clash is not None:
                raise ApplicationError(
                    f"{repository.full_name} is GitHub's {remote.full_name}, which the corpus "
                    f"holds already as {clash.full_name}; add the source for {clash.full_name}."
                )
            data["github_id"] = remote.github_id
        elif repository.github_id != remote.github_id:
            raise ApplicationError(
                f"{self.owner}/{self.name} is now a different GitHub repository "
                f"({remote.full_name}) than the one stored as {repository.full_name}."
            )
        same_name = remote.full_name.lower() == repository.full_name.lower()
        data["renamed_to"] = "" if same_name else remote.full_name
        model_update(instance=repository, fields=["github_id", "renamed_to"], data=data)
        self.owner, self.name = remote.owner, remote.name

    def _mark_reconciled(self) -> None:
        self.source.reconciled_at = timezone.now()
        self.source.save(update_fields=["reconciled_at", "updated_at"])

    def _finish(self) -> None:
        # Texts of pages whose worker died between the commit and the rendering.
        issue_texts_render(issue_ids=None)
        with transaction.atomic():
            source = self._locked_source()
            source.last_synced_at = timezone.now()
            source.save(update_fields=["last_synced_at", "updated_at"])
            self.progress = 1.0
            self._save_run(SyncRun.Status.DONE)

    # ------------------------------------------------------------------ the run row

    def _run_fields(self) -> dict:
        fields = {
            "counts": dict(self.counts),
            "requests_used": self.requests_before + self.client.requests_made,
            "progress": self._progress(),
        }
        rate_limit = self.client.last_seen_rate_limit
        if rate_limit is not None:
            fields["rate_limit_remaining"] = rate_limit.remaining
            fields["rate_limit_reset"] = rate_limit.reset_at
        return fields

    def _progress(self) -> float:
        if self.progress >= 1.0:
            return 1.0
        if self.range_start is not None and self.newest_committed is not None:
            span = (self.range_end - self.range_start).total_seconds()
            covered = (self.newest_committed - self.range_start).total_seconds()
            estimate = covered / span if span > 0 else 0.99
            self.progress = max(self.progress, min(0.99, max(0.0, estimate)))
        return self.progress

    def _save_run(self, status: str, **extra) -> None:
        now = timezone.now()
        fields = {**self._run_fields(), "status": status, "heartbeat_at": now, **extra}
        if status == SyncRun.Status.RUNNING:
            fields["lease_expires_at"] = now + self.lease
        elif status in (SyncRun.Status.DONE, SyncRun.Status.FAILED):
            fields.update(finished_at=now, lease_expires_at=None)
        updated = SyncRun.objects.filter(
            pk=self.run.pk, worker=self.worker, status=SyncRun.Status.RUNNING
        ).update(**fields)
        if not updated:
            raise _LeaseLost
        self.last_beat = time.monotonic()

    def _beat(self) -> None:
        """Report progress and extend the lease, at most every sixth of the lease."""
        if time.monotonic() - self.last_beat >= self.beat_every:
            self._save_run(SyncRun.Status.RUNNING)

    def wait_for(self, reset_at: datetime) -> None:
        with contextlib.suppress(_LeaseLost):
            self._save_run(
                SyncRun.Status.WAITING,
                rate_limit_reset=reset_at,
                rate_limit_remaining=0,
                lease_expires_at=reset_at + self.lease,
            )

    def requeue(self, error: Exception) -> None:
        backoff = timedelta(seconds=settings.INGEST_RETRY_BACKOFF_MAX_SECONDS)
        with contextlib.suppress(_LeaseLost):
            self._save_run(
                SyncRun.Status.QUEUED,
                error=f"retrying after: {error}"[:5000],
                worker="",
                lease_expires_at=timezone.now() + backoff + self.lease,
            )

    def pause(self) -> None:
        with contextlib.suppress(_LeaseLost):
            self._save_run(
                SyncRun.Status.QUEUED,
                worker="",
                lease_expires_at=timezone.now()
                + timedelta(seconds=settings.INGEST_QUEUED_TIMEOUT_SECONDS),
            )

    def fail(self, message: str) -> None:
        logger.warning("sync run %s failed: %s", self.run.pk, message)
        with contextlib.suppress(_LeaseLost):
            self._save_run(SyncRun.Status.FAILED, error=message[:5000])


class _PageWork:
    """What one page (or the reconciliation) read and still has to commit."""

    def __init__(self) -> None:
        self.handled: list[IssueData] = []
        self.records: list[IssueRecord] = []
        self.gone: list[int] = []
        self.counts: Counter[str] = Counter()


def _issue_record(
    repository: Repository,
    issue: IssueData,
    comments: list[CommentData],
    fixes: list[FixData],
) -> IssueRecord:
    """GitHub's issue as a corpus record, under the name the corpus knows the repository by.
    Lengths are cut to the columns' as the import does."""
    unique_comments = {comment.github_id: comment for comment in comments}
    return IssueRecord(
        owner=repository.owner,
        name=repository.name,
        number=issue.number,
        github_id=issue.github_id,
        is_pull_request=issue.is_pull_request,
        title=issue.title[:10_000],
        body=issue.body,
        state=issue.state,
        state_reason=(issue.state_reason or "")[:30],
        author=issue.author[:100],
        labels=list(issue.labels),
        created_at=issue.created_at,
        updated_at=issue.updated_at,
        closed_at=issue.closed_at,
        comments_count=issue.comments_count,
        # The body has a column of its own; raw keeps the rest of GitHub's object.
        raw={key: value for key, value in issue.raw.items() if key != "body"},
        comments=[
            CommentRecord(
                github_id=comment.github_id,
                author=comment.author[:100],
                body=comment.body,
                created_at=comment.created_at,
                updated_at=comment.updated_at,
            )
            for comment in unique_comments.values()
        ],
        linked_fixes=[
            FixRecord(
                kind=fix.kind,
                ref=fix.ref[:100],
                url=(fix.url or "")[:500],
                merged_at=fix.merged_at,
                files_changed=fix.files_changed,
                additions=fix.additions,
                deletions=fix.deletions,
                evidence=fix.evidence[:200],
            )
            for fix in fixes
        ],
    )
