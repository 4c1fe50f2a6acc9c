"""The dataset export: the row of each kind of item, the three formats holding the same rows,
Parquet's types, pseudonyms, the command, and memory that stays flat with the number of rows."""

import csv
import gc
import io
import tracemalloc
from datetime import UTC, datetime, timedelta

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Issue, LinkedFix, Repository
from corpus.records import issue_record_parse
from corpus.services import issues_store
from exports.dataset import dataset_rows, dataset_shape
from exports.formats import (
    FORMATS,
    NONE_APPLIES,
    NOT_APPLICABLE,
    csv_lines,
    csv_read,
    csv_write,
    jsonl_read,
    jsonl_write,
    parquet_read,
    parquet_write,
)
from exports.services import dataset_export_write
from labeling.models import Annotation, Assignment, Resolution, StudyItem
from labeling.services.holders import items_holders_recount
from labeling.services.studies import study_create
from taxonomy.models import Category, Dimension
from tests.exports.dataset_study import resolved_study_make


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


def exported(study, file_format: str, **options) -> bytes:
    buffer = io.BytesIO()
    dataset_export_write(study=study, format=file_format, output=buffer, **options)
    return buffer.getvalue()


def read_back(content: bytes, file_format: str) -> list[dict]:
    reader = {"jsonl": jsonl_read, "csv": csv_read, "parquet": parquet_read}[file_format]
    rows = [row for _, row in reader(io.BytesIO(content))]
    assert all(isinstance(row, dict) for row in rows), rows
    return rows


def by_issue(rows: list[dict]) -> dict[str, dict]:
    return {row["issue"]: row for row in rows}


def test_each_row_carries_the_issue_its_gold_labels_and_how_they_were_decided(resolved_study):
    rows = read_back(exported(resolved_study, "jsonl", raw=True), "jsonl")
    items = list(resolved_study.items.select_related("issue__repository").order_by("id"))

    assert [row["issue"] for row in rows] == [str(item.issue) for item in items]
    first = rows[0]
    issue = items[0].issue
    assert {
        key: first[key] for key in ("repository", "system", "number", "url", "title", "state")
    } == {
        "repository": issue.repository.full_name,
        "system": issue.repository.name,
        "number": issue.number,
        "url": issue.html_url,
        "title": issue.title,
        "state": issue.state,
    }
    assert first["created_at"] == issue.created_at.isoformat().replace("+00:00", "Z")
    assert first["github_labels"] == issue.labels
    assert first["round"] == {"name": "Pilot", "kind": "pilot"}
    assert first["codebook"] == {
        "name": resolved_study.codebook_version.codebook.name,
        "version": resolved_study.codebook_version.label,
        "hash": resolved_study.codebook_version.content_hash,
    }
    assert first["sampling"] == resolved_study.sampling
    # Item 7 was screened out: root cause does not apply to it, which is not "none applies".
    assert rows[7]["labels"]["root_cause"] == {
        "gold": NOT_APPLICABLE, "gold_parent": NOT_APPLICABLE, "method": None,
    }  # fmt: skip
    methods = [row["labels"]["root_cause"]["method"] for row in rows]
    assert methods == [
        "consensus", "consensus", "consensus", "majority", "majority", "adjudicated",
        "discussion", None, "majority", None, None, None,
    ]  # fmt: skip
    # A child category's gold label, with its top-level parent.
    assert rows[5]["labels"]["root_cause"] == {
        "gold": ["internal_api_misuse"],
        "gold_parent": ["api_misuse"],
        "method": "adjudicated",
    }
    assert rows[0]["labels"]["parallel_feature"]["gold"] == ["data_parallel", "offloading"]
    # An optional multi-label dimension everyone left empty: resolved to "none applies".
    assert rows[3]["labels"]["parallel_feature"] == {
        "gold": [], "gold_parent": [], "method": "consensus",
    }  # fmt: skip
    assert [row["item_status"] for row in rows][-3:] == ["open", "open", "open"]


