"""Every kind of bad line is reported with its number and the field, and skipped; the good lines
around it, in the same batch and in other batches, are stored. The parser mirrors the columns'
limits, so these hold alike on SQLite and PostgreSQL (run the module on both)."""

import json

import pytest
from django.core.management import call_command

from corpus import services
from corpus.models import Issue, IssueComment, LinkedFix, Repository
from tests.corpus.test_issue_import import write_jsonl

INTEGER_MAX = 2**31 - 1
BIG_INTEGER_MAX = 2**63 - 1


def issue(number: int, **changes) -> dict:
    """A GitHub issue object of the import format, with one comment and one fix."""
    obj = {
        "repository": "acme/trainer",
        "number": number,
        "id": 10_000 + number,
        "title": f"Issue {number}",
        "body": "Loss is NaN",
        "state": "closed",
        "state_reason": "completed",
        "user": {"login": "alice"},
        "labels": [{"name": "bug"}],
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-02T00:00:00Z",
        "closed_at": "2024-01-02T00:00:00Z",
        "comments": 1,
        "comments_data": [
            {
                "id": 50_000 + number,
                "user": {"login": "bob"},
                "body": "same here",
                "created_at": "2024-01-01T12:00:00Z",
            }
        ],
        "linked_fixes": [{"kind": "pr", "ref": str(1000 + number), "additions": 3}],
    }
    obj.update(changes)
    return obj


def with_fix(**fields) -> dict:
    return {"linked_fixes": [{"kind": "pr", "ref": "77", **fields}]}


def with_comment(**fields) -> dict:
    comment = {"id": 60_000, "body": "x", "created_at": "2024-01-01T00:00:00Z", **fields}
    return {"comments_data": [comment]}


def line_with_lone_surrogate(number: int, where: str) -> bytes:
    """A line whose JSON holds the escape \\ud800 (valid JSON, not Unicode text) at `where`."""
    obj = issue(number)
    if where == "body":
        obj["body"] = "SURROGATE"
    elif where == "comment":
        obj["comments_data"][0]["body"] = "SURROGATE"
    else:
        obj["milestone"] = {"title": "SURROGATE"}
    return json.dumps(obj).replace("SURROGATE", "before \\ud800 after").encode()


