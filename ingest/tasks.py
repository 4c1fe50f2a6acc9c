"""Celery tasks: thin adapters over the modules that do the work (`ingest.runs`, `ingest.sync`,
`ingest.issue_uploads`). They take ids and re-fetch.

The import arrows go one way: whoever sends a task imports this module (`ingest.dispatch`), and
this module never imports a sender; the tasks send their own messages with
`sync_source_enqueue`, which `ingest.dispatch` uses too. Messages go through `apply_async`, not
`send_task` by name, which would ignore CELERY_TASK_ALWAYS_EAGER (the embedded default).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction

from config.celery import app
from ingest.github import TransientGitHubError
from ingest.issue_uploads import (
    issue_imports_to_resend,
    issue_upload_files_sweep,
    issue_upload_run,
)
from ingest.models import IssueImportJob, Source, SyncRun
from ingest.runs import (
    sync_run_fail,
    sync_run_open,
    sync_runs_open_for_due_sources,
    sync_runs_recover_lost,
    worker_name,
)
from ingest.sync import sync_run_execute

logger = logging.getLogger(__name__)

# The wake-up after a rate limit comes a moment after GitHub's reset time, not on it.
RESET_MARGIN = timedelta(seconds=1)


@app.task(
    bind=True,
    # Acknowledged only when done, and given back to the broker if the worker process dies, so
    # no sync is silently dropped; a second delivery finds the run leased or finished and stops.
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(TransientGitHubError,),
    retry_backoff=settings.INGEST_RETRY_BACKOFF_SECONDS,
    retry_backoff_max=settings.INGEST_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=settings.INGEST_MAX_RETRIES,
    # The run row is the result; nothing reads Celery's.
    ignore_result=True,
)
def sync_source(self, source_id: int, run_id: int | None = None) -> dict:
    """Sync a source (the run that `sync_request` queued, or the source's active run).

    A rate limit does not hold the worker: the task sends itself again for the reset time and
    returns. Pages are committed as they are read, so a retry or a resumed run starts where the
    last one stopped.
    """
    if run_id is None:
        source = Source.objects.get(pk=source_id)
        opened = sync_run_open(source=source, trigger=SyncRun.Trigger.SCHEDULE, with_task=False)
        run_id = opened.run.pk
    try:
        outcome = sync_run_execute(run_id=run_id, worker=worker_name(self.request.id))
        while outcome.status == SyncRun.Status.QUEUED and self.request.is_eager:
            outcome = sync_run_execute(run_id=run_id, worker=worker_name(self.request.id))
    except TransientGitHubError as error:
        if self.request.retries >= self.max_retries:
            sync_run_fail(run_id=run_id, error=f"GitHub kept failing: {error}")
            raise
        if self.request.is_eager:
            # Inline (the embedded default) runs in a web request's on_commit hook: Celery's
            # retry there raises into the request at once, without waiting. The client already
            # retried twice, so the run fails with the reason and "Sync now" tries again later.
            sync_run_fail(run_id=run_id, error=f"GitHub could not be reached: {error}")
            return {"run_id": run_id, "status": SyncRun.Status.FAILED}
        raise
    if outcome.status == SyncRun.Status.QUEUED:
        # Paused after its time budget: the rest goes to the back of the queue.
        sync_source.apply_async(args=[source_id, run_id], queue=settings.INGEST_QUEUE)
    elif outcome.status == SyncRun.Status.WAITING and outcome.wait_until is not None:
        if self.request.is_eager:
            # Inline tasks (the embedded default) cannot wait; "Sync now" after the reset resumes.
            logger.info("sync run %s waits for the rate limit until %s", run_id, outcome.wait_until)
        else:
            sync_source.apply_async(
                args=[source_id, run_id],
                eta=outcome.wait_until + RESET_MARGIN,
                queue=settings.INGEST_QUEUE,
            )
    return {"run_id": run_id, "status": outcome.status}


@app.task(ignore_result=True)
def sync_due_sources() -> int:
    """Beat's minute tick: request a sync of every source whose interval has passed, or whose
    run lost its worker. Returns the number of runs requested."""
    requested = 0
    for opened in sync_runs_open_for_due_sources():
        if opened.send_task:
            sync_source_enqueue(opened.run)
        requested += 1
    return requested


@app.task(ignore_result=True)
def recover_sync_runs() -> int:
    """Beat's tick: resume (or, for a paused source, end) the runs that lost their worker (see
    `ingest.runs.sync_runs_recover_lost`). Returns how many."""
    recovered = 0
    for entry in sync_runs_recover_lost():
        if entry.opened is not None and entry.opened.send_task:
            sync_source_enqueue(entry.opened.run)
        recovered += 1
    return recovered


def sync_source_enqueue(run: SyncRun) -> None:
    """Send the task for the run, with the run's task id, once the current transaction commits.

    `robust`: a broker that is down must not turn a committed request into an error page; the
    run stays queued, its lease runs out, and the next request or beat tick queues it again.
    """
    source_id, run_id, task_id = run.source_id, run.id, run.task_id

    # A function, not a functools.partial: Django names a failing robust hook by its
    # __qualname__, which a partial lacks, so the log line itself would raise into the request.
    def send_sync_source() -> None:
        sync_source.apply_async(
            args=[source_id, run_id], task_id=task_id, queue=settings.INGEST_QUEUE
        )

    transaction.on_commit(send_sync_source, robust=True)


@app.task(
    # Acknowledged when done and given back if the worker dies: the delivery that follows
    # takes the job over once its lease ran out; any other finds it taken and stops.
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,  # the job row is the result
)
def import_issue_dump(job_id: int) -> str:
    return issue_upload_run(job_id=job_id).status


@app.task(ignore_result=True)
def recover_issue_imports() -> int:
    """Beat's tick: send again the tasks of issue imports whose message or worker was lost
    (see `ingest.issue_uploads.issue_imports_to_resend`). Returns how many."""
    job_ids = issue_imports_to_resend()
    for job_id in job_ids:
        import_issue_dump.apply_async(args=[job_id], queue=settings.INGEST_QUEUE)
    return len(job_ids)


@app.task(ignore_result=True)
def sweep_issue_upload_files() -> int:
    """Beat's hourly tick: delete the uploaded dumps whose job never committed
    (`ingest.issue_uploads.issue_upload_files_sweep`). Returns how many."""
    return len(issue_upload_files_sweep())


def issue_upload_enqueue(job: IssueImportJob) -> None:
    """Send the job's task once the current transaction commits (`robust`, as for a sync: a
    broker that is down leaves the job queued rather than failing the committed request)."""
    job_id = job.pk

    def send_import_issue_dump() -> None:
        import_issue_dump.apply_async(args=[job_id], queue=settings.INGEST_QUEUE)

    transaction.on_commit(send_import_issue_dump, robust=True)
