"""The labeled dataset of a study: one row per item, as plain data (the JSONL row of DESIGN.md).

Rows are read in keyset chunks of item ids, each chunk in a fixed number of queries (items with
their issues, linked fixes, resolutions and, with raw labels, submitted annotations), so memory
stays flat however large the study; the writers of `exports.formats` take the iterator.

A row::

    {"issue": "owner/name#number", "repository", "system", "number", "url", "title", "state",
     "author", "created_at", "closed_at", "updated_at", "github_labels",
     "linked_fixes": [{"kind", "ref", "url", "merged_at", "files_changed", "additions",
                       "deletions"}],
     "fix_size": {"files_changed", "additions", "deletions"} | null,
     "study", "round": {"name", "kind"}, "item_status", "annotators_needed",
     "labels": {DIM: {"gold": [keys] | "not_applicable", "gold_parent": [keys] | "not_applicable",
                      "method": str | null}},
     "raw": {DIM: {annotator: [keys] | "not_applicable"}},  (with raw labels only)
     "raw_codebook_version": {annotator: label | null},     (with raw labels only)
     "codebook": {"name", "version", "hash"}, "sampling": {...}, "study_settings": {...}}

`method` is the stored Resolution.method (consensus, majority, adjudicated, discussion), null
while the dimension has no gold label. `raw` holds what each annotator submitted on every
dimension they stored, an empty list meaning "none applies"; an annotator without an answer on a
dimension is absent from it. A dimension that does not apply (`Dimension.applies_given`: root
cause of an issue screened out) is NOT_APPLICABLE ("not_applicable") in place of the list, with
a null method: in the gold labels when the gold labels of the dimensions it depends on rule it
out, in an annotator's raw labels when their own answers do, whatever was stored for it (the
labeling page clears such answers on submit; an annotation import may have kept some). The gold
labels and an annotator's may differ on it, e.g. while an item's screening is in dispute.
`raw_codebook_version` is the label of the codebook version under which each annotator of the
item submitted (Assignment.codebook_version; null for labels imported from a file). Pseudonyms
("annotator-01", ...) number the annotators in the order of their user ids, so they are the same
in every format of an export, and say nothing of the usernames.
"""

import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.contrib.auth import get_user_model
from django.db.models import Aggregate, Exists, Max, OuterRef, TextField, Value
from django.db.models.functions import Cast, Concat

from corpus.models import LinkedFix
from corpus.records import is_http_url
from exports.activity import study_activity_rows
from exports.formats import NOT_APPLICABLE, RAW_VERSION
from labeling.models import Assignment, Resolution, Round, Study, StudyItem
from labeling.selectors import study_dimensions
from taxonomy.models import Category, CodebookVersion, Dimension

# Items read at a time. Each chunk's queries may scan the joined tables (annotations, gold
# labels) whatever the chunk holds, so fewer, larger chunks were faster (100,000 items with raw
# labels: 2,000 a chunk spent 4.7 s in the database, 4,000 a chunk 2.6-3.6 s) for some 5 KB of
# memory per item held (5,000 a chunk took the web process's peak to the 150 MB goal).
CHUNK_SIZE = 4_000
# The first chunk is small, so that a streamed download's first bytes go out at once.
FIRST_CHUNK_SIZE = 500
FIX_SIZES = ("files_changed", "additions", "deletions")

# Times and the labels' JSON are read as text (see `_time`).
_AS_TEXT = {
    "created_text": Cast("issue__created_at", TextField()),
    "closed_text": Cast("issue__closed_at", TextField()),
    "updated_text": Cast("issue__updated_at", TextField()),
    "labels_text": Cast("issue__labels", TextField()),
}
_ITEM_FIELDS = (
    "id", "round_id", "status", "annotators_needed", "issue__repository__owner",
    "issue__repository__name", "issue__number", "issue__is_pull_request", "issue__title",
    "issue__state", "issue__author", *_AS_TEXT,
)  # fmt: skip


@dataclass
class DatasetShape:
    """What every row of a study's dataset shares, and what a tabular file needs before its
    first row: the dimensions and the annotators (the raw labels' columns)."""

    study: Study
    dimensions: list[str]
    # The exported annotator names in column order (pseudonyms when asked); None: no raw labels.
    annotators: list[str] | None
    codebook: dict[str, str]
    sampling: dict[str, Any]
    study_settings: dict[str, Any]
    total: int
    annotator_names: dict[int, str] = field(default_factory=dict)  # user id -> exported name
    # The study's activity log (exports.activity), oldest first; None in a pseudonymised export,
    # whose people's names it would give away.
    activity: list[dict[str, Any]] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """What a file may carry once for all rows (the Parquet file's key-value metadata)."""
        return {
            "study": self.study.slug,
            "codebook": self.codebook,
            "sampling": self.sampling,
            "study_settings": self.study_settings,
            **({"activity": self.activity} if self.activity is not None else {}),
        }


