"""The codebook editor: a draft version copied from a published one, edited, then published.

A published version never changes (its content hash is what studies and caches rely on), so a
change to a codebook is a new version: `codebook_draft_create` copies a published version into
new rows, each category remembering the row it came from (`Category.derived_from`). The editor
changes only draft rows. A category of the parent version that is no longer in the draft must be
accounted for before publishing: merged into another category, split into several, or removed
(`CategoryMapping`, declared by the manager); one kept in the draft needs nothing, renamed or
not. That mapping is how a study's labels follow it (labeling.services.codebook_migration).

Every function here refuses a published version with an ApplicationError and changes nothing
when it refuses (each runs in one transaction).
"""

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from common.exceptions import ApplicationError
from taxonomy.codebook_file import CATEGORY_MAX_DEPTH, KEY_PATTERN
from taxonomy.models import Category, CategoryMapping, Codebook, CodebookVersion, Dimension
from taxonomy.selectors import codebook_version_to_spec

Kind = CategoryMapping.Kind
MAX_TEXT = 20_000
MAX_EXAMPLES = 50


def _column_length(model: type, name: str) -> int:
    return model._meta.get_field(name).max_length


def _check_draft(version: CodebookVersion) -> None:
    if version.is_published:
        raise ApplicationError(
            f"Version {version.label} of {version.codebook.name} is published and cannot change; "
            "create a draft from it and edit the draft.",
            {"version": [f"{version.label} is published."]},
        )


def _locked_draft(version: CodebookVersion) -> CodebookVersion:
    """The version row locked for this transaction, refused when it is published: two editors
    (or an editor and a publish) take turns, and a publish cannot slip in between a check and a
    write."""
    locked = (
        CodebookVersion.objects.select_for_update(of=("self",))
        .select_related("codebook")
        .get(pk=version.pk)
    )
    _check_draft(locked)
    return locked


def _check_label(codebook: Codebook, label: str) -> str:
    label = (label or "").strip()
    limit = _column_length(CodebookVersion, "label")
    if not label:
        raise ApplicationError("Give the new version a label, e.g. 1.1.", {"label": ["empty"]})
    if len(label) > limit:
        raise ApplicationError(
            f"A version label has at most {limit} characters.", {"label": ["too long"]}
        )
    if CodebookVersion.objects.filter(codebook=codebook, label=label).exists():
        raise ApplicationError(
            f"{codebook.name} has a version {label} already; choose another label.",
            {"label": [f"{label} exists."]},
        )
    return label


# Drafts


@transaction.atomic
def codebook_draft_create(
    *, version: CodebookVersion, label: str, notes: str = ""
) -> CodebookVersion:
    """A draft copy of a published version (new rows), based on it, under a new label."""
    version = CodebookVersion.objects.select_related("codebook").get(pk=version.pk)
    if not version.is_published:
        raise ApplicationError(
            f"Version {version.label} is a draft itself: a draft starts from a published version.",
            {"version": [f"{version.label} is a draft."]},
        )
    draft = CodebookVersion.objects.create(
        codebook=version.codebook,
        label=_check_label(version.codebook, label),
        status=CodebookVersion.Status.DRAFT,
        content_hash="",
        description=version.description,
        metadata=version.metadata,
        notes=notes.strip(),
        based_on=version,
    )
    for dimension in version.dimensions.order_by("position"):
        copy = Dimension.objects.create(
            version=draft,
            key=dimension.key,
            name=dimension.name,
            description=dimension.description,
            multi_label=dimension.multi_label,
            required=dimension.required,
            ordinal=dimension.ordinal,
            applies_when=dimension.applies_when,
            position=dimension.position,
            metadata=dimension.metadata,
        )
        copies: dict[int, Category] = {}
        # In position order parents come before their children (the loader's order).
        for category in dimension.categories.order_by("position"):
            copies[category.id] = Category.objects.create(
                dimension=copy,
                parent=copies.get(category.parent_id),
                key=category.key,
                name=category.name,
                definition=category.definition,
                include=category.include,
                exclude=category.exclude,
                examples=category.examples,
                position=category.position,
                deprecated=category.deprecated,
                metadata=category.metadata,
                derived_from=category,
            )
    return draft


