"""Reading GitHub for the ingest layer. The only module of the project that imports PyGithub.

Everything that leaves this module is a plain dataclass or one of the errors below, so the task
layer never handles PyGithub objects, its exception classes or requests' exceptions. Issues,
comments and fixes are the corpus's own records (`corpus.records`), read from GitHub's JSON by
the same parser as an import file, so the sync stores them as they come:

* :class:`RateLimited` (with ``reset_at``): stop, and come back after that moment.
* :class:`TransientGitHubError`: 5xx after the bounded retries, timeouts, dropped connections.
* :class:`NotFound`: 404/410, a deleted or transferred issue, an unknown repository.
* :class:`GitHubError`: anything else (the base class of all of them), among them an object
  that cannot be stored (a time out of range, a login longer than its column).

How PyGithub is used, and why not more of it:

* ``Github(...)`` is built with a bounded urllib3 ``Retry`` instead of PyGithub's default
  ``GithubRetry``, which sleeps until the rate-limit reset (up to an hour, holding a worker) and,
  after ten 5xx answers, raises requests' ``RetryError`` instead of a ``GithubException``.
  Rate limits therefore surface at once as :class:`RateLimited`.
* Requests go through ``Github.requester.requestJsonAndCheck`` (PyGithub's auth, error mapping,
  redirect handling and rate-limit bookkeeping) and JSON is read as plain dicts. PyGithub's
  object layer does not fit: reading ``raw_data`` of an item from a list completes the object
  with one more request per item, and ``PaginatedList`` cannot resume at a page number while
  telling whether another page follows.
* PyGithub follows a 301 (a renamed repository) to the new *path only*, dropping the query
  string: ``state``, ``since``, ``page`` and ``per_page`` are lost and a different list comes
  back without any error. Issue lists are therefore always read through the id-based path
  ``/repositories/{id}/issues``, which a rename never redirects; the id is looked up once per
  client and repository.

One client is meant for one worker thread at a time (PyGithub shares one HTTP connection).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException
from github.GithubException import RateLimitExceededException
from urllib3.util.retry import Retry

from common.text import JsonValueError, json_clean
from corpus.records import (
    CommentRecord,
    FixRecord,
    IssueRecord,
    RecordError,
    comment_record_parse,
    fix_record_parse,
    issue_record_parse,
    repository_in_api_url,
)

MAX_PER_PAGE = 100
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
# GitHub's advice when a limit answer names no reset time: wait at least a minute.
DEFAULT_RATE_LIMIT_WAIT = timedelta(seconds=60)

IssueState = Literal["open", "closed", "all"]


# --------------------------------------------------------------------------- data out


@dataclass(frozen=True)
class RepositoryData:
    github_id: int
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class RateLimitStatus:
    remaining: int
    limit: int
    reset_at: datetime


# --------------------------------------------------------------------------- errors


class GitHubError(Exception):
    """Any failure talking to GitHub; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RateLimited(GitHubError):
    """The primary or a secondary rate limit was hit; retry after ``reset_at``."""

    def __init__(
        self,
        reset_at: datetime,
        message: str = "GitHub rate limit exceeded",
        *,
        status: int | None = 403,
    ) -> None:
        super().__init__(f"{message} (resets at {reset_at.isoformat()})", status=status)
        self.reset_at = reset_at


class TransientGitHubError(GitHubError):
    """A failure that is likely gone on a later try: 5xx, timeouts, broken connections."""


class NotFound(GitHubError):
    """The repository or issue is gone: never existed, deleted (410) or transferred away."""


# --------------------------------------------------------------------------- transport


class _RequestCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add_one(self) -> None:
        with self._lock:
            self.value += 1


