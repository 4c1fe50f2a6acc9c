"""The one parser of GitHub's issue JSON and the shared text helpers it stands on."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection

from common.text import (
    JsonValueError,
    iso_time_parse,
    issue_reference_parse,
    json_clean,
    repository_full_name_parse,
)
from corpus import records
from corpus.models import Issue, IssueComment, LinkedFix, Repository
from corpus.records import RecordError, issue_record_parse


def test_the_parser_limits_are_the_columns_limits():
    def max_length(model, name):
        return model._meta.get_field(name).max_length

    assert max_length(Repository, "owner") == max_length(Repository, "name") == 100
    assert max_length(Issue, "author") == records.LOGIN_MAX_LENGTH
    assert max_length(IssueComment, "author") == records.LOGIN_MAX_LENGTH
    assert max_length(Issue, "state_reason") == records.STATE_REASON_MAX_LENGTH
    assert max_length(LinkedFix, "ref") == records.FIX_REF_MAX_LENGTH
    assert max_length(LinkedFix, "url") == records.FIX_URL_MAX_LENGTH
    assert max_length(LinkedFix, "evidence") == records.FIX_EVIDENCE_MAX_LENGTH
    ranges = connection.ops.integer_field_ranges
    assert ranges["PositiveIntegerField"][1] == records.INTEGER_MAX
    assert ranges["BigIntegerField"][1] == records.BIG_INTEGER_MAX
    for model, name in [
        (Issue, "number"),
        (Issue, "comments_count"),
        (LinkedFix, "files_changed"),
        (LinkedFix, "additions"),
        (LinkedFix, "deletions"),
    ]:
        assert model._meta.get_field(name).get_internal_type() == "PositiveIntegerField"
    for model in (Issue, IssueComment):
        assert model._meta.get_field("github_id").get_internal_type() == "BigIntegerField"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-02-20T16:12:14Z", datetime(2025, 2, 20, 16, 12, 14, tzinfo=UTC)),
        ("2025-02-20T18:12:14+02:00", datetime(2025, 2, 20, 16, 12, 14, tzinfo=UTC)),
        (" 2025-02-20T16:12:14.5+00:00 ", datetime(2025, 2, 20, 16, 12, 14, 500_000, tzinfo=UTC)),
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
    ],
)
def test_iso_times_come_back_in_utc(text, expected):
    moment = iso_time_parse(text)
    assert moment == expected and moment.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2025-02-20T16:12:14", "has no time zone"),
        ("2025-02-20", "has no time zone"),
        ("yesterday", "is not an ISO 8601 time"),
        (20250220, "is not an ISO 8601 time"),
        ("0001-01-01T00:00:00+05:00", "is outside the years 1 to 9999 in UTC"),
        ("9999-12-31T23:00:00-05:00", "is outside the years 1 to 9999 in UTC"),
    ],
)
def test_iso_times_that_are_refused(text, problem):
    with pytest.raises(ValueError, match=problem):
        iso_time_parse(text)


def test_a_command_line_may_name_the_zone_of_a_plain_date():
    plus_two = timezone(timedelta(hours=2))
    assert iso_time_parse("2025-02-20", naive_zone=plus_two) == datetime(
        2025, 2, 19, 22, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("microsoft/DeepSpeed", ("microsoft", "DeepSpeed")),
        (" https://github.com/microsoft/DeepSpeed.git ", ("microsoft", "DeepSpeed")),
        ("github.com/NVIDIA/Megatron-LM/", ("NVIDIA", "Megatron-LM")),
        ("octo_acme/.github", ("octo_acme", ".github")),
    ],
)
def test_repository_names_parse(text, expected):
    assert repository_full_name_parse(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("microsoft", "must be 'owner/name'"),
        ("a/b/c", "has a name GitHub does not allow"),
        ("-a/b", "has an owner GitHub does not allow"),
        ("a/..", "has a name GitHub does not allow"),
        ("a b/c", "has an owner GitHub does not allow"),
        ("o" * 101 + "/b", "has an owner longer than 100 characters"),
        ("a/" + "n" * 101, "has a name longer than 100 characters"),
        (None, "must be a string"),
    ],
)
def test_repository_names_that_are_refused(text, problem):
    with pytest.raises(ValueError, match=problem):
        repository_full_name_parse(text)


def test_json_clean_drops_nul_and_names_the_place_of_what_no_database_stores():
    assert json_clean({"a\x00": ["b\x00c", 1, None, "é"]}) == {"a": ["bc", 1, None, "é"]}
    with pytest.raises(JsonValueError) as error:
        json_clean({"comments_data": [{"body": "ok"}, {"body": "x\ud800"}]})
    assert str(error.value) == (
        "comments_data[1].body holds a lone surrogate (\\ud800), which is not text"
    )
    with pytest.raises(JsonValueError, match=r"^\[2\] is an integer beyond 64 bits"):
        json_clean([0, 2**64 - 1, 2**64])


def github_issue(**changes) -> dict:
    return {
        "repository_url": "https://api.github.com/repos/acme/trainer",
        "number": 5,
        "title": "t",
        "created_at": "2024-01-01T00:00:00Z",
        **changes,
    }


def test_an_issue_from_the_api_takes_its_repository_from_its_url_unless_one_is_given():
    assert issue_record_parse(github_issue()).repository_key == ("acme", "trainer")
    given = issue_record_parse(github_issue(), repository=("acme", "renamed"))
    assert given.repository_key == ("acme", "renamed")


def test_an_issue_record_defaults():
    record = issue_record_parse(github_issue(body=None, state_reason=None))
    assert (record.body, record.state, record.state_reason, record.author) == (
        "",
        "open",
        "",
        "ghost",
    )
    assert record.updated_at == record.created_at and record.closed_at is None
    assert record.comments_count == 0 and record.github_id is None
    assert not record.is_pull_request


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"user": "alice"}, "user must be an object with a login"),
        ({"title": None}, "title is missing"),
        ({"state": "merged"}, "state must be open or closed"),
        ({"body": 12}, "body must be a string"),
        ({"comments_data": {"id": 1}}, "comments_data must be a list"),
        ({"linked_fixes": [{"kind": "issue", "ref": "1"}]}, "linked_fixes[0].kind must be"),
        ({"repository_url": None}, "repository is missing"),
        ({"repository": "not a/repository"}, "repository has an owner GitHub does not allow"),
    ],
)
def test_issue_objects_that_are_refused(changes, message):
    with pytest.raises(RecordError) as error:
        issue_record_parse(github_issue(**changes))
    assert str(error.value).startswith(message)


def test_issue_references_parse():
    assert issue_reference_parse(" microsoft/DeepSpeed#7061 ") == ("microsoft", "DeepSpeed", 7061)
    for text in ("microsoft/DeepSpeed", "microsoft/DeepSpeed#0", "a/b#x", "a#1", "a/b/c#1"):
        with pytest.raises(ValueError, match=r"must be|GitHub does not allow"):
            issue_reference_parse(text)