def dataset_shape(*, study: Study, raw: bool = False, pseudonymise: bool = False) -> DatasetShape:
    """The shape of a study's dataset (a few queries, none per item)."""
    version = study.codebook_version
    annotator_names: dict[int, str] = {}
    if raw:
        # Each person's first submitted assignment of the study, by the (annotator, item)
        # index, rather than a DISTINCT over every assignment of the study: the first byte of
        # 100,000 items came a third of a second sooner.
        submitted = Assignment.objects.filter(
            annotator=OuterRef("pk"), item__study=study, status=Assignment.Status.SUBMITTED
        )
        users = (
            get_user_model()
            .objects.filter(Exists(submitted))
            .order_by("id")
            .values_list("id", "username")
        )
        for position, (user_id, username) in enumerate(users, start=1):
            annotator_names[user_id] = f"annotator-{position:02d}" if pseudonymise else username
    rounds = [
        {
            "name": round_.name,
            "kind": round_.kind,
            "position": round_.position,
            "target_kappa": round_.target_kappa,
            # The pilot gate's targets of their own, by required dimension key.
            "dimension_targets": round_.dimension_targets or {},
        }
        for round_ in Round.objects.filter(study=study).order_by("position")
    ]
    return DatasetShape(
        study=study,
        dimensions=[dimension.key for dimension in study_dimensions(study=study)],
        annotators=list(annotator_names.values()) if raw else None,
        annotator_names=annotator_names,
        codebook={
            "name": version.codebook.name,
            "version": version.label,
            "hash": version.content_hash,
        },
        sampling=study.sampling or {},
        study_settings={
            "name": study.name,
            "description": study.description,
            "k": study.k,
            "blind": study.blind,
            "overlap": study.overlap,
            "preassign": study.preassign,
            "resolution_rule": study.resolution_rule,
            "required_dimensions": study.required_dimensions,
            "status": study.status,
            "rounds": rounds,
        },
        total=StudyItem.objects.filter(study=study).count(),
        activity=None if pseudonymise else study_activity_rows(study=study),
    )


class _Categories:
    """The study's categories, and the label lists of sets of them. Many items share one label
    set, so each list (and each gold entry) is made once and shared by the rows that have it:
    rows are read, never changed."""

    def __init__(self, study: Study) -> None:
        rows = list(
            Category.objects.filter(dimension__version_id=study.codebook_version_id)
            .order_by("dimension__position", "position")
            .values_list("id", "parent_id", "key")
        )
        parent = {category_id: parent_id for category_id, parent_id, _ in rows}
        self.key = {category_id: category_key for category_id, _, category_key in rows}
        self.top_key: dict[int, str] = {}  # the top-level ancestor's key (its own at the top)
        for category_id in self.key:
            top = category_id
            while parent[top] is not None:
                top = parent[top]
            self.top_key[category_id] = self.key[top]
        self.order = {category_id: index for index, (category_id, _, _) in enumerate(rows)}
        self._keys: dict[frozenset[int], list[str]] = {}
        self._gold: dict[tuple[str, frozenset[int]], dict[str, Any]] = {}

    def keys(self, ids: frozenset[int]) -> list[str]:
        """The keys of a set of categories, in codebook order."""
        keys = self._keys.get(ids)
        if keys is None:
            ordered = sorted(ids, key=self.order.__getitem__)
            keys = self._keys[ids] = [self.key[i] for i in ordered]
        return keys

    def gold(self, method: str, ids: frozenset[int]) -> dict[str, Any]:
        entry = self._gold.get((method, ids))
        if entry is None:
            ordered = sorted(ids, key=self.order.__getitem__)
            entry = self._gold[(method, ids)] = {
                "gold": self.keys(ids),
                "gold_parent": list(dict.fromkeys(self.top_key[i] for i in ordered)),
                "method": method,
            }
        return entry


@dataclass
class _Answers:
    """The raw labels of a chunk: item id -> dimension key (every one, in order) -> annotator
    -> keys or the marker, and item id -> annotator -> codebook version label (or None)."""

    labels: dict[int, dict[str, dict[str, list[str] | str]]]
    versions: dict[int, dict[str, str | None]]