# (name, the bad line for number 2, what the error says after ":2: ")
BAD_LINES = [
    ("negative additions", issue(2, **with_fix(additions=-1)),
     "linked_fixes[0].additions must be between 0 and 2147483647, not -1"),
    ("negative deletions", issue(2, **with_fix(deletions=-5)),
     "linked_fixes[0].deletions must be between 0 and 2147483647"),
    ("additions over 2^31", issue(2, **with_fix(additions=INTEGER_MAX + 1)),
     "linked_fixes[0].additions must be between 0 and 2147483647, not 2147483648"),
    ("files_changed over 2^31", issue(2, **with_fix(files_changed=2**40)),
     "linked_fixes[0].files_changed must be between 0 and 2147483647"),
    ("number over 2^31", issue(INTEGER_MAX + 1),
     "number must be between 1 and 2147483647, not 2147483648"),
    ("number zero", issue(0), "number must be between 1 and 2147483647, not 0"),
    ("number true", {**issue(2), "number": True}, "number must be an integer, not True"),
    ("number 2.0", {**issue(2), "number": 2.0}, "number must be an integer, not 2.0"),
    ("comments count over 2^31", issue(2, comments=INTEGER_MAX + 1),
     "comments must be between 0 and 2147483647"),
    ("comments count negative", issue(2, comments=-1), "comments must be between 0"),
    ("github id over 2^63", issue(2, id=BIG_INTEGER_MAX + 1),
     f"id must be between 1 and {BIG_INTEGER_MAX}, not {BIG_INTEGER_MAX + 1}"),
    ("comment id over 2^63", issue(2, **with_comment(id=BIG_INTEGER_MAX + 1)),
     f"comments_data[0].id must be between 1 and {BIG_INTEGER_MAX}"),
    ("year 1 with an offset", issue(2, created_at="0001-01-01T00:00:00+05:00"),
     "created_at is outside the years 1 to 9999 in UTC"),
    ("year 9999 with an offset", issue(2, closed_at="9999-12-31T23:00:00-05:00"),
     "closed_at is outside the years 1 to 9999 in UTC"),
    ("comment time out of range", issue(2, **with_comment(updated_at="0001-01-01T01:00+02:00")),
     "comments_data[0].updated_at is outside the years 1 to 9999"),
    ("fix time out of range", issue(2, **with_fix(merged_at="9999-12-31T23:59:59-00:01")),
     "linked_fixes[0].merged_at is outside the years 1 to 9999"),
    ("time without a zone", issue(2, updated_at="2024-01-02T00:00:00"),
     "updated_at has no time zone"),
    ("owner over 100 characters", issue(2, repository="o" * 101 + "/trainer"),
     "repository has an owner longer than 100 characters"),
    ("name over 100 characters", issue(2, repository="acme/" + "n" * 101),
     "repository has a name longer than 100 characters"),
    ("name over 100 characters in repository_url",
     {**{k: v for k, v in issue(2).items() if k != "repository"},
      "repository_url": "https://api.github.com/repos/acme/" + "n" * 101},
     "repository_url has a name longer than 100 characters"),
    ("login over 100 characters", issue(2, user={"login": "u" * 101}),
     "user.login is longer than 100 characters"),
    ("comment login over 100 characters", issue(2, **with_comment(user={"login": "u" * 101})),
     "comments_data[0].user.login is longer than 100 characters"),
    ("fix ref over 100 characters", issue(2, **with_fix(ref="f" * 101)),
     "linked_fixes[0].ref is longer than 100 characters"),
    ("fix url over 500 characters", issue(2, **with_fix(url="https://x/" + "u" * 500)),
     "linked_fixes[0].url is longer than 500 characters"),
    ("two comments with one id", issue(2, comments_data=[
        {"id": 7, "body": "a", "created_at": "2024-01-01T00:00:00Z"},
        {"id": 8, "body": "b", "created_at": "2024-01-01T00:00:00Z"},
        {"id": 7, "body": "c", "created_at": "2024-01-01T00:00:00Z"},
    ]), "comments_data[2].id 7 repeats comments_data[0]"),
    ("two identical fixes", issue(2, linked_fixes=[
        {"kind": "commit", "ref": "abc"}, {"kind": "commit", "ref": "abc"},
    ]), "linked_fixes[1] (commit abc) repeats linked_fixes[0]"),
    ("labels as a string", issue(2, labels="bug"), "labels must be a list"),
    ("a label without a name", issue(2, labels=[{"color": "red"}]), "labels[0] has no name"),
    ("lone surrogate in the body", line_with_lone_surrogate(2, "body"),
     "body holds a lone surrogate (\\ud800)"),
    ("lone surrogate in a comment", line_with_lone_surrogate(2, "comment"),
     "comments_data[0].body holds a lone surrogate"),
    ("lone surrogate elsewhere in the object", line_with_lone_surrogate(2, "raw"),
     "milestone.title holds a lone surrogate"),
    ("integer beyond 64 bits elsewhere in the object",
     # NaN sends the line to the standard library's parser, which keeps the big integer.
     json.dumps(issue(2, reactions={"total_count": 2**70}, score="NAN"))
     .replace('"NAN"', "NaN").encode(),
     "reactions.total_count is an integer beyond 64 bits"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [pytest.param(line, message, id=name) for name, line, message in BAD_LINES],
)
def test_a_bad_line_is_reported_with_its_number_and_field_and_the_good_lines_are_stored(
    db, tmp_path, capsys, bad_line, message
):
    path = write_jsonl(tmp_path / "issues.jsonl", [issue(1), bad_line, issue(3)])
    call_command("import_issues", path)
    captured = capsys.readouterr()
    assert f"issues.jsonl:2: {message}" in captured.err
    assert "1 lines with errors" in captured.out
    assert sorted(Issue.objects.values_list("number", flat=True)) == [1, 3]
    assert IssueComment.objects.count() == 2 and LinkedFix.objects.count() == 2
    assert Repository.objects.get().full_name == "acme/trainer"


def test_the_limits_themselves_are_accepted(db, tmp_path, capsys):
    limits = issue(
        INTEGER_MAX,
        id=BIG_INTEGER_MAX,
        repository="o" * 100 + "/" + "n" * 100,
        user={"login": "u" * 100},
        comments=INTEGER_MAX,
        created_at="0001-01-01T00:00:00Z",
        updated_at="9999-12-31T23:59:59+00:00",
        comments_data=[
            {"id": BIG_INTEGER_MAX, "body": "x", "created_at": "0001-01-01T05:00:00+05:00"}
        ],
        linked_fixes=[
            {
                "kind": "commit",
                "ref": "f" * 100,
                "url": "https://x/" + "u" * 490,
                "files_changed": INTEGER_MAX,
                "additions": INTEGER_MAX,
                "deletions": 0,
                "merged_at": "9999-12-31T18:59:59-05:00",
            }
        ],
    )
    call_command("import_issues", write_jsonl(tmp_path / "limits.jsonl", [limits]))
    assert "0 lines with errors" in capsys.readouterr().out
    stored = Issue.objects.get()
    assert (stored.number, stored.github_id, stored.comments_count) == (
        INTEGER_MAX,
        BIG_INTEGER_MAX,
        INTEGER_MAX,
    )
    assert stored.created_at.year == 1 and stored.updated_at.year == 9999
    assert stored.comments.get().github_id == BIG_INTEGER_MAX
    assert stored.linked_fixes.get().additions == INTEGER_MAX


def test_bad_lines_inside_a_batch_of_500_lose_no_good_line_of_that_batch_or_the_next(
    db, tmp_path, capsys
):
    """The 601-line file that once stored 500 issues and lost the last 100."""
    bad = {
        17: issue(17, **with_fix(additions=-1)),
        250: line_with_lone_surrogate(250, "body"),
        499: issue(499, created_at="0001-01-01T00:00:00+05:00"),
        500: issue(500, labels="bug"),
        600: issue(600, comments=2**31),
    }
    lines = [bad.get(number, issue(number)) for number in range(1, 602)]
    call_command("import_issues", write_jsonl(tmp_path / "big.jsonl", lines))
    captured = capsys.readouterr()
    for number, field in [
        (17, "linked_fixes[0].additions"),
        (250, "body"),
        (499, "created_at"),
        (500, "labels"),
        (600, "comments"),
    ]:
        assert f"big.jsonl:{number}: {field} " in captured.err
    assert "596 issues created" in captured.out and "5 lines with errors" in captured.out
    stored = set(Issue.objects.values_list("number", flat=True))
    assert stored == set(range(1, 602)) - set(bad)
    assert IssueComment.objects.count() == LinkedFix.objects.count() == 596


def test_a_json_array_reports_the_bad_element_by_its_place(db, tmp_path, capsys):
    content = json.dumps([issue(1), issue(2, body="SURROGATE"), issue(3)])
    path = tmp_path / "issues.json"
    path.write_text(content.replace("SURROGATE", "\\udfff"))
    call_command("import_issues", str(path))
    assert "issues.json:2: body holds a lone surrogate (\\udfff)" in capsys.readouterr().err
    assert sorted(Issue.objects.values_list("number", flat=True)) == [1, 3]


def test_a_comment_id_under_two_issues_of_one_batch_stays_with_the_later_line(db, tmp_path, capsys):
    # PostgreSQL refuses one upsert that writes a row twice; the earlier issue gives it up.
    shared = {"id": 4242, "body": "moved", "created_at": "2024-01-01T00:00:00Z"}
    first = issue(1, comments_data=[shared, {**shared, "id": 4243}])
    second = issue(2, comments_data=[shared])
    call_command("import_issues", write_jsonl(tmp_path / "moved.jsonl", [first, second]))
    assert "0 lines with errors" in capsys.readouterr().out
    assert IssueComment.objects.get(github_id=4242).issue.number == 2
    assert IssueComment.objects.get(github_id=4243).issue.number == 1


def test_pull_request_ghost_and_time_rules(db, tmp_path):
    lines = [
        issue(1, pull_request={"url": "https://api.github.com/repos/acme/trainer/pulls/1"}),
        issue(2, pull_request=None, user=None),
        issue(3, user={"login": None}, created_at="2024-01-01T02:00:00+02:00"),
    ]
    call_command("import_issues", write_jsonl(tmp_path / "rules.jsonl", lines))
    issues = {i.number: i for i in Issue.objects.all()}
    assert [issues[n].is_pull_request for n in (1, 2, 3)] == [True, False, False]
    assert [issues[n].author for n in (1, 2, 3)] == ["alice", "ghost", "ghost"]
    assert issues[3].created_at.isoformat() == "2024-01-01T00:00:00+00:00"


def test_a_batch_the_database_refuses_is_stored_issue_by_issue(db, tmp_path, capsys, monkeypatch):
    """A refusal the parser did not foresee (here a parser that lets a negative size through)
    costs its own line only, also when the refused batch had created a repository."""
    parse = services.issue_record_parse

    def parse_with_a_gap(obj):
        record = parse(obj)
        if record.number == 2:
            record.linked_fixes[0].additions = -1  # the column's CHECK (>= 0) refuses it
        return record

    monkeypatch.setattr(services, "issue_record_parse", parse_with_a_gap)
    lines = [issue(1), issue(2), issue(3, repository="acme/other"), issue(4)]
    call_command("import_issues", write_jsonl(tmp_path / "issues.jsonl", lines))
    captured = capsys.readouterr()
    assert "issues.jsonl:2: the database refused this issue" in captured.err
    assert "3 issues created" in captured.out and "1 lines with errors" in captured.out
    assert sorted(Issue.objects.values_list("repository__name", "number")) == [
        ("other", 3),
        ("trainer", 1),
        ("trainer", 4),
    ]
    # The repository created by the refused batch, then rolled back, was created again.
    assert Issue.objects.get(number=3).repository.full_name == "acme/other"
