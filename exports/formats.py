"""The dataset's files: JSONL, CSV and Parquet writers that take an iterator of rows, and readers
that give the rows back with the place each came from (for the restore's error messages).

Plain Python and pyarrow, no Django: a row is the JSONL object of `exports.dataset` (nested
dicts), and the two tabular formats flatten it into the columns of `dataset_columns`:

* ``issue``, ``repository``, ``system``, ``number``, ``url``, ``title``, ``state``,
  ``author``, ``created_at``, ``closed_at``, ``updated_at``, ``github_labels``,
  ``linked_fixes``, ``fix_size.files_changed`` / ``.additions`` / ``.deletions``, ``study``,
  ``round.name``, ``round.kind``, ``item_status``, ``annotators_needed``;
* per dimension ``<dim>.gold``, ``<dim>.gold_parent``, ``<dim>.method`` (Parquet: and
  ``<dim>.applies``) and, with raw labels, ``<dim>.raw.<annotator>`` for every annotator of the
  study (known before the first row; Parquet: and ``<dim>.applies.<annotator>``), then
  ``raw_codebook_version.<annotator>``;
* ``codebook.name``, ``codebook.version``, ``codebook.hash``, ``sampling``, ``study_settings``.

A label set (gold or raw) has three forms besides its categories that mean different things:
*no label set* (the item is not resolved on that dimension, or that annotator did not answer
it), *none applies* (an empty answer, which is a rating) and *does not apply* (the codebook's
`applies_when` rules the dimension out given the other dimensions' labels: root cause for an
issue screened out, in the gold labels or in that annotator's own answers). JSONL says absent or
a null method, [] and ``"not_applicable"`` (NOT_APPLICABLE in place of the list); CSV an empty
cell, ``(none)`` and ``not_applicable``; Parquet, whose lists cannot hold a marker, null, [] and
null with the boolean column ``<dim>.applies`` (gold) or ``<dim>.applies.<annotator>`` (raw)
false. A CSV label set that is the one category keyed ``not_applicable`` is written as the JSON
array ``["not_applicable"]``, so that it is never read as the marker. Other lists in CSV are
joined by ";" (a list with an item that holds ";" is written as a JSON array instead, so nothing
is lost); the fixes, the sampling rule and the study's settings are JSON text.
"""

import csv
import functools
import io
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("csv", "jsonl", "parquet")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}
NONE_APPLIES = "(none)"  # a CSV cell for an empty label set, as opposed to no label set at all
# A label set of a dimension that does not apply (JSONL in place of the list; a CSV cell). It
# is a valid category key, hence the CSV's JSON array for a category of that key.
NOT_APPLICABLE = "not_applicable"
_MARKER_AS_CATEGORY = [NOT_APPLICABLE]
_MARKER_AS_CATEGORY_CELL = orjson.dumps(_MARKER_AS_CATEGORY).decode()
# The row's key (and the columns' head) of the codebook version each annotator submitted under.
RAW_VERSION = "raw_codebook_version"
LIST_SEPARATOR = ";"
# Rows per Parquet row group: the writer holds one group's columns at a time.
PARQUET_BATCH_ROWS = 2_000
# Rows per piece of a CSV or JSONL file, as streamed and as written to a job's file.
CSV_BATCH_ROWS = 500
JSONL_BATCH_ROWS = 200
CONVERT_ROWS = 500  # rows held as Python objects while Parquet converts them
# The key of the Parquet file's metadata that holds the codebook, sampling and study settings.
PARQUET_METADATA_KEY = b"issuecoder.dataset"
MAX_LINE_BYTES = 16 * 1024 * 1024

_FIX_FIELDS = ("kind", "ref", "url", "merged_at", "files_changed", "additions", "deletions")
_FIX_SIZES = ("files_changed", "additions", "deletions")


class DatasetFileError(ValueError):
    """A line or row of a dataset file that cannot be read; the message names the column."""


@dataclass(frozen=True)
class Column:
    name: str
    # text, int, time, list (of strings), labels (a label set), bool, json, fixes
    kind: str


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, imported when a Parquet file is written or read: the import
    alone holds some 35 MB, which web processes and CSV or JSONL exports need not carry."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