class _CountingRetry(Retry):
    """A urllib3 retry policy that also counts the HTTP exchanges of one client.

    PyGithub builds its requests session internally and hands only this policy down to the
    transport. urllib3 asks the policy ``is_retry`` once for every response it receives and calls
    ``increment`` with an ``error`` for every attempt that got no response, so together they see
    every request, retried attempts included. urllib3 copies the policy through ``new`` on each
    retry, which passes the shared counter along.
    """

    def __init__(self, *args: Any, request_counter: _RequestCounter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_counter = request_counter

    def new(self, **kwargs: Any) -> Self:
        kwargs.setdefault("request_counter", self.request_counter)
        return super().new(**kwargs)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        self.request_counter.add_one()
        return super().is_retry(method, status_code, has_retry_after)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if error is not None:
            self.request_counter.add_one()
        return super().increment(method, url, response, error, _pool, _stacktrace)


def _bounded_retry(max_retries: int, backoff: float, counter: _RequestCounter) -> _CountingRetry:
    return _CountingRetry(
        total=max_retries,
        connect=max_retries,
        read=max_retries,
        status=max_retries,
        other=0,
        allowed_methods=frozenset({"GET"}),
        # 403/429 (rate limits) are deliberately absent: they go straight to the caller.
        status_forcelist=TRANSIENT_STATUSES,
        backoff_factor=backoff,
        backoff_max=10,
        # A Retry-After on a 503 could ask for minutes; the task layer decides about waiting.
        respect_retry_after_header=False,
        # Hand the last 5xx to PyGithub, which raises a GithubException carrying the status,
        # instead of urllib3's MaxRetryError surfacing as requests' RetryError.
        raise_on_status=False,
        request_counter=counter,
    )


@contextmanager
def _translated_errors() -> Iterator[None]:
    try:
        yield
    except GithubException as error:
        raise _translate_github_exception(error) from error
    except requests.exceptions.RequestException as error:
        # Connection errors, timeouts and RetryError (retries used up) all land here.
        raise TransientGitHubError(f"GitHub request failed: {error}") from error
    except json.JSONDecodeError as error:
        raise TransientGitHubError(f"GitHub sent a truncated or invalid body: {error}") from error
    except RuntimeError as error:
        # PyGithub refuses redirects to another host or scheme with a RuntimeError.
        raise GitHubError(str(error)) from error


def _translate_github_exception(error: GithubException) -> GitHubError:
    status = error.status
    headers = {key.lower(): str(value) for key, value in (error.headers or {}).items()}
    message = _error_message(error)
    is_rate_limited = (
        isinstance(error, RateLimitExceededException)
        or status == 429
        or (status == 403 and headers.get("x-ratelimit-remaining") == "0")
    )
    if is_rate_limited:
        return RateLimited(_rate_limit_reset_time(headers), message, status=status)
    if status in (404, 410):
        return NotFound(message, status=status)
    if status >= 500:
        return TransientGitHubError(message, status=status)
    return GitHubError(message, status=status)


def _error_message(error: GithubException) -> str:
    data = error.data
    if isinstance(data, dict) and data.get("message"):
        return f"GitHub answered {error.status}: {data['message']}"
    return f"GitHub answered {error.status}"


def _rate_limit_reset_time(headers: dict[str, str]) -> datetime:
    """When to try again, in the order GitHub's documentation gives for rate-limit answers."""
    now = datetime.now(UTC)
    retry_after = headers.get("retry-after", "")
    if retry_after.isdigit():
        return now + timedelta(seconds=int(retry_after))
    reset = headers.get("x-ratelimit-reset")
    if headers.get("x-ratelimit-remaining") == "0" and reset:
        try:
            return datetime.fromtimestamp(int(float(reset)), UTC)
        except ValueError:
            pass
    return now + DEFAULT_RATE_LIMIT_WAIT


def _next_page_url(headers: dict[str, Any]) -> str | None:
    # PyGithub hands response headers over with lower-cased names.
    for part in str(headers.get("link") or "").split(","):
        match = re.match(r'\s*<([^>]+)>\s*;\s*rel="([^"]+)"', part)
        if match and match.group(2) == "next":
            return match.group(1)
    return None


# --------------------------------------------------------------------------- parsing


def _cleaned(what: str, data: Any) -> Any:
    """GitHub's JSON without NUL characters (PostgreSQL rejects them in text and in JSON)."""
    try:
        return json_clean(data)
    except JsonValueError as error:
        raise GitHubError(f"GitHub sent {what} that cannot be stored: {error}") from None


def _parsed(what: str, parse: Any, data: Any, **options: Any) -> Any:
    try:
        return parse(_cleaned(what, data), **options)
    except RecordError as error:
        raise GitHubError(f"GitHub sent {what} that cannot be stored: {error}") from None


def _format_since(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("since must be an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _issue_from_json(raw: Any, repository: tuple[str, str]) -> IssueRecord:
    return _parsed("an issue", issue_record_parse, raw, repository=repository)


def _comment_from_json(raw: Any) -> CommentRecord:
    return _parsed("a comment", comment_record_parse, raw)


def _distinct_comments(comments: list[CommentRecord]) -> list[CommentRecord]:
    """One record per comment id, the last read: a list that moves while it is read page by page
    can show a comment twice, and the corpus stores one row per id."""
    return list({comment.github_id: comment for comment in comments}.values())


def _comment_in_event(event: dict[str, Any]) -> dict[str, Any]:
    """The comment object inside a timeline "commented" event (the event adds two keys)."""
    return {key: value for key, value in event.items() if key not in ("event", "actor")}


def _repository_in_api_url(url: str | None) -> str | None:
    """ "owner/name" out of an API URL such as .../repos/owner/name/commits/sha."""
    found = repository_in_api_url(url)
    return f"{found[0]}/{found[1]}" if found else None


_CLOSING_REFERENCE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+"
    r"(?P<target>https?://\S+?/issues/\d+|(?:[\w.-]+/[\w.-]+)?#\d+)",
    re.IGNORECASE,
)


def _body_closes_issue(body: str | None, number: int, repository_names: set[str]) -> bool:
    """Whether a pull request body uses a GitHub closing keyword ("Fixes #12") on the issue."""
    for match in _CLOSING_REFERENCE.finditer(body or ""):
        target = match.group("target")
        if target.startswith("http"):
            url_match = re.search(r"/([^/]+/[^/]+)/issues/(\d+)$", target)
            repository, referenced = url_match.groups() if url_match else (None, None)
        else:
            repository, _, referenced = target.partition("#")
        same_repository = not repository or repository.lower() in repository_names
        if same_repository and referenced is not None and int(referenced) == number:
            return True
    return False


# --------------------------------------------------------------------------- the client


class GitHubClient:
    """Reads repositories, issues, comments and linked fixes from a GitHub REST API."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        per_page: int = MAX_PER_PAGE,
        timeout: float = 15,
        *,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        user_agent: str = "IssueCoder",
    ) -> None:
        """``max_retries`` bounds retries of 5xx answers, timeouts and dropped connections;
        waits between them grow from ``retry_backoff`` seconds (the first retry is immediate)."""
        if not 1 <= per_page <= MAX_PER_PAGE:
            raise ValueError(f"per_page must be between 1 and {MAX_PER_PAGE}")
        self._per_page = per_page
        self._request_counter = _RequestCounter()
        self._github = Github(
            base_url=base_url.rstrip("/"),
            auth=Auth.Token(token) if token else None,
            per_page=per_page,
            # PyGithub insists on an int here; rounding up never makes a timeout stricter.
            timeout=max(1, math.ceil(timeout)),
            user_agent=user_agent,
            retry=_bounded_retry(max_retries, retry_backoff, self._request_counter),
            # PyGithub waits 0.25 s between requests by default; the rate limit is the real bound.
            seconds_between_requests=0,
            seconds_between_writes=0,
        )
        self._requester = self._github.requester
        # Requested "owner/name" (lower case) -> the repository as GitHub knows it now.
        self._repositories: dict[str, RepositoryData] = {}

    def close(self) -> None:
        self._github.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def requests_made(self) -> int:
        """HTTP requests this client has sent, retries and followed redirects included."""
        return self._request_counter.value

    @property
    def last_seen_rate_limit(self) -> RateLimitStatus | None:
        """The rate limit as of the last response's headers, without asking GitHub again."""
        remaining, limit = self._requester.rate_limiting
        if limit < 0:
            return None
        reset_at = datetime.fromtimestamp(self._requester.rate_limiting_resettime, UTC)
        return RateLimitStatus(remaining=remaining, limit=limit, reset_at=reset_at)

    # ----------------------------------------------------------------------- public reads

    def repository(self, owner: str, name: str) -> RepositoryData:
        """The repository with its current owner and name (a rename is followed)."""
        _, data = self._get(f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}")
        data = _cleaned("a repository", data)
        repository = RepositoryData(
            github_id=int(data["id"]), owner=data["owner"]["login"], name=data["name"]
        )
        self._repositories[_name_key(owner, name)] = repository
        self._repositories[_name_key(repository.owner, repository.name)] = repository
        return repository

    def issue_pages(
        self,
        owner: str,
        name: str,
        *,
        state: IssueState = "closed",
        labels: Iterable[str] = (),
        since: datetime | None = None,
        start_page: int = 1,
    ) -> Iterator[tuple[int, list[IssueRecord]]]:
        """Yield ``(page_number, issues)`` sorted by ``updated_at`` ascending, pull requests
        included (``is_pull_request``). ``labels`` must all be present; ``since`` keeps issues
        updated at or after it. Resume with ``start_page`` = the last committed page + 1.

        Page numbers are positions in a list that moves while it is read: when an issue on a
        page already read is updated, it jumps to the end and every later issue shifts one place
        forward, so one issue slides from the next page onto the page already read and this pass
        misses it. Resuming with ``since`` = the ``updated_at`` of the last stored issue and
        ``start_page=1`` does not have that gap (issues with exactly that timestamp come again,
        which an upsert absorbs).
        """
        if state not in ("open", "closed", "all"):
            raise ValueError(f"unknown issue state {state!r}")
        if start_page < 1:
            raise ValueError("start_page starts at 1")
        label_names = [labels] if isinstance(labels, str) else list(labels)
        parameters: dict[str, Any] = {
            "state": state,
            "sort": "updated",
            "direction": "asc",
            "per_page": self._per_page,
        }
        if label_names:
            parameters["labels"] = ",".join(label_names)
        if since is not None:
            parameters["since"] = _format_since(since)
        repository = self._resolved(owner, name)
        # The id-based path: a rename would turn the name-based one into a 301, which PyGithub
        # follows without the query string (the filters and the page).
        path = f"/repositories/{repository.github_id}/issues"
        page = start_page
        while True:
            headers, data = self._get(path, {**parameters, "page": page})
            issues = [
                _issue_from_json(item, (repository.owner, repository.name)) for item in data or []
            ]
            if issues:
                yield page, issues
            if not issues or _next_page_url(headers) is None:
                return
            page += 1

    def issue(self, owner: str, name: str, number: int) -> IssueRecord:
        """One issue (or pull request). A transferred issue raises NotFound: GitHub answers
        301 to its new home, which PyGithub follows, so the answer is checked for that."""
        _, data = self._get(f"{self._repository_path(owner, name)}/issues/{number}")
        issue = _issue_from_json(data, (owner, name))
        home = _repository_in_api_url(issue.raw.get("repository_url"))
        moved = issue.number != number or not self._is_same_repository(owner, name, home)
        if moved:
            raise NotFound(f"{owner}/{name}#{number} was transferred to {home}#{issue.number}")
        return issue

    def comments(
        self, owner: str, name: str, number: int, *, since: datetime | None = None
    ) -> list[CommentRecord]:
        """All comments of an issue, oldest first (``since``: updated at or after it)."""
        parameters = {"since": _format_since(since)} if since is not None else {}
        path = f"{self._repository_path(owner, name)}/issues/{number}/comments"
        return _distinct_comments(
            [_comment_from_json(item) for page in self._pages(path, parameters) for item in page]
        )

    def linked_fixes(self, owner: str, name: str, number: int) -> list[FixRecord]:
        """Fixes named by the issue's timeline, pull requests first, each once.

        * "closed" events with a commit: the commit that closed the issue;
        * "referenced" events with a commit of this repository: a commit mentioning the issue;
        * "cross-referenced" events from a merged pull request of this repository.

        Costs the timeline pages plus one request per distinct pull request and commit.
        """
        return self.comments_and_fixes(owner, name, number)[1]

    def comments_and_fixes(
        self, owner: str, name: str, number: int
    ) -> tuple[list[CommentRecord], list[FixRecord]]:
        """``comments()`` and ``linked_fixes()`` from a single read of the timeline.

        GitHub's timeline repeats every comment in full as a "commented" event, so this spares
        the comments request: one request per issue fewer in a sync (plus one per fix).
        """
        base_path = self._repository_path(owner, name)
        timeline_path = f"{base_path}/issues/{number}/timeline"
        events = [event for page in self._pages(timeline_path, {}) for event in page]
        comments = _distinct_comments(
            [
                _comment_from_json(_comment_in_event(event))
                for event in events
                if event.get("event") == "commented"
            ]
        )
        return comments, self._fixes_in_timeline(owner, name, number, base_path, events)

    def rate_limit(self) -> RateLimitStatus:
        """The core rate limit; asking costs no rate limit on GitHub."""
        _, data = self._get("/rate_limit")
        core = (data.get("resources") or {}).get("core") or data.get("rate") or {}
        return RateLimitStatus(
            remaining=int(core["remaining"]),
            limit=int(core["limit"]),
            reset_at=datetime.fromtimestamp(int(core["reset"]), UTC),
        )

    # ----------------------------------------------------------------------- internals

    def _get(
        self, path_or_url: str, parameters: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], Any]:
        with _translated_errors():
            return self._requester.requestJsonAndCheck("GET", path_or_url, parameters=parameters)

    def _pages(self, path: str, parameters: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
        """Follow a list's Link header from its first page to its last."""
        headers, data = self._get(path, {**parameters, "per_page": self._per_page})
        yield data or []
        seen_urls: set[str] = set()
        next_url = _next_page_url(headers)
        while next_url and next_url not in seen_urls:
            seen_urls.add(next_url)
            headers, data = self._get(next_url)
            yield data or []
            next_url = _next_page_url(headers)

    def _resolved(self, owner: str, name: str) -> RepositoryData:
        cached = self._repositories.get(_name_key(owner, name))
        return cached if cached is not None else self.repository(owner, name)

    def _repository_path(self, owner: str, name: str) -> str:
        # Once the id is known, the id path spares the 301 round trip of a renamed repository.
        cached = self._repositories.get(_name_key(owner, name))
        if cached is not None:
            return f"/repositories/{cached.github_id}"
        return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"

    def _known_names(self, owner: str, name: str) -> set[str]:
        names = {_name_key(owner, name)}
        cached = self._repositories.get(_name_key(owner, name))
        if cached is not None:
            names.add(_name_key(cached.owner, cached.name))
        return names

    def _is_same_repository(self, owner: str, name: str, full_name: str | None) -> bool:
        if not full_name:
            return True
        if full_name.lower() in self._known_names(owner, name):
            return True
        if _name_key(owner, name) in self._repositories:
            return False
        # The caller may hold a name from before a rename: ask once who the repository is now.
        self._resolved(owner, name)
        return full_name.lower() in self._known_names(owner, name)

    def _merged_pull_in_reference(self, owner: str, name: str, event: dict[str, Any]) -> int | None:
        source_issue = (event.get("source") or {}).get("issue") or {}
        pull_request = source_issue.get("pull_request")
        if not pull_request or source_issue.get("number") is None:
            return None
        source_repository = (source_issue.get("repository") or {}).get(
            "full_name"
        ) or _repository_in_api_url(source_issue.get("repository_url"))
        if not self._is_same_repository(owner, name, source_repository):
            return None
        if "merged_at" in pull_request and not pull_request["merged_at"]:
            # GitHub says here that it was not merged, which spares fetching the pull.
            return None
        return int(source_issue["number"])

    def _fixes_in_timeline(
        self, owner: str, name: str, number: int, base_path: str, events: list[dict[str, Any]]
    ) -> list[FixRecord]:
        commit_evidence: dict[str, str] = {}
        commit_repositories: dict[str, str | None] = {}
        pull_numbers: list[int] = []
        for event in events:
            kind = event.get("event")
            if kind in ("closed", "referenced") and event.get("commit_id"):
                sha = str(event["commit_id"])
                home = _repository_in_api_url(event.get("commit_url"))
                same_repository = self._is_same_repository(owner, name, home)
                if kind == "referenced" and not same_repository:
                    # Pushes to forks mention the issue too; they fix nothing here.
                    continue
                verb = "closed by" if kind == "closed" else "referenced by"
                where = "" if same_repository else f" in {home}"
                if sha not in commit_evidence or kind == "closed":
                    commit_evidence[sha] = f"{verb} commit {sha[:7]}{where}"
                    commit_repositories[sha] = None if same_repository else home
            elif kind == "cross-referenced":
                pull_number = self._merged_pull_in_reference(owner, name, event)
                if pull_number is not None and pull_number not in pull_numbers:
                    pull_numbers.append(pull_number)
        fixes = [
            fix
            for fix in (self._pull_fix(owner, name, base_path, p, number) for p in pull_numbers)
            if fix is not None
        ]
        for sha, evidence in commit_evidence.items():
            home = commit_repositories[sha]
            commit_path = f"/repos/{home}" if home else base_path
            fixes.append(self._commit_fix(commit_path, sha, evidence))
        return fixes

    def _pull_fix(
        self, owner: str, name: str, base_path: str, pull_number: int, issue_number: int
    ) -> FixRecord | None:
        try:
            _, pull = self._get(f"{base_path}/pulls/{pull_number}")
        except NotFound:
            return None
        if not pull.get("merged") and not pull.get("merged_at"):
            return None
        evidence = f"cross-referenced merged PR #{pull_number}"
        if _body_closes_issue(pull.get("body"), issue_number, self._known_names(owner, name)):
            evidence += f"; fixes #{issue_number} in PR body"
        fix = {
            "kind": "pr",
            "ref": pull_number,
            "url": pull.get("html_url"),
            "merged_at": pull.get("merged_at"),
            "files_changed": pull.get("changed_files"),
            "additions": pull.get("additions"),
            "deletions": pull.get("deletions"),
            "evidence": evidence,
        }
        return _parsed("a pull request", fix_record_parse, fix)

    def _commit_fix(self, repository_path: str, sha: str, evidence: str) -> FixRecord:
        try:
            _, commit = self._get(f"{repository_path}/commits/{sha}")
        except GitHubError as error:
            # 404/422: the commit is gone (force-pushed away); the timeline still names it.
            if not isinstance(error, NotFound) and error.status != 422:
                raise
            return _parsed(
                "a commit", fix_record_parse, {"kind": "commit", "ref": sha, "evidence": evidence}
            )
        stats = commit.get("stats") or {}
        committer = (commit.get("commit") or {}).get("committer") or {}
        files = commit.get("files")
        fix = {
            "kind": "commit",
            "ref": sha,
            "url": commit.get("html_url"),
            "merged_at": committer.get("date"),
            # GitHub lists at most 300 files of a commit; stats cover the whole commit.
            "files_changed": len(files) if files is not None else None,
            "additions": stats.get("additions"),
            "deletions": stats.get("deletions"),
            "evidence": evidence,
        }
        return _parsed("a commit", fix_record_parse, fix)


def _name_key(owner: str, name: str) -> str:
    # GitHub treats owner and repository names case-insensitively.
    return f"{owner}/{name}".lower()
