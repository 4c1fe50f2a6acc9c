"""common.bulk: rows written without the ORM are the rows the ORM writes."""

import gc

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from common.bulk import bulk_create_with_rows, bulk_insert, collector_paused
from corpus.issue_import import issue_file_lines
from corpus.services import issues_import
from labeling.models import Resolution, ResolutionRevision
from taxonomy.models import Category, Dimension
from tests.conftest import SAMPLE_ISSUES_FILE

COMPARED = ["category_keys", "method", "note", "previous_category_keys", "previous_method"]


@pytest.fixture
def resolution(study) -> Resolution:
    return Resolution.objects.create(
        item=study.items.order_by("id").first(),
        dimension=Dimension.objects.filter(version=study.codebook_version).order_by("id").first(),
        method=Resolution.Method.CONSENSUS,
        version=1,
    )


def test_bulk_insert_writes_what_bulk_create_writes(resolution, people):
    rows = [
        {
            "resolution_id": resolution.id,
            "category_keys": ["crash", "hängt, ünïcode"],
            "method": "majority",
            "note": "a note\nwith 'quotes', \"double quotes\", a \\ and a tab\t",
            "previous_category_keys": None,
            "changed_by_id": people["manager"].pk,
        },
        {
            "resolution_id": resolution.id,
            "category_keys": [],
            "method": "consensus",
            "note": "",
            "previous_category_keys": ["crash"],
            "changed_by_id": None,
        },
    ]
    started = timezone.now()
    bulk_insert(ResolutionRevision, rows)
    ResolutionRevision.objects.bulk_create([ResolutionRevision(**row) for row in rows])

    written = list(
        ResolutionRevision.objects.filter(resolution=resolution)
        .order_by("id")
        .values(*COMPARED, "changed_by_id", "changed_at")
    )
    assert len(written) == 4
    for ours, orms in zip(written[:2], written[2:], strict=True):
        assert {key: ours[key] for key in COMPARED} == {key: orms[key] for key in COMPARED}
        assert ours["changed_by_id"] == orms["changed_by_id"]
    assert written[0]["category_keys"] == ["crash", "hängt, ünïcode"]
    # A field left out takes its default; an auto_now_add field the time of the write.
    assert {row["previous_method"] for row in written} == {""}
    assert all(row["changed_at"] >= started for row in written)
    # None in a JSON field is SQL NULL, as the ORM writes it, not the JSON null.
    assert (
        ResolutionRevision.objects.filter(
            resolution=resolution, previous_category_keys__isnull=True
        ).count()
        == 2
    )


def test_a_bulk_insert_counts_as_a_query(resolution, django_assert_num_queries):
    """PostgreSQL's rows go by COPY, which Django's cursor does not see: a test or a benchmark
    that counts a request's queries counts it all the same."""
    rows = [{"resolution_id": resolution.id, "method": "consensus"} for _ in range(3)]
    with django_assert_num_queries(1) as captured:
        bulk_insert(ResolutionRevision, rows)
    assert ResolutionRevision._meta.db_table in captured.captured_queries[0]["sql"]
    assert ResolutionRevision.objects.filter(resolution=resolution).count() == 3


def test_bulk_insert_refuses_a_field_the_model_lacks(resolution):
    with pytest.raises(ValueError, match="has no field colour"):
        bulk_insert(ResolutionRevision, [{"resolution_id": resolution.id, "colour": "red"}])
    assert not ResolutionRevision.objects.filter(resolution=resolution).exists()