@functools.cache
def _parquet_types() -> dict[str, "pa.DataType"]:
    pa, _ = _pyarrow()
    return {
        "text": pa.string(),
        "int": pa.int64(),
        "time": pa.timestamp("us", tz="UTC"),
        "list": pa.list_(pa.string()),
        "labels": pa.list_(pa.string()),
        "bool": pa.bool_(),
        "json": pa.string(),
        "fixes": pa.list_(
            pa.struct(
                [
                    ("kind", pa.string()),
                    ("ref", pa.string()),
                    ("url", pa.string()),
                    ("merged_at", pa.timestamp("us", tz="UTC")),
                    ("files_changed", pa.int64()),
                    ("additions", pa.int64()),
                    ("deletions", pa.int64()),
                ]
            )
        ),
    }


_ISSUE_COLUMNS = [
    Column("issue", "text"), Column("repository", "text"), Column("system", "text"),
    Column("number", "int"), Column("url", "text"), Column("title", "text"),
    Column("state", "text"), Column("author", "text"), Column("created_at", "time"),
    Column("closed_at", "time"), Column("updated_at", "time"), Column("github_labels", "list"),
    Column("linked_fixes", "fixes"), Column("fix_size.files_changed", "int"),
    Column("fix_size.additions", "int"), Column("fix_size.deletions", "int"),
    Column("study", "text"), Column("round.name", "text"), Column("round.kind", "text"),
    Column("item_status", "text"), Column("annotators_needed", "int"),
]  # fmt: skip
_STUDY_COLUMNS = [
    Column("codebook.name", "text"), Column("codebook.version", "text"),
    Column("codebook.hash", "text"), Column("sampling", "json"), Column("study_settings", "json"),
]  # fmt: skip


def dataset_columns(
    *, dimensions: Sequence[str], annotators: Sequence[str] | None, applies: bool = False
) -> list[Column]:
    """The tabular formats' columns, in order; `annotators` None: without raw labels. `applies`
    adds the boolean columns that say whether a dimension applies, for a format whose label
    columns cannot hold the NOT_APPLICABLE marker (Parquet)."""
    columns = list(_ISSUE_COLUMNS)
    for dimension in dimensions:
        columns += [
            Column(f"{dimension}.gold", "labels"),
            Column(f"{dimension}.gold_parent", "labels"),
            Column(f"{dimension}.method", "text"),
        ]
        if applies:
            columns.append(Column(f"{dimension}.applies", "bool"))
    if annotators is not None:
        columns += [
            Column(f"{dimension}.raw.{annotator}", "labels")
            for dimension in dimensions
            for annotator in annotators
        ]
        if applies:
            columns += [
                Column(f"{dimension}.applies.{annotator}", "bool")
                for dimension in dimensions
                for annotator in annotators
            ]
        columns += [Column(f"{RAW_VERSION}.{annotator}", "text") for annotator in annotators]
    return columns + _STUDY_COLUMNS


def parquet_schema(columns: Sequence[Column], *, metadata: dict[str, Any]) -> "pa.Schema":
    pa, _ = _pyarrow()
    types = _parquet_types()
    return pa.schema(
        [pa.field(column.name, types[column.kind]) for column in columns],
        metadata={PARQUET_METADATA_KEY: orjson.dumps(metadata)},
    )


# --------------------------------------------------------------------------- rows <-> columns


_EMPTY: dict[str, Any] = {}


def column_values(
    column: Column, rows: Sequence[dict[str, Any]], memo: dict[tuple[str, ...], list] | None = None
) -> list[Any]:
    """One column's values for a batch of rows (lists stay lists, times stay datetimes). A
    column at a time, in one comprehension, since a function call per cell was most of the
    time of writing CSV and Parquet. `memo` (one per batch) keeps each dimension's entries
    of the batch for its next columns (gold, gold_parent, method, one per annotator)."""
    name = column.name
    head, _, rest = name.partition(".")
    if head == RAW_VERSION:  # before the dimensions' columns: an annotator may be named "gold"
        return [part.get(rest) for part in _parts(rows, RAW_VERSION, memo)]
    if rest in ("gold", "gold_parent"):
        return [_gold_label_set(entry, rest) for entry in _entries(rows, "labels", head, memo)]
    if rest == "method":
        return [entry.get("method") for entry in _entries(rows, "labels", head, memo)]
    if rest == "applies":
        return [
            entry.get("gold") != NOT_APPLICABLE for entry in _entries(rows, "labels", head, memo)
        ]
    if rest.startswith("applies."):
        annotator = rest.removeprefix("applies.")
        return [
            None if (keys := answers.get(annotator)) is None else keys != NOT_APPLICABLE
            for answers in _entries(rows, "raw", head, memo)
        ]
    if rest.startswith("raw."):
        annotator = rest.removeprefix("raw.")
        return [answers.get(annotator) for answers in _entries(rows, "raw", head, memo)]
    if head in ("round", "codebook", "fix_size") and rest:
        return [part.get(rest) for part in _parts(rows, head, memo)]
    if column.kind in ("list", "fixes"):
        return [r.get(name) or [] for r in rows]
    return [r.get(name) for r in rows]


