"""Writing many rows at once without the ORM's per-value work.

`QuerySet.bulk_create` compiles every value of every row through the ORM (and on PostgreSQL
dumps them as arrays for UNNEST): for an import or a restore of thousands of rows that was most
of the time. Here each value is adapted once, by one function per column, and the rows go with
executemany (SQLite) or COPY (PostgreSQL). No signal runs, as with bulk_create.
"""

import gc
import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection, models
from django.utils import timezone


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a bulk write runs. Each of its full passes walks every
    live object, and a bulk write allocates millions of objects while it holds thousands of rows:
    the passes took a tenth of an import's CPU time and a fifth of a restore's. What a bulk
    write lets go of (rows, records, model instances) holds no cycle and is freed by reference
    counting all the same; anything cyclic waits for the first pass after. Nested or in threads
    at once, the collector is back on when the one that turned it off is done."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def bulk_insert(model: type[models.Model], rows: Sequence[dict[str, Any]]) -> None:
    """INSERT rows of a model that nothing in the same write needs the ids of (revisions, the
    rows of a many-to-many table), by the fields' attnames ("annotation_id"). Every row names the
    same fields; the others take their defaults, and auto_now(_add) fields the time of the
    call. Rows rather than instances: making a model instance cost more than sending its row.
    Must run inside a transaction."""
    if not rows:
        return
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    names = [field.attname for field in fields]
    unknown = set(rows[0]).difference(names)
    if unknown:
        raise ValueError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    now = timezone.now()
    missing = {
        field.attname: now
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        else field.get_default()
        for field in fields
        if field.attname not in rows[0]
    }
    _rows_write(
        model,
        fields,
        [[row[name] if name in row else missing[name] for name in names] for row in rows],
    )


def bulk_upsert(
    model: type[models.Model], rows: list[dict[str, Any]], *, unique_fields: list[str]
) -> None:
    """INSERT ... ON CONFLICT (unique_fields) DO UPDATE of every other column, for many rows.

    QuerySet.bulk_create(update_conflicts=True) does the same but compiled every value of every
    row through the ORM, which was two thirds of an import's time. On PostgreSQL the rows go by
    COPY into a temporary table and one INSERT ... SELECT. All rows must have the same keys, and
    no auto_now runs. Must run inside a transaction.
    """
    if not rows:
        return
    names = list(rows[0])
    fields = [model._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    conflict = {model._meta.get_field(name).column for name in unique_fields}
    on_conflict = (
        f"ON CONFLICT ({', '.join(quote(column) for column in conflict)}) DO UPDATE SET "
        + ", ".join(
            f"{quote(field.column)} = EXCLUDED.{quote(field.column)}"
            for field in fields
            if field.column not in conflict
        )
    )
    _rows_write(model, fields, [[row[name] for name in names] for row in rows], on_conflict)


def _rows_write(
    model: type[models.Model],
    fields: list[models.Field],
    params: list[list[Any]],
    on_conflict: str = "",
) -> None:
    """INSERT the rows (values in the order of `fields`, adapted here, in place), with the
    ON CONFLICT clause when one is given."""
    # Most values go as they are; only those that need it are adapted.
    adapters = [
        (index, adapt)
        for index, adapt in enumerate(_adapter(field) for field in fields)
        if adapt is not None
    ]
    for values in params:
        for index, adapt in adapters:
            values[index] = adapt(values[index])
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(field.column) for field in fields)
    # Only model metadata, quoted by the backend, is formatted into statements; values are
    # parameters or COPY data.
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            placeholders = ", ".join(["%s"] * len(fields))
            cursor.executemany(
                f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) {on_conflict}",  # noqa: S608
                params,
            )
            return
        if not on_conflict:
            _copied(cursor, f"COPY {table} ({columns}) FROM STDIN", params)
            return
        # COPY cannot resolve conflicts: the rows go into a staging table first, one per table
        # and column list, since it keeps the first list's shape.
        shape = hashlib.blake2s(columns.encode(), digest_size=4).hexdigest()
        staging = quote(f"staging_{model._meta.db_table}_{shape}")
        # The staging table has the columns' types and no constraints; it lives with the
        # connection and is emptied after each use.
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} AS "  # noqa: S608
            f"SELECT {columns} FROM {table} WITH NO DATA"
        )
        _copied(cursor, f"COPY {staging} ({columns}) FROM STDIN", params)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} {on_conflict}"  # noqa: S608
        )
        cursor.execute(f"TRUNCATE {staging}")


def _copied(cursor, sql: str, params: list[list[Any]]) -> None:
    """COPY the rows, on PostgreSQL. The driver's COPY bypasses Django's cursor wrapper, so the
    statement is logged here as that wrapper logs the others: a test or a benchmark that counts
    a request's queries counts it too."""
    started = time.monotonic()
    with cursor.cursor.copy(sql) as copy:
        for values in params:
            copy.write_row(values)
    if connection.queries_logged:
        connection.queries_log.append(
            {"sql": f"{sql} ({len(params)} rows)", "time": f"{time.monotonic() - started:.3f}"}
        )


# Fields whose Python values both databases' drivers take as they are.
_PLAIN_FIELDS = (
    models.CharField,  # TextField, EmailField, SlugField... are CharField or TextField
    models.TextField,
    models.IntegerField,  # and its Big, Small and Positive kinds
    models.BooleanField,
    models.FloatField,
)


def _adapter(field: models.Field) -> Callable[[Any], Any] | None:
    """How a value of `field` is sent to this database, without the ORM's per-value checks;
    None when it goes as it is.

    Serialising JSON and times was half the time of an import. JSON goes through orjson (the
    same JSON text up to whitespace and escaping); an aware time is what PostgreSQL takes as it
    is, and what Django stores on SQLite as naive UTC text ("2025-02-20 16:12:14").
    """
    if isinstance(field, models.JSONField):
        return _json_text  # PostgreSQL's COPY reads jsonb from its text
    if isinstance(field, models.DateTimeField):
        if connection.vendor == "sqlite":
            return _sqlite_time
        if connection.vendor == "postgresql":
            return None
        return connection.ops.adapt_datetimefield_value
    if isinstance(field, models.ForeignKey):
        return _adapter(field.target_field)
    if isinstance(field, _PLAIN_FIELDS):
        return None
    # Any other kind (dates, decimals, UUIDs...) as the ORM prepares it.
    return lambda value: field.get_db_prep_save(value, connection)


def _json_text(value: Any) -> str | None:
    # None is SQL NULL, as the ORM writes it for a JSONField.
    return None if value is None else orjson.dumps(value).decode()


def _sqlite_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is UTC:  # as records and timezone.now() give them
        return value.isoformat(sep=" ")[: -len("+00:00")]
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