def codebook_draft_for_study_version(*, version: CodebookVersion) -> CodebookVersion | None:
    """The newest draft based on a version, or None."""
    return (
        version.derived_versions.filter(status=CodebookVersion.Status.DRAFT)
        .order_by("-created_at", "-id")
        .first()
    )


@transaction.atomic
def codebook_draft_update(
    *, version: CodebookVersion, label: str | None = None, notes: str | None = None
) -> CodebookVersion:
    version = _locked_draft(version)
    fields = ["updated_at"]
    if label is not None and label.strip() != version.label:
        version.label = _check_label(version.codebook, label)
        fields.append("label")
    if notes is not None:
        version.notes = notes.strip()
        fields.append("notes")
    version.save(update_fields=fields)
    return version


@transaction.atomic
def codebook_draft_discard(*, version: CodebookVersion) -> None:
    """Delete a draft: nothing labels against a draft, so nothing else is lost."""
    _locked_draft(version).delete()


# Dimensions


@transaction.atomic
def draft_dimension_update(
    *,
    dimension: Dimension,
    name: str | None = None,
    description: str | None = None,
    multi_label: bool | None = None,
    required: bool | None = None,
    ordinal: bool | None = None,
) -> Dimension:
    """A dimension's settings: single or multi-label, required, ordinal, its name and text."""
    _locked_draft(dimension.version)
    changes: dict[str, object] = {}
    if name is not None:
        changes["name"] = _name(name, Dimension)
    if description is not None:
        changes["description"] = _long_text(description, "description")
    for field_name, value in (
        ("multi_label", multi_label),
        ("required", required),
        ("ordinal", ordinal),
    ):
        if value is not None:
            changes[field_name] = bool(value)
    if changes.get("ordinal", dimension.ordinal) and changes.get(
        "multi_label", dimension.multi_label
    ):
        raise ApplicationError(
            f"{dimension.name}: an ordinal dimension is single-label (its categories are the "
            "steps of one scale).",
            {"ordinal": ["an ordinal dimension is single-label"]},
        )
    for field_name, value in changes.items():
        setattr(dimension, field_name, value)
    if changes:
        dimension.save(update_fields=list(changes))
    return dimension


# Categories


def _name(value: str, model: type) -> str:
    value = (value or "").strip()
    limit = _column_length(model, "name")
    if not value:
        raise ApplicationError("A name is needed.", {"name": ["empty"]})
    if len(value) > limit:
        raise ApplicationError(f"A name has at most {limit} characters.", {"name": ["too long"]})
    return value


def _long_text(value: str, field_name: str) -> str:
    value = (value or "").replace("\x00", "").strip()
    if len(value) > MAX_TEXT:
        raise ApplicationError(
            f"The {field_name} has at most {MAX_TEXT:,} characters ({len(value):,}).",
            {field_name: ["too long"]},
        )
    return value


def _key(value: str, dimension: Dimension, *, other_than: Category | None = None) -> str:
    value = (value or "").strip()
    limit = _column_length(Category, "key")
    if not KEY_PATTERN.match(value) or len(value) > limit:
        raise ApplicationError(
            f"{value[:40]!r} is not a key: lowercase letters, digits, _ and -, at most {limit} "
            "characters, starting with a letter or digit.",
            {"key": ["not a key"]},
        )
    taken = Category.objects.filter(dimension=dimension, key=value)
    if other_than is not None:
        taken = taken.exclude(pk=other_than.pk)
    if taken.exists():
        raise ApplicationError(
            f"{dimension.name} has a category {value!r} already; keys are unique in a dimension.",
            {"key": [f"{value} exists."]},
        )
    return value


def _examples(value: list[str] | str | None) -> list[str]:
    """Examples are issue references (owner/name#123) or links, one a line in a form."""
    if value is None:
        return []
    items = value.splitlines() if isinstance(value, str) else list(value)
    examples = [str(item).strip() for item in items if str(item).strip()]
    if len(examples) > MAX_EXAMPLES or any(len(example) > 500 for example in examples):
        raise ApplicationError(
            f"At most {MAX_EXAMPLES} examples of at most 500 characters each.",
            {"examples": ["too many or too long"]},
        )
    return examples


def _category_in(dimension: Dimension, key: str) -> Category:
    category = Category.objects.filter(dimension=dimension, key=key).first()
    if category is None:
        raise ApplicationError(
            f"{key!r} is not a category of {dimension.name} in version {dimension.version.label}.",
            {"category": [f"unknown category {key}"]},
        )
    return category