def _gold_label_set(entry: dict[str, Any], part: str) -> list[str] | str | None:
    """A gold entry's `part` (gold or gold_parent). No method: no resolution, hence no label set
    (an empty one reads "none applies"), unless the dimension does not apply (the marker, which
    the encoders write)."""
    if entry and (entry.get("method") or entry.get(part) == NOT_APPLICABLE):
        return entry.get(part, [])
    return None


def _entries(
    rows: Sequence[dict[str, Any]],
    part: str,
    dimension: str,
    memo: dict[tuple[str, ...], list] | None,
) -> list[dict[str, Any]]:
    """Each row's `part` ("labels" or "raw") of a dimension, {} where it has none."""
    entries = memo.get((part, dimension)) if memo is not None else None
    if entries is None:
        entries = [p.get(dimension) or _EMPTY for p in _parts(rows, part, memo)]
        if memo is not None:
            memo[(part, dimension)] = entries
    return entries


def _parts(
    rows: Sequence[dict[str, Any]], part: str, memo: dict[tuple[str, ...], list] | None
) -> list[dict[str, Any]]:
    """Each row's `part` (a dict: labels, raw, round, ...), {} where it has none; kept in `memo`
    for the part's next columns."""
    parts = memo.get((part,)) if memo is not None else None
    if parts is None:
        parts = [r.get(part) or _EMPTY for r in rows]
        if memo is not None:
            memo[(part,)] = parts
    return parts


def row_nest(flat: dict[str, Any]) -> dict[str, Any]:
    """The row (JSONL shape) of a flat one, the dimensions and annotators read off the column
    names. Values are taken as they are; the restore checks them. An `applies` column that is
    false becomes the NOT_APPLICABLE marker of its label set; DatasetFileError when that label
    set names categories all the same."""
    row: dict[str, Any] = {}
    labels: dict[str, dict[str, Any]] = {}
    raw: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}
    fix_size: dict[str, Any] = {}
    ruled_out: list[tuple[str, str | None]] = []  # (dimension, annotator or None for the gold)
    has_raw = has_versions = False
    for name, value in flat.items():
        head, dot, rest = name.partition(".")
        if not dot:
            row[name] = value
        elif head == RAW_VERSION:
            has_versions = True
            versions[rest] = value
        elif rest == "applies" or rest.startswith("applies."):
            if value is False:
                ruled_out.append((head, rest.removeprefix("applies").removeprefix(".") or None))
        elif rest in ("gold", "gold_parent", "method"):
            labels.setdefault(head, {})[rest] = value
        elif rest.startswith("raw."):
            has_raw = True
            answers = raw.setdefault(head, {})
            if value is not None:
                answers[rest.removeprefix("raw.")] = value
        elif head in ("round", "codebook"):
            row.setdefault(head, {})[rest] = value
        elif head == "fix_size":
            fix_size[rest] = value
        else:
            row[name] = value
    for head, annotator in ruled_out:
        if annotator is None:
            gold = labels.setdefault(head, {})
            if gold.get("gold") not in (None, NOT_APPLICABLE) or gold.get("method"):
                raise DatasetFileError(
                    f"{head}.gold: names a gold label, yet {head}.applies is false"
                )
            gold.update(gold=NOT_APPLICABLE, gold_parent=NOT_APPLICABLE, method=None)
        else:
            answers = raw.setdefault(head, {})
            if answers.get(annotator) not in (None, NOT_APPLICABLE):
                raise DatasetFileError(
                    f"{head}.raw.{annotator}: names categories, yet {head}.applies.{annotator} "
                    "is false"
                )
            answers[annotator] = NOT_APPLICABLE
    for gold in labels.values():
        gold["gold"] = gold.get("gold") or []
        gold["gold_parent"] = gold.get("gold_parent") or []
    row["labels"] = labels
    if has_raw:
        row["raw"] = raw
    if has_versions:
        # A null cell is no version: absent, unless the annotator has labels in the row (then
        # null, as in JSONL: labels whose version is not known).
        answered = {annotator for answers in raw.values() for annotator in answers}
        row[RAW_VERSION] = {
            annotator: version
            for annotator, version in versions.items()
            if version is not None or annotator in answered
        }
    row["fix_size"] = None if all(v is None for v in fix_size.values()) else fix_size
    return row


