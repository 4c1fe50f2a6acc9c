"""The sync itself: one execution of a run reads GitHub and commits what it read, page by page.

How a sync reads GitHub (see docs/guides/researcher/github.md for the why):

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

The corpus is written through its services (issues, repositories), studies are fed through
`ingest.follows`; the run row is claimed and failed through `ingest.runs`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError
from corpus.models import Repository
from corpus.records import CommentRecord, FixRecord, IssueRecord
from corpus.selectors import issues_updated_at, repositories_unidentified
from corpus.services import (
    issue_texts_render,
    issues_remove_gone,
    issues_store,
    repository_note_upstream,
)
from ingest.follows import follows_apply
from ingest.github import (
    GitHubClient,
    GitHubError,
    NotFound,
    RateLimited,
    RepositoryData,
    TransientGitHubError,
)
from ingest.models import Source, SyncRun
from ingest.runs import lease_duration, sync_run_claim, sync_run_fail
from ingest.sources import source_issues

logger = logging.getLogger(__name__)

# Rows without a GitHub id that a sync asks GitHub about, at most (see _Sync._note_repository).
NAME_PROBES = 10


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


def repository_missing_upstream(*, source: Source) -> bool:
    """Whether GitHub answers that the source's repository does not exist (or is not visible to
    the token). Other errors are not an answer, so they count as not missing."""
    with github_client() as client:
        try:
            client.repository(source.repository.owner, source.repository.name)
        except NotFound:
            return True
        except GitHubError:
            return False
    return False


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
        self.lease = lease_duration()
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
    ) -> Iterator[tuple[int, list[IssueRecord]]]:
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

    def _read_and_commit(self, page: list[IssueRecord]) -> None:
        """Read what changed on the page, then commit it with the cursor. On a GitHub error the
        part read so far is committed first (the list is in update order, so a prefix of it is
        a valid place for the cursor)."""
        stored = issues_updated_at(
            repository_id=self.repository.pk, numbers=[issue.number for issue in page]
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

    def _read_issue(self, issue: IssueRecord, stored_at: datetime | None, read: _PageWork) -> None:
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
        stored = {issue.number: issue.updated_at for issue in source_issues(source=self.source)}
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
                for number, reason in report.errors:
                    read.counts["refused"] += 1
                    logger.warning(
                        "%s#%s not stored: %s", self.repository.full_name, number, reason
                    )
                read.counts["followed"] += follows_apply(
                    follows=self.follows, issue_ids=written_ids
                )
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
        """Record GitHub's id of the repository and its new name after a rename; lookups use
        GitHub's name from then on.

        The corpus may hold this repository under a former name already, without its id (the
        bundled sample, an import file): a source added under the new name would otherwise
        store every issue a second time. So rows without an id that share an owner or a name
        with it are first identified by GitHub (a former name answers with a redirect to the
        id), and one that is this repository becomes one row with the source's.
        """
        self._identify_similar_rows(remote)
        # The source follows the row that stays when its own was merged into another.
        current = Repository.objects.get(sources=self.source.pk)
        self.repository = repository_note_upstream(
            repository=current, github_id=remote.github_id, full_name=remote.full_name
        )
        self.source.repository = self.repository
        self.owner, self.name = remote.owner, remote.name

    def _identify_similar_rows(self, remote: RepositoryData) -> None:
        """Ask GitHub which repository each row without an id that shares an owner or a name
        with this one is, and record it: one request per row, until it has its id (a row
        GitHub does not know is asked again at the next sync)."""
        candidates = repositories_unidentified(
            owners=[remote.owner, self.repository.owner],
            names=[remote.name, self.repository.name],
            excluding=self.repository.pk,
            limit=NAME_PROBES,
        )
        for candidate in candidates:
            try:
                found = self.client.repository(candidate.owner, candidate.name)
            except NotFound:
                continue
            try:
                repository_note_upstream(
                    repository=candidate, github_id=found.github_id, full_name=found.full_name
                )
            except ApplicationError as error:
                # The rows stay apart, as before; the sync goes on with the source's own row.
                logger.warning("%s is %s on GitHub: %s", candidate, found.full_name, error)

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
        self.handled: list[IssueRecord] = []
        self.records: list[IssueRecord] = []
        self.gone: list[int] = []
        self.counts: Counter[str] = Counter()


def _issue_record(
    repository: Repository,
    issue: IssueRecord,
    comments: list[CommentRecord],
    fixes: list[FixRecord],
) -> IssueRecord:
    """The client's record of the issue with its thread, under the name the corpus knows the
    repository by (the client's is GitHub's current one). The client read them with the corpus
    parser, so they fit the columns already, with one comment per id."""
    return replace(
        issue,
        owner=repository.owner,
        name=repository.name,
        comments=comments,
        linked_fixes=fixes,
    )
