"""The dataset's files: JSONL, CSV and Parquet writers that take an iterator of rows, and readers
that give the rows back with the place each came from (for the restore's error messages).

Plain Python and pyarrow, no Django: a row is the JSONL object of `exports.dataset` (nested
dicts), and the two tabular formats flatten it into the columns of `dataset_columns`:

* ``issue``, ``repository``, ``system``, ``number``, ``url``, ``title``, ``state``,
  ``author``, ``created_at``, ``closed_at``, ``updated_at``, ``github_labels``,
  ``linked_fixes``, ``fix_size.files_changed`` / ``.additions`` / ``.deletions``, ``study``,
  ``round.name``, ``round.kind``, ``item_status``, ``annotators_needed``;
* per dimension ``<dim>.gold``, ``<dim>.gold_parent``, ``<dim>.method`` and, with raw labels,
  ``<dim>.raw.<annotator>`` for every annotator of the study (known before the first row);
* ``codebook.name``, ``codebook.version``, ``codebook.hash``, ``sampling``, ``study_settings``.

A label set (gold or raw) has two empty forms that mean different things and both matter to
agreement: *no label set* (the item is not resolved on that dimension, or that annotator did not
answer it) and *none applies* (an empty answer, which is a rating). Parquet says null and [];
CSV says an empty cell and ``(none)``. Other lists in CSV are joined by ";" (a list with an item
that holds ";" is written as a JSON array instead, so nothing is lost); the fixes, the sampling
rule and the study's settings are JSON text.
"""

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

FORMATS = ("csv", "jsonl", "parquet")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}
NONE_APPLIES = "(none)"  # a CSV cell for an empty label set, as opposed to no label set at all
LIST_SEPARATOR = ";"
# Rows per Parquet row group: the writer holds one group's columns at a time.
PARQUET_BATCH_ROWS = 5_000
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
    # text, int, time, list (of strings), labels (a label set), json, fixes
    kind: str


_PARQUET_TYPES: dict[str, pa.DataType] = {
    "text": pa.string(),
    "int": pa.int64(),
    "time": pa.timestamp("us", tz="UTC"),
    "list": pa.list_(pa.string()),
    "labels": pa.list_(pa.string()),
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


def dataset_columns(*, dimensions: Sequence[str], annotators: Sequence[str] | None) -> list[Column]:
    """The tabular formats' columns, in order; `annotators` None: without raw labels."""
    columns = list(_ISSUE_COLUMNS)
    for dimension in dimensions:
        columns += [
            Column(f"{dimension}.gold", "labels"),
            Column(f"{dimension}.gold_parent", "labels"),
            Column(f"{dimension}.method", "text"),
        ]
    if annotators is not None:
        columns += [
            Column(f"{dimension}.raw.{annotator}", "labels")
            for dimension in dimensions
            for annotator in annotators
        ]
    return columns + _STUDY_COLUMNS


def parquet_schema(columns: Sequence[Column], *, metadata: dict[str, Any]) -> pa.Schema:
    return pa.schema(
        [pa.field(column.name, _PARQUET_TYPES[column.kind]) for column in columns],
        metadata={PARQUET_METADATA_KEY: orjson.dumps(metadata)},
    )


# --------------------------------------------------------------------------- rows <-> columns


def row_flatten(
    row: dict[str, Any], *, dimensions: Sequence[str], annotators: Sequence[str] | None
) -> dict[str, Any]:
    """A row's values by column name (lists stay lists, times stay datetimes)."""
    fix_size = row.get("fix_size") or {}
    round_ = row.get("round") or {}
    codebook = row.get("codebook") or {}
    flat = {
        **{key: row.get(key) for key in ("issue", "repository", "system", "number", "url")},
        **{key: row.get(key) for key in ("title", "state", "author", "created_at", "closed_at")},
        "updated_at": row.get("updated_at"),
        "github_labels": row.get("github_labels") or [],
        "linked_fixes": row.get("linked_fixes") or [],
        **{f"fix_size.{key}": fix_size.get(key) for key in _FIX_SIZES},
        "study": row.get("study"),
        "round.name": round_.get("name"),
        "round.kind": round_.get("kind"),
        "item_status": row.get("item_status"),
        "annotators_needed": row.get("annotators_needed"),
    }
    labels = row.get("labels") or {}
    for dimension in dimensions:
        gold = labels.get(dimension) or {}
        method = gold.get("method")
        # No method: no resolution, hence no label set (an empty one would read "none applies").
        flat[f"{dimension}.gold"] = gold.get("gold", []) if method else None
        flat[f"{dimension}.gold_parent"] = gold.get("gold_parent", []) if method else None
        flat[f"{dimension}.method"] = method
    if annotators is not None:
        raw = row.get("raw") or {}
        for dimension in dimensions:
            answers = raw.get(dimension) or {}
            for annotator in annotators:
                flat[f"{dimension}.raw.{annotator}"] = answers.get(annotator)
    flat["codebook.name"] = codebook.get("name")
    flat["codebook.version"] = codebook.get("version")
    flat["codebook.hash"] = codebook.get("hash")
    flat["sampling"] = row.get("sampling")
    flat["study_settings"] = row.get("study_settings")
    return flat


def row_nest(flat: dict[str, Any]) -> dict[str, Any]:
    """The row (JSONL shape) of a flat one, the dimensions and annotators read off the column
    names. Values are taken as they are; the restore checks them."""
    row: dict[str, Any] = {}
    labels: dict[str, dict[str, Any]] = {}
    raw: dict[str, dict[str, Any]] = {}
    fix_size: dict[str, Any] = {}
    has_raw = False
    for name, value in flat.items():
        head, dot, rest = name.partition(".")
        if not dot:
            row[name] = value
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
    for gold in labels.values():
        gold["gold"] = gold.get("gold") or []
        gold["gold_parent"] = gold.get("gold_parent") or []
    row["labels"] = labels
    if has_raw:
        row["raw"] = raw
    row["fix_size"] = None if all(v is None for v in fix_size.values()) else fix_size
    return row


# --------------------------------------------------------------------------- writers


def jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """One orjson line per row; times in UTC with "Z"."""
    options = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE
    for row in rows:
        yield orjson.dumps(row, option=options)


def csv_lines(
    rows: Iterable[dict[str, Any]], *, dimensions: Sequence[str], annotators: Sequence[str] | None
) -> Iterator[bytes]:
    """The header, then one flat record per row, as UTF-8 bytes (a record may span lines: a
    title with a line break is quoted)."""
    columns = dataset_columns(dimensions=dimensions, annotators=annotators)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([column.name for column in columns])
    encoders = [(column.name, _CSV_ENCODERS[column.kind]) for column in columns]
    for row in rows:
        flat = row_flatten(row, dimensions=dimensions, annotators=annotators)
        writer.writerow([encode(flat[name]) for name, encode in encoders])
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():  # no row: the header alone
        yield buffer.getvalue().encode()


def jsonl_write(rows: Iterable[dict[str, Any]], stream: IO[bytes]) -> int:
    """`jsonl_lines` into a binary stream. Returns the number of rows."""
    count = 0
    for line in jsonl_lines(rows):
        stream.write(line)
        count += 1
    return count


def csv_write(
    rows: Iterable[dict[str, Any]],
    stream: IO[bytes],
    *,
    dimensions: Sequence[str],
    annotators: Sequence[str] | None,
) -> int:
    """`csv_lines` into a binary stream. Returns the number of rows."""
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
    """Row groups of `batch_rows` rows through ParquetWriter, so that one group is in memory at a
    time; `metadata` (codebook, sampling, study settings) also goes into the file's key-value
    metadata. Returns the number of rows."""
    columns = dataset_columns(dimensions=dimensions, annotators=annotators)
    schema = parquet_schema(columns, metadata=metadata)
    count = 0
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        batch: dict[str, list[Any]] = {column.name: [] for column in columns}
        encoders = [(column.name, _PARQUET_ENCODERS.get(column.kind)) for column in columns]
        pending = 0
        for row in rows:
            flat = row_flatten(row, dimensions=dimensions, annotators=annotators)
            for name, encode in encoders:
                batch[name].append(encode(flat[name]) if encode else flat[name])
            pending += 1
            if pending == batch_rows:
                writer.write_table(pa.Table.from_pydict(batch, schema=schema))
                count += pending
                pending = 0
                batch = {column.name: [] for column in columns}
        if pending or not count:
            writer.write_table(pa.Table.from_pydict(batch, schema=schema))
            count += pending
    return count


def _csv_time(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _csv_list(values: Sequence[str] | None) -> str:
    if not values:
        return ""
    if any(LIST_SEPARATOR in value for value in values) or values[0].startswith("["):
        return orjson.dumps(list(values)).decode()
    return LIST_SEPARATOR.join(values)


def _csv_labels(values: Sequence[str] | None) -> str:
    if values is None:
        return ""
    return LIST_SEPARATOR.join(values) if values else NONE_APPLIES


def _csv_json(value: Any) -> str:
    if value is None or value == []:
        return ""
    return orjson.dumps(value, option=orjson.OPT_UTC_Z).decode()


def _parquet_json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_UTC_Z).decode()


def _parquet_fixes(fixes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: fix.get(key) for key in _FIX_FIELDS} for fix in fixes]


