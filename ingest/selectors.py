"""Reads about sources and sync runs: what the Sources page lists, which sources are due. Who may
manage sources is an access rule: `labeling.access.user_can_manage_sources`. A study's issue
imports (the caller checked that the user manages the study)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from ingest.models import IssueImportJob, Source, StudyFollow, SyncRun
from labeling.models import Study


def source_list(*, visible_studies: QuerySet[Study] | None = None) -> QuerySet[Source]:
    """Sources with their repository, followers and the id of their latest run, in a fixed
    number of queries whatever the number of sources and runs (use with `runs_latest`).

    `visible_studies`: the studies whose follows may be shown (from
    `labeling.access.study_list_visible_to`), so that a manager of one study does not learn the
    names of the others; None shows every follow (the caller decided the user sees all).
    """
    latest_run = SyncRun.objects.filter(source=OuterRef("pk")).order_by("-queued_at", "-id")
    follows = StudyFollow.objects.select_related("study")
    if visible_studies is not None:
        follows = follows.filter(study__in=visible_studies.values("pk"))
    return (
        Source.objects.select_related("repository")
        .prefetch_related(Prefetch("follows", queryset=follows))
        .annotate(latest_run_id=Subquery(latest_run.values("id")[:1]))
        .order_by("repository__owner", "repository__name", "id")
    )


def runs_latest(*, sources: list[Source]) -> dict[int, SyncRun]:
    """source id -> its latest run, in one query (sources come from `source_list`)."""
    run_ids = [source.latest_run_id for source in sources if source.latest_run_id]
    runs = SyncRun.objects.filter(id__in=run_ids).select_related(
        "source__repository", "requested_by"
    )
    return {run.source_id: run for run in runs}


def sync_run_list() -> QuerySet[SyncRun]:
    return SyncRun.objects.select_related("source__repository", "requested_by").order_by(
        "-queued_at", "-id"
    )


def sync_run_get(*, run_id: int) -> SyncRun | None:
    return sync_run_list().filter(id=run_id).first()


@dataclass(frozen=True)
class DueSource:
    source_id: int
    last_queued_at: datetime | None


def sources_due(*, now: datetime | None = None) -> list[DueSource]:
    """Enabled sources whose latest run was queued at least their interval ago (or never), and
    sources whose active run lost its worker (its lease expired), so that a sync a dead worker
    left behind resumes within a minute instead of at the next interval.

    Counting from the latest run of any outcome, not from the latest success, keeps a broken
    source (a deleted repository) from being retried every minute.
    """
    now = now or timezone.now()
    rows = (
        Source.objects.filter(enabled=True)
        .annotate(
            last_queued_at=Max("runs__queued_at"),
            lost_runs=Count(
                "runs",
                filter=Q(runs__status__in=SyncRun.ACTIVE_STATUSES, runs__lease_expires_at__lt=now),
            ),
        )
        .values_list("id", "interval_minutes", "last_queued_at", "lost_runs")
        .order_by("id")
    )
    return [
        DueSource(source_id=source_id, last_queued_at=last_queued_at)
        for source_id, interval_minutes, last_queued_at, lost_runs in rows
        if last_queued_at is None
        or last_queued_at + timedelta(minutes=interval_minutes) <= now
        or lost_runs
    ]


ISSUE_IMPORTS_LISTED = 10


def issue_import_jobs(*, study: Study, limit: int = ISSUE_IMPORTS_LISTED) -> list[IssueImportJob]:
    """The study's latest issue imports, newest first."""
    return list(IssueImportJob.objects.filter(study=study).select_related("requested_by")[:limit])


def issue_import_job_get(*, study: Study, job_id: int) -> IssueImportJob | None:
    """One of the study's issue imports; None for another study's, as for one that does not
    exist."""
    return (
        IssueImportJob.objects.filter(study=study, pk=job_id).select_related("requested_by").first()
    )
