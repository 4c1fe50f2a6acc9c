"""Asking for a sync ("Sync now", the API, `sync_github`): the source's run, found or opened,
and its task sent after commit.

This is the one module outside the tasks that sends them, so it imports `ingest.tasks`; the
tasks import only the modules that do the work (`ingest.runs`, `ingest.sync`), never this one.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.outage import broker_require
from ingest.models import Source, SyncRun
from ingest.runs import sync_run_open


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

    Two requests at once get the same run; an active run that lost its worker is replaced (see
    `ingest.runs.sync_run_open`). Raises ServiceUnavailableError, with nothing written, when
    a task is due and the task queue cannot be reached.
    """
    opened = sync_run_open(
        source=source, requested_by=requested_by, trigger=trigger, with_task=enqueue
    )
    if opened.send_task:
        # Raised inside this transaction: the run it opened (or the lost one it replaced) is
        # rolled back with the request instead of waiting for a message that never leaves.
        broker_require(action="the sync")
        # Imported here: the tasks bring the sync and PyGithub (0.4 s), which the pages that
        # import this module would otherwise load at every start of the server.
        from ingest.tasks import sync_source_enqueue

        sync_source_enqueue(opened.run)
    return opened.run
