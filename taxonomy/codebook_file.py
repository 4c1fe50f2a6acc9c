"""The codebook file (JSON, or YAML of the same shape): parsing with errors that name the place,
and the normalised form that the services store and export.

No database here: a file in, plain data out. The only Django it touches is the models' column
lengths, so that a name too long for its column is an error with its place on SQLite (which
would store it whole) as on PostgreSQL (which would crash), not a difference between them.

A file is untrusted input, so its size and shape are bounded before anything is stored: at most
MAX_FILE_BYTES, nested at most MAX_NESTING levels, categories at most CATEGORY_MAX_DEPTH levels
deep, and no YAML aliases (a few hundred bytes of nested aliases expand to gigabytes: "billion
laughs"). A codebook needs none of these, nor any control character in its text (PostgreSQL
stores no NUL); tabs and line breaks are text in descriptions and notes.
"""

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from taxonomy.models import Category, Codebook, CodebookVersion, Dimension

KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")
MAX_FILE_BYTES = 2 * 1024 * 1024  # the starter codebook is about 60 KB
MAX_NESTING = 64  # lists and objects inside each other, the whole file
CATEGORY_MAX_DEPTH = 20  # a category and its ancestors
# PostgreSQL stores no NUL in text or JSON, and no codebook means any other control character;
# tabs and line breaks belong in descriptions and notes, but never in a name, key or version.
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
LINE_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
# The fields of one line, by the kind of object holding them.
ONE_LINE_FIELDS = {
    "codebook": {"name", "version"},
    "dimension": {"key", "name"},
    "category": {"key", "name", "parent"},
}
# Lists whose items are objects of a kind, by (kind of their holder, field).
NESTED_KINDS = {
    ("codebook", "dimensions"): "dimension",
    ("dimension", "categories"): "category",
    ("category", "children"): "category",
}

TOP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "version": (str, int, float),
    "description": str,
    "dimensions": list,
}
DIMENSION_FIELDS: dict[str, type | tuple[type, ...]] = {
    "key": str,
    "name": str,
    "description": str,
    "multi_label": bool,
    "required": bool,
    "ordinal": bool,
    "applies_when": dict,
    "categories": list,
}
CATEGORY_FIELDS: dict[str, type | tuple[type, ...]] = {
    "key": str,
    "name": str,
    "definition": str,
    "include": str,
    "exclude": str,
    "examples": list,
    "children": list,
    "parent": (str, type(None)),
    "deprecated": bool,
}


class CodebookFileError(ValueError):
    """A codebook file that cannot be loaded; `errors` lists each problem with its place."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass
class CategorySpec:
    key: str
    name: str
    parent_key: str | None
    definition: str = ""
    include: str = ""
    exclude: str = ""
    examples: list[str] = field(default_factory=list)
    deprecated: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class DimensionSpec:
    key: str
    name: str
    description: str = ""
    multi_label: bool = False
    required: bool = True
    ordinal: bool = False
    # Answered only when an earlier dimension has one of these categories, e.g.
    # {"screening": ["include"]}; otherwise neither required nor counted.
    applies_when: dict[str, list[str]] = field(default_factory=dict)
    categories: list[CategorySpec] = field(default_factory=list)  # parents before children
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class CodebookSpec:
    name: str
    version: str
    description: str = ""
    dimensions: list[DimensionSpec] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        canonical = json.dumps(codebook_spec_to_dict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise CodebookFileError([f"duplicate field {key!r} in one object"])
        seen[key] = value
    return seen


class _SafeLoaderWithoutAliases(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases: each one copies its anchor's whole subtree, so
    nested aliases grow exponentially (a 700-byte file became 80 MB of stored metadata)."""

    nesting = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise CodebookFileError(
                [
                    f"line {event.start_mark.line + 1}: YAML aliases (*{event.anchor}) are not "
                    "allowed in a codebook file; write the value out"
                ]
            )
        # The composer recurses once a level: stop before Python's stack does.
        if self.nesting >= MAX_NESTING:
            raise CodebookFileError(
                [f"line {event.start_mark.line + 1}: nested deeper than {MAX_NESTING} levels"]
            )
        self.nesting += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.nesting -= 1


