"""Writing many rows at once without the ORM's per-value work.

`QuerySet.bulk_create` compiles every value of every row through the ORM (and on PostgreSQL
dumps them as arrays for UNNEST): for an import or a restore of thousands of rows that was most
of the time. Here each value is adapted once, by one function per column, and the rows go with
executemany (SQLite) or COPY (PostgreSQL). New rows that others refer to go with those others
(`bulk_create_with_rows`): in one statement on PostgreSQL. No signal runs, as with bulk_create.
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
    if rows:
        fields, params = _rows_prepared(model, rows)
        _rows_write(model, fields, params)


def bulk_create_with_rows(
    model: type[models.Model],
    objs: Sequence[models.Model],
    dependents: Sequence[tuple[type[models.Model], str, Sequence[dict[str, Any]]]],
) -> None:
    """Create the new instances `objs` (their primary keys are set, as by bulk_create) and
    INSERT the rows that depend on them, each table's rows as `bulk_insert` takes them.

    Each dependent is (model, link, rows): `link` names the foreign key ("annotation") that
    each row gives as an instance, one of `objs` or one already saved. On PostgreSQL it all
    goes in one statement, however many tables: a label's save writes its annotations, their
    categories and their revisions, and each statement is a round trip to the server. On SQLite
    in one statement a table (a batch of the new ones). No signal runs, as with bulk_create.
    Must run inside a transaction."""
    dependents = [dependent for dependent in dependents if dependent[2]]
    if connection.vendor != "postgresql":
        _created(model, objs)
        for dependent, link, rows in dependents:
            bulk_insert(dependent, [_linked(row, link) for row in rows])
        return
    new_positions = {id(obj): position for position, obj in enumerate(objs, start=1)}
    quote = connection.ops.quote_name
    statements, params = [], []
    if objs:
        fields, rows = _rows_prepared(model, [_instance_row(model, obj) for obj in objs])
        columns = [quote(field.column) for field in fields]
        pk = quote(model._meta.pk.column)
        statements.append(
            f"_new AS (INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)}) "  # noqa: S608
            f"SELECT {', '.join(columns)} FROM {_unnest(fields)} WITH ORDINALITY "
            f"AS _v({', '.join(columns)}, _position) ORDER BY _position RETURNING {pk})"
        )
        # The rows are inserted in the order of their positions, so their keys, drawn from
        # the sequence one by one, grow with it.
        statements.append(
            f"_numbered AS (SELECT {pk} AS id, row_number() OVER (ORDER BY {pk}) AS _position "  # noqa: S608
            "FROM _new)"
        )
        params += _columns_of(rows, len(fields))
    for number, (dependent, link, rows) in enumerate(dependents):
        fk = dependent._meta.get_field(link)
        fields, prepared = _rows_prepared(
            dependent, [_linked(row, link, new_positions) for row in rows]
        )
        # The position of the new row each refers to, where the key is not known yet.
        positions = [new_positions.get(id(row[link])) for row in rows]
        columns = [quote(field.column) for field in fields]
        link_column = quote(fk.column)
        chosen = [
            f"COALESCE(_v.{column}, _numbered.id)"
            if column == link_column and objs
            else f"_v.{column}"
            for column in columns
        ]
        joined = " LEFT JOIN _numbered ON _numbered._position = _v._position" if objs else ""
        statements.append(
            f"_rows{number} AS (INSERT INTO {quote(dependent._meta.db_table)} "  # noqa: S608
            f"({', '.join(columns)}) SELECT {', '.join(chosen)} FROM "
            f"{_unnest(fields, positions=True)} AS _v({', '.join(columns)}, _position){joined})"
        )
        params += [*_columns_of(prepared, len(fields)), positions]
    if not statements:
        return
    # Each data-modifying part of a WITH runs once, to the end, whether the query reads it or
    # not; the query returns the new keys in the order of `objs`.
    returned = "SELECT id FROM _numbered ORDER BY _position" if objs else "SELECT 1"
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(statements)} {returned}", params)
        keys = [key for (key,) in cursor.fetchall()] if objs else []
    _keys_set(objs, keys)


def _created(model: type[models.Model], objs: Sequence[models.Model]) -> None:
    """INSERT the new instances and set their keys: on SQLite by one INSERT ... RETURNING a
    batch, its values adapted as `bulk_insert` adapts them (the ORM's bulk_create compiled
    every value, which cost a submit more than writing its rows); elsewhere by bulk_create."""
    if connection.vendor != "sqlite":
        model.objects.bulk_create(objs)
        return
    if not objs:
        return
    fields, rows = _rows_prepared(model, [_instance_row(model, obj) for obj in objs])
    quote = connection.ops.quote_name
    pk = quote(model._meta.pk.column)
    head = (
        f"INSERT INTO {quote(model._meta.db_table)} "  # noqa: S608 (quoted model metadata)
        f"({', '.join(quote(field.column) for field in fields)}) VALUES "
    )
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    size = connection.ops.bulk_batch_size(fields, objs)
    keys = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            cursor.execute(
                f"{head}{', '.join([row] * len(batch))} RETURNING {pk}",
                [value for values in batch for value in values],
            )
            # SQLite returns the rows in no set order; the keys grow in the order of the rows.
            keys += sorted(key for (key,) in cursor.fetchall())
    _keys_set(objs, keys)


def _keys_set(objs: Sequence[models.Model], keys: list[int]) -> None:
    """The new instances saved, with their keys, as bulk_create leaves them."""
    for obj, key in zip(objs, keys, strict=True):
        obj.pk = key
        obj._state.adding, obj._state.db = False, connection.alias


def _instance_row(model: type[models.Model], obj: models.Model) -> dict[str, Any]:
    """An unsaved instance's row, as an INSERT of it would write it (auto_now fields set)."""
    return {
        field.attname: field.pre_save(obj, True)
        for field in model._meta.concrete_fields
        if not field.primary_key
    }


