"""A codebook file with a NUL or another control character in its text is a clear error with
the place of each, and nothing is stored: PostgreSQL stores no NUL (a DataError halfway through
the load before), and no codebook means the others. Tabs and line breaks stay welcome in
descriptions and notes, never in a name, key or version. Run the module on PostgreSQL."""

import json

import pytest
from django.core.management import call_command

from taxonomy.codebook_file import CodebookFileError, codebook_parse
from taxonomy.models import Category
from tests.security_inputs.test_codebook_limits import load_file, nothing_stored, small


def nul_in_category_name(codebook: dict) -> None:
    codebook["dimensions"][0]["categories"][0]["children"][0]["name"] = "ZeRO\x00config"


def nul_in_codebook_name(codebook: dict) -> None:
    codebook["name"] = "tiny\x00"


def escape_in_definition(codebook: dict) -> None:
    codebook["dimensions"][0]["categories"][0]["definition"] = "red \x1b[31mtext"


def nul_in_metadata(codebook: dict) -> None:
    codebook["source"] = {"paper": ["ok", "bad\x00"]}


def nul_in_a_field_name(codebook: dict) -> None:
    codebook["dimensions"][0]["notes\x00"] = "kept as metadata"


def line_break_in_dimension_name(codebook: dict) -> None:
    codebook["dimensions"][0]["name"] = "Root\ncause"


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (
            nul_in_category_name,
            "dimensions[0].categories[0].children[0].name: holds the control character U+0000",
        ),
        (nul_in_codebook_name, "codebook.name: holds the control character U+0000"),
        (
            escape_in_definition,
            "dimensions[0].categories[0].definition: holds the control character U+001B",
        ),
        (nul_in_metadata, "codebook.source.paper[1]: holds the control character U+0000"),
        (
            nul_in_a_field_name,
            "dimensions[0]: the field name 'notes\\x00' holds a control character",
        ),
        (line_break_in_dimension_name, "dimensions[0].name: holds the control character U+000A"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_control_character_is_an_error_with_its_place(db, tmp_path, mutate, error):
    codebook = small()
    mutate(codebook)
    # JSON writes the characters as \u0000 escapes, which the file's decoder turns back.
    message = load_file(tmp_path, "codebook.json", json.dumps(codebook).encode())
    assert error in message
    assert nothing_stored()


def test_every_control_character_of_a_file_is_reported_at_once():
    codebook = small()
    nul_in_codebook_name(codebook)
    nul_in_category_name(codebook)
    with pytest.raises(CodebookFileError) as raised:
        codebook_parse(codebook)
    assert len(raised.value.errors) == 2


def test_tabs_and_line_breaks_in_descriptions_and_notes_are_kept(db, tmp_path):
    codebook = small()
    text = "First line.\n\tIndented\r\nlast line."
    codebook["description"] = text
    codebook["dimensions"][0]["categories"][0]["definition"] = text
    codebook["dimensions"][0]["categories"][0]["examples"] = [text]
    path = tmp_path / "codebook.json"
    path.write_text(json.dumps(codebook))

    call_command("load_codebook", str(path))

    category = Category.objects.get(key="config")
    assert category.definition == text
    assert category.examples == [text]
