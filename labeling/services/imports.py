"""Files uploaded in the product: a codebook file (a new codebook, or a draft version of one) and
an annotation CSV into a study. The same functions as `load_codebook` and `import_annotations`
read and check them, so the rules and the messages are the commands'; each loads in one
transaction, so nothing is half-imported.
"""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.access import MANAGER, codebook_can_edit, study_roles, user_can_create_study
from labeling.annotation_import import MAX_FILE_BYTES as ANNOTATION_FILE_MAX_BYTES
from labeling.annotation_import import AnnotationFileError, annotation_rows_parse
from labeling.models import Study, StudyEvent
from labeling.services.annotations import AnnotationImportReport, annotations_import
from labeling.services.lifecycle import study_event_record
from taxonomy.codebook_file import MAX_FILE_BYTES as CODEBOOK_FILE_MAX_BYTES
from taxonomy.codebook_file import CodebookFileError, codebook_file_read
from taxonomy.models import Codebook, CodebookVersion
from taxonomy.services import codebook_load

__all__ = ["ANNOTATION_FILE_MAX_BYTES", "CODEBOOK_FILE_MAX_BYTES"]


def _too_large(size: int, limit: int) -> None:
    # The readers' own words, said before a large upload is read into memory.
    if size > limit:
        raise ApplicationError(
            f"file is larger than {limit} bytes; nothing was imported.",
            {"errors": [[0, f"file is larger than {limit} bytes"]]},
        )


@transaction.atomic
def study_annotations_upload(
    *, study: Study, user: AbstractBaseUser, content: bytes, create_users: bool = False
) -> AnnotationImportReport:
    """Import an annotation CSV (issue,annotator,dimension,labels) into the study as
    `import_annotations` does. Refused with every problem by line (ApplicationError, `extra`
    "errors": [line, message] pairs) and nothing written. Managers only; logged."""
    if MANAGER not in study_roles(study=study, user=user):
        raise PermissionDeniedError("Only the study's managers import annotations.")
    _too_large(len(content), ANNOTATION_FILE_MAX_BYTES)
    try:
        rows = annotation_rows_parse(content)
    except AnnotationFileError as error:
        raise ApplicationError(
            f"{len(error.errors)} problems; nothing was imported.",
            {"errors": [list(problem) for problem in error.errors]},
        ) from None
    report = annotations_import(study=study, rows=rows, create_users=create_users)
    study_event_record(
        study=study,
        actor=user,
        action=StudyEvent.Action.ANNOTATIONS_IMPORTED,
        details={
            "rows": report.rows,
            "annotations": report.annotations_written,
            "items_added": report.items_added,
            "users_created": report.users_created,
        },
    )
    return report


@dataclass
class CodebookUpload:
    version: CodebookVersion
    written: bool  # False: the same content was loaded already


@transaction.atomic
def codebook_upload(
    *, user: AbstractBaseUser, content: bytes, filename: str = ""
) -> CodebookUpload:
    """Load a codebook file (JSON, or YAML by its name) as `load_codebook` does, as a draft: a
    new codebook for those who set studies up, a new version of an existing codebook for those
    who edit it (labeling.access.codebook_can_edit). Refused with every problem and nothing
    stored."""
    _too_large(len(content), CODEBOOK_FILE_MAX_BYTES)
    try:
        data = codebook_file_read(content, filename=filename)
    except CodebookFileError as error:
        raise ApplicationError(
            "This is not a valid codebook; nothing was stored.", {"errors": error.errors}
        ) from None
    name = data.get("name") if isinstance(data, dict) else None
    existing = Codebook.objects.filter(name=name).first() if isinstance(name, str) else None
    if existing is not None and not codebook_can_edit(codebook=existing, user=user):
        raise PermissionDeniedError(
            f"Only the editors of {existing.name} (managers of a study that uses it) add "
            "versions to it."
        )
    if existing is None and not user_can_create_study(user=user):
        raise PermissionDeniedError("Only people who set studies up load new codebooks.")
    try:
        version, written = codebook_load(data=data, publish=False)
    except CodebookFileError as error:
        raise ApplicationError(
            "This is not a valid codebook; nothing was stored.", {"errors": error.errors}
        ) from None
    return CodebookUpload(version=version, written=written)
