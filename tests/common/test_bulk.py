"""common.bulk: rows written without the ORM are the rows the ORM writes."""

import gc

import pytest
from django.utils import timezone

from common.bulk import bulk_insert, collector_paused
from corpus.issue_import import issue_file_lines
from corpus.services import issues_import
from labeling.models import Resolution, ResolutionRevision
from taxonomy.models import Dimension
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
