"""A hostile codebook file is a clear error with its place, and nothing is stored: too deep,
too large, YAML aliases ("billion laughs"), strings over their columns (the same answer on
SQLite and PostgreSQL: run the module on both)."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from taxonomy.codebook_file import (
    CATEGORY_MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NESTING,
    CodebookFileError,
    codebook_file_read,
    codebook_parse,
)
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension
from taxonomy.services import codebook_load


def small() -> dict:
    return {
        "name": "tiny",
        "version": "1",
        "dimensions": [
            {
                "key": "root_cause",
                "name": "Root cause",
                "categories": [
                    {
                        "key": "config",
                        "name": "Configuration",
                        "children": [{"key": "config_zero", "name": "ZeRO config"}],
                    }
                ],
            }
        ],
    }


def nothing_stored() -> bool:
    return not (
        Codebook.objects.exists()
        or CodebookVersion.objects.exists()
        or Dimension.objects.exists()
        or Category.objects.exists()
    )


def load_file(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(CommandError) as raised:
        call_command("load_codebook", str(path))
    assert "nothing was stored" in str(raised.value)
    return str(raised.value)


def chain(depth: int) -> dict:
    """A category tree `depth` levels deep, as one chain."""
    tree: dict = {"key": f"c{depth}", "name": f"Level {depth}"}
    for level in range(depth - 1, 0, -1):
        tree = {"key": f"c{level}", "name": f"Level {level}", "children": [tree]}
    return tree


# ---------------------------------------------------------------- depth


def test_a_3000_deep_json_category_tree_is_an_error_with_its_place(db, tmp_path):
    data = small()
    data["dimensions"][0]["categories"] = "TREE"
    # Written out by hand: json.dumps itself recurses too deep for 3,000 levels.
    tree = "".join(f'{{"key": "c{level}", "name": "L", "children": [' for level in range(3000))
    tree += "]}" * 3000
    content = json.dumps(data).replace('"TREE"', f"[{tree}]")
    message = load_file(tmp_path, "deep.json", content.encode())
    assert f"nested deeper than {MAX_NESTING} levels" in message
    assert "line 1, column " in message
    assert nothing_stored()


def test_a_3000_deep_yaml_file_is_an_error_with_its_line(db, tmp_path):
    content = "name: tiny\ndimensions:\n  " + "[" * 3000 + "]" * 3000 + "\n"
    message = load_file(tmp_path, "deep.yaml", content.encode())
    assert f"nested deeper than {MAX_NESTING} levels" in message
    assert "line 3: nested deeper" in message
    assert nothing_stored()


def test_categories_deeper_than_the_cap_are_an_error_at_the_first_level_too_deep(db):
    data = small()
    data["dimensions"][0]["categories"] = [chain(CATEGORY_MAX_DEPTH + 1)]
    with pytest.raises(CodebookFileError) as raised:
        codebook_load(data=data)
    place = "dimensions[0].categories[0]" + ".children[0]" * CATEGORY_MAX_DEPTH
    assert raised.value.errors == [
        f"{place}: categories nest deeper than {CATEGORY_MAX_DEPTH} levels"
    ]
    assert nothing_stored()


def test_categories_at_the_cap_load(db):
    data = small()
    data["dimensions"][0]["categories"] = [chain(CATEGORY_MAX_DEPTH)]
    version, _ = codebook_load(data=data)
    assert Category.objects.filter(dimension__version=version).count() == CATEGORY_MAX_DEPTH


def test_deep_metadata_is_an_error_with_its_place(db):
    data = small()
    nested: dict = {}
    data["extra"] = nested
    for _ in range(MAX_NESTING + 5):
        nested["x"] = {}
        nested = nested["x"]
    with pytest.raises(CodebookFileError, match=r"^codebook\.extra(\.x)+: nested deeper than"):
        codebook_load(data=data)
    assert nothing_stored()


# ---------------------------------------------------------------- size and aliases

BILLION_LAUGHS = b"""\
name: laughs
version: "1"
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
dimensions:
  - key: laugh
    name: Laugh
    categories:
      - key: lol
        name: LOL
        examples: *h
