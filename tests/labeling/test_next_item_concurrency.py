"""Two annotators asking for their next item at the same moment never get the same slot: the
claim locks candidate items with SELECT ... FOR UPDATE SKIP LOCKED (PostgreSQL)."""

import threading
from collections import Counter

import pytest
from django.db import connection

from labeling.models import Assignment
from labeling.services.studies import item_next_for_annotator, study_create, study_member_add
from tests.conftest import require_postgres


@pytest.mark.django_db(transaction=True)
def test_simultaneous_requests_never_share_an_item(codebook_version, sample_issues, make_user):
    require_postgres()
    annotators = [make_user(f"parallel{n}") for n in range(6)]
    study = study_create(
        slug="race", name="race", codebook_version=codebook_version, k=1, issues=sample_issues
    )
    for user in annotators:
        study_member_add(study=study, user=user, role="annotator")

    barrier = threading.Barrier(len(annotators))
    claimed: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def ask(user) -> None:
        try:
            for _ in range(5):
                barrier.wait(timeout=30)
                assignment = item_next_for_annotator(study=study, user=user)
                if assignment is not None:
                    with lock:
                        claimed.append(assignment.item_id)
                    Assignment.objects.filter(pk=assignment.pk).update(status="submitted")
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(user,)) for user in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    # k = 1: every item goes to exactly one annotator, whoever asked at the same moment.
    assert len(claimed) == 30
    assert Counter(claimed).most_common(1)[0][1] == 1
    assert Assignment.objects.filter(item__study=study).count() == 30
    reasons = set(Assignment.objects.values_list("selection_reason", flat=True))
    assert reasons == {"least-annotated (0 of 1 before)"}
