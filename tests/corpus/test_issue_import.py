import contextlib
import json
import multiprocessing
import os
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from corpus import services
from corpus.issue_import import issue_file_lines
from corpus.models import Issue, IssueComment, LinkedFix, Repository
from tests.conftest import SAMPLE_ISSUES_FILE


def sample_records() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_ISSUES_FILE.read_text().splitlines()]


def write_jsonl(path, lines: list) -> str:
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines)
        + b"\n"
    )
    return str(path)


def corpus_snapshot() -> dict:
    return {
        "issues": sorted(
            Issue.objects.values_list("repository__owner", "number", "title", "updated_at")
        ),
        "comments": sorted(IssueComment.objects.values_list("github_id", "body", "issue_id")),
        "fixes": sorted(LinkedFix.objects.values_list("issue_id", "kind", "ref")),
    }


def test_sample_imports_every_issue_comment_and_fix(db, capsys):
    call_command("import_issues", str(SAMPLE_ISSUES_FILE))
    records = sample_records()
    assert Issue.objects.count() == len(records) == 45
    assert Repository.objects.count() == 3
    assert IssueComment.objects.count() == sum(len(r["comments_data"]) for r in records)
    assert LinkedFix.objects.count() == sum(len(r["linked_fixes"]) for r in records)
    assert "45 issues created" in capsys.readouterr().out
    issue = Issue.objects.get(repository__owner="microsoft", number=7061)
    assert issue.body_html and "<script" not in issue.body_html
    assert issue.raw["html_url"].endswith("/7061")
    # Facets are extracted once, with the rendering, from the whole thread.
    assert "AttributeError" in issue.facets["exceptions"]
    assert {"name": "deepspeed", "version": "0.16.4"} in issue.facets["versions"]


def test_import_twice_changes_nothing(db, capsys):
    call_command("import_issues", str(SAMPLE_ISSUES_FILE))
    before = corpus_snapshot()
    call_command("import_issues", str(SAMPLE_ISSUES_FILE))
    assert corpus_snapshot() == before
    assert "0 issues created, 0 updated, 45 unchanged" in capsys.readouterr().out


def test_bad_lines_are_reported_and_good_lines_imported(db, tmp_path, capsys):
    good = sample_records()[:3]
    missing_title = dict(good[0], number=999_001)
    del missing_title["title"]
    bad_time = dict(good[0], number=999_002, created_at="yesterday")
    bad_comment = dict(good[0], number=999_003, comments_data=[{"body": "no id"}])
    path = write_jsonl(
        tmp_path / "mixed.jsonl",
        [good[0], b"{not json", missing_title, good[1], bad_time, bad_comment, b"[1, 2]", good[2]],
    )
    call_command("import_issues", path)
    captured = capsys.readouterr()
    assert Issue.objects.count() == 3
    assert ":2: not valid JSON" in captured.err
    assert ":3: title is missing" in captured.err
    assert ":5: created_at is not an ISO 8601 time" in captured.err
    assert ":6: comments_data[0].id is missing" in captured.err
    assert ":7: expected a JSON object" in captured.err
    assert "3 issues created" in captured.out and "5 lines with errors" in captured.out


def test_nul_bytes_are_stripped(db, tmp_path):
    record = sample_records()[0]
    record["title"] = "NUL\u0000 in title"
    record["body"] = "body with \u0000 NUL"
    record["comments_data"][0]["body"] = "comment \u0000"
    raw_line = json.dumps(record).encode().replace(b"NUL in", b"NUL\x00 in")
    call_command("import_issues", write_jsonl(tmp_path / "nul.jsonl", [raw_line]))
    issue = Issue.objects.get()
    assert "\x00" not in issue.title + issue.body
    assert issue.title == "NUL in title"
    assert all("\x00" not in c.body for c in issue.comments.all())


def test_a_one_megabyte_body_is_stored_whole(db, tmp_path):
    record = sample_records()[0]
    record["body"] = "Traceback (most recent call last):\n" + "  File x, line 1\n" * 60_000
    call_command("import_issues", write_jsonl(tmp_path / "big.jsonl", [record]))
    issue = Issue.objects.get()
    assert len(issue.body) == len(record["body"]) > 1_000_000
    assert issue.body_html.startswith("<p>")


def test_pull_requests_are_stored_as_pull_requests(db, tmp_path):
    record = sample_records()[0]
    record["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/1"}
    call_command("import_issues", write_jsonl(tmp_path / "pr.jsonl", [record]))
    assert Issue.objects.get().is_pull_request


def test_same_issue_twice_in_a_file_is_merged_newest_wins(db, tmp_path, capsys):
    older = sample_records()[0]
    newer = json.loads(json.dumps(older))
    newer["title"] = "edited title"
    newer["updated_at"] = "2030-01-01T00:00:00Z"
    newer["comments_data"] = newer["comments_data"][:1]
    call_command("import_issues", write_jsonl(tmp_path / "dup.jsonl", [newer, older]))
    issue = Issue.objects.get()
    assert issue.title == "edited title"
    assert issue.comments.count() == len(older["comments_data"])
    assert "1 duplicates merged" in capsys.readouterr().out


def test_an_edited_issue_updates_and_rerenders(db, tmp_path):
    record = sample_records()[0]
    call_command("import_issues", write_jsonl(tmp_path / "a.jsonl", [record]))
    record["body"] = "now **bold**"
    record["updated_at"] = "2030-01-01T00:00:00Z"
    call_command("import_issues", write_jsonl(tmp_path / "b.jsonl", [record]))
    issue = Issue.objects.get()
    assert "<strong>bold</strong>" in issue.body_html