_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_too_deep(content: str) -> str | None:
    """Where JSON text first nests deeper than MAX_NESTING ("line L, column C"), or None.

    Python's json module recurses once a level, so the nesting is measured on the text first.
    """
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(content):
        piece = match.group()
        if piece in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING:
                line = content.count("\n", 0, match.start()) + 1
                column = match.start() - content.rfind("\n", 0, match.start())
                return f"line {line}, column {column}"
        elif piece in ("]", "}"):
            depth -= 1
    return None


def codebook_file_read(content: bytes | str, *, filename: str = "") -> dict[str, Any]:
    """Decode a codebook file's bytes into a dict (JSON, or YAML when the name says so)."""
    too_large = CodebookFileError([f"file is larger than {MAX_FILE_BYTES} bytes"])
    if isinstance(content, bytes):
        if len(content) > MAX_FILE_BYTES:
            raise too_large
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise CodebookFileError([f"file is not UTF-8 ({error})"]) from error
    elif len(content.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise too_large
    content = content.replace("\x00", "")
    is_yaml = filename.endswith((".yaml", ".yml"))
    if not is_yaml and (place := _json_too_deep(content)) is not None:
        raise CodebookFileError([f"{place}: nested deeper than {MAX_NESTING} levels"])
    try:
        if is_yaml:
            data = yaml.load(content, Loader=_SafeLoaderWithoutAliases)  # noqa: S506 (safe)
        else:
            data = json.loads(content, object_pairs_hook=_reject_duplicate_keys)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise CodebookFileError([f"not valid {'YAML' if is_yaml else 'JSON'}: {error}"]) from error
    except RecursionError:
        # Python's decoders recurse once a level: thousands of brackets exhaust the stack.
        raise CodebookFileError(
            [f"the file nests lists and objects deeper than {MAX_NESTING} levels"]
        ) from None
    if not isinstance(data, dict):
        raise CodebookFileError(["the file must hold one object with name and dimensions"])
    return data


def _too_deep_place(data: Any) -> str | None:
    """The place of the first value nested deeper than MAX_NESTING, or None (no recursion)."""
    stack: list[tuple[Any, str, int]] = [(data, "codebook", 0)]
    while stack:
        value, place, depth = stack.pop()
        if isinstance(value, dict):
            children = [(child, f"{place}.{key}") for key, child in value.items()]
        elif isinstance(value, list):
            children = [(child, f"{place}[{index}]") for index, child in enumerate(value)]
        else:
            continue
        if depth + 1 > MAX_NESTING:
            return place
        stack.extend((child, child_place, depth + 1) for child, child_place in children)
    return None


def _control_character_errors(data: Any) -> list[str]:
    """A problem for each string of the file (names of fields too, metadata included) holding a
    control character, with its place; no recursion."""
    errors = []
    stack: list[tuple[Any, str, str | None, bool]] = [(data, "codebook", "codebook", False)]
    while stack:
        value, place, kind, one_line = stack.pop()
        if isinstance(value, str):
            found = (LINE_CONTROL_CHARACTER if one_line else CONTROL_CHARACTER).search(value)
            if found:
                errors.append(f"{place}: holds the control character U+{ord(found[0]):04X}")
        elif isinstance(value, dict):
            for key, child in reversed(value.items()):
                if isinstance(key, str) and LINE_CONTROL_CHARACTER.search(key):
                    errors.append(f"{place}: the field name {key!r} holds a control character")
                    continue
                # Places as the other errors name them: codebook.name, dimensions[0].key.
                child_place = (
                    key if place == "codebook" and key == "dimensions" else f"{place}.{key}"
                )
                stack.append(
                    (
                        child,
                        child_place,
                        NESTED_KINDS.get((kind, key)),
                        key in ONE_LINE_FIELDS.get(kind, ()),
                    )
                )
        elif isinstance(value, list):
            stack.extend(
                (child, f"{place}[{index}]", kind, False)
                for index, child in reversed(list(enumerate(value)))
            )
    return errors


def _column_lengths() -> dict[str, int]:
    """The longest text each column takes (the models are the one source of these limits)."""

    def length(model: Any, name: str) -> int:
        return model._meta.get_field(name).max_length

    return {
        "codebook.name": length(Codebook, "name"),
        "codebook.version": length(CodebookVersion, "label"),
        "dimension.key": length(Dimension, "key"),
        "dimension.name": length(Dimension, "name"),
        "category.key": length(Category, "key"),
        "category.name": length(Category, "name"),
    }


def _check_length(value: Any, limit: int, place: str, errors: list[str]) -> None:
    if isinstance(value, str) and len(value) > limit:
        errors.append(f"{place}: longer than {limit} characters ({len(value)})")


def _check_types(
    obj: Any, fields: dict[str, type | tuple[type, ...]], place: str, errors: list[str]
) -> bool:
    if not isinstance(obj, dict):
        errors.append(f"{place}: expected an object, got {type(obj).__name__}")
        return False
    for name, expected in fields.items():
        if name in obj and not isinstance(obj[name], expected):
            wanted = (
                expected.__name__
                if isinstance(expected, type)
                else " or ".join(t.__name__ for t in expected)
            )
            errors.append(f"{place}.{name}: expected {wanted}, got {type(obj[name]).__name__}")
    # bool is an int in Python; a version of `true` is a wrong type all the same.
    return True


def _metadata(obj: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key not in known}


def codebook_parse(data: dict[str, Any]) -> CodebookSpec:
    """Validate a decoded codebook file and return its normalised form.

    Raises CodebookFileError listing every problem, each with its place in the file
    (for example `dimensions[2].categories[0].children[1].key`).
    """
    too_deep = _too_deep_place(data)
    if too_deep is not None:
        raise CodebookFileError([f"{too_deep}: nested deeper than {MAX_NESTING} levels"])
    lengths = _column_lengths()
    errors = _control_character_errors(data)
    _check_types(data, TOP_FIELDS, "codebook", errors)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append("codebook.name: missing or empty")
    else:
        _check_length(name.strip(), lengths["codebook.name"], "codebook.name", errors)
    version = data.get("version", "1.0")
    if isinstance(version, bool):
        errors.append("codebook.version: expected str, got bool")
    elif isinstance(version, (str, int, float)):
        if not str(version).strip():
            errors.append("codebook.version: empty")
        _check_length(str(version).strip(), lengths["codebook.version"], "codebook.version", errors)
    dimensions_data = data.get("dimensions")
    if not isinstance(dimensions_data, list) or not dimensions_data:
        if "dimensions" not in data:
            errors.append("codebook.dimensions: missing")
        elif isinstance(dimensions_data, list):
            errors.append("codebook.dimensions: at least one dimension is needed")
        dimensions_data = []

    spec = CodebookSpec(
        name=str(name or "").strip(),
        version=str(version).strip(),
        description=data.get("description") if isinstance(data.get("description"), str) else "",
        metadata=_metadata(data, TOP_FIELDS),
    )
    dimension_keys: dict[str, str] = {}
    for index, dimension_data in enumerate(dimensions_data):
        place = f"dimensions[{index}]"
        if not _check_types(dimension_data, DIMENSION_FIELDS, place, errors):
            continue
        key = dimension_data.get("key")
        if not isinstance(key, str) or not KEY_PATTERN.match(key):
            errors.append(f"{place}.key: missing or not a key (lowercase letters, digits, _ and -)")
            key = f"__invalid_{index}"
        elif len(key) > lengths["dimension.key"]:
            _check_length(key, lengths["dimension.key"], f"{place}.key", errors)
        elif key in dimension_keys:
            errors.append(
                f"{place}.key: duplicate dimension key {key!r} (first at {dimension_keys[key]})"
            )
        else:
            dimension_keys[key] = place
        dim_name = dimension_data.get("name")
        if not isinstance(dim_name, str) or not dim_name.strip():
            errors.append(f"{place}.name: missing or empty")
        else:
            _check_length(dim_name.strip(), lengths["dimension.name"], f"{place}.name", errors)
        description = dimension_data.get("description", "")
        dimension = DimensionSpec(
            key=key,
            name=str(dim_name or "").strip(),
            description=description if isinstance(description, str) else "",
            multi_label=dimension_data.get("multi_label", False) is True,
            # An "Optional." description marks the optional dimensions of the starter codebook.
            required=dimension_data.get(
                "required",
                not (isinstance(description, str) and description.startswith("Optional")),
            )
            is True,
            ordinal=dimension_data.get("ordinal", False) is True,
            metadata=_metadata(dimension_data, DIMENSION_FIELDS),
        )
        categories_data = dimension_data.get("categories", [])
        if isinstance(categories_data, list):
            dimension.categories = _parse_categories(categories_data, place, errors, lengths)
            _check_scale_values(dimension, categories_data, place, errors)
        applies_when = dimension_data.get("applies_when", {})
        if isinstance(applies_when, dict):
            dimension.applies_when = _parse_condition(applies_when, spec.dimensions, place, errors)
        spec.dimensions.append(dimension)
    if errors:
        raise CodebookFileError(errors)
    return spec


def _check_scale_values(
    dimension: DimensionSpec, categories_data: list[Any], place: str, errors: list[str]
) -> None:
    """A category's `value` (kept in its metadata) is its number on an ordinal dimension's
    scale, for the interval and ratio alphas: a finite number, given for every category of the
    dimension or for none (positions 1..n then), and only on an ordinal dimension."""
    valued = [category for category in dimension.categories if "value" in category.metadata]
    if not valued:
        return
    if not dimension.ordinal:
        errors.append(f"{place}: `value` is for the categories of an ordinal dimension only")
        return
    for category in valued:
        number = category.metadata["value"]
        if isinstance(number, bool) or not isinstance(number, int | float):
            errors.append(f"{place}.categories ({category.key}).value: expected a number")
        elif not math.isfinite(number):
            errors.append(f"{place}.categories ({category.key}).value: expected a finite number")
    missing = [c.key for c in dimension.categories if "value" not in c.metadata]
    if missing:
        errors.append(
            f"{place}: `value` is given for some categories but not for {', '.join(missing)}: "
            "give every category a value, or none (positions 1..n)"
        )


def _parse_condition(
    condition: dict[str, Any], earlier: list[DimensionSpec], place: str, errors: list[str]
) -> dict[str, list[str]]:
    by_key = {dimension.key: dimension for dimension in earlier}
    parsed: dict[str, list[str]] = {}
    for dimension_key, category_keys in condition.items():
        where = f"{place}.applies_when.{dimension_key}"
        if dimension_key not in by_key:
            errors.append(f"{where}: not a dimension defined before this one")
            continue
        if not isinstance(category_keys, list) or not all(
            isinstance(key, str) for key in category_keys
        ):
            errors.append(f"{where}: expected a list of category keys")
            continue
        known = {category.key for category in by_key[dimension_key].categories}
        unknown = [key for key in category_keys if key not in known]
        if unknown:
            errors.append(f"{where}: unknown categories {', '.join(unknown)}")
            continue
        parsed[dimension_key] = list(category_keys)
    return parsed


def _parse_categories(
    categories_data: list[Any], dimension_place: str, errors: list[str], lengths: dict[str, int]
) -> list[CategorySpec]:
    """Flatten the category tree (nested `children`, or flat entries naming a `parent`)."""
    categories: list[CategorySpec] = []
    places: dict[str, str] = {}

    def visit(items: list[Any], place_prefix: str, parent_key: str | None, depth: int) -> None:
        for index, item in enumerate(items):
            place = f"{place_prefix}[{index}]"
            if depth > CATEGORY_MAX_DEPTH:
                errors.append(f"{place}: categories nest deeper than {CATEGORY_MAX_DEPTH} levels")
                return
            if not _check_types(item, CATEGORY_FIELDS, place, errors):
                continue
            key = item.get("key")
            if not isinstance(key, str) or not KEY_PATTERN.match(key):
                errors.append(
                    f"{place}.key: missing or not a key (lowercase letters, digits, _ and -)"
                )
                continue
            if len(key) > lengths["category.key"]:
                _check_length(key, lengths["category.key"], f"{place}.key", errors)
                continue
            if key in places:
                errors.append(
                    f"{place}.key: duplicate category key {key!r} (first at {places[key]})"
                )
                continue
            places[key] = place
            name = item.get("name")
            if not isinstance(name, str) or not name.strip():
                errors.append(f"{place}.name: missing or empty")
            else:
                _check_length(name.strip(), lengths["category.name"], f"{place}.name", errors)
            examples = item.get("examples", [])
            if isinstance(examples, list) and not all(isinstance(e, str) for e in examples):
                errors.append(f"{place}.examples: expected a list of strings")
                examples = []
            declared_parent = item.get("parent")
            if (
                declared_parent is not None
                and parent_key is not None
                and declared_parent != parent_key
            ):
                errors.append(
                    f"{place}.parent: {declared_parent!r} contradicts its nesting "
                    f"under {parent_key!r}"
                )
            categories.append(
                CategorySpec(
                    key=key,
                    name=str(name or "").strip(),
                    parent_key=parent_key if parent_key is not None else declared_parent,
                    definition=item.get("definition") or "",
                    include=item.get("include") or "",
                    exclude=item.get("exclude") or "",
                    examples=list(examples) if isinstance(examples, list) else [],
                    deprecated=item.get("deprecated", False) is True,
                    metadata=_metadata(item, CATEGORY_FIELDS),
                )
            )
            children = item.get("children", [])
            if isinstance(children, list):
                visit(children, f"{place}.children", key, depth + 1)

    visit(categories_data, f"{dimension_place}.categories", None, 1)

    by_key = {category.key: category for category in categories}
    for category in categories:
        if category.parent_key is not None and category.parent_key not in by_key:
            errors.append(
                f"{places[category.key]}.parent: unknown category {category.parent_key!r}"
            )
    # A flat file can name parents in a loop; walk up from each category to find one.
    for category in categories:
        seen = {category.key}
        current = category
        while current.parent_key is not None and current.parent_key in by_key:
            if current.parent_key in seen:
                errors.append(
                    f"{places[category.key]}.parent: category cycle through {current.parent_key!r}"
                )
                break
            seen.add(current.parent_key)
            current = by_key[current.parent_key]
    return _parents_first(categories)


def _parents_first(categories: list[CategorySpec]) -> list[CategorySpec]:
    """Order categories so that each parent comes before its children, keeping file order."""
    children: dict[str | None, list[CategorySpec]] = {}
    for category in categories:
        children.setdefault(category.parent_key, []).append(category)
    ordered: list[CategorySpec] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        category = stack.pop()
        ordered.append(category)
        stack.extend(reversed(children.get(category.key, [])))
    return ordered


def codebook_spec_to_dict(spec: CodebookSpec) -> dict[str, Any]:
    """The file form of a codebook (categories nested under their parents)."""
    return {
        "name": spec.name,
        "version": spec.version,
        "description": spec.description,
        **spec.metadata,
        "dimensions": [
            {
                "key": dimension.key,
                "name": dimension.name,
                "description": dimension.description,
                "multi_label": dimension.multi_label,
                "required": dimension.required,
                "ordinal": dimension.ordinal,
                **({"applies_when": dimension.applies_when} if dimension.applies_when else {}),
                **dimension.metadata,
                "categories": _nest(dimension.categories),
            }
            for dimension in spec.dimensions
        ],
    }


def _nest(categories: list[CategorySpec]) -> list[dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    for category in categories:
        node = {
            "key": category.key,
            "name": category.name,
            "definition": category.definition,
            "include": category.include,
            "exclude": category.exclude,
            "examples": category.examples,
            **({"deprecated": True} if category.deprecated else {}),
            **category.metadata,
            "children": [],
        }
        nodes[category.key] = node
        if category.parent_key is None:
            roots.append(node)
        else:
            nodes[category.parent_key]["children"].append(node)
    return roots


def _markdown_text(text: str) -> str:
    """One line of Markdown: the characters that would start markup are escaped, line breaks
    become spaces (a definition stays inside its list item)."""
    text = " ".join(str(text).split())
    return re.sub(r"([\\`*_{}\[\]<>#|])", r"\\\1", text)


def codebook_spec_to_markdown(
    spec: CodebookSpec,
    counts: dict[tuple[str, str], dict[str, int]] | None = None,
    counts_title: str = "",
) -> str:
    """The codebook as Markdown for a paper's appendix: per dimension its settings and the
    category tree with definitions, include and exclude notes and examples. `counts` maps
    (dimension key, category key) to {"labels": n, "gold": n} (a study's use of each category),
    shown after each category when given, under `counts_title`."""
    lines = [f"# {_markdown_text(spec.name)}, version {_markdown_text(spec.version)}", ""]
    if spec.description:
        lines += [_markdown_text(spec.description), ""]
    if counts is not None and counts_title:
        lines += [f"Counts: {_markdown_text(counts_title)}.", ""]
    for dimension in spec.dimensions:
        settings = [
            "multi-label" if dimension.multi_label else "single-label",
            "required" if dimension.required else "optional",
        ]
        if dimension.ordinal:
            settings.append("ordinal")
        if dimension.applies_when:
            settings.append(
                "applies when "
                + " and ".join(
                    f"{key} is {' or '.join(values)}"
                    for key, values in dimension.applies_when.items()
                )
            )
        lines += [
            f"## {_markdown_text(dimension.name)} (`{dimension.key}`)",
            "",
            f"*{_markdown_text(', '.join(settings))}*",
            "",
        ]
        if dimension.description:
            lines += [_markdown_text(dimension.description), ""]
        depth: dict[str, int] = {}
        for category in dimension.categories:
            depth[category.key] = depth[category.parent_key] + 1 if category.parent_key else 0
            text = f"**{_markdown_text(category.name)}** (`{category.key}`)"
            if category.deprecated:
                text += " *(deprecated)*"
            if category.definition:
                text += f": {_markdown_text(category.definition)}"
            if category.include:
                text += f" *Include:* {_markdown_text(category.include)}"
            if category.exclude:
                text += f" *Exclude:* {_markdown_text(category.exclude)}"
            if category.examples:
                text += " *Examples:* " + ", ".join(_markdown_text(e) for e in category.examples)
            if counts is not None:
                used = counts.get((dimension.key, category.key), {})
                text += f" — labels: {used.get('labels', 0)}, gold: {used.get('gold', 0)}"
            lines.append(f"{'  ' * depth[category.key]}- {text}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


EXPORT_FORMATS = ("json", "yaml", "markdown")


def codebook_spec_export(
    spec: CodebookSpec,
    export_format: str,
    counts: dict[tuple[str, str], dict[str, int]] | None = None,
    counts_title: str = "",
) -> str:
    """A version in one of EXPORT_FORMATS: the codebook file (JSON or YAML, which
    `load_codebook` reads back) or Markdown for a paper."""
    if export_format == "json":
        return json.dumps(codebook_spec_to_dict(spec), indent=2, ensure_ascii=False) + "\n"
    if export_format == "yaml":
        return yaml.safe_dump(codebook_spec_to_dict(spec), sort_keys=False, allow_unicode=True)
    if export_format == "markdown":
        return codebook_spec_to_markdown(spec, counts, counts_title)
    raise ValueError(f"unknown format {export_format!r}; one of {', '.join(EXPORT_FORMATS)}")
