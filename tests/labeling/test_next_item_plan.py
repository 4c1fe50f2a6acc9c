"""Finding an annotator's next item reads a few index entries however far into the study they
are: PostgreSQL's plan of the statement, run on a study where the annotator submitted every
item but the last few, or every one; claiming one in a study handed out as people go reads a
few rows however many items are held already; and one's queue and progress in a study read
one's assignments in it, none of another study and no item."""

import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Issue, Repository
from labeling.models import Assignment, StudyItem
from labeling.selectors import (
    assignment_held_next,
    assignment_held_next_ungated,
    queue_for_annotator,
    queue_progress,
)
from labeling.services.holders import items_holders_recount
from labeling.services.studies import item_claim_for_annotator, study_create, study_member_add
from tests.conftest import require_postgres

ITEMS = 3000


def _rows_read(plan: dict) -> int:
    """The rows every node of an EXPLAIN ANALYZE plan returned or filtered out."""
    node_rows = plan.get("Actual Rows", 0) * plan.get("Actual Loops", 1)
    removed = plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
    return node_rows + removed + sum(_rows_read(child) for child in plan.get("Plans", []))


def _most_rows_of_a_step(plan: dict) -> int:
    """The most rows one node of an EXPLAIN ANALYZE plan returned or filtered out."""
    node_rows = plan.get("Actual Rows", 0) * plan.get("Actual Loops", 1)
    removed = plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
    return max([node_rows + removed, *map(_most_rows_of_a_step, plan.get("Plans", []))])


def _study_of_new_issues(slug: str, codebook_version, annotators) -> tuple:
    """A study (k = 2) of ITEMS new issues with the given annotators, nothing handed out; the
    study and its item ids in order."""
    repository = Repository.objects.create(owner="plan", name=slug)
    now = timezone.now()
    Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=number,
            title="t",
            body_html="<p></p>",
            state="closed",
            created_at=now,
            updated_at=now,
        )
        for number in range(1, ITEMS + 1)
    )
    study = study_create(slug=slug, name=slug, codebook_version=codebook_version, k=2)
    for user in annotators:
        study_member_add(study=study, user=user, role="annotator")
    round_ = study.rounds.get()
    StudyItem.objects.bulk_create(
        StudyItem(study=study, issue=issue, round=round_, annotators_needed=2)
        for issue in Issue.objects.filter(repository=repository)
    )
    return study, list(study.items.order_by("id").values_list("id", flat=True))


@pytest.fixture
def study_far_along(db, codebook_version, make_user):
    """A study of ITEMS items, k = 2: the first annotator submitted all but the last 3, the
    second has not started (so that to-dos are common in the table, as they are in a study
    handed out in advance)."""
    require_postgres()
    first, second = make_user("first"), make_user("second")
    study, items = _study_of_new_issues("far", codebook_version, (first, second))
    Assignment.objects.bulk_create(
        Assignment(
            item_id=item_id,
            study=study,
            annotator=user,
            status=(
                Assignment.Status.SUBMITTED
                if user == first and n < ITEMS - 3
                else Assignment.Status.TODO
            ),
        )
        for n, item_id in enumerate(items)
        for user in (first, second)
    )
    items_holders_recount(item_ids=items)
    return study, first, items


def _held_next_checking_the_gate(study, user) -> Assignment | None:
    held_next = assignment_held_next_ungated(study=study, user=user)
    assert not held_next.gate_may_wait  # the study has one main round
    return held_next.assignment


# The statement alone, and with the pilot gate's check (what a submit runs).
NEXT_READS = [
    pytest.param(assignment_held_next, id="held-next"),
    pytest.param(_held_next_checking_the_gate, id="with-the-gate-check"),
]


def _plan_of_next(study, user, read=assignment_held_next) -> tuple[Assignment | None, int]:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labeling_assignment, labeling_studyitem, labeling_round")
    with CaptureQueriesContext(connection) as captured:
        held = read(study=study, user=user)
    assert len(captured) == 1
    plan = _plan_of(captured[0]["sql"])
    return held, _rows_read(plan)