# --------------------------------------------------------------------------- writers


def jsonl_lines(
    rows: Iterable[dict[str, Any]], *, batch_rows: int = JSONL_BATCH_ROWS
) -> Iterator[bytes]:
    """One orjson line per row, times in UTC with "Z", `batch_rows` lines a piece (a piece a
    row made the web server send 100,000 tiny writes for 100,000 rows)."""
    options = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE
    dumps = orjson.dumps
    for batch in _batches(rows, batch_rows):
        yield b"".join([dumps(row, option=options) for row in batch])


def csv_lines(
    rows: Iterable[dict[str, Any]],
    *,
    dimensions: Sequence[str],
    annotators: Sequence[str] | None,
    batch_rows: int = CSV_BATCH_ROWS,
) -> Iterator[bytes]:
    """The header, then the records of `batch_rows` rows at a time, as UTF-8 bytes (a record
    may span lines: a title with a line break is quoted). The header goes before the first row
    is read.

    The bytes are csv.writer's (the default dialect), but a batch's text is joined here: a
    cell is quoted only if it holds a comma, a quote or a line break, which most cells do not,
    and csv.writer's walk through every character of every cell was most of the time of
    writing CSV. Anything unexpected (a cell that is not text, a NUL) is left to csv.writer."""
    columns = dataset_columns(dimensions=dimensions, annotators=annotators)
    varying = len(columns) - len(_STUDY_COLUMNS)
    encoders = [_CSV_ENCODERS[column.kind] for column in columns]
    plan, varying_plan = _csv_plan(columns), _csv_plan(columns[:varying])
    yield _csv_record([column.name for column in columns]).encode()  # before the first row
    # The last columns (codebook, sampling, settings) come from the same objects in every row
    # of a study: their cells are quoted once, as each line's end, which a row that has other
    # objects there changes. Quoting their JSON again in every row was half the time of
    # writing CSV.
    study: tuple[Any, ...] | None = None  # what `ending` was made of, held so ids stay theirs
    ending = ""
    for batch in _batches(rows, batch_rows):
        memo: dict[tuple[str, ...], list] = {}
        objects = _study_objects(batch[0])
        if all(
            row.get("codebook") is objects[0]
            and row.get("sampling") is objects[1]
            and row.get("study_settings") is objects[2]
            for row in batch
        ):
            if study is None or any(map(operator.is_not, study, objects)):
                study = objects
                ending = "," + _csv_record(
                    [encode(column_values(column, batch[:1]))[0]
                     for column, encode in zip(columns[varying:], encoders[varying:], strict=True)]
                )  # fmt: skip
            parts, end = varying_plan, ending
        else:
            parts, end = plan, _CSV_LINE_END
        try:
            cells = [part(batch, memo) for part in parts]
            text = end.join(map(",".join, zip(*cells, strict=True))) + end
        except TypeError:  # a cell that is not text: csv.writer's str() of it, the long way
            text = _csv_records(
                zip(
                    *[
                        encode(column_values(column, batch, memo))
                        for column, encode in zip(columns, encoders, strict=True)
                    ],
                    strict=True,
                )
            )
        yield text.encode()


_CSV_LINE_END = "\r\n"  # csv.writer's


# The cells of a batch's rows for one or more adjacent columns, quoted and joined by commas.
_CsvPart = Callable[[Sequence[dict[str, Any]], dict[tuple[str, ...], list]], list[str]]


