from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from exports.formats import FORMATS, READERS, format_for_name
from exports.restore import DatasetRestoreError, dataset_restore, restore_managers
from taxonomy.codebook_file import CodebookFileError, codebook_file_read


class Command(BaseCommand):
    help = (
        "Restore a study from its dataset file (export_dataset, with --raw to restore every "
        "annotator's labels and hence the agreement figures). Nothing is stored when any row "
        "is wrong."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=FORMATS, help="default: from the file's extension")
        parser.add_argument("--study", help="restore under this slug instead of the file's")
        parser.add_argument(
            "--codebook",
            type=Path,
            help="the codebook file (JSON or YAML), when this instance lacks its version",
        )
        parser.add_argument(
            "--manager",
            action="append",
            default=[],
            help="a username to manage the restored study (repeat for more)",
        )

    def handle(self, *args, file: Path, study: str | None, codebook: Path | None, **options):
        file_format = options["format"] or format_for_name(file.name)
        if file_format is None:
            raise CommandError(
                f"Cannot tell the format of {file.name}: give --format {'|'.join(FORMATS)}."
            )
        codebook_data = None
        if codebook is not None:
            try:
                codebook_data = codebook_file_read(codebook.read_bytes(), filename=codebook.name)
            except OSError as error:
                raise CommandError(f"Cannot read {codebook}: {error}") from error
            except CodebookFileError as error:
                raise CommandError(f"{codebook}: {error}") from error
        try:
            managers = restore_managers(options["manager"])
            with file.open("rb") as stream:
                report = dataset_restore(
                    rows=READERS[file_format](stream),
                    study_slug=study,
                    codebook_data=codebook_data,
                    managers=managers,
                    source=file.name,
                )
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error}") from error
        except DatasetRestoreError as error:
            place = "row" if file_format == "parquet" else "line"
            listing = "\n".join(
                f"{file}: {place} {number}: {message}" for number, message in error.errors
            )
            raise CommandError(f"{error.message}\n{listing}") from error
        except ApplicationError as error:
            raise CommandError(error.message) from error
        self.stdout.write(report.summary())
