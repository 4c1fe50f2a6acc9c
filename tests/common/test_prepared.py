"""common.prepared: a query compiled once gives what its queryset gives, for any values."""

import pytest
from django.db import connection, transaction
from django.db.models import F, FilteredRelation, Q
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from common.prepared import PreparedQuery, prefetched_carry
from corpus.models import Issue
from labeling.models import Assignment
from labeling.services.studies import study_member_add

RELATED = ("item__issue__repository", "item__round", "item__study__codebook_version__codebook")


def _assignments(*, slug: str, item_id: int, user_id: int, lock: bool) -> object:
    """A query like the labeling page's: joins, a deferred field, a filtered relation."""
    assignments = (
        Assignment.objects.filter(annotator_id=user_id, item__study__slug=slug, item_id=item_id)
        .select_related(*RELATED)
        .defer("item__issue__body")
        .annotate(
            _mine=FilteredRelation(
                "item__study__memberships",
                condition=Q(item__study__memberships__user_id=user_id),
            ),
            _my_role=F("_mine__role"),
        )
        .order_by("_my_role")
    )
    return assignments.select_for_update(of=("self",)) if lock else assignments


def _field_values(instance) -> dict:
    return {
        field.attname: getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.attname not in instance.get_deferred_fields()
    }


def _same(ours: Assignment, orms: Assignment) -> None:
    """Every loaded field of the assignment and of each model joined to it, and the role."""
    assert _field_values(ours) == _field_values(orms)
    joined = ["item", "item.issue", "item.issue.repository", "item.round", "item.study"]
    joined += ["item.study.codebook_version", "item.study.codebook_version.codebook"]
    for path in joined:
        mine, theirs = ours, orms
        for step in path.split("."):
            mine, theirs = getattr(mine, step), getattr(theirs, step)
        assert type(mine) is type(theirs) and _field_values(mine) == _field_values(theirs)
        assert not mine._state.adding and mine._state.db == theirs._state.db
    assert ours._my_role == orms._my_role
    assert ours.item.issue.get_deferred_fields() == {"body"}


def test_a_prepared_query_gives_the_querysets_instances_for_any_values(
    study, people, django_assert_num_queries
):
    built = []

    def build(**arguments):
        built.append(arguments)
        return _assignments(**arguments)

    prepared = PreparedQuery(build, values=("slug", "item_id", "user_id"))
    study_member_add(study=study, user=people["annotator1"], role="adjudicator")
    cases = [
        (people[name].pk, assignment.item_id)
        for name in ("annotator1", "annotator2")
        for assignment in Assignment.objects.filter(annotator=people[name]).order_by("id")[:2]
    ]
    for user_id, item_id in cases:
        with django_assert_num_queries(1):
            ours = prepared(slug="demo", item_id=item_id, user_id=user_id, lock=False)
        orms = list(_assignments(slug="demo", item_id=item_id, user_id=user_id, lock=False))
        assert len(ours) == len(orms) >= 1
        for mine, theirs in zip(ours, orms, strict=True):
            _same(mine, theirs)
    # annotator1 holds two roles: a row each, as the queryset gives them.
    assert [a._my_role for a in prepared(
        slug="demo", item_id=cases[0][1], user_id=cases[0][0], lock=False
    )] == ["adjudicator", "annotator"]  # fmt: skip
    # Built once for the shape, with stand-ins, not with anyone's values.
    assert len(built) == 1 and built[0]["slug"] != "demo"
    # Values that match nothing, or would match too much if they were written into the SQL.
    for slug, item_id in (("nope", cases[0][1]), ("demo' OR '1'='1", cases[0][1]), ("demo", 0)):
        assert prepared(slug=slug, item_id=item_id, user_id=cases[0][0], lock=False) == []
    # Another shape is built apart.
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        locked = prepared(slug="demo", item_id=cases[0][1], user_id=cases[0][0], lock=True)
    assert len(built) == 2 and len(locked) == 2
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in captured.captured_queries[0]["sql"]


@pytest.mark.django_db(transaction=True)  # outside a test's own transaction
def test_a_lock_outside_a_transaction_is_refused_as_the_queryset_refuses_it(study, people):
    prepared = PreparedQuery(_assignments, values=("slug", "item_id", "user_id"))
    item_id = Assignment.objects.filter(annotator=people["annotator1"]).first().item_id
    arguments = {"slug": "demo", "item_id": item_id, "user_id": people["annotator1"].pk}
    with transaction.atomic():
        assert prepared(**arguments, lock=True)
    if not connection.features.has_select_for_update:
        # SQLite takes no row locks: neither the queryset nor the kept query refuses it.
        assert list(_assignments(**arguments, lock=True))
        assert prepared(**arguments, lock=True)
        return
    with pytest.raises(TransactionManagementError):
        list(_assignments(**arguments, lock=True))
    with pytest.raises(TransactionManagementError):
        prepared(**arguments, lock=True)


def test_a_value_that_is_not_a_parameter_of_its_own_is_refused(db):
    def contains(*, text: str) -> object:
        return Assignment.objects.filter(skip_reason__icontains=text)

    with pytest.raises(ValueError, match="does not carry text"):
        PreparedQuery(contains, values=("text",))(text="flaky")
    prepared = PreparedQuery(lambda *, item_id: Assignment.objects.filter(item_id=item_id),
                             values=("item_id",))  # fmt: skip
    for wrong in (1.5, None, True, [1, "2"], (1, 2)):
        with pytest.raises(TypeError, match="a whole number, a string or a list"):
            prepared(item_id=wrong)
    values = PreparedQuery(
        lambda *, item_id: Assignment.objects.filter(item_id=item_id).values("id"),
        values=("item_id",),
    )
    with pytest.raises(ValueError, match="model instances"):
        values(item_id=1)


def test_a_list_of_keys_is_a_shape_for_each_length(study, people, django_assert_num_queries):
    def query(*, ids, annotator_id):
        return Assignment.objects.filter(pk__in=ids, annotator_id=annotator_id).order_by("pk")

    built = []
    prepared = PreparedQuery(
        lambda **arguments: built.append(len(arguments["ids"])) or query(**arguments),
        values=("ids", "annotator_id"),
    )
    keys = list(Assignment.objects.order_by("pk").values_list("pk", flat=True)[:6])
    annotator_id = people["annotator1"].pk
    for ids in (keys[:2], keys[2:4], keys[:3], [keys[5], keys[5], keys[0]]):
        with django_assert_num_queries(1):
            found = prepared(ids=ids, annotator_id=annotator_id)
        assert found == list(query(ids=ids, annotator_id=annotator_id))
    assert built == [2, 3]  # once for each length
    # An empty list matches nothing, without a query, as the ORM's `__in=[]`.
    with django_assert_num_queries(0):
        assert prepared(ids=[], annotator_id=annotator_id) == []


def test_rows_carried_answer_as_a_prefetch_without_a_query(
    sample_issues, django_assert_num_queries
):
    issue = Issue.objects.get(pk=max(sample_issues, key=lambda i: i.comments.count()).pk)
    stored = list(issue.comments.all())
    assert len(stored) >= 2
    with django_assert_num_queries(0):
        prefetched_carry(issue, "comments", stored[:1])
        assert list(issue.comments.all()) == stored[:1]
        assert issue.comments.count() == 1
        # Carried again: the new rows, not the ones carried before.
        prefetched_carry(issue, "comments", stored)
        assert list(issue.comments.all()) == stored
    # A query of the relation still asks the database, for this issue's rows only.
    with django_assert_num_queries(1):
        assert set(issue.comments.filter(github_id__gt=0)) == set(stored)
