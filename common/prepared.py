"""Querysets built and compiled once, then run with new values.

Django builds and compiles a queryset into SQL at every evaluation, and for a query that finds a
row by its keys that costs far more than running it: the labeling page's assignment, read with
its item, issue, study, codebook version and the user's roles, took about 2.5 ms to build and
compile and 0.1 ms to run on SQLite. A query whose shape is the same at every request is built
here once per database and kind of values, with stand-in values; each run sends that SQL with its
own values and makes the instances as the queryset would (Django's ModelIterable: the row's
model, the models of `select_related`, the annotations), or the tuples of a `values_list`
(unions of them too). Only querysets without `prefetch_related`, whose values are whole numbers,
strings or lists of whole numbers (`__in`) used as they are: a value the compiled SQL does not
carry as a parameter of its own is refused when the query is built.
"""

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

# Stand-ins for whole numbers: inside every backend's integer range (Django compiles a lookup
# on a value outside it as matching nothing) and far above any key this project makes.
_NUMBER_STAND_IN = 2_000_000_000


@dataclass(frozen=True)
class _Compiled:
    db: str
    vendor: str
    sql: str | None  # None: the query matches nothing whatever its values
    params: tuple
    # (position among the parameters, (the value's name, its place in a list or None))
    slots: tuple[tuple[int, tuple[str, int | None]], ...]
    locks: bool
    compiler: Any  # the SQLCompiler: its converters turn each row's values into Python's
    converters: dict
    # For model instances; None for the tuples of a values_list.
    model: type[Model] | None
    init_list: list[str]
    model_columns: slice
    populators: list
    annotations: dict[str, int]


class PreparedQuery(Generic[M]):
    """`build(**values, **shape)` returns the queryset; `values` names the keyword arguments
    that are values of the query (a slug, a key), the others shape it (whether to lock, what to
    join) and must be hashable. Calling it with all of them returns the queryset's instances
    (or tuples), as a list."""

    def __init__(self, build: Callable[..., QuerySet[M]], *, values: tuple[str, ...]) -> None:
        self._build = build
        self._values = values
        self._compiled: dict[Hashable, _Compiled] = {}

    def __call__(self, **arguments: Any) -> list:
        values = {name: _plain(name, arguments.pop(name)) for name in self._values}
        # A list is a shape of its own for each length: `IN (%s, %s)` has a parameter each.
        kinds = tuple(len(v) if isinstance(v, list) else type(v) for v in values.values())
        key = (tuple(sorted(arguments.items())), kinds)
        compiled = self._compiled.get(key)
        if compiled is None or connections[compiled.db].vendor != compiled.vendor:
            compiled = self._compiled[key] = self._compile(values, arguments)
        if compiled.sql is None:
            return []  # as Django, no query (an empty list given to `__in`)
        return _run(compiled, values)

    def _compile(self, values: dict[str, Any], shape: dict[str, Any]) -> _Compiled:
        # (the value's name, its place in a list or None): its stand-in
        stand_ins: dict[tuple[str, int | None], int | str] = {}
        for position, (name, value) in enumerate(values.items()):
            if isinstance(value, list):
                for index in range(len(value)):
                    stand_ins[name, index] = _NUMBER_STAND_IN + 1000 * position + index + 1
            elif type(value) is int:
                stand_ins[name, None] = _NUMBER_STAND_IN + 1000 * position
            else:
                stand_ins[name, None] = f"\x1fprepared {name} {position}\x1f"
        given = {
            name: [stand_ins[name, index] for index in range(len(value))]
            if isinstance(value, list)
            else stand_ins[name, None]
            for name, value in values.items()
        }
        queryset = self._build(**given, **shape)
        if (
            queryset._iterable_class not in (ModelIterable, ValuesListIterable)
            or queryset._prefetch_related_lookups
            or queryset._known_related_objects
        ):
            raise ValueError(
                "Only a queryset of model instances or of tuples, without prefetching, is kept."
            )
        compiler = queryset.query.get_compiler(using=queryset.db)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:
            return _Compiled(
                db=queryset.db,
                vendor=compiler.connection.vendor,
                sql=None,
                params=(),
                slots=(),
                locks=False,
                compiler=compiler,
                converters={},
                model=None,
                init_list=[],
                model_columns=slice(0),
                populators=[],
                annotations={},
            )
        slots = tuple(
            (position, place)
            for position, param in enumerate(params)
            for place, stand_in in stand_ins.items()
            if type(param) is type(stand_in) and param == stand_in
        )
        missing = {name for name, _ in set(stand_ins) - {place for _, place in slots}}
        if missing:
            raise ValueError(f"The query does not carry {', '.join(sorted(missing))} as given.")
        select = compiler.select
        fields = [column[0] for column in select[: compiler.col_count]]
        if compiler.has_composite_fields(fields):
            raise ValueError("A composite primary key is not kept.")
        compiled = {
            "db": queryset.db,
            "vendor": compiler.connection.vendor,
            "sql": sql,
            "params": tuple(params),
            "slots": slots,
            # As the queryset: a backend without row locks (SQLite) leaves the clause out.
            "locks": bool(queryset.query.select_for_update)
            and compiler.connection.features.has_select_for_update,
            "compiler": compiler,
            "converters": compiler.get_converters(fields),
        }
        if queryset._iterable_class is ValuesListIterable:
            return _Compiled(
                **compiled,
                model=None,
                init_list=[],
                model_columns=slice(0),
                populators=[],
                annotations={},
            )
        klass_info = compiler.klass_info
        model_fields = klass_info["select_fields"]
        return _Compiled(
            **compiled,
            model=klass_info["model"],
            init_list=[
                column[0].target.attname
                for column in select[model_fields[0] : model_fields[-1] + 1]
            ],
            model_columns=slice(model_fields[0], model_fields[-1] + 1),
            populators=get_related_populators(klass_info, select, queryset.db),
            annotations=dict(compiler.annotation_col_map or {}),
        )


