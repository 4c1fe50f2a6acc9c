import copy
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from taxonomy.codebook_file import (
    CodebookFileError,
    codebook_file_read,
    codebook_parse,
    codebook_spec_to_dict,
)
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension
from taxonomy.selectors import codebook_version_to_spec
from taxonomy.services import codebook_load
from tests.conftest import CODEBOOK_FILE


def starter() -> dict:
    return json.loads(CODEBOOK_FILE.read_text())


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
                    },
                    {"key": "api", "name": "API misuse", "source": "paper", "status": "proposed"},
                ],
            }
        ],
    }


def test_starter_codebook_has_nine_dimensions_and_its_categories(db):
    version, written = codebook_load(data=starter(), publish=True)
    assert written
    assert version.is_published
    assert Dimension.objects.filter(version=version).count() == 9
    total = sum(
        len(codebook_parse(starter()).dimensions[i].categories)
        for i in range(len(starter()["dimensions"]))
    )
    assert Category.objects.filter(dimension__version=version).count() == total
    assert total == 102
    # Provenance of each category is kept.
    assert all(
        c.metadata.get("source") for c in Category.objects.filter(dimension__version=version)
    )
    assert all(
        c.metadata.get("status") for c in Category.objects.filter(dimension__version=version)
    )


def test_round_trip_keeps_everything(db):
    data = starter()
    version, _ = codebook_load(data=data)
    exported = codebook_spec_to_dict(codebook_version_to_spec(version=version))
    assert codebook_parse(exported).content_hash == codebook_parse(data).content_hash
    assert exported["item_metadata"] == data["item_metadata"]
    # Loading the export again is a no-op.
    again, written = codebook_load(data=exported)
    assert again.pk == version.pk and not written


def test_tree_round_trip_keeps_parents(db):
    version, _ = codebook_load(data=small())
    child = Category.objects.get(dimension__version=version, key="config_zero")
    assert child.parent.key == "config"
    exported = codebook_spec_to_dict(codebook_version_to_spec(version=version))
    assert exported["dimensions"][0]["categories"][0]["children"][0]["key"] == "config_zero"
    assert exported["dimensions"][0]["categories"][1]["source"] == "paper"


def test_export_command_prints_a_loadable_file(db, capsys):
    codebook_load(data=small(), publish=True)
    call_command("export_codebook", "tiny")
    printed = json.loads(capsys.readouterr().out)
    assert codebook_parse(printed).content_hash == codebook_parse(small()).content_hash


def test_yaml_file_of_the_same_shape_loads(db, tmp_path):
    import yaml

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(small()))
    call_command("load_codebook", str(path))
    assert CodebookVersion.objects.get(codebook__name="tiny").label == "1"


@pytest.mark.parametrize(
    ("mutate", "place"),
    [
        (lambda d: d.pop("name"), "codebook.name"),
        (lambda d: d.update(name=""), "codebook.name"),
        (lambda d: d.update(dimensions="nope"), "codebook.dimensions"),
        (lambda d: d["dimensions"][0].update(multi_label="yes"), "dimensions[0].multi_label"),
        (
            lambda d: d["dimensions"][0]["categories"].append({"key": "config", "name": "Again"}),
            "dimensions[0].categories[2].key: duplicate category key 'config'",
        ),
        (
            lambda d: d["dimensions"][0]["categories"][0]["children"].append(
                {"key": "api", "name": "Dup in subtree"}
            ),
            "duplicate category key 'api'",
        ),
        (
            lambda d: d["dimensions"].append(copy.deepcopy(d["dimensions"][0])),
            "dimensions[1].key: duplicate dimension key",
        ),
        (
            lambda d: d["dimensions"][0]["categories"][1].update(examples="owner/repo#1"),
            "dimensions[0].categories[1].examples",
        ),
        (
            lambda d: d["dimensions"][0]["categories"][1].update(name=None),
            "dimensions[0].categories[1].name",
        ),
    ],
)
def test_bad_codebook_names_the_place_and_stores_nothing(db, mutate, place):
    data = small()
    mutate(data)
    with pytest.raises(CodebookFileError) as error:
        codebook_load(data=data)
    assert any(place in message for message in error.value.errors), error.value.errors
    assert not Codebook.objects.exists()
    assert not Category.objects.exists()


def test_category_cycle_in_a_flat_file_is_an_error(db):
    data = small()
    data["dimensions"][0]["categories"] = [
        {"key": "a", "name": "A", "parent": "b"},
        {"key": "b", "name": "B", "parent": "a"},
    ]
    with pytest.raises(CodebookFileError) as error:
        codebook_load(data=data)
    assert any("cycle" in message for message in error.value.errors)
    assert not Codebook.objects.exists()


def test_flat_file_with_parents_loads_as_a_tree(db):
    data = small()
    data["dimensions"][0]["categories"] = [
        {"key": "child", "name": "Child", "parent": "root"},
        {"key": "root", "name": "Root"},
    ]
    version, _ = codebook_load(data=data)
    assert Category.objects.get(dimension__version=version, key="child").parent.key == "root"


def test_duplicate_json_fields_are_an_error():
    with pytest.raises(CodebookFileError, match="duplicate field 'name'"):
        codebook_file_read(b'{"name": "a", "name": "b", "dimensions": []}')


def test_malformed_json_is_a_clear_command_error(db, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x", ')
    with pytest.raises(CommandError, match="not a valid codebook"):
        call_command("load_codebook", str(path))


def test_published_version_cannot_change(db):
    codebook_load(data=small(), publish=True)
    changed = small()
    changed["dimensions"][0]["name"] = "Cause"
    from common.exceptions import ApplicationError

    with pytest.raises(ApplicationError, match="published"):
        codebook_load(data=changed)
    assert Dimension.objects.get().name == "Root cause"


def test_draft_version_is_replaced_by_new_content(db):
    codebook_load(data=small())
    changed = small()
    changed["dimensions"][0]["name"] = "Cause"
    version, written = codebook_load(data=changed)
    assert written
    assert Dimension.objects.get(version=version).name == "Cause"
    assert CodebookVersion.objects.count() == 1


def test_applies_when_must_name_an_earlier_dimension_and_its_categories(db):
    data = small()
    data["dimensions"].append(
        {"key": "fix", "name": "Fix", "applies_when": {"root_cause": ["nope"]}, "categories": []}
    )
    with pytest.raises(CodebookFileError, match="unknown categories nope"):
        codebook_load(data=data)
    data["dimensions"][1]["applies_when"] = {"later": ["x"]}
    with pytest.raises(CodebookFileError, match="not a dimension defined before"):
        codebook_load(data=data)
    data["dimensions"][1]["applies_when"] = {"root_cause": ["api"]}
    version, _ = codebook_load(data=data)
    assert Dimension.objects.get(version=version, key="fix").applies_when == {"root_cause": ["api"]}
