from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.issue_import import issue_file_lines
from corpus.services import import_workers, issues_import

MAX_ERRORS_SHOWN = 50


class Command(BaseCommand):
    help = "Import GitHub issue objects (JSONL or a JSON array) with comments and linked fixes."
    # Not the system checks: they import the code of every page and API view to check the URLs,
    # which took longer than the import of 10k issues itself. Nothing here depends on them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options) -> None:
        try:
            stream = file.open("rb")
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error}") from error
        with stream:
            report = issues_import(objects=issue_file_lines(stream), workers=import_workers())
        for line_number, message in report.errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"{file}:{line_number}: {message}")
        if len(report.errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"... and {len(report.errors) - MAX_ERRORS_SHOWN} more errors")
        self.stdout.write(report.summary())
        if report.errors and not (report.created or report.updated or report.unchanged):
            raise CommandError("No issue could be imported.")