UNRESOLVED = {"gold": [], "gold_parent": [], "method": None}
NOT_APPLICABLE_GOLD = {"gold": NOT_APPLICABLE, "gold_parent": NOT_APPLICABLE, "method": None}
NO_CATEGORY = frozenset[int]()
# The URLs the corpus stores for GitHub's fixes; anything else is checked the long way.
_GITHUB_FIX_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:pull|commit)/\w+")


def dimensions_not_applicable(
    dimensions: Sequence[Dimension], chosen: Mapping[str, Collection[str]]
) -> set[str]:
    """The keys of the dimensions that do not apply (`Dimension.applies_given`) given the
    category keys `chosen` per dimension key; a dimension absent from `chosen` (no gold label
    yet, no answer) rules nothing out. In codebook order, a dimension that does not apply
    counts as having no category for those that depend on it, whatever `chosen` holds for it."""
    settled = dict(chosen)
    ruled_out = set()
    for dimension in dimensions:
        if dimension.applies_when and not dimension.applies_given(settled):
            ruled_out.add(dimension.key)
            settled[dimension.key] = ()
    return ruled_out


class _RuledOut:
    """`dimensions_not_applicable` of the study's dimensions, remembered per answer to the
    dimensions that conditions name: items share a handful of those, and working each item's
    out again was half the time of an export with raw labels."""

    def __init__(self, dimensions: Sequence[Dimension]) -> None:
        self.dimensions = [d for d in dimensions if d.applies_when]
        named = {key for d in self.dimensions for key in d.applies_when}
        self.named = [d.key for d in dimensions if d.key in named] + sorted(
            named - {d.key for d in dimensions}
        )
        self._known: dict[tuple, frozenset[str]] = {}

    def __call__(self, chosen: Mapping[str, Collection[str]]) -> frozenset[str]:
        if not self.dimensions:
            return frozenset()
        # Only what the conditions read decides; a string (the marker) is kept as it is.
        answer = tuple([
            None if (keys := chosen.get(key)) is None else keys if isinstance(keys, str)
            else tuple(keys)
            for key in self.named
        ])  # fmt: skip
        ruled_out = self._known.get(answer)
        if ruled_out is None:
            ruled_out = self._known[answer] = frozenset(
                dimensions_not_applicable(self.dimensions, chosen)
            )
        return ruled_out


def dataset_rows(*, shape: DatasetShape, chunk_size: int = CHUNK_SIZE) -> Iterator[dict[str, Any]]:
    """The rows of the study's dataset, in item order, `chunk_size` items at a time (the first
    chunk at most FIRST_CHUNK_SIZE): four queries a chunk (three without raw labels), whatever
    the chunk holds."""
    study = shape.study
    dimensions = study_dimensions(study=study)
    dimension_key = {d.id: d.key for d in dimensions}
    ruled_out = _RuledOut(dimensions)
    categories = _Categories(study)
    rounds = {r.id: {"name": r.name, "kind": r.kind} for r in Round.objects.filter(study=study)}
    version_labels: dict[int, str] = (
        dict(
            CodebookVersion.objects.filter(
                codebook_id=study.codebook_version.codebook_id
            ).values_list("id", "label")
        )
        if shape.annotators is not None
        else {}
    )
    last_id = 0
    size = min(chunk_size, FIRST_CHUNK_SIZE)
    while True:
        items = list(
            StudyItem.objects.filter(study=study, id__gt=last_id)
            .order_by("id")
            .annotate(**_AS_TEXT)
            .values_list(*_ITEM_FIELDS)[:size]
        )
        if not items:
            return
        item_ids = {item[0] for item in items}
        first_id, last_id = items[0][0], items[-1][0]
        fixes = _fixes(study, (first_id, last_id))
        gold = _gold((first_id, last_id), item_ids, dimension_key, categories, ruled_out)
        answers = (
            _answers(
                (first_id, last_id),
                item_ids,
                shape,
                dimension_key,
                categories,
                ruled_out,
                version_labels,
            )
            if shape.annotators is not None
            else None
        )
        for item in items:
            yield _row(item, shape, rounds, fixes, gold, answers)
        if len(items) < size:
            return
        size = chunk_size
        # Let this chunk go before the next one is read, or both would be held at once.
        del items, fixes, gold, answers


