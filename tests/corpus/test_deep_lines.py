"""A line nested deeper than any issue is a bad line like the others: reported with its number,
and the good lines around it stored (it once stopped the whole import with a RecursionError)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Issue
from tests.corpus.test_bad_lines import issue
from tests.corpus.test_issue_import import write_jsonl


def deep_line(depth: int, *, nul: bool = False) -> bytes:
    nested = "[" * depth + ('"\\u0000"' if nul else "") + "]" * depth
    return ('{"repository": "acme/trainer", "number": 2, "deep": ' + nested + "}").encode()


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        pytest.param(b"[" * 100_000, "not valid JSON: depth limit exceeded", id="100000 brackets"),
        pytest.param(deep_line(100_000), "not valid JSON: depth limit exceeded", id="in an issue"),
        # Under orjson's limit, but a NUL sends it through the cleaning, which recurses.
        pytest.param(
            deep_line(1_000, nul=True),
            "nests lists and objects too deeply to be stored",
            id="1000 levels and a NUL",
        ),
    ],
)
def test_a_deeply_nested_line_is_a_bad_line_and_the_others_are_stored(
    db, tmp_path, capsys, bad_line, message
):
    path = write_jsonl(tmp_path / "issues.jsonl", [issue(1), bad_line, issue(3)])
    call_command("import_issues", path)
    captured = capsys.readouterr()
    assert f"issues.jsonl:2: {message}" in captured.err
    assert "1 lines with errors" in captured.out
    assert sorted(Issue.objects.values_list("number", flat=True)) == [1, 3]


def test_a_deeply_nested_json_array_is_a_clear_error(db, tmp_path, capsys):
    path = tmp_path / "issues.json"
    path.write_bytes(b"[" * 100_000)
    with pytest.raises(CommandError, match="No issue could be imported"):
        call_command("import_issues", str(path))
    assert "issues.json:1: not a valid JSON array: depth limit exceeded" in capsys.readouterr().err
