from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.issue_import import issue_file_lines
from corpus.services import issues_import

MAX_ERRORS_SHOWN = 50


class Command(BaseCommand):
    help = "Import GitHub issue objects (JSONL or a JSON array) with comments and linked fixes."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options) -> None:
        try:
            stream = file.open("rb")
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error}") from error
        with stream:
            report = issues_import(objects=issue_file_lines(stream))
        for line_number, message in report.errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"{file}:{line_number}: {message}")
        if len(report.errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"... and {len(report.errors) - MAX_ERRORS_SHOWN} more errors")
        self.stdout.write(report.summary())
        if report.errors and not (report.created or report.updated or report.unchanged):
            raise CommandError("No issue could be imported.")
