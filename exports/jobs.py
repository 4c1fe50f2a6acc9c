"""Asking for an export job (the export page, the API): the job row, and its task sent after
commit. The one module besides the tasks that knows of them (see `exports.tasks`)."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.exceptions import ApplicationError, PermissionDeniedError
from common.outage import broker_require
from exports.models import ExportJob
from labeling.access import study_can_export, study_roles
from labeling.models import Study, StudyItem


@transaction.atomic
def export_job_start(
    *,
    study: Study,
    user: AbstractBaseUser,
    format: str = ExportJob.Format.JSONL,
    raw: bool = False,
    pseudonymise: bool = False,
) -> ExportJob:
    """Queue an export of the study's dataset for one of its managers; the task is sent once
    the job is committed. Pseudonymising means something only with raw labels (nothing else
    names an annotator), so it is kept only then. Raises ServiceUnavailableError, with nothing
    written, while the task queue cannot be reached."""
    if not study_can_export(roles=study_roles(study=study, user=user)):
        raise PermissionDeniedError("Exports are for the study's managers.")
    if format not in ExportJob.Format.values:
        raise ApplicationError(
            f"The format is one of {', '.join(ExportJob.Format.values)}, not {format!r}.",
            {"format": [f"{format!r} is not a format."]},
        )
    broker_require(action="the export")
    job = ExportJob.objects.create(
        study=study,
        requested_by=user,
        format=format,
        raw=raw,
        pseudonymise=raw and pseudonymise,
        rows_total=StudyItem.objects.filter(study=study).count(),
    )
    # Imported here: the tasks bring Celery, which a process that sends none does not load.
    from exports.tasks import export_job_enqueue

    export_job_enqueue(job)
    return job
