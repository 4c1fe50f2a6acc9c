import os
import sys
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from exports.formats import FORMATS, format_for_name
from exports.services import dataset_export_write
from labeling.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's labeled dataset, one row per item (gold labels per dimension with "
        "their method; with --raw every annotator's submitted labels), as JSONL, CSV or Parquet."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            help="default: from the output file's extension, else jsonl",
        )
        parser.add_argument("--raw", action="store_true", help="add every annotator's labels")
        parser.add_argument(
            "--pseudonymise",
            action="store_true",
            help="name annotators annotator-01, annotator-02, ... instead of their usernames",
        )
        parser.add_argument(
            "--output", "--out", dest="output", type=Path, help="the file (default: stdout)"
        )

    def handle(self, *args, study: str, output: Path | None, **options) -> None:
        target = Study.objects.select_related("codebook_version__codebook").filter(slug=study)
        target = target.first()
        if target is None:
            raise CommandError(f"No study {study!r}.")
        file_format = options["format"] or (output and format_for_name(output.name)) or "jsonl"
        if options["pseudonymise"] and not options["raw"]:
            self.stderr.write("--pseudonymise changes nothing without --raw: no one is named.")
        writing = {
            "study": target,
            "format": file_format,
            "raw": options["raw"],
            "pseudonymise": options["pseudonymise"],
        }
        try:
            if output is None:
                rows = dataset_export_write(**writing, output=sys.stdout.buffer)
                sys.stdout.flush()
            else:
                rows = _write_file(output, writing)
        except ApplicationError as error:
            raise CommandError(error.message) from error
        except OSError as error:
            raise CommandError(f"Cannot write {output}: {error}") from error
        if output is not None:
            self.stderr.write(f"{rows} items of {target.slug} written to {output} ({file_format}).")


def _write_file(output: Path, writing: dict) -> int:
    """Write next to the file and move it into place once complete, so that a failed export
    never leaves half a file under the name (nor destroys an earlier one)."""
    folder = output.resolve().parent
    with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{output.name}.", delete=False) as part:
        try:
            rows = dataset_export_write(**writing, output=part)
        except BaseException:
            part.close()
            os.unlink(part.name)
            raise
    os.replace(part.name, output)
    return rows