def _plain(name: str, value: Any) -> int | str | list[int]:
    """The value as the plain type its stand-in has (a slug of a URL may be a subclass of str,
    a key a subclass of int); a bool, a float, None or anything else is refused."""
    if isinstance(value, str):
        return str(value)
    if _is_number(value):
        return int(value)
    if isinstance(value, list) and all(_is_number(number) for number in value):
        return [int(number) for number in value]
    raise TypeError(
        f"{name} must be a whole number, a string or a list of whole numbers, not {value!r}"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _run(compiled: _Compiled, values: dict[str, Any]) -> list:
    params = list(compiled.params)
    for position, (name, index) in compiled.slots:
        params[position] = values[name] if index is None else values[name][index]
    connection = connections[compiled.db]
    if compiled.locks and connection.get_autocommit():
        # As the queryset itself refuses it: a lock outside a transaction is let go at once.
        raise TransactionManagementError(
            "select_for_update cannot be used outside of a transaction."
        )
    with connection.cursor() as cursor:
        cursor.execute(compiled.sql, params)
        rows = cursor.fetchall()
    if compiled.converters:
        rows = compiled.compiler.apply_converters(rows, compiled.converters)
    if compiled.model is None:
        return [tuple(row) for row in rows]
    found = []
    for row in rows:
        obj = compiled.model.from_db(compiled.db, compiled.init_list, row[compiled.model_columns])
        for populator in compiled.populators:
            populator.populate(row, obj)
        for name, position in compiled.annotations.items():
            setattr(obj, name, row[position])
        found.append(obj)
    return found


def prefetched_carry(instance: Model, name: str, related: list[Model]) -> None:
    """Carry `related` as `instance.<name>`'s rows, as `prefetch_related` carries them: its
    manager's `all()` then answers from them without a query. For rows read by a kept query,
    since a prefetch cannot be kept (the ORM would build and compile it at every call)."""
    manager = getattr(instance, name)
    cache_name = (
        getattr(manager, "prefetch_cache_name", None) or manager.field.remote_field.cache_name
    )
    carried = instance.__dict__.setdefault("_prefetched_objects_cache", {})
    carried.pop(cache_name, None)  # else get_queryset() would give the rows carried before
    # What Django's own prefetch (prefetch_one_level) leaves on the queryset and the instance:
    # the relation's queryset, evaluated.
    queryset = manager.get_queryset()
    queryset._result_cache = related
    queryset._prefetch_done = True
    carried[cache_name] = queryset