def _depth(category: Category | None) -> int:
    depth = 0
    while category is not None:
        depth += 1
        category = category.parent
    return depth


@transaction.atomic
def draft_category_add(
    *,
    dimension: Dimension,
    key: str,
    name: str,
    parent_key: str | None = None,
    definition: str = "",
    include: str = "",
    exclude: str = "",
    examples: list[str] | str | None = None,
) -> Category:
    """A new category of a draft, last among its siblings."""
    _locked_draft(dimension.version)
    parent = _category_in(dimension, parent_key) if parent_key else None
    if _depth(parent) >= CATEGORY_MAX_DEPTH:
        raise ApplicationError(f"Categories nest at most {CATEGORY_MAX_DEPTH} levels deep.")
    category = Category.objects.create(
        dimension=dimension,
        parent=parent,
        key=_key(key, dimension),
        name=_name(name, Category),
        definition=_long_text(definition, "definition"),
        include=_long_text(include, "include"),
        exclude=_long_text(exclude, "exclude"),
        examples=_examples(examples),
        position=(dimension.categories.aggregate(top=Max("position"))["top"] or 0) + 1,
    )
    _renumber(dimension)
    category.refresh_from_db()
    return category


@transaction.atomic
def draft_category_update(
    *,
    category: Category,
    key: str | None = None,
    name: str | None = None,
    definition: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    examples: list[str] | str | None = None,
    deprecated: bool | None = None,
) -> Category:
    """Rename a category (key and/or name), edit its texts and examples, deprecate it. A renamed
    category is the same category: labels follow it when a study moves to the new version."""
    _locked_draft(category.dimension.version)
    changes: dict[str, object] = {}
    if key is not None and key.strip() != category.key:
        changes["key"] = _key(key, category.dimension, other_than=category)
    if name is not None:
        changes["name"] = _name(name, Category)
    for field_name, value in (
        ("definition", definition),
        ("include", include),
        ("exclude", exclude),
    ):
        if value is not None:
            changes[field_name] = _long_text(value, field_name)
    if examples is not None:
        changes["examples"] = _examples(examples)
    if deprecated is not None:
        changes["deprecated"] = bool(deprecated)
    for field_name, value in changes.items():
        setattr(category, field_name, value)
    if changes:
        category.save(update_fields=list(changes))
    return category


@transaction.atomic
def draft_category_move(*, category: Category, parent_key: str | None) -> Category:
    """Put a category (with its sub-categories) under another parent, or at the top level;
    it goes last among its new siblings. A category cannot go under itself or its descendants:
    the tree would become a cycle."""
    _locked_draft(category.dimension.version)
    parent = _category_in(category.dimension, parent_key) if parent_key else None
    ancestor = parent
    while ancestor is not None:
        if ancestor.pk == category.pk:
            raise ApplicationError(
                f"{category.key} cannot go under {parent.key}: that is inside {category.key} "
                "itself, so the tree would become a cycle.",
                {"parent": ["cycle"]},
            )
        ancestor = ancestor.parent
    if _depth(parent) + _height(category) > CATEGORY_MAX_DEPTH:
        raise ApplicationError(f"Categories nest at most {CATEGORY_MAX_DEPTH} levels deep.")
    category.parent = parent
    category.position = (
        category.dimension.categories.aggregate(top=Max("position"))["top"] or 0
    ) + 1
    category.save(update_fields=["parent", "position"])
    _renumber(category.dimension)
    category.refresh_from_db()
    return category


def _height(category: Category) -> int:
    children = list(category.children.all())
    return 1 + max((_height(child) for child in children), default=0)


@transaction.atomic
def draft_category_reorder(*, category: Category, direction: str) -> Category:
    """Move a category one place up or down among its siblings."""
    _locked_draft(category.dimension.version)
    if direction not in ("up", "down"):
        raise ApplicationError("A category moves up or down.", {"direction": ["up or down"]})
    siblings = list(
        Category.objects.filter(dimension=category.dimension, parent=category.parent).order_by(
            "position"
        )
    )
    index = next(i for i, sibling in enumerate(siblings) if sibling.pk == category.pk)
    other = index - 1 if direction == "up" else index + 1
    if 0 <= other < len(siblings):
        siblings[index], siblings[other] = siblings[other], siblings[index]
        _renumber(category.dimension, sibling_order=[s.pk for s in siblings])
    category.refresh_from_db()
    return category