def test_raw_labels_are_every_submitted_answer_and_nothing_else(resolved_study):
    rows = read_back(exported(resolved_study, "jsonl", raw=True), "jsonl")
    submitted = Annotation.objects.filter(
        assignment__item__study=resolved_study, assignment__status=Assignment.Status.SUBMITTED
    ).select_related("assignment__annotator", "assignment__item__issue__repository", "dimension")
    expected: dict[tuple[str, str, str], list[str]] = {}
    for annotation in submitted.prefetch_related("categories"):
        key = (
            str(annotation.assignment.item.issue),
            annotation.dimension.key,
            annotation.assignment.annotator.username,
        )
        expected[key] = sorted(c.key for c in annotation.categories.all())
    not_applicable = {
        (row["issue"], dimension, annotator)
        for row in rows
        for dimension, answers in row["raw"].items()
        for annotator, keys in answers.items()
        if keys == NOT_APPLICABLE
    }
    # Only annotators who screened the item out, never on the screening itself.
    assert {dimension for _, dimension, _ in not_applicable} == {
        "symptom", "root_cause", "fix_pattern", "debugging_practice", "testing_practice",
        "test_escape_reason", "training_stage", "parallel_feature",
    }  # fmt: skip

    found = {
        (row["issue"], dimension, annotator): sorted(keys)
        for row in rows
        for dimension, answers in row["raw"].items()
        for annotator, keys in answers.items()
        if keys != NOT_APPLICABLE
    }
    # What the annotators submitted, less the dimensions that did not apply to their answers.
    assert found == {key: keys for key, keys in expected.items() if key not in not_applicable}
    # An annotator who screened the item out: the dimensions after it do not apply to them.
    assert rows[8]["raw"]["root_cause"]["annotator1"] == NOT_APPLICABLE
    assert rows[8]["raw"]["root_cause"]["annotator2"] == ["api_misuse"]
    # One of three submitted: only that one is in the row.
    assert rows[9]["raw"]["screening"] == {"annotator1": ["include"]}


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_csv_and_parquet_hold_the_rows_of_the_jsonl(resolved_study, file_format):
    expected = read_back(exported(resolved_study, "jsonl", raw=True), "jsonl")

    rows = read_back(exported(resolved_study, file_format, raw=True), file_format)

    assert rows == expected


def test_without_raw_labels_no_annotator_is_in_any_format(resolved_study):
    for file_format in FORMATS:
        content = exported(resolved_study, file_format)
        assert b"annotator1" not in content
        assert all("raw" not in row for row in read_back(content, file_format))


def test_pseudonyms_replace_every_username_the_same_way_in_every_format(
    resolved_study, annotators_of
):
    usernames = annotators_of(resolved_study)
    pseudonyms = {}
    for file_format in FORMATS:
        content = exported(resolved_study, file_format, raw=True, pseudonymise=True)
        for username in usernames:
            assert username.encode() not in content, (file_format, username)
        rows = read_back(content, file_format)
        pseudonyms[file_format] = [sorted(row["raw"]["screening"]) for row in rows]
    assert pseudonyms["csv"] == pseudonyms["jsonl"] == pseudonyms["parquet"]
    # Numbered in the order of the annotators' user ids.
    assert pseudonyms["jsonl"][0] == ["annotator-01", "annotator-02", "annotator-03"]
    rows = read_back(exported(resolved_study, "jsonl", raw=True, pseudonymise=True), "jsonl")
    plain = read_back(exported(resolved_study, "jsonl", raw=True), "jsonl")
    by_id = dict(zip(("annotator-01", "annotator-02", "annotator-03"), usernames, strict=True))
    assert [
        {by_id[name]: keys for name, keys in row["raw"]["root_cause"].items()} for row in rows
    ] == [row["raw"]["root_cause"] for row in plain]


@pytest.fixture
def annotators_of():
    def usernames(study) -> list[str]:
        return list(
            Assignment.objects.filter(item__study=study, status="submitted")
            .order_by("annotator_id")
            .values_list("annotator__username", flat=True)
            .distinct()
        )

    return usernames


def test_parquet_has_a_typed_schema_and_the_study_in_its_metadata(resolved_study):
    content = exported(resolved_study, "parquet", raw=True)
    parquet = pq.ParquetFile(io.BytesIO(content))
    schema = parquet.schema_arrow
    utc_time = pa.timestamp("us", tz="UTC")

    assert schema.field("number").type == pa.int64()
    assert schema.field("annotators_needed").type == pa.int64()
    assert schema.field("fix_size.additions").type == pa.int64()
    for name in ("created_at", "closed_at", "updated_at"):
        assert schema.field(name).type == utc_time
    for name in ("github_labels", "root_cause.gold", "root_cause.gold_parent"):
        assert schema.field(name).type == pa.list_(pa.string())
    assert schema.field("root_cause.raw.annotator1").type == pa.list_(pa.string())
    assert schema.field("root_cause.method").type == pa.string()
    fix = schema.field("linked_fixes").type.value_type
    assert {fix.field(i).name: fix.field(i).type for i in range(fix.num_fields)} == {
        "kind": pa.string(), "ref": pa.string(), "url": pa.string(), "merged_at": utc_time,
        "files_changed": pa.int64(), "additions": pa.int64(), "deletions": pa.int64(),
    }  # fmt: skip
    metadata = orjson.loads(parquet.metadata.metadata[b"issuecoder.dataset"])
    assert metadata["codebook"]["hash"] == resolved_study.codebook_version.content_hash
    assert metadata["sampling"] == resolved_study.sampling
    table = parquet.read()
    # null: no gold label yet; []: resolved to "none applies".
    gold = table.column("parallel_feature.gold").to_pylist()
    assert gold[0] == ["data_parallel", "offloading"] and gold[3] == [] and gold[11] is None
    raw = table.column("screening.raw.annotator2").to_pylist()
    assert raw[9] is None and raw[0] == ["include"]
    assert table.column("created_at").to_pylist()[0].tzinfo is not None


