"""A study's life: closing and reopening it, and its activity log (who did what, when, why).

A closed study takes no more labels, resolutions, codebook moves or assignment changes; its
agreement, exports and tables stay readable. Every write service that changes a study's labels or
who holds its items calls `study_check_open` inside its transaction; the check takes a KEY SHARE
lock on the study row, which `study_close`'s row lock waits for, so that no write that began
while the study was open lands after it closed.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from common.text import strip_nul
from labeling.access import MANAGER, study_roles
from labeling.models import Study, StudyEvent

MAX_REASON = 2_000


class StudyClosedError(ConflictError):
    """The study is closed: the write is refused (the API answers 409, code "study_closed")."""


def study_event_record(
    *,
    study: Study,
    actor: AbstractBaseUser | None,
    action: str,
    reason: str = "",
    details: dict[str, Any] | None = None,
) -> StudyEvent:
    """Add one act to the study's activity log. `actor` None: a command run by the operator."""
    return StudyEvent.objects.create(
        study=study,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        reason=reason,
        details=details or {},
    )


def study_check_open(*, study_id: int, status_read: str | None = None) -> None:
    """Refuse a write to a closed study (StudyClosedError). Must run inside the write's
    transaction: the row's KEY SHARE lock keeps the study from closing until the write commits
    (it does not wait for other writes, which take the same lock).

    `status_read`: the study's status as the caller read it earlier in this transaction.
    SQLite has no row locks, and its transactions are serializable: that status is still
    current there and is not read again."""
    postgresql = connection.vendor == "postgresql"
    status = status_read if status_read is not None and not postgresql else None
    if status is None:
        lock = " FOR KEY SHARE" if postgresql else ""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT status FROM labeling_study WHERE id = %s{lock}", [study_id])  # noqa: S608
            row = cursor.fetchone()
        status = row[0] if row is not None else None
    if status == Study.Status.CLOSED:
        raise StudyClosedError(
            "This study is closed: its labels, resolutions, codebook and assignments no longer "
            "change. A manager can reopen it.",
            extra={"study_status": Study.Status.CLOSED},
        )


def _reason_check(reason: str, what: str) -> str:
    reason = strip_nul(reason or "").strip()
    if not reason:
        raise ApplicationError(f"Say why you {what} the study.", extra={"field": "reason"})
    if len(reason) > MAX_REASON:
        raise ApplicationError(
            f"A reason has at most {MAX_REASON} characters ({len(reason)}).",
            extra={"field": "reason", "max_length": MAX_REASON},
        )
    return reason


def _status_change(*, study: Study, user: AbstractBaseUser, reason: str, to: str) -> Study:
    closing = to == Study.Status.CLOSED
    verb = "close" if closing else "reopen"
    if MANAGER not in study_roles(study=study, user=user):
        raise PermissionDeniedError(f"Only the study's managers {verb} it.")
    reason = _reason_check(reason, verb)
    locked = Study.objects.select_for_update(of=("self",)).get(pk=study.pk)
    if locked.status == to:
        raise ApplicationError(
            f"This study is {'closed' if closing else 'open'} already.",
            extra={"study_status": locked.status},
        )
    locked.status = to
    locked.save(update_fields=["status", "updated_at"])
    study_event_record(
        study=locked,
        actor=user,
        action=StudyEvent.Action.CLOSED if closing else StudyEvent.Action.REOPENED,
        reason=reason,
    )
    study.status = to
    return locked


@transaction.atomic
def study_close(*, study: Study, user: AbstractBaseUser, reason: str) -> Study:
    """Close the study, saying why: no more labeling, resolution, codebook moves or assignment
    changes (each write service refuses them); agreement, exports and tables stay. Managers
    only; waits for writes under way to commit."""
    return _status_change(study=study, user=user, reason=reason, to=Study.Status.CLOSED)


@transaction.atomic
def study_reopen(*, study: Study, user: AbstractBaseUser, reason: str) -> Study:
    """Open a closed study again, saying why. Managers only."""
    return _status_change(study=study, user=user, reason=reason, to=Study.Status.ACTIVE)