def _linked(row: dict[str, Any], link: str, new: dict[int, int] | None = None) -> dict[str, Any]:
    """The row with its link instance as a key; None for a new row's (known after its INSERT)
    when `new` gives the positions of the new ones."""
    linked = dict(row)
    target = linked.pop(link)
    fk = f"{link}_id"
    linked[fk] = None if new is not None and id(target) in new else target.pk
    return linked


def _unnest(fields: list[models.Field], positions: bool = False) -> str:
    """UNNEST of one array parameter a column, typed as the column (without a length, as
    Django's own bulk INSERT has it); then the rows' positions when asked."""
    types = [field.db_type(connection).split("(")[0] for field in fields]
    types += ["bigint"] if positions else []
    return "UNNEST(" + ", ".join(f"(%s)::{db_type}[]" for db_type in types) + ")"


def _columns_of(rows: list[list[Any]], width: int) -> list[list[Any]]:
    return [[row[index] for row in rows] for index in range(width)]


def _rows_prepared(
    model: type[models.Model], rows: Sequence[dict[str, Any]]
) -> tuple[list[models.Field], list[list[Any]]]:
    """The model's fields (not the primary key) and each row's values in their order, adapted
    to this database. Every row names the same fields; a field they do not name takes its
    default, an auto_now(_add) field the time of the call."""
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
    params = [[row[name] if name in row else missing[name] for name in names] for row in rows]
    _adapted(fields, params)
    return fields, params


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
    params = [[row[name] for name in names] for row in rows]
    _adapted(fields, params)
    _rows_write(model, fields, params, on_conflict)


def _adapted(fields: list[models.Field], params: list[list[Any]]) -> None:
    """Each row's values (in the order of `fields`) adapted to this database, in place. Most
    values go as they are; only those that need it are adapted."""
    adapters = [
        (index, adapt)
        for index, adapt in enumerate(_adapter(field) for field in fields)
        if adapt is not None
    ]
    for values in params:
        for index, adapt in adapters:
            values[index] = adapt(values[index])


def _rows_write(
    model: type[models.Model],
    fields: list[models.Field],
    params: list[list[Any]],
    on_conflict: str = "",
) -> None:
    """INSERT the rows (values in the order of `fields`, adapted to this database), with the
    ON CONFLICT clause when one is given."""
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
