from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a folder written by `backup` into the empty database of DATABASE_URL and its "
        "media files into MEDIA_ROOT, then count every table against the backup's manifest."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("folder", type=Path, help="a backup folder (issuecoder-<time>)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="restore into a database that is not empty (the backup's tables are dropped "
            "and restored) and overwrite media files of the same names",
        )

    def handle(self, *args, folder: Path, force: bool, **options) -> None:
        try:
            backup_restore(source=folder, force=force, log=self.stdout.write)
        except BackupError as error:
            raise CommandError(error.message) from error
        except OSError as error:
            raise CommandError(f"Cannot restore from {folder}: {error}") from error
