from argparse import ArgumentTypeError
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from common.outage import ServiceUnavailableError
from common.text import iso_time_parse
from ingest.dispatch import sync_request
from ingest.models import SyncRun
from ingest.runs import worker_name
from ingest.sources import source_delete, source_get_or_create
from ingest.sync import (
    SKIPPED,
    SyncOutcome,
    repository_missing_upstream,
    sync_run_to_completion,
)


def iso_time(text: str) -> datetime:
    """An ISO 8601 date or time; without a zone it is taken as UTC, as GitHub does."""
    try:
        return iso_time_parse(text, naive_zone=UTC)
    except ValueError as error:
        raise ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from error


class Command(BaseCommand):
    help = (
        "Sync issues, comments and linked fixes of a GitHub repository into the corpus. The "
        "source (repository, state, labels) is created on first use. Without --now the sync is "
        "queued for a Celery worker and the task id printed."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("repository", metavar="OWNER/NAME")
        parser.add_argument("--state", choices=["open", "closed", "all"], default="closed")
        parser.add_argument(
            "--label",
            dest="labels",
            action="extend",
            nargs="+",
            default=[],
            metavar="L",
            help="only issues carrying every one of these labels (repeat or list several)",
        )
        parser.add_argument(
            "--since", type=iso_time, help="only issues updated at or after this ISO 8601 time"
        )
        parser.add_argument("--now", action="store_true", help="run the sync in this process")

    def handle(
        self,
        *args,
        repository: str,
        state: str,
        labels: list[str],
        since: datetime | None,
        now: bool,
        **options,
    ) -> None:
        try:
            source, created = source_get_or_create(
                repository=repository, state=state, labels=labels, since=since
            )
            if created:
                self.stdout.write(f"Added the source {source}.")
            run = sync_request(source=source, trigger=SyncRun.Trigger.COMMAND, enqueue=not now)
        except (ApplicationError, ServiceUnavailableError) as error:
            raise CommandError(error.message) from error
        if not now:
            self.stdout.write(f"Queued sync run {run.pk} of {source}: Celery task {run.task_id}")
            return

        outcome = sync_run_to_completion(
            run_id=run.pk, worker=worker_name(), on_wait=self._report_wait
        )
        run.refresh_from_db()
        if outcome.status == SKIPPED:
            raise CommandError(
                f"Sync run {run.pk} of {source} is {run.get_status_display().lower()} "
                "elsewhere; it was left alone."
            )
        counts = run.counts
        self.stdout.write(
            f"Sync run {run.pk} of {source}: {run.get_status_display().lower()}. "
            f"{counts.get('seen', 0)} issues seen: {counts.get('created', 0)} created, "
            f"{counts.get('updated', 0)} updated, {counts.get('unchanged', 0)} unchanged; "
            f"{counts.get('comments', 0)} comments and {counts.get('fixes', 0)} linked fixes "
            f"stored; {run.requests_used} GitHub requests."
        )
        if run.status != SyncRun.Status.DONE:
            error = run.error or f"The sync ended as {run.status}."
            if created and repository_missing_upstream(source=source):
                # A mistyped name must not leave behind a source that fails every interval.
                source_delete(source=source)
                error = f"{error} The source {source} was not kept."
            raise CommandError(error)

    def _report_wait(self, outcome: SyncOutcome) -> None:
        assert outcome.wait_until is not None
        self.stdout.write(
            f"GitHub's rate limit is used up; waiting until {outcome.wait_until:%H:%M:%S} UTC."
        )