def _renumber(dimension: Dimension, sibling_order: list[int] | None = None) -> None:
    """Positions in tree order (each parent before its children, siblings in order), as the
    loader stores them and the pages read them. `sibling_order` overrides the order of one set
    of siblings."""
    categories = list(Category.objects.filter(dimension=dimension).order_by("position", "id"))
    rank = {pk: index for index, pk in enumerate(sibling_order or [])}
    children: dict[int | None, list[Category]] = {}
    for category in categories:
        children.setdefault(category.parent_id, []).append(category)
    for siblings in children.values():
        if rank and siblings[0].pk in rank:
            siblings.sort(key=lambda c: rank[c.pk])
    ordered: list[Category] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        category = stack.pop()
        ordered.append(category)
        stack.extend(reversed(children.get(category.id, [])))
    for position, category in enumerate(ordered):
        category.position = position
    Category.objects.bulk_update(ordered, ["position"])


# Merges, splits and removals: the mapping from the parent version to the draft


@dataclass
class MappingEntry:
    """One declared change: a category of the parent version (`from_key`) is merged into one
    category of the draft, split into several, or removed (no target)."""

    from_key: str
    kind: str
    to_keys: list[str] = field(default_factory=list)


@transaction.atomic
def draft_mapping_declare(
    *, dimension: Dimension, entries: list[MappingEntry]
) -> list[CategoryMapping]:
    """Declare merges, splits and removals of one dimension of a draft, all or nothing.

    `from_key` names a category of the version the draft is based on, `to_keys` categories of
    the draft. Refused, with nothing changed: a source that is not in the parent version, a
    target that is not in the draft, a category mapped twice in one declaration, a cycle (a
    merged into b and b into a), a merge without exactly one target, a split into fewer than
    two. A declaration replaces an earlier one of the same source. The draft rows of a merged
    or removed source go (their sub-categories move up to its parent), and so does a split
    source's row unless it is one of the parts.
    """
    draft = _locked_draft(dimension.version)
    parent_dimension = _parent_dimension(dimension, draft)
    errors: list[str] = []
    seen: dict[str, int] = {}
    sources: dict[str, Category] = {}
    targets: dict[str, Category] = {c.key: c for c in Category.objects.filter(dimension=dimension)}
    parents = {c.key: c for c in Category.objects.filter(dimension=parent_dimension)}
    for index, entry in enumerate(entries):
        place = f"mapping[{index}]"
        if entry.kind not in (Kind.MERGE, Kind.SPLIT, Kind.REMOVE):
            errors.append(f"{place}.kind: {entry.kind!r} is not merge, split or remove")
            continue
        if entry.from_key in seen:
            errors.append(
                f"{place}.from: {entry.from_key!r} is mapped twice "
                f"(also mapping[{seen[entry.from_key]}])"
            )
            continue
        seen[entry.from_key] = index
        source = parents.get(entry.from_key)
        if source is None:
            errors.append(
                f"{place}.from: {entry.from_key!r} is not a category of {dimension.name} in "
                f"version {draft.based_on.label}"
            )
            continue
        sources[entry.from_key] = source
        to_keys = list(dict.fromkeys(entry.to_keys))
        missing = [key for key in to_keys if key not in targets]
        if missing:
            errors.append(
                f"{place}.to: {', '.join(missing)} is not a category of {dimension.name} in "
                f"version {draft.label}"
            )
        if entry.kind == Kind.MERGE and len(to_keys) != 1:
            errors.append(f"{place}.to: a merge has exactly one target")
        if entry.kind == Kind.SPLIT and len(to_keys) < 2:
            errors.append(f"{place}.to: a split has two targets or more")
        if entry.kind == Kind.REMOVE and to_keys:
            errors.append(f"{place}.to: a removal has no target")
    cycle = _mapping_cycle(entries, targets)
    if cycle:
        errors.append(f"mapping: a cycle {' -> '.join(cycle)}")
    if errors:
        raise ApplicationError(
            "The mapping cannot be applied; nothing changed: " + "; ".join(errors),
            {"mapping": errors},
        )

    CategoryMapping.objects.filter(
        to_version=draft, from_category__in=list(sources.values())
    ).delete()
    created: list[CategoryMapping] = []
    for entry in entries:
        source = sources[entry.from_key]
        to_keys = list(dict.fromkeys(entry.to_keys))
        kept = {targets[key].pk for key in to_keys}
        for row in Category.objects.filter(dimension=dimension, derived_from=source):
            if row.pk not in kept:
                _remove_row(row)
        if entry.kind == Kind.REMOVE:
            created.append(
                CategoryMapping.objects.create(
                    from_category=source, to_category=None, kind=Kind.REMOVE, to_version=draft
                )
            )
        for key in to_keys:
            created.append(
                CategoryMapping.objects.create(
                    from_category=source,
                    to_category=targets[key],
                    kind=entry.kind,
                    to_version=draft,
                )
            )
    _renumber(dimension)
    return created


