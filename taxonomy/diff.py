"""What became of each category between two versions of a codebook, and the diff built on it.

Versions made in the editor form a chain (`CodebookVersion.based_on`); each step maps the
categories of the earlier version onto the later one: a category kept in the later version (the
same row lineage, `Category.derived_from`) is kept or renamed, the others were merged, split or
removed as declared (`CategoryMapping`). Steps compose, so two versions any distance apart on a
chain map onto each other. Versions not on one chain (two files loaded side by side) are
compared by key: same key, same category.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from common.exceptions import ApplicationError
from taxonomy.models import Category, CategoryMapping, CodebookVersion, Dimension

KEEP, RENAME = "keep", "rename"
MERGE, SPLIT, REMOVE = (
    CategoryMapping.Kind.MERGE.value,
    CategoryMapping.Kind.SPLIT.value,
    CategoryMapping.Kind.REMOVE.value,
)
UNMAPPED = "unmapped"  # only in a draft: not in it, and nothing declared yet


@dataclass
class CategoryFate:
    """What a category of the earlier version became: `targets` are ids of categories of the
    later version (none when removed)."""

    kind: str
    targets: list[int] = field(default_factory=list)


def version_chain(
    *, from_version: CodebookVersion, to_version: CodebookVersion
) -> list[CodebookVersion] | None:
    """The versions after `from_version` up to `to_version`, oldest first, when `to_version`
    descends from it through `based_on`; [] for the same version; None otherwise."""
    chain: list[CodebookVersion] = []
    current: CodebookVersion | None = to_version
    seen: set[int] = set()
    while current is not None and current.pk != from_version.pk:
        if current.pk in seen:
            return None
        seen.add(current.pk)
        chain.append(current)
        current = current.based_on
    if current is None:
        return None
    return list(reversed(chain))


def version_step_mapping(*, version: CodebookVersion) -> dict[int, CategoryFate]:
    """How each category of `version.based_on` becomes categories of `version`."""
    if version.based_on_id is None:
        return {}
    declared: dict[int, CategoryFate] = {}
    for from_id, to_id, kind in CategoryMapping.objects.filter(to_version=version).values_list(
        "from_category_id", "to_category_id", "kind"
    ):
        if kind == RENAME:
            continue  # a rename is the lineage itself; the row only records it
        fate = declared.setdefault(from_id, CategoryFate(kind))
        if to_id is not None:
            fate.targets.append(to_id)
    lineage: dict[int, tuple[int, str, str]] = {
        derived_from: (category_id, key, name)
        for category_id, derived_from, key, name in Category.objects.filter(
            dimension__version=version, derived_from__isnull=False
        ).values_list("id", "derived_from_id", "key", "name")
    }
    fates: dict[int, CategoryFate] = {}
    for category_id, key, name in Category.objects.filter(
        dimension__version_id=version.based_on_id
    ).values_list("id", "key", "name"):
        if category_id in declared:
            fates[category_id] = declared[category_id]
        elif category_id in lineage:
            new_id, new_key, new_name = lineage[category_id]
            kind = KEEP if (new_key, new_name) == (key, name) else RENAME
            fates[category_id] = CategoryFate(kind, [new_id])
        else:
            fates[category_id] = CategoryFate(UNMAPPED)
    return fates


def version_mapping(
    *, from_version: CodebookVersion, to_version: CodebookVersion
) -> dict[int, CategoryFate]:
    """What each category of `from_version` became in `to_version`, composed over the chain of
    versions between them. A path through a removal ends there; a split anywhere makes a split,
    else a merge anywhere a merge; a category kept all along is a rename when its key or name
    differs at the end. ApplicationError when `to_version` does not descend from `from_version`.
    """
    chain = version_chain(from_version=from_version, to_version=to_version)
    if chain is None:
        raise ApplicationError(
            f"Version {to_version.label} does not descend from version {from_version.label}: "
            "there is no mapping between them.",
            {"version": ["not a later version of the same chain"]},
        )
    originals = {
        category_id: (key, name)
        for category_id, key, name in Category.objects.filter(
            dimension__version=from_version
        ).values_list("id", "key", "name")
    }
    paths: dict[int, tuple[set[str], set[int]]] = {
        category_id: (set(), {category_id}) for category_id in originals
    }
    for step in chain:
        step_fates = version_step_mapping(version=step)
        for kinds, targets in paths.values():
            reached: set[int] = set()
            for target in targets:
                fate = step_fates.get(target, CategoryFate(UNMAPPED))
                kinds.add(fate.kind)
                reached.update(fate.targets)
            targets.clear()
            targets.update(reached)
    final = {
        category_id: (key, name)
        for category_id, key, name in Category.objects.filter(
            dimension__version=to_version
        ).values_list("id", "key", "name")
    }
    fates: dict[int, CategoryFate] = {}
    for category_id, (kinds, targets) in paths.items():
        ordered = sorted(targets)
        if not targets:
            kind = UNMAPPED if UNMAPPED in kinds else REMOVE
        elif SPLIT in kinds or len(targets) > 1:
            kind = SPLIT
        elif MERGE in kinds:
            kind = MERGE
        else:
            kind = KEEP if final[ordered[0]] == originals[category_id] else RENAME
        fates[category_id] = CategoryFate(kind, ordered)
    return fates


def _by_key_mapping(
    from_version: CodebookVersion, to_version: CodebookVersion
) -> dict[int, CategoryFate]:
    later = {
        (dimension_key, key): (category_id, name)
        for category_id, dimension_key, key, name in Category.objects.filter(
            dimension__version=to_version
        ).values_list("id", "dimension__key", "key", "name")
    }
    fates = {}
    for category_id, dimension_key, key, name in Category.objects.filter(
        dimension__version=from_version
    ).values_list("id", "dimension__key", "key", "name"):
        match = later.get((dimension_key, key))
        if match is None:
            fates[category_id] = CategoryFate(REMOVE)
        else:
            fates[category_id] = CategoryFate(KEEP if match[1] == name else RENAME, [match[0]])
    return fates


TEXT_FIELDS = ("definition", "include", "exclude", "examples", "deprecated")
DIMENSION_FIELDS = ("name", "description", "multi_label", "required", "ordinal", "applies_when")


def codebook_diff(*, from_version: CodebookVersion, to_version: CodebookVersion) -> dict[str, Any]:
    """The changes from one version to another, per dimension: categories added, removed,
    renamed, moved (another parent), merged, split, with changed texts, and the dimension's
    changed settings. Plain data, for the page and the API alike. A merge names the categories
    merged (`from`), the target (`into`) and the target's key in the earlier version
    (`into_was`, null when the target is new)."""
    if from_version.codebook_id != to_version.codebook_id:
        raise ApplicationError(
            "A diff compares two versions of one codebook.",
            {"version": ["versions of different codebooks"]},
        )
    chain = version_chain(from_version=from_version, to_version=to_version)
    if chain is not None:
        fates = version_mapping(from_version=from_version, to_version=to_version)
        method = "mapping"
    else:
        fates = _by_key_mapping(from_version, to_version)
        method = "key"
    old_dimensions = _dimensions(from_version)
    new_dimensions = _dimensions(to_version)
    new_categories = {
        category.id: category for d in new_dimensions.values() for category in d.category_list
    }
    dimensions = []
    for key, new_dimension in new_dimensions.items():
        old_dimension = old_dimensions.get(key)
        old_categories = old_dimension.category_list if old_dimension else []
        dimensions.append(
            _dimension_diff(old_dimension, new_dimension, old_categories, new_categories, fates)
        )
    for key, old_dimension in old_dimensions.items():
        if key not in new_dimensions:
            dimensions.append({"key": key, "name": old_dimension.name, "removed_dimension": True})
    return {
        "codebook": from_version.codebook.name,
        "from": {"id": from_version.id, "label": from_version.label},
        "to": {"id": to_version.id, "label": to_version.label},
        "method": method,
        "dimensions": dimensions,
        "n_changes": sum(
            len(d.get(name, []))
            for d in dimensions
            for name in ("added", "removed", "renamed", "moved", "merged", "split", "changed")
        )
        + sum(1 for d in dimensions if d.get("settings") or d.get("removed_dimension")),
    }


def _dimensions(version: CodebookVersion) -> dict[str, Dimension]:
    dimensions = {}
    for dimension in Dimension.objects.filter(version=version).order_by("position"):
        dimension.category_list = []
        dimensions[dimension.key] = dimension
    by_id = {d.id: d for d in dimensions.values()}
    for category in Category.objects.filter(dimension__version=version).order_by("position"):
        by_id[category.dimension_id].category_list.append(category)
    return dimensions


def _dimension_diff(
    old_dimension: Dimension | None,
    new_dimension: Dimension,
    old_categories: list[Category],
    new_categories: dict[int, Category],
    fates: dict[int, CategoryFate],
) -> dict[str, Any]:
    old_by_id = {category.id: category for category in old_categories}
    mine = {category.id for category in new_dimension.category_list}
    reached: set[int] = set()
    diff: dict[str, Any] = {
        "key": new_dimension.key,
        "name": new_dimension.name,
        "added": [],
        "removed": [],
        "unmapped": [],
        "renamed": [],
        "moved": [],
        "merged": [],
        "split": [],
        "changed": [],
        "settings": {},
    }
    if old_dimension is None:
        diff["added_dimension"] = True
    else:
        for name in DIMENSION_FIELDS:
            before, after = getattr(old_dimension, name), getattr(new_dimension, name)
            if before != after:
                diff["settings"][name] = [before, after]
    merged_into: dict[int, list[str]] = defaultdict(list)
    for category in old_categories:
        fate = fates.get(category.id, CategoryFate(REMOVE))
        targets = [new_categories[t] for t in fate.targets if t in mine]
        reached.update(t.id for t in targets)
        if fate.kind in (REMOVE, UNMAPPED):
            diff["removed" if fate.kind == REMOVE else "unmapped"].append(
                {"key": category.key, "name": category.name}
            )
        elif fate.kind == SPLIT:
            diff["split"].append({"from": category.key, "into": [t.key for t in targets]})
        elif fate.kind == MERGE:
            merged_into[targets[0].id].append(category.key)
        else:
            target = targets[0]
            if fate.kind == RENAME:
                diff["renamed"].append(
                    {
                        "from": category.key,
                        "to": target.key,
                        "from_name": category.name,
                        "to_name": target.name,
                    }
                )
            old_parent = old_by_id.get(category.parent_id)
            expected_parent = _key_after(old_parent, fates, new_categories)
            new_parent = new_categories.get(target.parent_id)
            if expected_parent != (new_parent.key if new_parent else None):
                diff["moved"].append(
                    {
                        "key": target.key,
                        "from_parent": old_parent.key if old_parent else None,
                        "to_parent": new_parent.key if new_parent else None,
                    }
                )
            changed = [
                name for name in TEXT_FIELDS if getattr(category, name) != getattr(target, name)
            ]
            if changed:
                diff["changed"].append({"key": target.key, "fields": changed})
    for target_id, sources in merged_into.items():
        target = new_categories[target_id]
        # The category the target was in the earlier version (None: new in the later one) is
        # kept, not merged: it is named apart, or "merged a, b into b" would list b twice.
        was = next(
            (
                c.key
                for c in old_categories
                if fates.get(c.id, CategoryFate(REMOVE)).kind in (KEEP, RENAME)
                and fates[c.id].targets == [target_id]
            ),
            None,
        )
        diff["merged"].append({"from": sorted(sources), "into": target.key, "into_was": was})
    diff["added"] = [
        {
            "key": category.key,
            "name": category.name,
            "parent": new_categories[category.parent_id].key if category.parent_id else None,
        }
        for category in new_dimension.category_list
        if category.id not in reached
    ]
    return diff


def _key_after(
    category: Category | None, fates: dict[int, CategoryFate], new_categories: dict[int, Category]
) -> str | None:
    """The key a parent of the earlier version has in the later one (None: top level, or it
    did not survive as one category)."""
    if category is None:
        return None
    fate = fates.get(category.id)
    if fate is None or len(fate.targets) != 1 or fate.targets[0] not in new_categories:
        return None
    return new_categories[fate.targets[0]].key
