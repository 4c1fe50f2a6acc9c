"""export_codebook: JSON and YAML that load back to the same version, Markdown for a paper
(the tree with definitions, and a study's counts), and the refusals."""

import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from labeling.models import Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from taxonomy.codebook_file import codebook_parse
from tests.conftest import SCREENED_IN
from tests.taxonomy.conftest import SMALL_CODEBOOK


def export(capsys, *arguments) -> str:
    call_command("export_codebook", *arguments)
    return capsys.readouterr().out


def test_json_and_yaml_load_back_to_the_same_content(small_version, capsys):
    for printed in (
        json.loads(export(capsys, "Small")),
        json.loads(export(capsys, "Small", "--format", "json", "--version", "1.0")),
        yaml.safe_load(export(capsys, "Small", "--format", "yaml")),
        yaml.safe_load(export(capsys, "Small", "--yaml")),
    ):
        assert codebook_parse(printed).content_hash == small_version.content_hash


def test_markdown_has_the_tree_with_definitions(db, capsys):
    from taxonomy.services import codebook_load

    data = json.loads(json.dumps(SMALL_CODEBOOK))
    data["dimensions"][0]["categories"][0].update(
        include="calls with *wrong* arguments", exclude="bugs | inside", examples=["a/b#1"]
    )
    codebook_load(data=data, publish=True)
    markdown = export(capsys, "Small", "--format", "markdown")
    lines = markdown.splitlines()
    assert lines[0] == "# Small, version 1.0"
    assert "## Cause (`cause`)" in lines and "*single-label, required*" in lines
    assert "*multi-label, optional*" in lines
    assert (
        "- **API misuse** (`api`): Wrong use of an API. *Include:* calls with \\*wrong\\* "
        "arguments *Exclude:* bugs \\| inside *Examples:* a/b\\#1"
    ) in lines
    assert "- **Configuration** (`config`)" in lines
    assert "  - **Wrong default** (`default`)" in lines
    assert "labels:" not in markdown


def test_markdown_with_a_study_counts_labels_and_gold(study, people, capsys):
    item = study.items.order_by("id").first()
    for user in (people["annotator1"], people["annotator2"]):
        assignment_save(
            assignment=Assignment.objects.get(item=item, annotator=user),
            user=user,
            answers={k: DimensionAnswer(category_keys=v) for k, v in SCREENED_IN.items()},
            submit=True,
        )
    name = study.codebook_version.codebook.name
    markdown = export(capsys, name, "--format", "markdown", "--study", "demo")
    assert "Counts: submitted labels and gold labels of the study Demo." in markdown
    assert "(`api_misuse`)" in markdown
    api_line = next(line for line in markdown.splitlines() if "(`api_misuse`)" in line)
    assert api_line.endswith("— labels: 2, gold: 1")
    hang_line = next(line for line in markdown.splitlines() if "(`hang`)" in line)
    assert hang_line.endswith("— labels: 0, gold: 0")


def test_bad_options_are_command_errors(small_version, study, capsys):
    cases = [
        (["Small", "--format", "json", "--study", "demo"], "Markdown export only"),
        (["Small", "--format", "markdown", "--study", "nope"], "No study 'nope'"),
        (["Small", "--format", "markdown", "--study", "demo"], "does not use the codebook"),
        (["Small", "--format", "json", "--yaml"], "give one"),
        (["Small", "--version", "9.9"], "No version 9.9"),
        (["Nothing"], "No codebook named 'Nothing'"),
    ]
    for arguments, message in cases:
        with pytest.raises(CommandError, match=message):
            call_command("export_codebook", *arguments)