def _csv_plan(columns: Sequence[Column]) -> list[_CsvPart]:
    """How `columns` are written, worked out once per export. A dimension's gold columns (gold,
    gold_parent, method) are one part and its raw columns another: they hold objects the rows
    share (a gold entry, the list of a label set), so their cells are made once per object
    or combination of objects rather than once per row, the label columns being most of a
    study's. Any other column is a part of its own."""
    groups: list[tuple[tuple[str, str], list[Column]]] = []
    for column in columns:
        head, _, rest = column.name.partition(".")
        key = (column.name, "")
        if head != RAW_VERSION:  # as in `column_values`: an annotator may be named "gold"
            if rest in _GOLD_FIELDS:
                key = (head, "labels")
            elif column.kind == "labels":
                key = (head, "raw")
        if groups and groups[-1][0] == key and key[1]:
            groups[-1][1].append(column)
        else:
            groups.append((key, [column]))
    parts: list[_CsvPart] = []
    for (dimension, part), group in groups:
        if part == "labels":
            fields = [_GOLD_FIELDS[column.name.partition(".")[2]] for column in group]
            parts.append(functools.partial(_csv_gold_part, dimension, fields))
        elif part == "raw":
            parts.append(functools.partial(_csv_raw_part, group))
        else:
            parts.append(functools.partial(_csv_column_part, group[0]))
    return parts


def _csv_column_part(
    column: Column, rows: Sequence[dict[str, Any]], memo: dict[tuple[str, ...], list]
) -> list[str]:
    return _csv_quoted(_CSV_ENCODERS[column.kind](column_values(column, rows, memo)))


def _csv_gold_part(
    dimension: str,
    fields: list[Callable[[dict[str, Any]], str]],
    rows: Sequence[dict[str, Any]],
    memo: dict[tuple[str, ...], list],
) -> list[str]:
    """A dimension's gold columns, once per gold entry (the rows share a few)."""
    entries = _entries(rows, "labels", dimension, memo)
    return _by_identity(entries, lambda entry: ",".join([field(entry) for field in fields]))


def _csv_raw_part(
    columns: list[Column], rows: Sequence[dict[str, Any]], memo: dict[tuple[str, ...], list]
) -> list[str]:
    """A dimension's raw columns (one per annotator), once per combination of label sets."""
    values = [column_values(column, rows, memo) for column in columns]
    if len(values) == 1:
        return _by_identity(values[0], _csv_label_set_field)
    # The ids of each row's label sets; `values` holds the objects, so no id stands for two.
    keys = list(zip(*[map(id, column) for column in values], strict=True))
    cells = {
        key: ",".join([_csv_label_set_field(column[row]) for column in values])
        for key, row in dict(zip(keys, range(len(keys)), strict=True)).items()
    }
    return list(map(cells.__getitem__, keys))


def _by_identity(values: list[Any], cell_of: Callable[[Any], str]) -> list[str]:
    """`cell_of` each value, called once per distinct object. `values` holds the objects while
    their ids are used, so no id can stand for two of them."""
    ids = list(map(id, values))
    cells = {key: cell_of(value) for key, value in dict(zip(ids, values, strict=True)).items()}
    return list(map(cells.__getitem__, ids))


def _csv_quoted(cells: list[str]) -> list[str]:
    """A column's cells as csv.writer writes them (`_csv_field`). One look through the column's
    text finds most columns with nothing to quote. TypeError for a cell that is not text."""
    text = "".join(cells)
    if not ('"' in text or "," in text or "\n" in text or "\r" in text or "\x00" in text):
        return cells
    return [_csv_field(cell) for cell in cells]


def _csv_field(cell: str) -> str:
    """A cell as csv.writer writes it: quoted, its quotes doubled, if it holds a comma, a quote
    or a line break. TypeError for a cell that is not text."""
    if "\x00" in cell:  # left to csv.writer, whatever it does with it
        return _csv_record([cell])[:-2]
    if '"' in cell or "," in cell or "\n" in cell or "\r" in cell:
        return '"' + cell.replace('"', '""') + '"'
    return cell


def _csv_gold_field(part: str) -> Callable[[dict[str, Any]], str]:
    """The cell of a gold entry's `part` (gold or gold_parent), as `column_values` reads it."""

    def field(entry: dict[str, Any]) -> str:
        return _csv_label_set_field(_gold_label_set(entry, part))

    return field


def _csv_method_field(entry: dict[str, Any]) -> str:
    method = entry.get("method")
    return "" if method is None else _csv_field(method)


def _csv_record(cells: list[Any]) -> str:
    """One CSV record, with its line's end, as csv.writer writes it."""
    return _csv_records([cells])