def _time(text: str | None) -> datetime | None:
    """A time the database gave as text, in UTC. Reading times as text and parsing them here
    is several times faster than the driver's conversion, which was most of an export's time;
    SQLite's text has no zone (Django stores UTC there)."""
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _row(
    item: tuple,
    shape: DatasetShape,
    rounds: dict[int, dict[str, str]],
    fixes: dict[int, list[dict[str, Any]]],
    gold: dict[int, dict[str, dict[str, Any]]],
    answers: _Answers | None,
) -> dict[str, Any]:
    (
        item_id, round_id, status, annotators_needed, owner, name, number,
        is_pull_request, title, state, author, created_at, closed_at, updated_at, labels,
    ) = item  # fmt: skip
    item_fixes = fixes.get(item_id, [])
    item_gold = gold.get(item_id, {})
    row: dict[str, Any] = {
        "issue": f"{owner}/{name}#{number}",
        "repository": f"{owner}/{name}",
        "system": name,
        "number": number,
        "url": f"https://github.com/{owner}/{name}/{'pull' if is_pull_request else 'issues'}/"
        f"{number}",
        "title": title,
        "state": state,
        "author": author,
        "created_at": _time(created_at),
        "closed_at": _time(closed_at),
        "updated_at": _time(updated_at),
        "github_labels": orjson.loads(labels) if labels else [],
        "linked_fixes": item_fixes,
        "fix_size": _fix_size(item_fixes),
        "study": shape.study.slug,
        "round": rounds[round_id],
        "item_status": status,
        "annotators_needed": annotators_needed,
        "labels": {key: item_gold.get(key, UNRESOLVED) for key in shape.dimensions},
    }
    if answers is not None:
        item_answers = answers.labels.get(item_id)
        row["raw"] = item_answers or {key: {} for key in shape.dimensions}
        row[RAW_VERSION] = answers.versions.get(item_id, {})
    row["codebook"] = shape.codebook
    row["sampling"] = shape.sampling
    row["study_settings"] = shape.study_settings
    return row


def _fixes(study: Study, item_range: tuple[int, int]) -> dict[int, list[dict[str, Any]]]:
    """item id -> its issue's linked fixes, in one query (through the items, not a list of
    2,000 issue ids, which took longer to send than to answer)."""
    by_item: dict[int, list[dict[str, Any]]] = defaultdict(list)
    fields = ("issue__study_items__id", "kind", "ref", "url", "merged_text", *FIX_SIZES)
    for item_id, kind, ref, url, merged_at, *sizes in (
        LinkedFix.objects.filter(
            issue__study_items__study=study,
            issue__study_items__id__gte=item_range[0],
            issue__study_items__id__lte=item_range[1],
        )
        .order_by("issue_id", "kind", "ref")
        .annotate(merged_text=Cast("merged_at", TextField()))
        .values_list(*fields)
    ):
        by_item[item_id].append(
            {
                "kind": kind,
                "ref": ref,
                # Rows stored before URLs were checked may hold another scheme: never handed on.
                "url": url if _GITHUB_FIX_URL.fullmatch(url) or is_http_url(url) else "",
                "merged_at": _time(merged_at),
                **dict(zip(FIX_SIZES, sizes, strict=True)),
            }
        )
    return by_item


def _fix_size(fixes: list[dict[str, Any]]) -> dict[str, int | None] | None:
    """The sizes summed over the fixes; a size is null when a fix does not know it (a partial
    sum would understate it), and the whole is null without a fix or with no size known."""
    if not fixes:
        return None
    if len(fixes) == 1:  # most issues: the sizes are the one fix's
        sizes = {key: fixes[0][key] for key in FIX_SIZES}
        return None if all(value is None for value in sizes.values()) else sizes
    sizes = {
        key: None if any(fix[key] is None for fix in fixes) else sum(fix[key] for fix in fixes)
        for key in FIX_SIZES
    }
    return None if all(value is None for value in sizes.values()) else sizes


def _gold(
    item_range: tuple[int, int],
    item_ids: set[int],
    dimension_key: dict[int, str],
    categories: _Categories,
    ruled_out: _RuledOut,
) -> dict[int, dict[str, dict[str, Any]]]:
    """item id -> dimension key -> gold entry, in one query, with NOT_APPLICABLE_GOLD for the
    dimensions that the item's gold labels rule out (`ruled_out`). The items are found by
    their id range (a join to filter by study cost more than dropping the few rows of other
    studies)."""
    chosen: dict[tuple[int, str], tuple[str, set[int]]] = {}
    for item_id, dimension_id, method, category_id in (
        Resolution.objects.filter(item_id__gte=item_range[0], item_id__lte=item_range[1])
        .values_list("item_id", "dimension_id", "method", "categories")
        .order_by()
    ):
        key = dimension_key.get(dimension_id)
        if key is None or item_id not in item_ids:  # another version's dimension, or study
            continue
        entry = chosen.setdefault((item_id, key), (method, set()))
        if category_id is not None:
            entry[1].add(category_id)
    gold: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (item_id, key), (method, ids) in chosen.items():
        gold[item_id][key] = categories.gold(method, frozenset(ids))
    if ruled_out.dimensions:
        for entries in gold.values():
            chosen_keys = {key: entry["gold"] for key, entry in entries.items()}
            for key in ruled_out(chosen_keys):
                entries[key] = NOT_APPLICABLE_GOLD
    return gold


