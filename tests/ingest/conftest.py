"""Fixtures of the ingest tests: the stand-in GitHub, an in-process sync, and corpus snapshots
to compare what is stored with what the server has."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from corpus.models import Issue
from ingest.dispatch import sync_request
from ingest.github import GitHubClient
from ingest.models import Source, SyncRun
from ingest.sources import source_create
from ingest.sync import sync_run_to_completion
from tests.github_server import FakeGitHub, parse_time

SAMPLE_PATH = Path(__file__).resolve().parents[2] / "corpus" / "data" / "sample-issues.jsonl"
SAMPLE_REPOSITORIES = ["microsoft/DeepSpeed", "NVIDIA/Megatron-LM", "huggingface/transformers"]


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    """The stand-in GitHub, with the settings pointing the sync at it."""
    with FakeGitHub() as server:
        settings.GITHUB_API_URL = server.base_url
        settings.GITHUB_TOKEN = ""
        yield server


@pytest.fixture
def sample_github(github: FakeGitHub) -> FakeGitHub:
    github.load_jsonl(SAMPLE_PATH)
    github.reset_log()
    return github


@pytest.fixture
def sync(db) -> Callable[..., SyncRun]:
    """Request a sync of a source and run it to its end in this process."""

    def run(source: Source, **options: Any) -> SyncRun:
        requested = sync_request(source=source, enqueue=False)
        sync_run_to_completion(run_id=requested.pk, worker="test-worker", **options)
        return SyncRun.objects.get(pk=requested.pk)

    return run


@pytest.fixture
def make_source(db) -> Callable[..., Source]:
    def make(repository: str, **options: Any) -> Source:
        return source_create(repository=repository, **options)

    return make


# ----------------------------------------------------------------------------- corpus snapshots


def _time(text: str | None):
    return parse_time(text) if text else None


def server_corpus(
    github: FakeGitHub,
    full_name: str,
    *,
    state: str = "closed",
    labels: tuple[str, ...] = (),
    include_pull_requests: bool = False,
) -> dict[int, dict]:
    """What the stand-in serves for a source: each issue with its comments and linked fixes.

    Comments come from the comments endpoint (the sync reads them from the timeline); linked
    fixes from the tested client. Requests made here are dropped from the server's log.
    """
    owner, name = full_name.split("/")
    wanted_labels = {label.lower() for label in labels}
    expected: dict[int, dict] = {}
    assert github.base_url is not None
    with GitHubClient(github.base_url, retry_backoff=0) as client:
        for issue in github.issues(owner, name):
            if state != "all" and issue["state"] != state:
                continue
            if not wanted_labels <= {label["name"].lower() for label in issue["labels"]}:
                continue
            is_pull_request = "pull_request" in issue
            if is_pull_request and not include_pull_requests:
                continue
            number = issue["number"]
            comments = client.comments(owner, name, number)
            fixes = client.linked_fixes(owner, name, number)
            expected[number] = {
                "github_id": issue["id"],
                "is_pull_request": is_pull_request,
                "title": issue["title"],
                "body": issue["body"] or "",
                "state": issue["state"],
                "state_reason": issue.get("state_reason") or "",
                "author": (issue.get("user") or {}).get("login") or "ghost",
                "labels": [label["name"] for label in issue["labels"]],
                "created_at": _time(issue["created_at"]),
                "updated_at": _time(issue["updated_at"]),
                "closed_at": _time(issue.get("closed_at")),
                "comments_count": issue["comments"],
                "comments": sorted(
                    (c.github_id, c.author, c.body, c.created_at, c.updated_at) for c in comments
                ),
                "fixes": sorted(
                    (
                        f.kind,
                        f.ref,
                        f.url or "",
                        f.merged_at,
                        f.files_changed,
                        f.additions,
                        f.deletions,
                        f.evidence,
                    )
                    for f in fixes
                ),
            }
    github.reset_log()
    return expected


def stored_corpus(full_name: str) -> dict[int, dict]:
    """The same shape as `server_corpus`, from the database."""
    owner, name = full_name.split("/")
    issues = (
        Issue.objects.filter(repository__owner=owner, repository__name=name)
        .prefetch_related("comments", "linked_fixes")
        .order_by("number")
    )
    stored: dict[int, dict] = {}
    for issue in issues:
        assert issue.number not in stored
        stored[issue.number] = {
            "github_id": issue.github_id,
            "is_pull_request": issue.is_pull_request,
            "title": issue.title,
            "body": issue.body,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "author": issue.author,
            "labels": issue.labels,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "comments_count": issue.comments_count,
            "comments": sorted(
                (c.github_id, c.author, c.body, c.created_at, c.updated_at)
                for c in issue.comments.all()
            ),
            "fixes": sorted(
                (
                    f.kind,
                    f.ref,
                    f.url,
                    f.merged_at,
                    f.files_changed,
                    f.additions,
                    f.deletions,
                    f.evidence,
                )
                for f in issue.linked_fixes.all()
            ),
        }
    return stored


def assert_same_corpus(github: FakeGitHub, full_name: str, **source_filter: Any) -> None:
    """Stored == served, issue by issue: no duplicate, no gap, no stale field."""
    expected = server_corpus(github, full_name, **source_filter)
    stored = stored_corpus(full_name)
    assert sorted(stored) == sorted(expected), "issue numbers differ"
    for number, issue in expected.items():
        assert stored[number] == issue, f"{full_name}#{number} differs"


@pytest.fixture
def corpus():
    """The snapshot helpers, as a fixture (conftest modules are not imported by tests)."""

    class Corpus:
        server = staticmethod(server_corpus)
        stored = staticmethod(stored_corpus)
        assert_same = staticmethod(assert_same_corpus)

    return Corpus


@pytest.fixture
def delete_comment() -> Callable[..., None]:
    """Delete a comment on the stand-in (it has no method for that): the comment leaves the
    comments list and the timeline, and the issue's count and `updated_at` change, as on GitHub.
    """

    def delete(github: FakeGitHub, full_name: str, number: int, comment_id: int) -> None:
        owner, name = full_name.split("/")
        with github._lock:
            repository = github._repository(owner, name)
            repository.comments[number] = [
                comment for comment in repository.comments[number] if comment["id"] != comment_id
            ]
            repository.timelines[number] = [
                event
                for event in repository.timelines[number]
                if not (event.get("event") == "commented" and event.get("id") == comment_id)
            ]
            remaining = len(repository.comments[number])
        github.edit_issue(owner, name, number, comments=remaining)

    return delete