def _csv_records(records: Iterable[Sequence[Any]]) -> str:
    line = io.StringIO()
    csv.writer(line).writerows(records)
    return line.getvalue()


def _study_objects(row: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The objects a row's last columns come from (the study's, shared by every row)."""
    return row.get("codebook"), row.get("sampling"), row.get("study_settings")


def _batches(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def jsonl_write(rows: Iterable[dict[str, Any]], stream: IO[bytes]) -> int:
    """`jsonl_lines` into a binary stream, the pieces a download sends. Returns the number of
    rows."""
    counted = _Counted(rows)
    for piece in jsonl_lines(counted):
        stream.write(piece)
    return counted.count


def csv_write(
    rows: Iterable[dict[str, Any]],
    stream: IO[bytes],
    *,
    dimensions: Sequence[str],
    annotators: Sequence[str] | None,
) -> int:
    """`csv_lines` into a binary stream, the pieces a download sends. Returns the number of
    rows."""
    counted = _Counted(rows)
    for piece in csv_lines(counted, dimensions=dimensions, annotators=annotators):
        stream.write(piece)
    return counted.count


class _Counted:
    """An iterable that counts what was taken from it."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows = rows
        self.count = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for row in self.rows:
            self.count += 1
            yield row


def parquet_write(
    rows: Iterable[dict[str, Any]],
    sink: IO[bytes],
    *,
    dimensions: Sequence[str],
    annotators: Sequence[str] | None,
    metadata: dict[str, Any],
    batch_rows: int = PARQUET_BATCH_ROWS,
) -> int:
    """Row groups of `batch_rows` rows through ParquetWriter; `metadata` (codebook, sampling,
    study settings) also goes into the file's key-value metadata. Rows become Arrow record
    batches CONVERT_ROWS at a time, so that only those are held as Python objects (a few
    kilobytes a row) while a row group gathers in Arrow's compact form. Returns the number of
    rows."""
    pa, pq = _pyarrow()
    columns = dataset_columns(dimensions=dimensions, annotators=annotators, applies=True)
    schema = parquet_schema(columns, metadata=metadata)
    encoders = [_PARQUET_ENCODERS.get(column.kind) for column in columns]
    count = 0
    group: list[pa.RecordBatch] = []
    grouped = 0
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for batch in _batches(rows, min(CONVERT_ROWS, batch_rows)):
            memo: dict[tuple[str, ...], list] = {}
            values = [column_values(column, batch, memo) for column in columns]
            arrays = [
                pa.array(encode(column) if encode else column, type=field.type)
                for column, encode, field in zip(values, encoders, schema, strict=True)
            ]
            group.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
            grouped += len(batch)
            if grouped >= batch_rows:
                writer.write_table(pa.Table.from_batches(group, schema=schema))
                count, group, grouped = count + grouped, [], 0
        if group or not count:
            writer.write_table(pa.Table.from_batches(group, schema=schema))
            count += grouped
    return count


