from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from labeling.annotation_import import AnnotationFileError, annotation_rows_parse
from labeling.models import Study
from labeling.services.annotations import annotations_import


class Command(BaseCommand):
    help = (
        "Import labels made elsewhere (CSV: issue,annotator,dimension,labels) as submitted "
        "annotations of a study. Nothing is imported when any line is wrong."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True)
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--create-users",
            action="store_true",
            help="create unknown annotators as inactive accounts",
        )

    def handle(self, *args, study: str, file: Path, create_users: bool, **options) -> None:
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study {study!r}.")
        try:
            rows = annotation_rows_parse(file.read_bytes())
            report = annotations_import(study=target, rows=rows, create_users=create_users)
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error}") from error
        except AnnotationFileError as error:
            raise CommandError(_listing(file, error.errors)) from error
        except ApplicationError as error:
            raise CommandError(
                error.message + "\n" + _listing(file, error.extra.get("errors", []))
            ) from error
        self.stdout.write(
            f"{report.annotations_written} annotations from {report.rows} rows; "
            f"{report.items_added} issues added to {target.slug}; "
            f"{report.users_created} inactive accounts created."
        )


def _listing(file: Path, errors: list[tuple[int, str]]) -> str:
    return "\n".join(f"{file}:{line}: {message}" for line, message in errors)
