from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from taxonomy.codebook_file import CodebookFileError, codebook_file_read
from taxonomy.services import codebook_load


class Command(BaseCommand):
    help = "Load a codebook file (JSON or YAML) as a version of its codebook."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--publish", action="store_true", help="publish the version")

    def handle(self, *args, file: Path, publish: bool, **options) -> None:
        try:
            data = codebook_file_read(file.read_bytes(), filename=file.name)
            version, written = codebook_load(data=data, publish=publish)
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error}") from error
        except CodebookFileError as error:
            raise CommandError(
                f"{file} is not a valid codebook; nothing was stored:\n  "
                + "\n  ".join(error.errors)
            ) from error
        except ApplicationError as error:
            raise CommandError(error.message) from error
        dimensions = version.dimensions.count()
        categories = sum(d.categories.count() for d in version.dimensions.all())
        state = "loaded" if written else "already loaded, unchanged"
        self.stdout.write(
            f"{version.codebook.name} {version.label} ({version.status}): {state}; "
            f"{dimensions} dimensions, {categories} categories"
        )
