"""Saving labels locks the assignment row and nothing else (PostgreSQL).

A lock on the study or codebook version row would make every save of a study wait for the one
before it: with many annotators at work, saves would queue on a single row.
"""

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from labeling.models import Assignment, Study
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import CodebookVersion
from tests.conftest import require_postgres


def _lockable_without_waiting(model, pk) -> bool:
    """Whether another connection can lock the row at once (NOWAIT fails when it is held)."""
    try:
        with transaction.atomic():
            model.objects.select_for_update(nowait=True).get(pk=pk)
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
        for name, model, pk in [
            ("own assignment", Assignment, assignment.pk),
            ("other assignment", Assignment, other.pk),
            ("study", Study, study.pk),
            ("codebook version", CodebookVersion, study.codebook_version_id),
        ]:
            checker = threading.Thread(
                target=lambda n=name, m=model, p=pk: results.__setitem__(
                    n, _lockable_without_waiting(m, p)
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
        "codebook version": True,
    }
