"""The GitHub client against the stand-in GitHub over real HTTP (no database needed)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from corpus.records import GHOST_LOGIN, IssueRecord
from ingest.github import (
    GitHubClient,
    GitHubError,
    NotFound,
    RateLimited,
    TransientGitHubError,
    _rate_limit_reset_time,
)
from tests.github_server import FakeGitHub, parse_time

SAMPLE_PATH = Path(__file__).resolve().parents[2] / "corpus" / "data" / "sample-issues.jsonl"
SAMPLE_REPOSITORIES = ["microsoft/DeepSpeed", "NVIDIA/Megatron-LM", "huggingface/transformers"]


def fetch(url: str, **options) -> requests.Response:
    """A plain HTTP GET against the stand-in, bypassing the client."""
    return requests.get(url, timeout=5, **options)


def sample_records() -> list[dict]:
    lines = SAMPLE_PATH.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def sample_github(github: FakeGitHub) -> FakeGitHub:
    github.load_jsonl(SAMPLE_PATH)
    github.reset_log()
    return github


def make_client(github: FakeGitHub, **options) -> GitHubClient:
    options.setdefault("retry_backoff", 0)
    assert github.base_url is not None
    return GitHubClient(github.base_url, **options)


@pytest.fixture
def client(github: FakeGitHub) -> Iterator[GitHubClient]:
    with make_client(github, token="test-token") as github_client:
        yield github_client


def all_issues(pages: Iterator[tuple[int, list[IssueRecord]]]) -> list[IssueRecord]:
    return [issue for _, issues in pages for issue in issues]


def add_small_repository(github: FakeGitHub, issue_count: int = 7) -> None:
    github.add_repository("acme", "trainer")
    for number in range(1, issue_count + 1):
        github.add_issue(
            "acme",
            "trainer",
            {
                "number": number,
                "title": f"Issue {number}",
                "created_at": f"2024-01-{number:02d}T00:00:00Z",
                "updated_at": f"2024-02-{number:02d}T00:00:00Z",
                "closed_at": f"2024-02-{number:02d}T00:00:00Z",
                "labels": ["bug"] if number % 2 else ["bug", "training"],
            },
        )


# ----------------------------------------------------------------------------- repositories


def test_repository_returns_github_id_and_current_name(sample_github, client):
    repository = client.repository("microsoft", "deepspeed")

    assert repository.owner == "microsoft"
    assert repository.name == "DeepSpeed"
    assert repository.full_name == "microsoft/DeepSpeed"
    assert repository.github_id > 0


def test_unknown_repository_raises_not_found(github, client):
    with pytest.raises(NotFound) as raised:
        client.repository("nobody", "nothing")
    assert raised.value.status == 404


# ----------------------------------------------------------------------------- issue lists


def test_issue_pages_list_closed_issues_and_pull_requests_oldest_update_first(
    sample_github, client
):
    issues = all_issues(client.issue_pages("microsoft", "DeepSpeed"))

    sample_numbers = {
        record["number"]
        for record in sample_records()
        if record["repository"] == "microsoft/DeepSpeed"
    }
    assert {issue.number for issue in issues if not issue.is_pull_request} == sample_numbers
    # The fixing pull requests of the sample are listed too, flagged, as GitHub lists them.
    assert {issue.number for issue in issues if issue.is_pull_request} == {857, 1994, 4480}
    assert all("pull_request" in issue.raw for issue in issues if issue.is_pull_request)
    updated = [issue.updated_at for issue in issues]
    assert updated == sorted(updated)


def test_issue_fields_are_parsed(sample_github, client):
    issues = all_issues(client.issue_pages("microsoft", "DeepSpeed"))
    issue = next(issue for issue in issues if issue.number == 1896)
    record = next(
        record
        for record in sample_records()
        if record["repository"] == "microsoft/DeepSpeed" and record["number"] == 1896
    )

    assert issue.github_id == record["id"]
    assert issue.title == record["title"]
    assert issue.body == record["body"]
    assert issue.state == "closed"
    assert issue.state_reason == record["state_reason"]
    assert issue.author == record["user"]["login"]
    assert issue.labels == ["bug", "training"]
    assert issue.created_at == parse_time(record["created_at"])
    assert issue.updated_at == parse_time(record["updated_at"])
    assert issue.closed_at == parse_time(record["closed_at"])
    assert issue.created_at.tzinfo is not None
    assert issue.comments_count == record["comments"]
    assert issue.is_pull_request is False
    assert issue.raw["number"] == 1896


def test_issue_pages_follow_pagination_and_number_the_pages(github):
    add_small_repository(github, issue_count=7)
    with make_client(github, per_page=3) as client:
        pages = list(client.issue_pages("acme", "trainer"))

    assert [page for page, _ in pages] == [1, 2, 3]
    assert [[issue.number for issue in issues] for _, issues in pages] == [
        [1, 2, 3],
        [4, 5, 6],
        [7],
    ]
    list_requests = [
        path for path in github.paths_requested() if path.split("?")[0].endswith("/issues")
    ]
    assert len(list_requests) == 3
    assert all("sort=updated" in path and "direction=asc" in path for path in list_requests)


def test_issue_pages_resume_at_start_page(github):
    add_small_repository(github, issue_count=7)
    with make_client(github, per_page=3) as client:
        pages = list(client.issue_pages("acme", "trainer", start_page=2))

    assert [(page, [issue.number for issue in issues]) for page, issues in pages] == [
        (2, [4, 5, 6]),
        (3, [7]),
    ]


def test_an_update_mid_sync_shifts_pages_and_since_resumes_without_a_gap(github):
    add_small_repository(github, issue_count=7)
    with make_client(github, per_page=3) as client:
        pages = client.issue_pages("acme", "trainer")
        _, first_page = next(pages)
        github.edit_issue("acme", "trainer", 2, title="Issue 2, edited mid-sync")
        rest_by_page = [issue.number for _, issues in pages for issue in issues]

        resumed = client.issue_pages("acme", "trainer", since=first_page[-1].updated_at)
        rest_by_since = [issue.number for _, issues in resumed for issue in issues]

    assert [issue.number for issue in first_page] == [1, 2, 3]
    # Issue 2 moved to the end, so issue 4 slid onto the first page after it had been read.
    assert rest_by_page == [5, 6, 7, 2]
    assert rest_by_since == [3, 4, 5, 6, 7, 2]


def test_issue_pages_yield_nothing_past_the_end(github, client):
    add_small_repository(github, issue_count=2)

    assert list(client.issue_pages("acme", "trainer", start_page=5)) == []


def test_issue_pages_since_keeps_issues_updated_at_or_after_it(github, client):
    add_small_repository(github, issue_count=7)

    since = datetime(2024, 2, 5, tzinfo=UTC)
    numbers = [
        issue.number for issue in all_issues(client.issue_pages("acme", "trainer", since=since))
    ]

    assert numbers == [5, 6, 7]


def test_edited_issue_moves_after_the_since_cursor(github, client):
    add_small_repository(github, issue_count=7)
    newest_seen = max(
        issue.updated_at for issue in all_issues(client.issue_pages("acme", "trainer"))
    )

    github.edit_issue("acme", "trainer", 2, title="Issue 2, clarified")
    changed = all_issues(
        client.issue_pages("acme", "trainer", since=newest_seen + timedelta(seconds=1))
    )

    assert [(issue.number, issue.title) for issue in changed] == [(2, "Issue 2, clarified")]
    assert changed[0].updated_at > newest_seen


def test_issue_pages_require_all_labels(github, client):
    add_small_repository(github, issue_count=7)

    both = all_issues(client.issue_pages("acme", "trainer", labels=("bug", "training")))
    single = all_issues(client.issue_pages("acme", "trainer", labels="training"))

    assert [issue.number for issue in both] == [2, 4, 6]
    assert [issue.number for issue in single] == [2, 4, 6]
    assert any("labels=bug%2Ctraining" in path for path in github.paths_requested())


def test_issue_pages_filter_by_state(github, client):
    add_small_repository(github, issue_count=2)
    github.add_issue("acme", "trainer", {"number": 3, "title": "Still broken"})

    open_issues = all_issues(client.issue_pages("acme", "trainer", state="open"))
    every_issue = all_issues(client.issue_pages("acme", "trainer", state="all"))

    assert [issue.number for issue in open_issues] == [3]
    assert open_issues[0].closed_at is None
    assert sorted(issue.number for issue in every_issue) == [1, 2, 3]


def test_issue_pages_reject_naive_since_and_unknown_state(github, client):
    add_small_repository(github, issue_count=1)

    with pytest.raises(ValueError):
        list(client.issue_pages("acme", "trainer", since=datetime(2024, 1, 1)))
    with pytest.raises(ValueError):
        list(client.issue_pages("acme", "trainer", state="merged"))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- single issues


def test_issue_returns_one_issue(sample_github, client):
    issue = client.issue("huggingface", "transformers", 26253)

    assert issue.number == 26253
    assert issue.state == "closed"


def test_deleted_issue_raises_not_found_with_410(sample_github, client):
    sample_github.delete_issue("microsoft", "DeepSpeed", 7061)

    with pytest.raises(NotFound) as raised:
        client.issue("microsoft", "DeepSpeed", 7061)
    assert raised.value.status == 410
    with pytest.raises(NotFound):
        client.comments("microsoft", "DeepSpeed", 7061)
    assert 7061 not in {
        issue.number for issue in all_issues(client.issue_pages("microsoft", "DeepSpeed"))
    }


def test_transferred_issue_raises_not_found(sample_github, client):
    new_number = sample_github.transfer_issue(
        "microsoft", "DeepSpeed", 7061, "huggingface", "transformers"
    )

    with pytest.raises(NotFound, match=f"huggingface/transformers#{new_number}"):
        client.issue("microsoft", "DeepSpeed", 7061)
    # Sub-resources follow the 301 to the issue's new home, so the comments are still readable.
    assert len(client.comments("microsoft", "DeepSpeed", 7061)) == 6


def test_missing_issue_raises_not_found(sample_github, client):
    with pytest.raises(NotFound) as raised:
        client.comments("microsoft", "DeepSpeed", 999_999)
    assert raised.value.status == 404


# ----------------------------------------------------------------------------- comments


def test_comments_match_the_sample(sample_github, client):
    for record in sample_records():
        owner, name = record["repository"].split("/")
        comments = client.comments(owner, name, record["number"])

        assert [comment.github_id for comment in comments] == [
            comment["id"] for comment in record["comments_data"]
        ]
        assert [comment.body for comment in comments] == [
            comment["body"] or "" for comment in record["comments_data"]
        ]


def test_comments_span_pages_and_filter_by_since(github):
    add_small_repository(github, issue_count=1)
    for index in range(7):
        github.add_comment(
            "acme",
            "trainer",
            1,
            created_at=f"2024-03-0{index + 1}T00:00:00Z",
            body=f"comment {index}",
            user="reviewer",
        )
    with make_client(github, per_page=3) as client:
        comments = client.comments("acme", "trainer", 1)
        recent = client.comments("acme", "trainer", 1, since=datetime(2024, 3, 6, tzinfo=UTC))

    assert [comment.body for comment in comments] == [f"comment {index}" for index in range(7)]
    assert all(comment.author == "reviewer" for comment in comments)
    assert [comment.body for comment in recent] == ["comment 5", "comment 6"]
    assert sum("/comments" in path for path in github.paths_requested()) == 3 + 1


def test_add_comment_bumps_the_issue(github, client):
    add_small_repository(github, issue_count=1)
    before = client.issue("acme", "trainer", 1)

    github.add_comment("acme", "trainer", 1, body="me too")
    after = client.issue("acme", "trainer", 1)

    assert after.comments_count == before.comments_count + 1
    assert after.updated_at > before.updated_at


# ----------------------------------------------------------------------------- linked fixes


def test_linked_fixes_reproduce_the_sample(sample_github, client):
    records_with_fixes = [record for record in sample_records() if record["linked_fixes"]]
    assert len(records_with_fixes) == 8

    for record in sample_records():
        owner, name = record["repository"].split("/")
        fixes = client.linked_fixes(owner, name, record["number"])

        found = {(fix.kind, fix.ref, fix.url) for fix in fixes}
        expected = {(fix["kind"], fix["ref"], fix["url"]) for fix in record["linked_fixes"]}
        assert found == expected, f"{record['repository']}#{record['number']}"
        assert len(fixes) == len(found)
        for fix in fixes:
            assert fix.files_changed and fix.files_changed > 0
            assert fix.additions is not None and fix.deletions is not None
            assert fix.merged_at is not None and fix.merged_at.tzinfo is not None


def test_linked_fix_evidence(sample_github, client):
    fixes = {fix.kind: fix for fix in client.linked_fixes("microsoft", "DeepSpeed", 1722)}

    assert fixes["pr"].evidence == "cross-referenced merged PR #1994; fixes #1722 in PR body"
    # The commit is named by a "referenced" and a "closed" event; the closing one wins.
    assert fixes["commit"].evidence == "closed by commit a65ed38"
    pull = fetch(f"{sample_github.base_url}/repos/microsoft/DeepSpeed/pulls/1994").json()
    assert fixes["pr"].files_changed == pull["changed_files"]
    assert fixes["pr"].additions == pull["additions"]


def test_linked_fixes_skip_unmerged_foreign_and_fork_references(github, client):
    github.add_repository("acme", "trainer")
    github.add_repository("someone", "trainer-fork")
    github.add_pull("acme", "trainer", {"number": 2, "title": "Attempt", "body": "Fixes #1"})
    github.add_pull(
        "acme",
        "trainer",
        {"number": 3, "title": "Real fix", "merged_at": "2024-01-05T00:00:00Z", "body": "See #1"},
    )
    github.add_pull(
        "someone",
        "trainer-fork",
        {"number": 4, "title": "Fork fix", "merged_at": "2024-01-04T00:00:00Z"},
    )
    github.add_commit(
        "acme", "trainer", "a" * 40, {"files": [{"filename": "x.py", "additions": 3}]}
    )

    def cross_reference(owner: str, name: str, number: int) -> dict:
        source = {
            **github.issue(owner, name, number),
            "repository": {"full_name": f"{owner}/{name}"},
        }
        return {
            "event": "cross-referenced",
            "created_at": "2024-01-02T00:00:00Z",
            "source": {"type": "issue", "issue": source},
        }

    def commit_event(event: str, sha: str, repository: str) -> dict:
        return {
            "event": event,
            "created_at": "2024-01-06T00:00:00Z",
            "commit_id": sha,
            "commit_url": f"https://api.github.com/repos/{repository}/commits/{sha}",
        }

    github.add_issue(
        "acme",
        "trainer",
        {"number": 10, "title": "Crash", "created_at": "2024-01-01T00:00:00Z"},
        timeline=[
            cross_reference("acme", "trainer", 2),  # not merged
            cross_reference("acme", "trainer", 3),  # merged, body does not say "fixes"
            cross_reference("acme", "trainer", 3),  # the same pull twice
            cross_reference("someone", "trainer-fork", 4),  # another repository
            commit_event("referenced", "b" * 40, "someone/trainer-fork"),  # a push to a fork
            commit_event("referenced", "a" * 40, "acme/trainer"),
            commit_event("closed", "a" * 40, "acme/trainer"),
            commit_event("closed", "c" * 40, "acme/trainer"),  # a commit GitHub no longer has
        ],
    )
    github.reset_log()

    fixes = client.linked_fixes("acme", "trainer", 10)

    assert [(fix.kind, fix.ref, fix.evidence) for fix in fixes] == [
        ("pr", "3", "cross-referenced merged PR #3"),
        ("commit", "a" * 40, "closed by commit aaaaaaa"),
        ("commit", "c" * 40, "closed by commit ccccccc"),
    ]
    assert (fixes[1].files_changed, fixes[1].additions, fixes[1].deletions) == (1, 3, 0)
    assert (fixes[2].url, fixes[2].files_changed, fixes[2].additions) == ("", None, None)
    fetched = [path.split("?")[0] for path in github.paths_requested()]
    # The unmerged and the foreign pull are never fetched: the timeline already says enough.
    assert not any(path.endswith(("/pulls/2", "/pulls/4")) for path in fetched)
    assert sum(path.endswith("/pulls/3") for path in fetched) == 1


def test_comments_and_fixes_read_the_timeline_once(sample_github, client):
    for record in sample_records():
        owner, name = record["repository"].split("/")
        comments, fixes = client.comments_and_fixes(owner, name, record["number"])

        assert comments == client.comments(owner, name, record["number"])
        assert fixes == client.linked_fixes(owner, name, record["number"])

    sample_github.reset_log()
    client.comments_and_fixes("NVIDIA", "Megatron-LM", 1346)
    assert [path.split("?")[0].rsplit("/", 1)[-1] for path in sample_github.paths_requested()] == [
        "timeline",
        "c6e3b0c5bb4c14f57fb6d997dd11223e2ecbc839",
    ]


def test_issue_without_fixes_has_none(sample_github, client):
    assert client.linked_fixes("microsoft", "DeepSpeed", 7061) == []


# ----------------------------------------------------------------------------- rate limits


def test_rate_limit_raises_at_once_with_the_reset_time(sample_github, client):
    sample_github.rate_limit_after = 2
    sample_github.rate_limit_reset_seconds = 30
    client.repository("microsoft", "DeepSpeed")
    client.comments("microsoft", "DeepSpeed", 1722)

    started = time.monotonic()
    with pytest.raises(RateLimited) as raised:
        client.comments("microsoft", "DeepSpeed", 4442)
    elapsed = time.monotonic() - started

    assert elapsed < 10, "the client must not sleep until the reset, 30 s away"
    reset_at = raised.value.reset_at
    expected = datetime.now(UTC) + timedelta(seconds=30)
    assert abs((reset_at - expected).total_seconds()) <= 2
    assert client.last_seen_rate_limit is not None
    assert client.last_seen_rate_limit.reset_at == reset_at
    assert client.last_seen_rate_limit.remaining == 0
    # One 403 and no retries of it.
    assert [status for _, _, status in sample_github.requests] == [200, 200, 403]


def test_rate_limit_mid_sync_leaves_committed_pages_and_resumes(github):
    add_small_repository(github, issue_count=7)
    github.rate_limit_after = 2  # the repository lookup and one page
    github.rate_limit_reset_seconds = 1
    with make_client(github, per_page=3) as client:
        seen = []
        with pytest.raises(RateLimited) as raised:
            for page, issues in client.issue_pages("acme", "trainer"):
                seen.append((page, [issue.number for issue in issues]))
        assert seen == [(1, [1, 2, 3])]

        time.sleep(max(0.0, (raised.value.reset_at - datetime.now(UTC)).total_seconds()) + 0.1)
        resumed = [
            (page, [issue.number for issue in issues])
            for page, issues in client.issue_pages("acme", "trainer", start_page=2)
        ]
    assert resumed == [(2, [4, 5, 6]), (3, [7])]


def test_rate_limit_reset_time_follows_githubs_precedence():
    now = datetime.now(UTC)
    reset = int((now + timedelta(minutes=30)).timestamp())

    retry_after = _rate_limit_reset_time(
        {"retry-after": "120", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    )
    exhausted = _rate_limit_reset_time(
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    )
    secondary = _rate_limit_reset_time(
        {"x-ratelimit-remaining": "4000", "x-ratelimit-reset": str(reset)}
    )

    assert abs((retry_after - now).total_seconds() - 120) < 2
    assert exhausted == datetime.fromtimestamp(reset, UTC)
    assert abs((secondary - now).total_seconds() - 60) < 2


def test_rate_limit_status(github, client):
    github.add_repository("acme", "trainer")
    client.repository("acme", "trainer")

    first = client.rate_limit()
    second = client.rate_limit()

    assert first.limit == 5000
    assert first.remaining == 4999
    assert second.remaining == first.remaining, "asking about the rate limit is free"
    assert first.reset_at > datetime.now(UTC)


# ----------------------------------------------------------------------------- failures


def test_server_errors_are_retried_within_the_bound(sample_github):
    sample_github.fail_every = 2  # every second request answers 502
    with make_client(sample_github, max_retries=2) as client:
        comments = client.comments("microsoft", "DeepSpeed", 1722)
        repository = client.repository("microsoft", "DeepSpeed")

    assert len(comments) == 3
    assert repository.name == "DeepSpeed"
    assert [status for _, _, status in sample_github.requests] == [200, 502, 200]
    assert client.requests_made == sample_github.request_count == 3


@pytest.mark.parametrize("status", [502, 503])
def test_persistent_server_errors_raise_transient_error(sample_github, status):
    sample_github.fail_every = 1
    sample_github.fail_status = status
    client = make_client(sample_github, max_retries=2)
    with client, pytest.raises(TransientGitHubError) as raised:
        client.comments("microsoft", "DeepSpeed", 1722)

    assert raised.value.status == status
    assert sample_github.request_count == 3  # the first try and two retries
    assert client.requests_made == 3


def test_timeout_raises_transient_error(sample_github):
    # An answer held three times as long as the client waits: a busy machine's slowness
    # stays well inside the margin.
    sample_github.delay_seconds = 3.0
    with make_client(sample_github, timeout=1, max_retries=0) as client:
        started = time.monotonic()
        with pytest.raises(TransientGitHubError):
            client.repository("microsoft", "DeepSpeed")
    assert time.monotonic() - started < 3.0


def test_unreachable_server_raises_transient_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with GitHubClient(f"http://127.0.0.1:{port}", max_retries=1, retry_backoff=0) as client:
        with pytest.raises(TransientGitHubError):
            client.repository("microsoft", "DeepSpeed")
        assert client.requests_made == 2


# ----------------------------------------------------------------------------- renames


def test_renamed_repository_is_followed(sample_github, client):
    sample_github.rename_repository("microsoft", "DeepSpeed", "deepspeedai", "DeepSpeed")

    repository = client.repository("microsoft", "DeepSpeed")

    assert (repository.owner, repository.name) == ("deepspeedai", "DeepSpeed")
    assert [status for _, _, status in sample_github.requests] == [301, 200]


def test_issue_list_of_renamed_repository_keeps_its_filters_and_page(sample_github):
    expected = []
    with make_client(sample_github, per_page=5) as before_rename:
        expected = [
            (page, [issue.number for issue in issues])
            for page, issues in before_rename.issue_pages(
                "microsoft", "DeepSpeed", labels=("bug",), start_page=2
            )
        ]
    sample_github.rename_repository("microsoft", "DeepSpeed", "deepspeedai", "DeepSpeed")
    sample_github.reset_log()

    with make_client(sample_github, per_page=5) as client:
        pages = [
            (page, [issue.number for issue in issues])
            for page, issues in client.issue_pages(
                "microsoft", "DeepSpeed", labels=("bug",), start_page=2
            )
        ]

    assert pages == expected
    assert pages and all(page >= 2 for page, _ in pages)
    list_requests = [
        (path, status) for _, path, status in sample_github.requests if "/issues?" in path
    ]
    assert all(status == 200 and "state=closed" in path for path, status in list_requests)
    assert all("page=" in path and "labels=bug" in path for path, _ in list_requests)


def test_redirect_of_a_renamed_repository_keeps_the_query_string(sample_github):
    sample_github.rename_repository("microsoft", "DeepSpeed", "deepspeedai", "DeepSpeed")
    old_path = (
        "/repos/microsoft/DeepSpeed/issues?state=closed&since=2023-01-01T00%3A00%3A00Z&page=2"
    )

    response = fetch(f"{sample_github.base_url}{old_path}", allow_redirects=False)

    assert response.status_code == 301
    repository_id = fetch(f"{sample_github.base_url}/repos/deepspeedai/DeepSpeed").json()["id"]
    assert response.headers["Location"] == (
        f"{sample_github.base_url}/repositories/{repository_id}/issues"
        "?state=closed&since=2023-01-01T00%3A00%3A00Z&page=2"
    )


def test_comments_of_a_renamed_repository_stay_complete(sample_github):
    for index in range(35):
        sample_github.add_comment("NVIDIA", "Megatron-LM", 82, body=f"ping {index}")
    sample_github.rename_repository("NVIDIA", "Megatron-LM", "NVIDIA", "Megatron-Core")
    sample_github.reset_log()

    with make_client(sample_github) as client:
        comments = client.comments("NVIDIA", "Megatron-LM", 82)

    assert [comment.body for comment in comments][-35:] == [f"ping {index}" for index in range(35)]
    # PyGithub follows the 301 to the new path without the query string (per_page=100 is lost),
    # so GitHub's default page size applies and the Link header carries the rest.
    paths = sample_github.paths_requested()
    assert sample_github.requests[0][2] == 301
    assert "per_page" not in paths[1]
    assert len(paths) == 3


# ----------------------------------------------------------------------------- text hygiene


def test_nul_bytes_are_stripped_everywhere(github, client):
    github.add_repository("acme", "trainer")
    github.add_issue(
        "acme",
        "trainer",
        {
            "number": 1,
            "title": "Loss\x00 is NaN",
            "body": "trace:\x00\x00 end",
            "labels": ["b\x00ug"],
        },
        comments=[{"body": "same\x00 here", "user": "helper"}],
    )

    issue = client.issue("acme", "trainer", 1)
    comment = client.comments("acme", "trainer", 1)[0]

    assert (issue.title, issue.body, issue.labels) == ("Loss is NaN", "trace: end", ["bug"])
    assert comment.body == "same here"
    assert "\x00" not in json.dumps(issue.raw)
    assert "\\u0000" not in json.dumps(issue.raw)


def test_deleted_accounts_show_as_ghost(github, client):
    github.add_repository("acme", "trainer")
    github.add_issue(
        "acme",
        "trainer",
        {"number": 1, "title": "Orphan", "user": None},
        comments=[{"body": "gone too", "user": None}],
    )

    issue = client.issue("acme", "trainer", 1)
    comment = client.comments("acme", "trainer", 1)[0]

    assert issue.author == GHOST_LOGIN == "ghost"
    assert comment.author == "ghost"


def test_issues_are_read_by_the_corpus_parser_and_what_cannot_be_stored_is_an_error(github, client):
    github.add_repository("acme", "trainer")
    github.add_issue("acme", "trainer", {"number": 1, "title": "Fine", "pull_request": None})
    github.add_issue("acme", "trainer", {"number": 2, "title": "Odd", "user": "u" * 101})
    github.add_issue(
        "acme",
        "trainer",
        {"number": 3, "title": "Doubled"},
        comments=[{"body": "one", "id": 77}, {"body": "same id", "id": 77}],
    )

    assert client.issue("acme", "trainer", 1).is_pull_request is False
    with pytest.raises(GitHubError, match=r"cannot be stored: user\.login is longer than 100"):
        client.issue("acme", "trainer", 2)
    # A list read while it moves may show a comment twice; the last copy is kept.
    assert [c.body for c in client.comments("acme", "trainer", 3)] == ["same id"]


def test_missing_body_becomes_empty_text(github, client):
    github.add_repository("acme", "trainer")
    github.add_issue("acme", "trainer", {"number": 1, "title": "No body", "body": None})

    assert client.issue("acme", "trainer", 1).body == ""


# ----------------------------------------------------------------------------- accounting


def test_requests_made_counts_every_request(sample_github, client):
    client.repository("microsoft", "DeepSpeed")
    all_issues(client.issue_pages("microsoft", "DeepSpeed"))
    client.comments("microsoft", "DeepSpeed", 1722)
    client.linked_fixes("microsoft", "DeepSpeed", 1722)
    client.rate_limit()

    assert client.requests_made == sample_github.request_count == 7


def test_token_is_sent_and_optional(github):
    github.add_repository("acme", "trainer")
    with make_client(github, token="s3cret") as client:
        client.repository("acme", "trainer")
    assert github.last_authorization == "token s3cret"

    with make_client(github) as anonymous:
        anonymous.repository("acme", "trainer")
    assert github.last_authorization is None


def test_first_sync_of_the_sample_request_budget(sample_github):
    """A first sync: list pages, then comments, timeline and fix details for each issue."""
    records = sample_records()
    fix_count = sum(len(record["linked_fixes"]) for record in records)
    with make_client(sample_github) as client:
        synced = 0
        for full_name in SAMPLE_REPOSITORIES:
            owner, name = full_name.split("/")
            for _, issues in client.issue_pages(owner, name):
                for issue in issues:
                    if issue.is_pull_request:
                        continue
                    client.comments(owner, name, issue.number)
                    client.linked_fixes(owner, name, issue.number)
                    synced += 1

    assert synced == len(records) == 45
    assert fix_count == 14
    # Per repository: one id lookup and one list page (up to 100 issues and pull requests);
    # per issue: one comments page and one timeline page; per fix: its pull or commit.
    expected = len(SAMPLE_REPOSITORIES) * 2 + synced * 2 + fix_count
    assert client.requests_made == sample_github.request_count == expected == 110


def test_first_sync_reading_comments_from_the_timeline_needs_fewer_requests(sample_github):
    fix_count = sum(len(record["linked_fixes"]) for record in sample_records())
    with make_client(sample_github) as client:
        synced = 0
        for full_name in SAMPLE_REPOSITORIES:
            owner, name = full_name.split("/")
            for _, issues in client.issue_pages(owner, name):
                for issue in issues:
                    if not issue.is_pull_request:
                        client.comments_and_fixes(owner, name, issue.number)
                        synced += 1

    assert client.requests_made == len(SAMPLE_REPOSITORIES) * 2 + synced + fix_count == 65


# ----------------------------------------------------------------------------- the stand-in itself


def test_server_pages_with_absolute_link_headers(sample_github):
    base = sample_github.base_url
    response = fetch(
        f"{base}/repos/microsoft/DeepSpeed/issues",
        params={"state": "all", "per_page": 5, "page": 2},
    )

    links = requests.utils.parse_header_links(response.headers["Link"])
    relations = {link["rel"]: link["url"] for link in links}
    assert set(relations) == {"prev", "next", "last", "first"}
    assert all(url.startswith(f"{base}/repositories/") for url in relations.values())
    assert "page=3" in relations["next"] and "state=all" in relations["next"]
    assert "page=4" in relations["last"]
    assert len(response.json()) == 5


def test_server_defaults_to_open_issues_newest_first(github):
    add_small_repository(github, issue_count=3)
    github.add_issue("acme", "trainer", {"number": 4, "title": "open one"})
    github.add_issue("acme", "trainer", {"number": 5, "title": "open two"})

    response = fetch(f"{github.base_url}/repos/acme/trainer/issues")

    assert [issue["number"] for issue in response.json()] == [5, 4]


def test_server_answers_304_for_a_matching_etag_without_rate_cost(sample_github):
    url = f"{sample_github.base_url}/repos/microsoft/DeepSpeed/issues/1722"
    first = fetch(url)
    etag = first.headers["ETag"]

    again = fetch(url, headers={"If-None-Match": etag})
    changed = fetch(url, headers={"If-None-Match": 'W/"something-else"'})

    assert again.status_code == 304 and again.content == b""
    assert changed.status_code == 200 and changed.headers["ETag"] == etag
    remaining = [int(r.headers["X-RateLimit-Remaining"]) for r in (first, again, changed)]
    assert remaining == [4999, 4999, 4998]
    assert all(
        header in again.headers
        for header in ("X-RateLimit-Limit", "X-RateLimit-Used", "X-RateLimit-Reset")
    )


def test_server_rate_limit_window_resets(sample_github):
    sample_github.rate_limit_after = 1
    # A window long enough that a busy machine's three requests all fall inside it.
    sample_github.rate_limit_reset_seconds = 1.5
    url = f"{sample_github.base_url}/repos/microsoft/DeepSpeed"

    statuses = [fetch(url).status_code, fetch(url).status_code]
    limited = fetch(url)
    time.sleep(1.6)
    after_reset = fetch(url)

    assert statuses == [200, 403]
    assert limited.json()["message"].startswith("API rate limit exceeded")
    assert limited.headers["X-RateLimit-Remaining"] == "0"
    assert after_reset.status_code == 200
    assert fetch(f"{sample_github.base_url}/rate_limit").status_code == 200


def test_server_serves_pull_files_and_short_shas(sample_github):
    base = f"{sample_github.base_url}/repos/microsoft/DeepSpeed"
    pull = fetch(f"{base}/pulls/1994").json()
    files = fetch(f"{base}/pulls/1994/files").json()
    commit = fetch(f"{base}/commits/a65ed38").json()

    assert pull["merged"] is True and pull["changed_files"] == len(files)
    assert sum(entry["additions"] for entry in files) == pull["additions"]
    assert commit["sha"] == "a65ed3896ec0e861dce898106c8d6495580f075a"
    assert commit["stats"]["additions"] == sum(entry["additions"] for entry in commit["files"])
    assert fetch(f"{base}/pulls/1722").status_code == 404  # an issue, not a pull
    assert fetch(f"{base}/commits/deadbeef").status_code == 422