_CSV_ENCODERS: dict[str, Callable[[Any], str]] = {
    "text": lambda value: "" if value is None else str(value),
    "int": lambda value: "" if value is None else str(value),
    "time": _csv_time,
    "list": _csv_list,
    "labels": _csv_labels,
    "json": _csv_json,
    "fixes": _csv_json,
}
_PARQUET_ENCODERS: dict[str, Callable[[Any], Any]] = {
    "json": _parquet_json,
    "fixes": _parquet_fixes,
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
                flat = {
                    name: decode(name, cell)
                    for (name, decode), cell in zip(decoders, cells, strict=True)
                }
            except DatasetFileError as error:
                yield line_number, error
                continue
            yield line_number, row_nest(flat)
    finally:
        text.detach()


def parquet_read(source: Any, *, batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[RowOrError]:
    """(row number from 1, row) for each row, a batch at a time; times become ISO text, as in
    JSONL. A file that is not Parquet is one error at row 0."""
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
                    values = {name: _from_parquet(kinds[name], name, v) for name, v in flat.items()}
                except DatasetFileError as error:
                    yield number, error
                    continue
                yield number, row_nest(values)
    except (pa.ArrowException, OSError) as error:
        yield number + 1, DatasetFileError(f"cannot read the Parquet file: {error}")


def column_kind(name: str) -> str:
    """The kind of a column, by its name (`dataset_columns` names them)."""
    rest = name.partition(".")[2]
    if rest in ("gold", "gold_parent") or rest.startswith("raw."):
        return "labels"
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


def _csv_labels_cell(name: str, cell: str) -> list[str] | None:
    if not cell:
        return None
    return [] if cell == NONE_APPLIES else cell.split(LIST_SEPARATOR)


_CSV_DECODERS: dict[str, Callable[[str, str], Any]] = {
    "text": lambda name, cell: (cell or None) if name.endswith(".method") else cell,
    "int": _csv_int,
    "time": lambda name, cell: cell or None,
    "list": _csv_list_cell,
    "labels": _csv_labels_cell,
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
