"""Reads of export jobs, limited to what a user may see: the jobs of the studies they manage
(every job for a superuser), as `labeling.access.study_can_export` says."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from exports.models import ExportJob
from labeling.access import MANAGER
from labeling.models import Membership, Study

RECENT_JOBS = 20


def export_job_list_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[ExportJob]:
    jobs = ExportJob.objects.select_related("study", "requested_by")
    if not user.is_authenticated:
        return jobs.none()
    if user.is_superuser:
        return jobs
    managed = Membership.objects.filter(user=user, role=MANAGER).values("study_id")
    return jobs.filter(study_id__in=managed)


def export_job_list_for_study(*, study: Study) -> QuerySet[ExportJob]:
    """A study's jobs, newest first (the caller checked the user may export it)."""
    return ExportJob.objects.filter(study=study).select_related("study", "requested_by")


def export_job_get_visible_to(
    *, user: AbstractBaseUser | AnonymousUser, job_id: int, study: Study | None = None
) -> ExportJob | None:
    """One job the user may see (of `study`, when given), or None: another study's job reads
    like one that does not exist."""
    jobs = export_job_list_visible_to(user=user).filter(pk=job_id)
    if study is not None:
        jobs = jobs.filter(study=study)
    return jobs.first()
