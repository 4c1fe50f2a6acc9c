"""A study restored from an uploaded dataset file (/studies/restore/, POST /api/studies/restore/).

The readers of `exports.formats` and `dataset_restore` read and check the file, as
`import_dataset` does, so the rules and messages are the command's; the restore runs in one
transaction, so a refused file leaves nothing behind. Whoever uploads becomes the restored
study's manager, as `--manager` makes them in the command.
"""

from typing import IO

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from common.exceptions import ApplicationError, PermissionDeniedError
from exports.formats import FORMATS, READERS, format_for_name
from exports.restore import DatasetRestoreError, RestoreReport, dataset_restore
from labeling.access import user_can_create_study


def dataset_upload_limit() -> int:
    """The largest dataset file accepted, in bytes (DATASET_UPLOAD_MAX_BYTES)."""
    return settings.DATASET_UPLOAD_MAX_BYTES


def dataset_upload_restore(
    *,
    user: AbstractBaseUser,
    stream: IO[bytes],
    size: int,
    filename: str,
    file_format: str | None = None,
    study_slug: str | None = None,
) -> RestoreReport:
    """Restore the study of an uploaded dataset file for someone who may set studies up; they
    become its manager. ApplicationError, with nothing stored, for a file that is too large, of
    no known format, or with any bad row (`extra` "errors": [place, message] pairs, the place
    a line, or a row in Parquet), or a slug that exists (also when another request takes it
    while this one restores)."""
    if not user_can_create_study(user=user):
        raise PermissionDeniedError(
            "Superusers and people with the add-study permission set studies up."
        )
    limit = dataset_upload_limit()
    if size > limit:
        raise ApplicationError(
            f"file is larger than {limit} bytes; nothing was restored.",
            {"errors": [[0, f"file is larger than {limit} bytes"]]},
        )
    file_format = file_format or format_for_name(filename)
    if file_format not in FORMATS:
        raise ApplicationError(
            f"Cannot tell the format of {filename or 'the file'}: name it .csv, .jsonl or "
            f".parquet, or give the format ({'|'.join(FORMATS)}).",
            {"field": "format"},
        )
    try:
        # A savepoint of its own: the request's transaction stays usable after a refusal.
        with transaction.atomic():
            return dataset_restore(
                rows=READERS[file_format](stream),
                study_slug=study_slug or None,
                managers=[user],
                by=user,
                source=filename,
            )
    except DatasetRestoreError as error:
        place = "row" if file_format == "parquet" else "line"
        raise ApplicationError(
            error.message,
            {"errors": [[number, message] for number, message in error.errors], "place": place},
        ) from None
    except IntegrityError:
        # The check found the slug free, and another request took it before the insert.
        raise ApplicationError(
            "study: a study of this slug was created while the file was restored; restore it "
            "under another slug. Nothing was restored.",
            {"field": "study"},
        ) from None