def test_hostile_html_in_an_issue_is_neutralised(db, tmp_path):
    record = sample_records()[0]
    record["body"] = (
        '<script>alert(1)</script><img src="https://evil.example/x.png" onerror="alert(2)">'
        '<a href="javascript:alert(3)">x</a><iframe src="https://evil.example"></iframe>'
        '<p style="position:fixed" onclick="alert(4)">hi</p>'
    )
    call_command("import_issues", write_jsonl(tmp_path / "evil.jsonl", [record]))
    body_html = Issue.objects.get().body_html
    for forbidden in ("<script", "onerror", "javascript:", "<iframe", "onclick", "style=", "<img"):
        assert forbidden not in body_html
    assert 'href="https://evil.example/x.png"' in body_html  # the image became a link


def test_json_array_file_imports(db, tmp_path):
    path = tmp_path / "issues.json"
    path.write_text(json.dumps(sample_records()[:5]))
    call_command("import_issues", str(path))
    assert Issue.objects.count() == 5


def test_file_with_nothing_importable_is_an_error(db, tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No issue could be imported"):
        call_command("import_issues", write_jsonl(tmp_path / "junk.jsonl", [b"junk", b"{"]))


def rendered_snapshot() -> dict:
    return {
        "issues": sorted(
            Issue.objects.values_list("repository__owner", "number", "body_html", "facets")
        ),
        "comments": sorted(IssueComment.objects.values_list("github_id", "body_html")),
    }


@contextlib.contextmanager
def another_thread() -> Iterator[None]:
    """A second thread alive meanwhile, as in a web server's process."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize(
    ("workers", "threaded"), [(1, False), (2, False), (2, True)], ids=["one", "fork", "forkserver"]
)
def test_issues_stored_rendered_are_what_rendering_after_storing_gives(
    db, monkeypatch, workers, threaded
):
    # Small batches, so that several are rendered ahead, by worker processes with workers=2:
    # forked from this process, or from a fork server while another thread runs.
    monkeypatch.setattr(services, "BATCH_SIZE", 10)
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        services.issues_import(objects=issue_file_lines(stream), render=False)
    assert services.issue_texts_render(issue_ids=None) > 45
    rendered_after = rendered_snapshot()
    Issue.objects.all().delete()
    with another_thread() if threaded else contextlib.nullcontext():
        assert services._pool_context().get_start_method() == ("forkserver" if threaded else "fork")
        with SAMPLE_ISSUES_FILE.open("rb") as stream:
            report = services.issues_import(objects=issue_file_lines(stream), workers=workers)
    assert report.created == 45
    assert rendered_snapshot() == rendered_after
    assert services.issue_texts_render(issue_ids=None) == 0  # nothing was left to render


def test_an_import_renders_with_the_cores_and_alone_in_a_daemonic_process(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    assert services.import_workers() == min(cores, services.MAX_IMPORT_WORKERS)
    # A Celery prefork worker's task runs in a daemonic process: multiprocessing refuses it
    # children, so it renders alone.
    monkeypatch.setattr(multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    assert services.import_workers() == 1


def test_an_issue_that_loses_a_comment_to_a_later_line_is_rendered_again(db, tmp_path, monkeypatch):
    # A transferred issue keeps its comments' ids: in a file with both copies, the later line's
    # issue holds the comment, and the earlier issue's facets no longer read it.
    monkeypatch.setattr(services, "BATCH_SIZE", 1)
    first, second = (json.loads(json.dumps(record)) for record in sample_records()[:2])
    moved = dict(first["comments_data"][0], body="KeyError: 'moved'")
    first["comments_data"] = [moved]
    second["comments_data"] = [moved]
    second["repository_url"] = first["repository_url"]
    second["number"] = first["number"] + 1
    call_command("import_issues", write_jsonl(tmp_path / "moved.jsonl", [first, second]))
    earlier, later = Issue.objects.order_by("number")
    assert "KeyError" not in earlier.facets["exceptions"]
    assert later.facets["exceptions"][-1:] == ["KeyError"]
    assert IssueComment.objects.get(github_id=moved["id"]).issue == later


def test_an_import_looks_each_repository_up_once_and_a_later_id_still_counts(db, monkeypatch):
    # Batches of 2, of one repository: the first names it without GitHub's id of the repository,
    # a later one with it. The row is looked up for the first batch and for the id, not again.
    monkeypatch.setattr(services, "BATCH_SIZE", 2)
    records = [json.loads(json.dumps(record)) for record in sample_records()[:8]]
    for number, record in enumerate(records, start=1):
        record["repository_url"] = "https://api.github.com/repos/microsoft/DeepSpeed"
        record["repository"] = "microsoft/DeepSpeed"
        record["number"] = number
        del record["repository_id"]
    records[5]["repository_id"] = 235860204
    lookups = []
    looked_up = services._repository_for_record

    def counted(**kwargs):
        lookups.append(kwargs)
        return looked_up(**kwargs)

    monkeypatch.setattr(services, "_repository_for_record", counted)
    report = services.issues_import(objects=enumerate(records, start=1), workers=1)
    assert report.created == 8
    assert [lookup["github_id"] for lookup in lookups] == [None, 235860204]
    repository = Repository.objects.get()
    assert repository.github_id == 235860204
    assert Issue.objects.filter(repository=repository).count() == 8