def test_csv_cells_tell_no_label_set_from_none_applies(resolved_study):
    content = exported(resolved_study, "csv", raw=True).decode()
    records = list(csv.DictReader(io.StringIO(content)))

    assert records[0]["parallel_feature.gold"] == "data_parallel;offloading"
    assert records[3]["parallel_feature.gold"] == NONE_APPLIES
    assert records[11]["parallel_feature.gold"] == "" and records[11]["root_cause.method"] == ""
    assert records[8]["root_cause.raw.annotator1"] == NOT_APPLICABLE
    assert records[7]["root_cause.gold"] == NOT_APPLICABLE
    assert records[9]["root_cause.raw.annotator2"] == ""


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_a_category_keyed_like_the_marker_stays_a_category(file_format):
    dimensions, annotators = ["screening", "root_cause"], ["annotator-01", "annotator-02"]
    rows = list(fake_rows(2, dimensions=dimensions, annotators=annotators))
    rows[0]["labels"]["screening"] = {
        "gold": [NOT_APPLICABLE], "gold_parent": [NOT_APPLICABLE], "method": "consensus",
    }  # fmt: skip
    rows[0]["labels"]["root_cause"] = {
        "gold": NOT_APPLICABLE, "gold_parent": NOT_APPLICABLE, "method": None,
    }  # fmt: skip
    rows[0]["raw"] = {
        "screening": {"annotator-01": [NOT_APPLICABLE], "annotator-02": ["include"]},
        "root_cause": {"annotator-01": NOT_APPLICABLE, "annotator-02": ["a"]},
    }
    rows[0]["raw_codebook_version"] = {"annotator-01": "1", "annotator-02": None}
    rows[1]["raw_codebook_version"] = {"annotator-01": "1", "annotator-02": "2"}
    buffer = io.BytesIO()
    if file_format == "csv":
        csv_write(rows, buffer, dimensions=dimensions, annotators=annotators)
    else:
        parquet_write(rows, buffer, dimensions=dimensions, annotators=annotators, metadata={})

    found = read_back(buffer.getvalue(), file_format)

    assert found == orjson.loads(orjson.dumps(rows, option=orjson.OPT_UTC_Z))


def test_fixes_their_summed_size_and_unsafe_urls(db, codebook_version, people):
    issue_object = {
        "repository": "microsoft/DeepSpeed",
        "number": 1,
        "title": "Hang in allreduce; labels with ; and [brackets]",
        "state": "closed",
        "created_at": "2024-01-02T03:04:05.123456Z",
        "labels": ["bug; urgent", "[training]", "stage: zero-3"],
        "linked_fixes": [
            {"kind": "pr", "ref": "10", "url": "https://github.com/microsoft/DeepSpeed/pull/10",
             "files_changed": 2, "additions": 30, "deletions": 4},
            {"kind": "commit", "ref": "abc", "files_changed": 1, "additions": 5},
        ],
    }  # fmt: skip
    issues_store(records=[issue_record_parse(issue_object)])
    issue = Issue.objects.get()
    # A row stored before fix URLs were checked, with a scheme pages never link.
    LinkedFix.objects.create(
        issue=issue, kind="pr", ref="11", url="javascript:alert(1)", files_changed=0, additions=0
    )
    study = study_create(
        slug="fixes", name="Fixes", codebook_version=codebook_version, issues=[issue]
    )

    rows = {f: read_back(exported(study, f), f)[0] for f in FORMATS}

    row = rows["jsonl"]
    assert row["fix_size"] == {"files_changed": 3, "additions": 35, "deletions": None}
    assert [fix["url"] for fix in row["linked_fixes"]] == [
        "", "https://github.com/microsoft/DeepSpeed/pull/10", "",
    ]  # fmt: skip
    assert row["github_labels"] == ["bug; urgent", "[training]", "stage: zero-3"]
    assert row["created_at"] == "2024-01-02T03:04:05.123456Z"
    assert rows["csv"] == rows["jsonl"] == rows["parquet"]


