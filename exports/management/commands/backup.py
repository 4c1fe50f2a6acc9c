import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from exports.backup import BackupError, backup_create


class Command(BaseCommand):
    help = (
        "Back the instance up into one timestamped folder: the database (pg_dump, or SQLite's "
        "online backup), the media files, each study's dataset with its codebook, and a "
        "manifest (migrations, row counts, checksums). `restore_backup` reads it back."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--output",
            "--out",
            dest="output",
            type=Path,
            help="the folder that receives the backup folder "
            "(default: BACKUP_DIR, else backups/ in the project folder)",
        )
        parser.add_argument(
            "--no-datasets",
            action="store_true",
            help="leave out the studies' dataset files (the dump holds the data anyway)",
        )

    def handle(self, *args, output: Path | None, no_datasets: bool, **options) -> None:
        destination = output or Path(
            os.environ.get("BACKUP_DIR") or Path(settings.BASE_DIR) / "backups"
        )
        try:
            backup_create(destination=destination, datasets=not no_datasets, log=self.stdout.write)
        except BackupError as error:
            raise CommandError(error.message) from error
        except OSError as error:
            raise CommandError(f"Cannot write the backup under {destination}: {error}") from error