"""


def test_billion_laughs_yaml_is_refused_and_nothing_stored(db, tmp_path):
    assert len(BILLION_LAUGHS) < 1000
    message = load_file(tmp_path, "laughs.yaml", BILLION_LAUGHS)
    assert "line 4: YAML aliases (*a) are not allowed" in message
    assert nothing_stored()


def test_a_merge_key_is_an_alias_too():
    content = "base: &base {name: x}\nname: tiny\nother:\n  <<: *base\n"
    with pytest.raises(CodebookFileError, match="line 4: YAML aliases"):
        codebook_file_read(content, filename="c.yaml")


def test_a_file_over_the_size_cap_is_refused(db, tmp_path):
    data = small()
    data["description"] = "x" * MAX_FILE_BYTES
    message = load_file(tmp_path, "big.json", json.dumps(data).encode())
    assert f"file is larger than {MAX_FILE_BYTES} bytes" in message
    with pytest.raises(CodebookFileError, match="file is larger than"):
        codebook_file_read(json.dumps(data))
    assert nothing_stored()


def test_a_json_file_with_brackets_inside_strings_is_not_too_deep():
    data = small()
    data["description"] = "[{" * (MAX_NESTING * 2) + '\\" ['
    assert codebook_file_read(json.dumps(data))["description"] == data["description"]


# ---------------------------------------------------------------- lengths


def over(model, field: str) -> str:
    return "x" * (model._meta.get_field(field).max_length + 1)


def at(model, field: str) -> str:
    return "x" * model._meta.get_field(field).max_length


def set_codebook_name(data: dict, value: str) -> None:
    data["name"] = value


def set_version(data: dict, value: str) -> None:
    data["version"] = value


def set_dimension_key(data: dict, value: str) -> None:
    data["dimensions"][0]["key"] = value


def set_dimension_name(data: dict, value: str) -> None:
    data["dimensions"][0]["name"] = value


def set_category_key(data: dict, value: str) -> None:
    data["dimensions"][0]["categories"][0]["children"][0]["key"] = value


def set_category_name(data: dict, value: str) -> None:
    data["dimensions"][0]["categories"][0]["children"][0]["name"] = value


LENGTH_CASES = [
    (set_codebook_name, Codebook, "name", "codebook.name"),
    (set_version, CodebookVersion, "label", "codebook.version"),
    (set_dimension_key, Dimension, "key", "dimensions[0].key"),
    (set_dimension_name, Dimension, "name", "dimensions[0].name"),
    (set_category_key, Category, "key", "dimensions[0].categories[0].children[0].key"),
    (set_category_name, Category, "name", "dimensions[0].categories[0].children[0].name"),
]


@pytest.mark.parametrize(("mutate", "model", "field", "place"), LENGTH_CASES)
def test_a_string_over_its_column_is_an_error_with_its_place(db, mutate, model, field, place):
    data = small()
    mutate(data, over(model, field))
    limit = model._meta.get_field(field).max_length
    with pytest.raises(CodebookFileError) as raised:
        codebook_load(data=data)
    assert raised.value.errors == [f"{place}: longer than {limit} characters ({limit + 1})"]
    assert nothing_stored()


@pytest.mark.parametrize(("mutate", "model", "field", "place"), LENGTH_CASES)
def test_a_string_as_long_as_its_column_is_stored_whole(db, mutate, model, field, place):
    data = small()
    value = at(model, field)
    mutate(data, value)
    version, _ = codebook_load(data=data)
    stored = {
        (Codebook, "name"): version.codebook.name,
        (CodebookVersion, "label"): version.label,
        (Dimension, "key"): version.dimensions.get().key,
        (Dimension, "name"): version.dimensions.get().name,
        (Category, "key"): Category.objects.filter(parent__isnull=False).get().key,
        (Category, "name"): Category.objects.filter(parent__isnull=False).get().name,
    }[(model, field)]
    assert stored == value


def test_every_length_error_of_a_file_is_reported_at_once():
    data = small()
    # All but the category's name: a category whose key is refused is not read further.
    cases = [case for case in LENGTH_CASES if case[0] is not set_category_name]
    for mutate, model, field, _ in cases:
        mutate(data, over(model, field))
    with pytest.raises(CodebookFileError) as raised:
        codebook_parse(data)
    assert [error.split(":")[0] for error in raised.value.errors] == [place for *_, place in cases]