def test_the_command_writes_stdout_or_a_file_in_the_format_asked_or_named(resolved_study, tmp_path):
    out = io.StringIO()
    call_command("export_dataset", "--study", resolved_study.slug, stdout=out)
    # stdout of a command is text; the rows are JSONL by default.
    path = tmp_path / "dataset.parquet"
    call_command("export_dataset", "--study", resolved_study.slug, "--out", str(path), "--raw")
    named = tmp_path / "dataset.data"
    call_command(
        "export_dataset", "--study", resolved_study.slug, "--format", "csv", "--output", str(named)
    )

    assert pq.ParquetFile(path).metadata.num_rows == resolved_study.items.count()
    assert named.read_text().startswith("issue,repository,system,number,url")
    assert not list(tmp_path.glob(".*"))  # no partial file left behind


# --------------------------------------------------------------------------- memory


def fake_rows(count: int, *, dimensions: list[str], annotators: list[str]):
    """Rows of the dataset's shape, made without a database."""
    created = datetime(2024, 1, 1, tzinfo=UTC)
    for number in range(1, count + 1):
        yield {
            "issue": f"owner/repo#{number}", "repository": "owner/repo", "system": "repo",
            "number": number, "url": f"https://github.com/owner/repo/issues/{number}",
            "title": f"Issue {number} hangs in allreduce", "state": "closed", "author": "someone",
            "created_at": created + timedelta(minutes=number), "closed_at": None,
            "updated_at": created + timedelta(minutes=number), "github_labels": ["bug"],
            "linked_fixes": [{"kind": "pr", "ref": str(number), "url": "", "merged_at": None,
                              "files_changed": 1, "additions": 2, "deletions": 3}],
            "fix_size": {"files_changed": 1, "additions": 2, "deletions": 3},
            "study": "s", "round": {"name": "Main", "kind": "main"}, "item_status": "resolved",
            "annotators_needed": 2,
            "labels": {d: {"gold": ["a"], "gold_parent": ["a"], "method": "consensus"}
                       for d in dimensions},
            "raw": {d: {a: ["a"] for a in annotators} for d in dimensions},
            "codebook": {"name": "c", "version": "1", "hash": "h"}, "sampling": {"seed": 1},
            "study_settings": {"name": "s"},
        }  # fmt: skip


