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
     "labels": {DIM: {"gold": [keys], "gold_parent": [keys], "method": str | null}},
     "raw": {DIM: {annotator: [keys]}},                      (with raw labels only)
     "codebook": {"name", "version", "hash"}, "sampling": {...}, "study_settings": {...}}

`method` is the stored Resolution.method (consensus, majority, adjudicated, discussion), null
while the dimension has no gold label. `raw` holds what each annotator submitted on every
dimension they stored, an empty list meaning "none applies"; an annotator without an answer on a
dimension is absent from it. Pseudonyms ("annotator-01", ...) number the annotators in the order
of their user ids, so they are the same in every format of an export, and say nothing of the
usernames.
"""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model

from corpus.models import LinkedFix
from corpus.records import is_http_url
from labeling.models import Annotation, Assignment, Resolution, Round, Study, StudyItem
from labeling.selectors import study_dimensions
from taxonomy.models import Category

CHUNK_SIZE = 2_000
FIX_SIZES = ("files_changed", "additions", "deletions")

_ITEM_FIELDS = (
    "id", "round_id", "status", "annotators_needed", "issue_id", "issue__repository__owner",
    "issue__repository__name", "issue__number", "issue__is_pull_request", "issue__title",
    "issue__state", "issue__author", "issue__created_at", "issue__closed_at",
    "issue__updated_at", "issue__labels",
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

    @property
    def metadata(self) -> dict[str, Any]:
        """What a file may carry once for all rows (the Parquet file's key-value metadata)."""
        return {
            "study": self.study.slug,
            "codebook": self.codebook,
            "sampling": self.sampling,
            "study_settings": self.study_settings,
        }


def dataset_shape(*, study: Study, raw: bool = False, pseudonymise: bool = False) -> DatasetShape:
    """The shape of a study's dataset (a few queries, none per item)."""
    version = study.codebook_version
    annotator_names: dict[int, str] = {}
    if raw:
        users = (
            get_user_model()
            .objects.filter(
                assignments__item__study=study,
                assignments__status=Assignment.Status.SUBMITTED,
            )
            .distinct()
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
    )


@dataclass(frozen=True)
class _Categories:
    key: dict[int, str]
    top_key: dict[int, str]  # the key of the category's top-level ancestor (itself at the top)
    order: dict[int, int]  # codebook order, to list keys as the codebook does


def _categories(study: Study) -> _Categories:
    rows = list(
        Category.objects.filter(dimension__version_id=study.codebook_version_id)
        .order_by("dimension__position", "position")
        .values_list("id", "parent_id", "key")
    )
    parent = {category_id: parent_id for category_id, parent_id, _ in rows}
    key = {category_id: category_key for category_id, _, category_key in rows}
    top_key = {}
    for category_id in key:
        top = category_id
        while parent[top] is not None:
            top = parent[top]
        top_key[category_id] = key[top]
    order = {category_id: index for index, (category_id, _, _) in enumerate(rows)}
    return _Categories(key=key, top_key=top_key, order=order)


def dataset_rows(*, shape: DatasetShape, chunk_size: int = CHUNK_SIZE) -> Iterator[dict[str, Any]]:
    """The rows of the study's dataset, in item order, `chunk_size` items at a time: four
    queries a chunk (three without raw labels), whatever the chunk holds."""
    study = shape.study
    dimension_key = {d.id: d.key for d in study_dimensions(study=study)}
    categories = _categories(study)
    rounds = {r.id: {"name": r.name, "kind": r.kind} for r in Round.objects.filter(study=study)}
    last_id = 0
    while True:
        items = list(
            StudyItem.objects.filter(study=study, id__gt=last_id)
            .order_by("id")
            .values_list(*_ITEM_FIELDS)[:chunk_size]
        )
        if not items:
            return
        first_id, last_id = items[0][0], items[-1][0]
        fixes = _fixes(issue_ids=[item[4] for item in items])
        gold = _gold(
            Resolution.objects.filter(
                item__study=study, item_id__gte=first_id, item_id__lte=last_id
            ),
            dimension_key,
            categories,
        )
        answers = (
            _answers(study, (first_id, last_id), shape, dimension_key, categories)
            if shape.annotators is not None
            else None
        )
        for item in items:
            yield _row(item, shape, rounds, fixes, gold, answers)
        if len(items) < chunk_size:
            return


def _row(
    item: tuple,
    shape: DatasetShape,
    rounds: dict[int, dict[str, str]],
    fixes: dict[int, list[dict[str, Any]]],
    gold: dict[int, dict[str, tuple[str, list[str], list[str]]]],
    answers: dict[int, dict[str, dict[str, list[str]]]] | None,
) -> dict[str, Any]:
    (
        item_id, round_id, status, annotators_needed, issue_id, owner, name, number,
        is_pull_request, title, state, author, created_at, closed_at, updated_at, labels,
    ) = item  # fmt: skip
    item_fixes = fixes.get(issue_id, [])
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
        "created_at": created_at,
        "closed_at": closed_at,
        "updated_at": updated_at,
        "github_labels": labels,
        "linked_fixes": item_fixes,
        "fix_size": _fix_size(item_fixes),
        "study": shape.study.slug,
        "round": rounds[round_id],
        "item_status": status,
        "annotators_needed": annotators_needed,
        "labels": {
            key: (
                {"gold": item_gold[key][1], "gold_parent": item_gold[key][2], "method": method}
                if (method := item_gold.get(key, (None,))[0])
                else {"gold": [], "gold_parent": [], "method": None}
            )
            for key in shape.dimensions
        },
    }
    if answers is not None:
        item_answers = answers.get(item_id, {})
        row["raw"] = {key: item_answers.get(key, {}) for key in shape.dimensions}
    row["codebook"] = shape.codebook
    row["sampling"] = shape.sampling
    row["study_settings"] = shape.study_settings
    return row


