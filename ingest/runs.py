"""Sync runs in the database: opening one (one active run per source, lost ones replaced),
taking its lease, failing it. Nothing here sends a task: `ingest.dispatch` and the beat task do,
with `ingest.tasks.sync_source_enqueue`, so that the tasks can use this module without a cycle.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from ingest.models import Source, SyncRun
from ingest.selectors import sources_due

logger = logging.getLogger(__name__)


def worker_name(token: str | None = None) -> str:
    """Who holds a run: host, process and a token (the task id), so that a log line leads to it."""
    return f"{socket.gethostname()}:{os.getpid()}:{token or uuid.uuid4().hex[:12]}"


def lease_duration() -> timedelta:
    """How long a running run may stay silent before it counts as lost."""
    return timedelta(seconds=settings.INGEST_LEASE_SECONDS)


@dataclass(frozen=True)
class OpenedRun:
    run: SyncRun
    # A task message is due for the run once the transaction commits (with the run's task id).
    send_task: bool


@transaction.atomic
def sync_run_open(
    *,
    source: Source,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = SyncRun.Trigger.MANUAL,
    with_task: bool = True,
) -> OpenedRun:
    """The source's active run when there is one, else a new queued run; `with_task=False`: the
    caller executes the run itself, so no task message is due.

    The source row is locked, so two requests at once get the same run. An active run whose
    lease has expired lost its worker: it is marked failed and a new run takes its place,
    resuming from the source's cursor.
    """
    source = Source.objects.select_for_update().get(pk=source.pk)
    now = timezone.now()
    active = SyncRun.objects.filter(source=source, status__in=SyncRun.ACTIVE_STATUSES).first()
    if active is not None:
        if active.lease_expires_at is not None and active.lease_expires_at >= now:
            if with_task and _message_may_be_lost(active, now):
                # A second message finds the run claimed, or finished, and stops.
                active.task_id = uuid.uuid4().hex
                active.save(update_fields=["task_id"])
                return OpenedRun(active, send_task=True)
            return OpenedRun(active, send_task=False)
        active.error = _lost_reason(active, resumed=True)
        active.status = SyncRun.Status.FAILED
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
        task_id=uuid.uuid4().hex if with_task else "",
    )
    return OpenedRun(run, send_task=with_task)


def _message_may_be_lost(run: SyncRun, now: datetime) -> bool:
    """Whether a request for a sync should send the active run's task again, though the run's
    lease holds: a waiting run past its rate-limit reset, whose wake-up message may never come
    (inline tasks, a lost message), and a queued run that no worker took within
    INGEST_RESEND_SECONDS, whose message may have gone with a broker that restarted (else "Sync
    now" would do nothing until INGEST_QUEUED_TIMEOUT_SECONDS fails the run)."""
    if run.status == SyncRun.Status.WAITING:
        return run.rate_limit_reset is not None and run.rate_limit_reset <= now
    return (
        run.status == SyncRun.Status.QUEUED
        and not run.worker
        and run.queued_at <= now - timedelta(seconds=settings.INGEST_RESEND_SECONDS)
    )


def _lost_reason(run: SyncRun, *, resumed: bool) -> str:
    """Why an active run whose lease expired is lost, from what it had done: a run a worker
    had claimed lost that worker (killed, out of memory, its machine gone) or the message that
    would have taken it up again; only a run never claimed was taken by no worker."""
    if run.status == SyncRun.Status.RUNNING:
        reason = f"the worker stopped during the run ({run.worker or 'unknown'})"
    elif run.status == SyncRun.Status.WAITING:
        reason = "nobody resumed the run after the rate-limit reset"
    elif run.attempts:
        reason = "the run stopped between two executions (after a pause or a retry)"
    else:
        reason = "no worker took the run"
    if not resumed:
        return f"worker lost: {reason}; not resumed while the source is paused"
    # A new run takes over from the source's cursor: what was stored stays.
    return f"worker lost: {reason}; {'queued again' if not run.attempts else 'resumed'}"


def sync_runs_open_for_due_sources(*, now: datetime | None = None) -> Iterator[OpenedRun]:
    """Open a run (`sync_run_open`, one transaction each) for every enabled source whose
    interval has passed, or whose active run lost its worker (beat's task, every minute).

    Yields each run as soon as it is committed, so that its task is sent before the next source
    is handled and an error on one source does not hold back the messages of the others.
    """
    due = sources_due(now=now)
    sources = Source.objects.in_bulk([entry.source_id for entry in due])
    for entry in due:
        if entry.source_id in sources:
            yield sync_run_open(source=sources[entry.source_id], trigger=SyncRun.Trigger.SCHEDULE)


@dataclass(frozen=True)
class RecoveredRun:
    lost_id: int
    # The run that takes over (None: the source is paused, the lost run only ended).
    opened: OpenedRun | None


def sync_runs_recover_lost(*, now: datetime | None = None) -> Iterator[RecoveredRun]:
    """Every active run whose lease expired lost its worker (beat's `recover-sync-runs`, every
    half lease, as exports' `recover-export-jobs`): a worker killed mid-sync leaves its run
    "running", and Redis would hand its message back only after the visibility timeout of
    hours. The source's sync goes on in a new run from its cursor (`sync_run_open`, which ends
    the lost one with the reason); a paused source's lost run only ends, with its reason.

    Yields each as soon as it is committed, so that its task is sent before the next.
    """
    now = now or timezone.now()
    lost = (
        SyncRun.objects.filter(status__in=SyncRun.ACTIVE_STATUSES, lease_expires_at__lt=now)
        .select_related("source")
        .order_by("source_id")
    )
    for run in list(lost):
        if run.source.enabled:
            opened = sync_run_open(source=run.source, trigger=SyncRun.Trigger.SCHEDULE)
            yield RecoveredRun(lost_id=run.pk, opened=opened)
        elif _sync_run_end_lost(run=run, now=now):
            yield RecoveredRun(lost_id=run.pk, opened=None)


@transaction.atomic
def _sync_run_end_lost(*, run: SyncRun, now: datetime) -> bool:
    """Fail a paused source's lost run, unless an execution took it up again meanwhile (under
    the source's lock, which a claim's page commit and `sync_run_open` take too)."""
    Source.objects.select_for_update().get(pk=run.source_id)
    ended = SyncRun.objects.filter(
        pk=run.pk, status=run.status, attempts=run.attempts, lease_expires_at__lt=now
    ).update(
        status=SyncRun.Status.FAILED,
        error=_lost_reason(run, resumed=False),
        finished_at=now,
        lease_expires_at=None,
    )
    if ended:
        logger.warning("sync run %s of paused source %s: worker lost", run.pk, run.source_id)
    return bool(ended)


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
        lease_expires_at=now + lease_duration(),
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