def _mapping_cycle(entries: list[MappingEntry], targets: dict[str, Category]) -> list[str]:
    """A cycle among the declared merges and splits, as keys (a -> b -> a), or []. A target is
    followed by its key and by the key of the parent category its row came from, so that
    "a into b, b into a" is a cycle whether or not b was renamed."""
    edges: dict[str, set[str]] = {}
    for entry in entries:
        if entry.kind == Kind.REMOVE:
            continue
        for key in entry.to_keys:
            target = targets.get(key)
            origin = target.derived_from.key if target and target.derived_from else key
            if origin != entry.from_key:  # a split that keeps its source as a part is no cycle
                edges.setdefault(entry.from_key, set()).add(origin)
    for start in edges:
        path = [start]
        stack = [(start, iter(sorted(edges.get(start, ()))))]
        on_path = {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                path.pop()
                continue
            if child == start:
                return [*path, start]
            if child in on_path or child not in edges:
                continue
            on_path.add(child)
            path.append(child)
            stack.append((child, iter(sorted(edges[child]))))
    return []


def _remove_row(row: Category) -> None:
    Category.objects.filter(parent=row).update(parent=row.parent_id)
    row.delete()


def _parent_dimension(dimension: Dimension, draft: CodebookVersion) -> Dimension:
    if draft.based_on_id is None:
        raise ApplicationError(
            f"Version {draft.label} is not based on another version: there is nothing to map from.",
        )
    parent = Dimension.objects.filter(version_id=draft.based_on_id, key=dimension.key).first()
    if parent is None:
        raise ApplicationError(f"{dimension.name} is new in version {draft.label}.")
    return parent


@transaction.atomic
def draft_category_merge(*, dimension: Dimension, source_keys: list[str], target_key: str) -> None:
    """Merge draft categories into another one of the draft (the editor's form). A source that
    came from the parent version is mapped onto the target; one new in the draft just goes."""
    _locked_draft(dimension.version)
    target = _category_in(dimension, target_key)
    entries = []
    for key in dict.fromkeys(source_keys):
        source = _category_in(dimension, key)
        if source.pk == target.pk:
            raise ApplicationError(f"{key} cannot be merged into itself.", {"source": ["itself"]})
        if source.derived_from_id is None:
            _remove_row(source)
        else:
            entries.append(MappingEntry(source.derived_from.key, Kind.MERGE, [target.key]))
    if entries:
        draft_mapping_declare(dimension=dimension, entries=entries)
    _renumber(dimension)


@transaction.atomic
def draft_category_split(
    *,
    dimension: Dimension,
    source_key: str,
    parts: list[tuple[str, str]],
    keep_source: bool = False,
) -> list[Category]:
    """Split a draft category into parts `[(key, name), ...]`: parts that exist are used, the
    others are created beside the source (under it when `keep_source`, which keeps the source
    as their parent). Labels of the source will be flagged for re-checking."""
    _locked_draft(dimension.version)
    source = _category_in(dimension, source_key)
    if source.derived_from_id is None:
        raise ApplicationError(
            f"{source_key} is new in this draft: nothing is labeled with it, so edit it instead "
            "of splitting it.",
        )
    if len({key for key, _ in parts}) < 2:
        raise ApplicationError("A split has two parts or more.", {"parts": ["two or more"]})
    made = []
    for key, name in parts:
        existing = Category.objects.filter(dimension=dimension, key=key.strip()).first()
        if existing is not None and existing.pk == source.pk:
            raise ApplicationError(f"{key} is the category being split.", {"parts": ["itself"]})
        made.append(
            existing
            or draft_category_add(
                dimension=dimension,
                key=key,
                name=name or key,
                parent_key=source.key
                if keep_source
                else (source.parent.key if source.parent else None),
            )
        )
    if not keep_source:
        # The parts take the source's place among its siblings.
        siblings = [
            category.pk
            for category in Category.objects.filter(
                dimension=dimension, parent=source.parent
            ).order_by("position")
            if category.pk not in {part.pk for part in made}
        ]
        at = siblings.index(source.pk) + 1
        siblings[at:at] = [part.pk for part in made if part.parent_id == source.parent_id]
        _renumber(dimension, sibling_order=siblings)
    # A source kept as the parts' parent stays in the draft (a target of its own split); its
    # labels are flagged all the same, for the annotators to pick a part.
    to_keys = [category.key for category in made] + ([source.key] if keep_source else [])
    draft_mapping_declare(
        dimension=dimension,
        entries=[MappingEntry(source.derived_from.key, Kind.SPLIT, to_keys)],
    )
    return made


@transaction.atomic
def draft_category_remove(*, category: Category) -> None:
    """Take a category out of a draft. One that came from the parent version is recorded as
    removed (its labels will be flagged for re-checking); its sub-categories move up."""
    _locked_draft(category.dimension.version)
    if category.derived_from_id is None:
        _remove_row(category)
        _renumber(category.dimension)
        return
    draft_mapping_declare(
        dimension=category.dimension,
        entries=[MappingEntry(category.derived_from.key, Kind.REMOVE, [])],
    )


# Publishing


def draft_problems(*, version: CodebookVersion) -> list[str]:
    """What stops a draft from being published, each in words; [] when it may be."""
    problems: list[str] = []
    if version.based_on_id is None:
        return problems
    dimensions = {d.key: d for d in version.dimensions.all()}
    declared = set(
        CategoryMapping.objects.filter(to_version=version).values_list(
            "from_category_id", flat=True
        )
    )
    kept = set(
        Category.objects.filter(dimension__version=version, derived_from__isnull=False).values_list(
            "derived_from_id", flat=True
        )
    )
    for parent_dimension in version.based_on.dimensions.order_by("position"):
        if parent_dimension.key not in dimensions:
            problems.append(f"dimension {parent_dimension.key} is missing from the draft")
            continue
        for category in parent_dimension.categories.order_by("position"):
            if category.id not in kept and category.id not in declared:
                problems.append(
                    f"{parent_dimension.key}.{category.key} of version {version.based_on.label} "
                    "is not in the draft: merge it, split it or mark it removed"
                )
    for dimension in dimensions.values():
        by_id = {c.id: c for c in dimension.categories.all()}
        for category in by_id.values():
            seen = {category.id}
            current = category
            while current.parent_id is not None:
                if current.parent_id in seen or current.parent_id not in by_id:
                    problems.append(f"{dimension.key}.{category.key}: its parents form a cycle")
                    break
                seen.add(current.parent_id)
                current = by_id[current.parent_id]
    return problems


@transaction.atomic
def codebook_draft_publish(*, version: CodebookVersion) -> CodebookVersion:
    """Check a draft, record its renames, compute its content hash and freeze it."""
    version = _locked_draft(version)
    problems = draft_problems(version=version)
    if problems:
        raise ApplicationError(
            f"Version {version.label} cannot be published yet: " + "; ".join(problems),
            {"problems": problems},
        )
    renamed = [
        CategoryMapping(
            from_category=category.derived_from,
            to_category=category,
            kind=Kind.RENAME,
            to_version=version,
        )
        for category in Category.objects.filter(
            dimension__version=version, derived_from__isnull=False
        ).select_related("derived_from")
        if (category.key, category.name) != (category.derived_from.key, category.derived_from.name)
        and not CategoryMapping.objects.filter(
            to_version=version, from_category=category.derived_from
        ).exists()
    ]
    CategoryMapping.objects.bulk_create(renamed)
    version.content_hash = codebook_version_to_spec(version=version).content_hash
    version.status = CodebookVersion.Status.PUBLISHED
    version.published_at = timezone.now()
    version.save(update_fields=["content_hash", "status", "published_at", "updated_at"])
    return version