def _fixes(*, issue_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    by_issue: dict[int, list[dict[str, Any]]] = defaultdict(list)
    fields = ("issue_id", "kind", "ref", "url", "merged_at", *FIX_SIZES)
    for issue_id, kind, ref, url, merged_at, *sizes in (
        LinkedFix.objects.filter(issue_id__in=issue_ids)
        .order_by("issue_id", "kind", "ref")
        .values_list(*fields)
    ):
        by_issue[issue_id].append(
            {
                "kind": kind,
                "ref": ref,
                # Rows stored before URLs were checked may hold another scheme: never handed on.
                "url": url if is_http_url(url) else "",
                "merged_at": merged_at,
                **dict(zip(FIX_SIZES, sizes, strict=True)),
            }
        )
    return by_issue


def _fix_size(fixes: list[dict[str, Any]]) -> dict[str, int | None] | None:
    """The sizes summed over the fixes; a size is null when a fix does not know it (a partial
    sum would understate it), and the whole is null without a fix or with no size known."""
    if not fixes:
        return None
    sizes = {
        key: None if any(fix[key] is None for fix in fixes) else sum(fix[key] for fix in fixes)
        for key in FIX_SIZES
    }
    return None if all(value is None for value in sizes.values()) else sizes


def _keys(category_ids: set[int], categories: _Categories) -> list[str]:
    return [categories.key[i] for i in sorted(category_ids, key=categories.order.__getitem__)]


def _parents(category_ids: set[int], categories: _Categories) -> list[str]:
    ordered = sorted(category_ids, key=categories.order.__getitem__)
    return list(dict.fromkeys(categories.top_key[i] for i in ordered))


def _gold(
    resolutions, dimension_key: dict[int, str], categories: _Categories
) -> dict[int, dict[str, tuple[str, list[str], list[str]]]]:
    """item id -> dimension key -> (method, gold keys, top-level keys), in one query."""
    chosen: dict[tuple[int, str], tuple[str, set[int]]] = {}
    for item_id, dimension_id, method, category_id in resolutions.values_list(
        "item_id", "dimension_id", "method", "categories"
    ).order_by():
        key = dimension_key.get(dimension_id)
        if key is None:  # a dimension of another codebook version than the study's
            continue
        entry = chosen.setdefault((item_id, key), (method, set()))
        if category_id is not None:
            entry[1].add(category_id)
    gold: dict[int, dict[str, tuple[str, list[str], list[str]]]] = defaultdict(dict)
    for (item_id, key), (method, ids) in chosen.items():
        gold[item_id][key] = (method, _keys(ids, categories), _parents(ids, categories))
    return gold


def _answers(
    study: Study,
    item_range: tuple[int, int],
    shape: DatasetShape,
    dimension_key: dict[int, str],
    categories: _Categories,
) -> dict[int, dict[str, dict[str, list[str]]]]:
    """item id -> dimension key -> annotator -> keys of the submitted annotations, in one
    query, annotators in the order of their user ids."""
    chosen: dict[tuple[int, str, int], set[int]] = {}
    for item_id, annotator_id, dimension_id, category_id in (
        Annotation.objects.filter(
            assignment__item__study=study,
            assignment__item_id__gte=item_range[0],
            assignment__item_id__lte=item_range[1],
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .values_list(
            "assignment__item_id", "assignment__annotator_id", "dimension_id", "categories"
        )
        .order_by("assignment__annotator_id")
    ):
        key = dimension_key.get(dimension_id)
        if key is None:
            continue
        ids = chosen.setdefault((item_id, key, annotator_id), set())
        if category_id is not None:
            ids.add(category_id)
    answers: dict[int, dict[str, dict[str, list[str]]]] = defaultdict(dict)
    for (item_id, key, annotator_id), ids in chosen.items():
        name = shape.annotator_names[annotator_id]
        answers[item_id].setdefault(key, {})[name] = _keys(ids, categories)
    return answers
