"""Asking for a sync ("Sync now", the API, `sync_github`): the source's run, found or opened,
and its task sent after commit. Asking for the import of an uploaded issue dump into a study:
its job, and its task sent after commit.

This is the one module outside the tasks that sends them, so it imports `ingest.tasks`; the
tasks import only the modules that do the work (`ingest.runs`, `ingest.sync`,
`ingest.issue_uploads`), never this one.
"""

from __future__ import annotations

from typing import IO

from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError, PermissionDeniedError
from common.outage import broker_require
from common.text import strip_nul
from ingest.issue_uploads import issue_upload_limit
from ingest.models import IssueImportJob, Source, SyncRun
from ingest.runs import sync_run_open
from labeling.access import MANAGER, study_roles
from labeling.models import Study
from labeling.services.lifecycle import StudyClosedError


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


FILE_NAME_MAX_LENGTH = 255


@transaction.atomic
def issue_upload_start(
    *, study: Study, user: AbstractBaseUser, stream: IO[bytes], size: int, filename: str
) -> IssueImportJob:
    """Keep an uploaded issue dump (JSONL or a JSON array, as `import_issues` reads it) and queue
    its import into the study, for one of the study's managers; the task is sent once the job
    is committed. Refused, with nothing kept, when the file is larger than
    ISSUE_UPLOAD_MAX_BYTES, the study is closed, or the task queue cannot be reached."""
    if MANAGER not in study_roles(study=study, user=user):
        raise PermissionDeniedError("Issue imports are for the study's managers.")
    limit = issue_upload_limit()
    if size > limit:
        raise ApplicationError(
            f"file is larger than {limit} bytes; nothing was imported.",
            {"errors": [[0, f"file is larger than {limit} bytes"]]},
        )
    if study.status == Study.Status.CLOSED:
        # Said before the file is kept; the import's own additions check again.
        raise StudyClosedError(
            "This study is closed: it takes no new issues. A manager can reopen it.",
            extra={"study_status": Study.Status.CLOSED},
        )
    broker_require(action="the issue import")
    # Pages and the API pass names Django cleaned of non-printable characters; other callers
    # may not, and PostgreSQL stores no NUL.
    name = (strip_nul(filename) or "issues.jsonl")[:FILE_NAME_MAX_LENGTH]
    job = IssueImportJob(
        study=study, requested_by=user, file_name=name, heartbeat_at=timezone.now()
    )
    # Stored under a name of the storage's choosing; the page shows the uploaded one.
    job.file.save("dump", File(stream), save=False)
    try:
        job.save()
    except BaseException:
        job.file.delete(save=False)  # no job, no file; a later rollback leaves it to the sweep
        raise
    # Imported here, as for the sync: the tasks bring the sync and PyGithub.
    from ingest.tasks import issue_upload_enqueue

    issue_upload_enqueue(job)
    return job
