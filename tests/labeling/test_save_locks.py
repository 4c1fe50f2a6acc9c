"""Saving labels locks the assignment row and nothing else (PostgreSQL).

A lock on the study or codebook version row would make every save of a study wait for the one
before it: with many annotators at work, saves would queue on a single row. A save holds only a
KEY SHARE lock on its study (labeling.services.lifecycle.study_check_open), which other saves
and any update of the study share; only closing the study (FOR UPDATE) waits for it.
"""

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from labeling.models import Assignment, Study
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import CodebookVersion
from tests.conftest import require_postgres


def _lockable_without_waiting(model, pk, *, no_key: bool = False) -> bool:
    """Whether another connection can lock the row at once (NOWAIT fails when it is held);
    `no_key`: FOR NO KEY UPDATE, the lock an UPDATE of the row takes."""
    try:
        with transaction.atomic():
            model.objects.select_for_update(nowait=True, no_key=no_key).get(pk=pk)
        return True
    except DatabaseError:
        return False
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_save_in_progress_locks_only_its_assignment(study, people):
    require_postgres()
    assignment = item_next_for_annotator(study=study, user=people["annotator1"])
    other = item_next_for_annotator(study=study, user=people["annotator2"])
    saved, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def save_and_hold() -> None:
        try:
            with transaction.atomic():
                assignment_save(
                    assignment=assignment,
                    user=people["annotator1"],
                    answers={"symptom": DimensionAnswer(category_keys=["crash"])},
                    submit=False,
                )
                saved.set()
                release.wait(timeout=30)
        except BaseException as error:
            errors.append(error)
            saved.set()
        finally:
            connection.close()

    holder = threading.Thread(target=save_and_hold)
    holder.start()
    try:
        assert saved.wait(timeout=30)
        results = {}
        for name, model, pk, no_key in [
            ("own assignment", Assignment, assignment.pk, False),
            ("other assignment", Assignment, other.pk, False),
            ("study", Study, study.pk, True),
            ("closing the study", Study, study.pk, False),
            ("codebook version", CodebookVersion, study.codebook_version_id, False),
        ]:
            checker = threading.Thread(
                target=lambda n=name, m=model, p=pk, k=no_key: results.__setitem__(
                    n, _lockable_without_waiting(m, p, no_key=k)
                )
            )
            checker.start()
            checker.join(timeout=30)
    finally:
        release.set()
        holder.join(timeout=30)
    assert not errors, errors
    assert results == {
        "own assignment": False,
        "other assignment": True,
        "study": True,
        "closing the study": False,
        "codebook version": True,
    }