class Discard(io.RawIOBase):
    """A sink that keeps nothing, so that only the writer's own memory is measured."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return len(data)


def peak_of(write, rows: int) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        write(rows)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("file_format", FORMATS)
def test_writing_100k_rows_takes_no_more_memory_than_10k(file_format):
    dimensions, annotators = ["screening", "root_cause"], ["annotator-01", "annotator-02"]

    def write(count: int) -> None:
        rows = fake_rows(count, dimensions=dimensions, annotators=annotators)
        sink = Discard()
        shape = {"dimensions": dimensions, "annotators": annotators}
        if file_format == "jsonl":
            assert jsonl_write(rows, sink) == count
        elif file_format == "csv":
            assert csv_write(rows, sink, **shape) == count
        else:
            assert parquet_write(rows, sink, **shape, metadata={}) == count

    small, large = peak_of(write, 10_000), peak_of(write, 100_000)

    assert large < 1.5 * small + 1_000_000, (small, large)
    if file_format == "parquet":
        # Arrow's own buffers are not traced by tracemalloc: the pool holds one row group.
        assert pa.total_allocated_bytes() < 64 * 1024 * 1024


def test_the_study_is_read_a_chunk_at_a_time_with_flat_memory_and_queries_per_chunk(
    db, codebook_version, people
):
    repository = Repository.objects.create(owner="bench", name="repo")
    now = timezone.now()
    Issue.objects.bulk_create(
        [
            Issue(
                repository=repository, number=n, title=f"issue {n}", created_at=now, updated_at=now
            )
            for n in range(1, 3_001)
        ]
    )
    study = study_create(slug="big", name="Big", codebook_version=codebook_version, k=1)
    round_ = study.rounds.get()
    StudyItem.objects.bulk_create(
        [StudyItem(study=study, issue=issue, round=round_) for issue in Issue.objects.all()]
    )
    screening = Dimension.objects.get(version=codebook_version, key="screening")
    include = Category.objects.get(dimension=screening, key="include")
    resolutions = Resolution.objects.bulk_create(
        [
            Resolution(item=item, dimension=screening, method="consensus")
            for item in study.items.all()
        ]
    )
    Resolution.categories.through.objects.bulk_create(
        [Resolution.categories.through(resolution=r, category=include) for r in resolutions]
    )
    Assignment.objects.bulk_create(
        [
            Assignment(item=item, study=study, annotator=people["annotator1"], status="submitted")
            for item in study.items.all()
        ]
    )
    items_holders_recount(item_ids=study.items.values_list("id", flat=True))
    shape = dataset_shape(study=study, raw=True)

    def consume(items: int) -> None:
        for count, _ in enumerate(dataset_rows(shape=shape, chunk_size=100), start=1):
            if count == items:
                return

    with CaptureQueriesContext(connection) as five_chunks:
        consume(500)
    with CaptureQueriesContext(connection) as ten_chunks:
        consume(1_000)
    assert len(ten_chunks) - len(five_chunks) == 4 * 5  # four queries a chunk
    small, large = peak_of(consume, 500), peak_of(consume, 3_000)
    # Holding the rows read would cost at least a row's size per item; what the peak gains
    # (garbage the collector has not reached yet) is a small part of that.
    row_size = len(orjson.dumps(next(dataset_rows(shape=shape))))
    assert (large - small) / 2_500 < row_size / 10, (small, large, row_size)


def test_csv_writes_the_studys_shared_columns_once_with_the_same_bytes():
    """Rows that share the study's objects (codebook, sampling, settings) get their last cells
    quoted once; rows that do not, or a field that holds the line's mark, go the long way: the
    same bytes either way."""
    dimensions, annotators = ["screening"], ["annotator-01"]
    rows = list(fake_rows(1_200, dimensions=dimensions, annotators=annotators))
    codebook = {"name": "c", "version": "1", "hash": "h"}
    sampling, settings = {"seed": 1, "note": 'a "quoted", text'}, {"name": "s\nt"}
    shared = [dict(r, codebook=codebook, sampling=sampling, study_settings=settings) for r in rows]
    apart = [
        dict(r, codebook=dict(codebook), sampling=dict(sampling), study_settings=dict(settings))
        for r in rows
    ]
    shared[700]["title"] = apart[700]["title"] = "a NUL \x00 in a title"

    def written(batch):
        return b"".join(csv_lines(batch, dimensions=dimensions, annotators=annotators))

    assert written(shared) == written(apart)
    back = list(csv.DictReader(io.StringIO(written(shared).decode())))
    assert len(back) == 1_200 and back[700]["title"] == "a NUL \x00 in a title"
    assert orjson.loads(back[-1]["sampling"]) == sampling
    assert orjson.loads(back[0]["study_settings"]) == settings


def test_csv_is_what_csv_writer_writes_whatever_the_cells_hold():
    """The records are joined by hand, a cell quoted only when it must be: the file is still
    csv.writer's own (read and written again by the csv module, the same bytes), in a batch
    of the study's shared objects and in one without; a line break in a title is quoted (it
    was not in the first case, which broke the record in two)."""
    dimensions, annotators = ["screening", "root_cause"], ["annotator-01", "annotator-02"]
    study = {"codebook": {"name": "c"}, "sampling": {"seed": 1}, "study_settings": {"k": 2}}
    rows = [dict(r, **study) for r in fake_rows(9, dimensions=dimensions, annotators=annotators)]
    titles = ["a\nline break", "a\r\nline end", 'a "quote"', "a, comma", "", "a NUL \x00", 7]
    for row, title in zip(rows, titles, strict=False):
        row["title"] = title
    rows[1]["github_labels"] = ["with;separator", "[bracket"]
    rows[2]["author"] = None
    rows[3]["labels"]["screening"] = {"gold": [NOT_APPLICABLE], "gold_parent": [], "method": "x"}
    rows[4]["raw"]["root_cause"] = {"annotator-01": NOT_APPLICABLE, "annotator-02": []}
    rows[5]["raw"]["screening"] = {"annotator-02": ["a,b", 'c"d']}
    rows[6]["round"] = {"name": "Pilot, first", "kind": "pilot"}
    rows[8]["sampling"] = {"seed": 2}  # the study's objects not shared: the long way
    shared = rows[:8]

    for batch in (shared, rows):
        text = b"".join(
            csv_lines(batch, dimensions=dimensions, annotators=annotators, batch_rows=4)
        ).decode()
        again = io.StringIO()
        csv.writer(again).writerows(csv.reader(io.StringIO(text, newline="")))
        assert again.getvalue() == text
        back = list(csv.DictReader(io.StringIO(text, newline="")))
        assert len(back) == len(batch)
        assert [record["title"] for record in back[:7]] == [str(title) for title in titles]
        assert back[5]["screening.raw.annotator-02"] == 'a,b;c"d'