class _Pairs(dict[str, tuple[str, int | None, list[str]]]):
    """An answer's "dimension:category" text (`_answers`) -> (dimension key, category id or
    None for an empty answer, the keys of that category alone), worked out on first use: a
    study has a few hundred of them."""

    def __init__(self, dimension_key: dict[int, str], categories: _Categories) -> None:
        super().__init__()
        self.dimension_key = dimension_key
        self.categories = categories

    def __missing__(self, pair: str) -> tuple[str, int | None, list[str]]:
        dimension_id, _, category_id = pair.partition(":")
        key = self.dimension_key[int(dimension_id)]
        if not category_id:
            entry: tuple[str, int | None, list[str]] = (key, None, [])
        else:
            entry = (key, int(category_id), self.categories.keys(frozenset({int(category_id)})))
        self[pair] = entry
        return entry


class _Joined(Aggregate):
    """Its text expression's values in a group, joined by commas in no set order: GROUP_CONCAT
    in SQLite, STRING_AGG in PostgreSQL."""

    function = "GROUP_CONCAT"
    output_field = TextField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler,
            connection,
            function="STRING_AGG",
            template="%(function)s(%(expressions)s, ',')",
            **extra,
        )


def _answers(
    item_range: tuple[int, int],
    item_ids: set[int],
    shape: DatasetShape,
    dimension_key: dict[int, str],
    categories: _Categories,
    ruled_out: _RuledOut,
    version_labels: dict[int, str],
) -> _Answers:
    """The keys of the submitted annotations and the codebook version of their assignments, in
    one query, annotators in the order of their user ids; NOT_APPLICABLE where an annotator's
    own answers rule a dimension out (`ruled_out`, as in `_gold`).

    The database joins each assignment's answers into one text of "dimension:category" pairs
    ("dimension:" for an empty answer), so a row per annotator of an item comes back rather
    than one per category chosen (27 an item for 9 dimensions of 3 annotators): the query took
    a fourth of the time, and this function, most of an export with raw labels, less than
    half the CPU (10,000 items on SQLite)."""
    rows = (
        Assignment.objects.filter(
            item_id__gte=item_range[0],
            item_id__lte=item_range[1],
            status=Assignment.Status.SUBMITTED,
            annotations__dimension_id__in=list(dimension_key),
        )
        .order_by("item_id", "annotator_id")
        .values("item_id", "annotator_id")
        # One version per assignment; an aggregate, so that the grouping is the pair's index.
        .annotate(
            version_id=Max("codebook_version_id"),
            pairs=_Joined(
                Concat(
                    Cast("annotations__dimension_id", TextField()),
                    Value(":"),
                    Cast("annotations__categories", TextField()),
                    output_field=TextField(),
                )
            ),
        )
        .values_list("item_id", "annotator_id", "version_id", "pairs")
    )
    answers = _Answers(labels={}, versions={})
    names = shape.annotator_names
    known = _Pairs(dimension_key, categories)
    dimensions = shape.dimensions
    item_id_before = None
    labels: dict[str, dict[str, list[str] | str]] = {}
    versions: dict[str, str | None] = {}
    for item_id, annotator_id, version_id, pairs in rows:
        if item_id not in item_ids:  # an item of another study within the range
            continue
        if item_id != item_id_before:
            item_id_before = item_id
            labels = answers.labels[item_id] = {key: {} for key in dimensions}
            versions = answers.versions[item_id] = {}
        entries = [known[pair] for pair in pairs.split(",")]
        own = {key: keys for key, _, keys in entries}
        if len(own) < len(entries):  # a multi-label answer: its categories together
            chosen: dict[str, set[int]] = {}
            for key, category_id, _ in entries:
                ids = chosen.setdefault(key, set())
                if category_id is not None:
                    ids.add(category_id)
            own = {
                key: categories.keys(frozenset(ids)) if ids else [] for key, ids in chosen.items()
            }
        name = names[annotator_id]
        own_ruled_out = ruled_out(own)
        if own_ruled_out:
            for key, keys in own.items():
                labels[key][name] = NOT_APPLICABLE if key in own_ruled_out else keys
            for key in own_ruled_out - own.keys():
                labels[key][name] = NOT_APPLICABLE
        else:
            for key, keys in own.items():
                labels[key][name] = keys
        versions[name] = version_labels.get(version_id)
    return answers