def test_bulk_insert_of_no_rows_writes_nothing(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        bulk_insert(ResolutionRevision, [])


def test_the_collector_is_paused_inside_and_back_after_even_on_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        # The inner pause found it off already: it leaves it off.
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()


def test_an_import_runs_with_the_collector_paused(db):
    seen: list[bool] = []
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        report = issues_import(
            objects=issue_file_lines(stream),
            on_batch=lambda report, records: seen.append(gc.isenabled()),
        )
    assert report.created and seen == [False] * len(seen) and seen
    assert gc.isenabled()


def _new_resolutions(study, count: int) -> list[Resolution]:
    """Unsaved gold labels of the study's first item, on dimensions it has none on yet."""
    item = study.items.order_by("id").first()
    taken = item.resolutions.values("dimension_id")
    dimensions = Dimension.objects.filter(version=study.codebook_version).exclude(id__in=taken)
    return [
        Resolution(item=item, dimension=dimension, method="majority", note=f"n{n}", version=1)
        for n, dimension in enumerate(dimensions.order_by("id")[:count])
    ]


def test_new_rows_and_the_rows_that_refer_to_them_go_in_one_statement_on_postgresql(
    resolution, study, people, django_assert_num_queries
):
    new = _new_resolutions(study, 3)
    categories = {
        r.dimension_id: list(Category.objects.filter(dimension_id=r.dimension_id).order_by("id"))
        for r in [*new, resolution]
    }
    # Each row refers to its resolution by the instance: new ones, and one saved before.
    chosen = [(r, c) for r in [*new, resolution] for c in categories[r.dimension_id][:2]]
    revised = [*new, resolution, new[0]]
    started = timezone.now()
    expected = 1 if connection.vendor == "postgresql" else 3  # elsewhere one a table
    with django_assert_num_queries(expected):
        bulk_create_with_rows(
            Resolution,
            new,
            [
                (
                    Resolution.categories.through,
                    "resolution",
                    [{"resolution": r, "category_id": c.id} for r, c in chosen],
                ),
                (
                    ResolutionRevision,
                    "resolution",
                    [
                        {
                            "resolution": r,
                            "category_keys": [r.note, "hängt, 'ü' \"x\" \\ \t"],
                            "method": r.method,
                            "note": r.note,
                            "changed_by_id": people["manager"].pk,
                        }
                        for r in revised
                    ],
                ),
            ],
        )
    # The keys are set on the instances, in their order, as bulk_create sets them.
    assert all(r.pk and not r._state.adding for r in new)
    assert [r.pk for r in new] == sorted(r.pk for r in new)
    for r in [*new, resolution]:
        stored = Resolution.objects.get(pk=r.pk)
        assert (stored.dimension_id, stored.note) == (r.dimension_id, r.note)
        assert sorted(c.id for c in stored.categories.all()) == [
            c.id for c in categories[r.dimension_id][:2]
        ]
        revisions = list(ResolutionRevision.objects.filter(resolution=r).order_by("id"))
        assert [rev.category_keys[0] for rev in revisions] == [r.note] * revised.count(r)
        assert all(rev.changed_at >= started for rev in revisions)
        assert revisions[0].category_keys[1] == "hängt, 'ü' \"x\" \\ \t"
        assert revisions[0].changed_by == people["manager"]
        assert revisions[0].previous_category_keys is None  # left out: its default


def test_rows_that_refer_to_saved_rows_alone_go_in_one_statement_on_postgresql(
    resolution, django_assert_num_queries
):
    category = Category.objects.filter(dimension_id=resolution.dimension_id).first()
    expected = 1 if connection.vendor == "postgresql" else 2
    with django_assert_num_queries(expected):
        bulk_create_with_rows(
            Resolution,
            [],
            [
                (
                    Resolution.categories.through,
                    "resolution",
                    [{"resolution": resolution, "category_id": category.id}],
                ),
                (ResolutionRevision, "resolution", [{"resolution": resolution, "note": "x"}]),
            ],
        )
    assert list(resolution.categories.all()) == [category]
    assert ResolutionRevision.objects.get(resolution=resolution).note == "x"
    with django_assert_num_queries(0):
        bulk_create_with_rows(Resolution, [], [(ResolutionRevision, "resolution", [])])


def test_a_new_row_that_breaks_a_constraint_writes_nothing(resolution, study):
    taken = Resolution(
        item=resolution.item, dimension=resolution.dimension, method="majority", version=1
    )
    fresh = _new_resolutions(study, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        bulk_create_with_rows(
            Resolution,
            [*fresh, taken],
            [(ResolutionRevision, "resolution", [{"resolution": taken, "note": "x"}])],
        )
    assert list(Resolution.objects.all()) == [resolution]
    assert not ResolutionRevision.objects.exists()


def test_many_new_rows_get_each_its_own_key(resolution):
    """More rows than SQLite takes in one statement go in batches; each instance gets the key
    of its own row."""
    new = [
        ResolutionRevision(resolution=resolution, method="majority", note=f"revision {n}")
        for n in range(300)
    ]
    bulk_create_with_rows(ResolutionRevision, new, [])
    assert len({revision.pk for revision in new}) == 300
    stored = dict(ResolutionRevision.objects.values_list("pk", "note"))
    assert all(stored[revision.pk] == revision.note for revision in new)