def _csv_time(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _csv_times(values: list[datetime | None]) -> list[str]:
    """A column of times as `_csv_time` writes them, orjson's text of the column at once (the
    same text, for times in UTC, in a tenth of the time)."""
    in_utc = [v if v is None or v.tzinfo is UTC else v.astimezone(UTC) for v in values]
    try:
        times = orjson.loads(orjson.dumps(in_utc, option=orjson.OPT_UTC_Z))
    except orjson.JSONEncodeError:  # not a datetime orjson knows: as `_csv_time` does
        return [_csv_time(v) for v in values]
    return ["" if v is None else v for v in times]


def _csv_list(values: Sequence[str] | None) -> str:
    if not values:
        return ""
    joined = LIST_SEPARATOR.join(values)
    # One more separator than the joins: an item holds one.
    if joined.count(LIST_SEPARATOR) >= len(values) or values[0].startswith("["):
        return orjson.dumps(list(values)).decode()
    return joined


def _csv_label_sets(values: list[list[str] | str | None]) -> list[str]:
    """The cells of a column of label sets: empty (no label set), NONE_APPLIES (an empty one),
    the NOT_APPLICABLE marker as it is (the only string where a label set is), else the keys."""
    return [
        "" if v is None
        else NONE_APPLIES if not v
        else v if isinstance(v, str)
        else _MARKER_AS_CATEGORY_CELL if v == _MARKER_AS_CATEGORY
        else LIST_SEPARATOR.join(v)
        for v in values
    ]  # fmt: skip


def _csv_label_set_field(value: list[str] | str | None) -> str:
    """A label set's cell (`_csv_label_sets`), quoted as csv.writer quotes it."""
    if value is None:
        return ""
    return _csv_field(_csv_label_sets([value])[0])


def _shared(encode: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    """A column encoder that encodes a value once when consecutive rows share it (the
    codebook, sampling and settings are one object in every row)."""

    def encode_column(values: list[Any]) -> list[Any]:
        encoded: list[Any] = []
        last: Any = _EMPTY
        last_encoded: Any = None
        for value in values:
            if value is not last:
                last, last_encoded = value, encode(value)
            encoded.append(last_encoded)
        return encoded

    return encode_column


def _json_text(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_UTC_Z).decode()


_CSV_ENCODERS: dict[str, Callable[[list[Any]], list[str]]] = {
    "text": lambda values: ["" if v is None else v for v in values],
    "int": lambda values: ["" if v is None else str(v) for v in values],
    "time": _csv_times,
    "list": lambda values: [_csv_list(v) for v in values],
    "labels": _csv_label_sets,
    "bool": lambda values: ["" if v is None else "true" if v else "false" for v in values],
    "json": _shared(lambda value: "" if value is None else _json_text(value)),
    "fixes": lambda values: [_json_text(v) if v else "" for v in values],
}
_GOLD_FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "gold": _csv_gold_field("gold"),
    "gold_parent": _csv_gold_field("gold_parent"),
    "method": _csv_method_field,
}
_PARQUET_ENCODERS: dict[str, Callable[[list[Any]], list[Any]]] = {
    # The marker cannot be a list<string>: null here, and the `applies` column says why.
    "labels": lambda values: [None if isinstance(v, str) else v for v in values],
    "json": _shared(_json_text),
    "fixes": lambda values: [
        [{key: fix.get(key) for key in _FIX_FIELDS} for fix in fixes] for fixes in values
    ],
}


# --------------------------------------------------------------------------- readers

RowOrError = tuple[int, dict[str, Any] | DatasetFileError]


def jsonl_read(stream: IO[bytes]) -> Iterator[RowOrError]:
    """(line number, row or DatasetFileError) for each non-blank line, a line at a time."""
    line_number = 0
    while line := stream.readline(MAX_LINE_BYTES + 1):
        line_number += 1
        if len(line) > MAX_LINE_BYTES:
            yield line_number, DatasetFileError(f"line is longer than {MAX_LINE_BYTES} bytes")
            while line and not line.endswith(b"\n"):
                line = stream.readline(MAX_LINE_BYTES + 1)
            continue
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            yield line_number, DatasetFileError(f"not valid JSON: {error}")
            continue
        if not isinstance(row, dict):
            yield line_number, DatasetFileError("a line must hold a JSON object")
            continue
        yield line_number, row


def csv_read(stream: IO[bytes]) -> Iterator[RowOrError]:
    """(line number where the record starts, row or DatasetFileError) for each record."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    try:
        reader = csv.reader(text)
        try:
            header = next(reader, None)
        except (csv.Error, UnicodeDecodeError) as error:
            yield 1, DatasetFileError(f"not a CSV header: {error}")
            return
        if not header:
            return
        decoders = [(name, _csv_decoder(name)) for name in header]
        while True:
            line_number = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as error:
                yield line_number, DatasetFileError(f"not valid CSV: {error}")
                return  # the reader cannot tell where the next record starts
            if not any(cells):
                continue
            if len(cells) != len(header):
                yield (
                    line_number,
                    DatasetFileError(
                        f"{len(cells)} fields where the header has {len(header)} columns"
                    ),
                )
                continue
            try:
                row = row_nest(
                    {
                        name: decode(name, cell)
                        for (name, decode), cell in zip(decoders, cells, strict=True)
                    }
                )
            except DatasetFileError as error:
                yield line_number, error
                continue
            yield line_number, row
    finally:
        text.detach()


def parquet_read(source: Any, *, batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[RowOrError]:
    """(row number from 1, row) for each row, a batch at a time; times become ISO text, as in
    JSONL. A file that is not Parquet is one error at row 0."""
    pa, pq = _pyarrow()
    try:
        parquet = pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as error:
        yield 0, DatasetFileError(f"not a Parquet file: {error}")
        return
    kinds = {name: column_kind(name) for name in parquet.schema_arrow.names}
    number = 0
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows):
            for flat in batch.to_pylist():
                number += 1
                try:
                    row = row_nest(
                        {name: _from_parquet(kinds[name], name, v) for name, v in flat.items()}
                    )
                except DatasetFileError as error:
                    yield number, error
                    continue
                yield number, row
    except (pa.ArrowException, OSError) as error:
        yield number + 1, DatasetFileError(f"cannot read the Parquet file: {error}")


def column_kind(name: str) -> str:
    """The kind of a column, by its name (`dataset_columns` names them)."""
    head, _, rest = name.partition(".")
    if head == RAW_VERSION:
        return "text"
    if rest in ("gold", "gold_parent") or rest.startswith("raw."):
        return "labels"
    if rest == "applies" or rest.startswith("applies."):
        return "bool"
    if rest == "method":
        return "text"
    return _KINDS_BY_NAME.get(name, "text")


_KINDS_BY_NAME = {column.name: column.kind for column in _ISSUE_COLUMNS + _STUDY_COLUMNS}


def _from_parquet(kind: str, name: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return _csv_time(value)
    if kind == "json" and isinstance(value, str):
        return _json_cell(name, value)
    if kind == "fixes" and isinstance(value, list):
        return [
            {k: _csv_time(item) if isinstance(item, datetime) else item for k, item in fix.items()}
            if isinstance(fix, dict)
            else fix
            for fix in value
        ]
    return value


def _json_cell(name: str, cell: str) -> Any:
    try:
        return orjson.loads(cell)
    except orjson.JSONDecodeError as error:
        raise DatasetFileError(f"{name}: not valid JSON: {error}") from None


def _csv_int(name: str, cell: str) -> Any:
    # Not a number: left as text, for the restore to refuse with the column's name.
    return int(cell) if cell.isascii() and cell.isdigit() else (cell or None)


def _csv_list_cell(name: str, cell: str) -> list[Any]:
    if not cell:
        return []
    return _json_cell(name, cell) if cell.startswith("[") else cell.split(LIST_SEPARATOR)


def _csv_labels_cell(name: str, cell: str) -> list[str] | str | None:
    if not cell:
        return None
    if cell == NONE_APPLIES:
        return []
    if cell == NOT_APPLICABLE:
        return NOT_APPLICABLE
    # No category key starts with "[": a JSON array (the marker's key as a category).
    return _json_cell(name, cell) if cell.startswith("[") else cell.split(LIST_SEPARATOR)


def _csv_bool_cell(name: str, cell: str) -> bool | None:
    if cell not in _CSV_BOOLS:
        raise DatasetFileError(f"{name}: true, false or empty, not {cell[:40]!r}")
    return _CSV_BOOLS[cell]


_CSV_BOOLS = {"true": True, "false": False, "": None}
_CSV_DECODERS: dict[str, Callable[[str, str], Any]] = {
    # An empty method or version is none; other text is kept as written, empty or not.
    "text": lambda name, cell: (
        (cell or None) if name.endswith(".method") or name.startswith(f"{RAW_VERSION}.") else cell
    ),
    "int": _csv_int,
    "time": lambda name, cell: cell or None,
    "list": _csv_list_cell,
    "labels": _csv_labels_cell,
    "bool": _csv_bool_cell,
    "json": lambda name, cell: _json_cell(name, cell) if cell else None,
    "fixes": lambda name, cell: _json_cell(name, cell) if cell else [],
}


def _csv_decoder(name: str) -> Callable[[str, str], Any]:
    """How a CSV cell of this column becomes a row value again."""
    return _CSV_DECODERS[column_kind(name)]


READERS: dict[str, Callable[[IO[bytes]], Iterator[RowOrError]]] = {
    "jsonl": jsonl_read,
    "csv": csv_read,
    "parquet": parquet_read,
}


def format_for_name(filename: str) -> str | None:
    """The format a file name's extension names (.csv, .jsonl or .ndjson, .parquet), or None."""
    suffix = filename.lower().rsplit(".", 1)[-1] if "." in filename else ""
    return {"csv": "csv", "jsonl": "jsonl", "ndjson": "jsonl", "parquet": "parquet"}.get(suffix)