def _plan_of(sql: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return plan[0]["Plan"]


def _relations(plan: dict) -> set[str]:
    own = {plan["Relation Name"]} if "Relation Name" in plan else set()
    return own.union(*(_relations(child) for child in plan.get("Plans", [])))


@pytest.mark.parametrize("read", NEXT_READS)
def test_the_next_to_do_is_found_without_walking_the_items_before_it(study_far_along, read):
    study, first, items = study_far_along
    held, rows = _plan_of_next(study, first, read)
    assert held is not None and held.item_id == items[ITEMS - 3]
    assert rows < 50, f"{rows} rows read to find the next item of {ITEMS}"


@pytest.mark.parametrize("read", NEXT_READS)
def test_nothing_left_is_found_without_walking_the_study(study_far_along, read):
    study, first, _ = study_far_along
    Assignment.objects.filter(annotator=first).update(status=Assignment.Status.SUBMITTED)
    held, rows = _plan_of_next(study, first, read)
    assert held is None
    assert rows < 50, f"{rows} rows read to find that none of {ITEMS} items is left"


@pytest.mark.parametrize("read", NEXT_READS)
def test_a_draft_comes_before_an_earlier_to_do(study_far_along, read):
    study, first, items = study_far_along
    Assignment.objects.filter(annotator=first, item_id=items[-1]).update(
        status=Assignment.Status.DRAFT
    )
    held, rows = _plan_of_next(study, first, read)
    assert (held.item_id, held.status) == (items[-1], Assignment.Status.DRAFT)
    assert rows < 50


@pytest.fixture
def study_handed_out_as_people_go(db, codebook_version, make_user):
    """A study of ITEMS items, k = 2, nothing handed out in advance: one annotator has claimed
    three quarters of the items once, as in a first pass through a study."""
    require_postgres()
    ahead, newcomer = make_user("ahead"), make_user("newcomer")
    study, items = _study_of_new_issues("claims", codebook_version, (ahead, newcomer))
    held = items[: ITEMS * 3 // 4]
    Assignment.objects.bulk_create(
        Assignment(item_id=item_id, study=study, annotator=ahead) for item_id in held
    )
    items_holders_recount(item_ids=held)
    return study, newcomer, items


def test_a_claim_takes_the_first_unheld_item_without_walking_the_held_ones(
    study_handed_out_as_people_go,
):
    study, newcomer, items = study_handed_out_as_people_go
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labeling_assignment, labeling_studyitem, corpus_issue")
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        claimed = item_claim_for_annotator(study=study, user=newcomer)
    assert claimed.item_id == items[ITEMS * 3 // 4]
    (candidates,) = [query["sql"] for query in captured if '"holders" ASC' in query["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + candidates)
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    rows = _rows_read(plan[0]["Plan"])
    assert rows < 1000, f"{rows} rows read to find a free item past {ITEMS * 3 // 4} held ones"
    assert StudyItem.objects.get(pk=claimed.item_id).holders == 1


def test_a_claim_still_finds_an_item_whose_count_of_holders_is_too_high(
    study_handed_out_as_people_go,
):
    """An assignment removed outside the services leaves `holders` too high; counting finds the
    item once no other has a place."""
    study, newcomer, items = study_handed_out_as_people_go
    StudyItem.objects.filter(study=study).update(holders=2)
    with transaction.atomic():
        claimed = item_claim_for_annotator(study=study, user=newcomer)
    assert claimed is not None and claimed.item_id == items[ITEMS * 3 // 4]
    items_holders_recount(item_ids=items)


@pytest.fixture
def annotator_of_two_studies(study_far_along, codebook_version):
    """The far-along study's first annotator, who holds as many items of another study."""
    study, first, _ = study_far_along
    other, other_items = _study_of_new_issues("other", codebook_version, (first,))
    Assignment.objects.bulk_create(
        Assignment(item_id=item_id, study=other, annotator=first) for item_id in other_items
    )
    items_holders_recount(item_ids=other_items)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labeling_assignment, labeling_studyitem")
    return study, first


def test_progress_counts_ones_assignments_in_the_study_without_reading_its_items(
    annotator_of_two_studies,
):
    study, first = annotator_of_two_studies
    with CaptureQueriesContext(connection) as captured:
        progress = queue_progress(study=study, user=first)
    assert (progress.total, progress.done, progress.todo) == (ITEMS, ITEMS - 3, 3)
    (sql,) = [query["sql"] for query in captured]
    with connection.cursor() as cursor:
        # A third of this small table is the annotator's: PostgreSQL rightly reads it whole.
        # What is checked is the walk it takes where one's assignments are a small part.
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = _plan_of(sql)
    assert "labeling_studyitem" not in _relations(plan)
    rows = _most_rows_of_a_step(plan)
    assert rows <= ITEMS, f"{rows} rows read by one step to count {ITEMS} assignments"


def test_a_queue_page_reads_its_rows_alone(annotator_of_two_studies):
    study, first = annotator_of_two_studies
    page = queue_for_annotator(study=study, user=first)[:100]
    with CaptureQueriesContext(connection) as captured:
        rows = list(page)
    assert len(rows) == 100 and {row.item.study_id for row in rows} == {study.pk}
    rows_read = _rows_read(_plan_of(captured[0]["sql"]))
    assert rows_read < 1000, f"{rows_read} rows read for a page of 100 of {ITEMS}"
