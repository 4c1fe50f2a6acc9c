"""A stand-in for the GitHub REST API, served over real HTTP on 127.0.0.1 for tests and benchmarks.

It answers the part of the API that the ingest layer reads, in GitHub's response shapes, so that
the real client (PyGithub underneath) can be exercised end to end without the network::

    with FakeGitHub() as github:
        github.load_jsonl("corpus/data/sample-issues.jsonl")
        client = GitHubClient(github.base_url)
        ...
        assert github.request_count == 3

Endpoints (all GET; everything else answers 404 like an unknown GitHub route):

* ``/repos/{owner}/{repo}`` and the id alias ``/repositories/{id}``, each followed by
  ``/issues`` (``state``, ``labels``, ``since``, ``sort``, ``direction``, ``per_page``, ``page``;
  pull requests are listed too and carry a ``pull_request`` key), ``/issues/{n}``,
  ``/issues/{n}/comments`` (``since``), ``/issues/{n}/timeline``, ``/pulls/{n}``,
  ``/pulls/{n}/files`` and ``/commits/{sha}`` (a unique prefix of the sha works too).
* ``/rate_limit``, which like GitHub's does not count against the limit.

Behaviour that mirrors GitHub:

* Lists are paginated (``per_page`` defaults to 30, at most 100) with a ``Link`` header of
  absolute URLs on this server's base (``next``, ``last``, ``prev``, ``first``).
* Every 200 carries an ``ETag``; a request whose ``If-None-Match`` matches gets 304 with no body,
  and a 304 costs no rate limit. Every response carries the ``X-RateLimit-*`` headers.
* After :meth:`FakeGitHub.rename_repository` the old path answers 301 with
  ``Location: {base}/repositories/{id}/...`` keeping the query string, as GitHub does.
* After :meth:`FakeGitHub.delete_issue` the issue and its sub-resources answer 410 Gone.
* After :meth:`FakeGitHub.transfer_issue` the old issue path answers 301 to the issue's new home
  ``/repositories/{new id}/issues/{new number}`` (sub-resource and query string kept). That is
  what GitHub does for a reader who can see the target repository; GitHub answers 404 instead
  when the reader cannot, which :meth:`FakeGitHub.delete_issue` covers closely enough (410).
* API URLs inside stored objects (``https://api.github.com/...``) are served rewritten to this
  server's base, so a client following them stays on this server.

Injectable faults, settable at any time: :attr:`FakeGitHub.rate_limit_after`,
:attr:`FakeGitHub.rate_limit_reset_seconds`, :attr:`FakeGitHub.fail_every`,
:attr:`FakeGitHub.fail_status` and :attr:`FakeGitHub.delay_seconds`. Every request is logged
in :attr:`FakeGitHub.requests` as ``(method, path_with_query, status)``.

Any ``Authorization`` header (``token X``, ``Bearer X``) or none is accepted; the last one seen
is kept in :attr:`FakeGitHub.last_authorization`.
"""

from __future__ import annotations

import copy
import hashlib
import http.server
import json
import math
import random
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit

PUBLIC_API_ROOT = "https://api.github.com"
PUBLIC_WEB_ROOT = "https://github.com"
DEFAULT_RATE_LIMIT = 5000
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
DOCUMENTATION_URL = "https://docs.github.com/rest"

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_ISSUE_SORT_KEYS = {"created": "created_at", "updated": "updated_at", "comments": "comments"}
_SERVER_ERROR_MESSAGES = {
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "We couldn't respond to your request in time.",
}

# Source files that plausibly change in a fix, per repository, for synthesised pulls and commits.
_FIX_FILE_CANDIDATES = {
    "microsoft/deepspeed": [
        "deepspeed/runtime/engine.py",
        "deepspeed/runtime/zero/stage3.py",
        "deepspeed/runtime/zero/stage_1_and_2.py",
        "deepspeed/ops/adam/cpu_adam.py",
        "deepspeed/runtime/pipe/engine.py",
        "deepspeed/inference/engine.py",
        "op_builder/builder.py",
        "tests/unit/runtime/zero/test_zero.py",
        "tests/unit/ops/adam/test_cpu_adam.py",
    ],
    "nvidia/megatron-lm": [
        "megatron/core/parallel_state.py",
        "megatron/core/tensor_parallel/layers.py",
        "megatron/core/transformer/transformer_layer.py",
        "megatron/core/optimizer/distrib_optimizer.py",
        "megatron/training/checkpointing.py",
        "megatron/training/arguments.py",
        "tests/unit_tests/test_parallel_state.py",
    ],
    "huggingface/transformers": [
        "src/transformers/trainer.py",
        "src/transformers/modeling_utils.py",
        "src/transformers/generation/utils.py",
        "src/transformers/tokenization_utils_base.py",
        "src/transformers/integrations/deepspeed.py",
        "src/transformers/models/llama/modeling_llama.py",
        "tests/trainer/test_trainer.py",
        "tests/generation/test_utils.py",
    ],
}
_GENERIC_FIX_FILES = ["src/core.py", "src/utils.py", "src/training.py", "tests/test_core.py"]


def format_time(moment: datetime) -> str:
    """GitHub's timestamp format: UTC, whole seconds, a trailing Z."""
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def parse_time(text: str) -> datetime:
    """Parse an ISO 8601 timestamp; a timestamp without an offset is taken as UTC like GitHub."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace(" ", "+"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _stable_number(text: str, modulo: int) -> int:
    """A number derived from text, the same in every run (unlike hash() on str)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % modulo


def _user(login: str) -> dict[str, Any]:
    user_id = 1000 + _stable_number(login, 90_000_000)
    api = f"{PUBLIC_API_ROOT}/users/{login}"
    return {
        "login": login,
        "id": user_id,
        "node_id": f"U_{user_id}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{PUBLIC_WEB_ROOT}/{login}",
        "repos_url": f"{api}/repos",
        "type": "User",
        "user_view_type": "public",
        "site_admin": False,
    }


def _user_field(value: Any) -> Any:
    """Accept a login as shorthand for a user object; None stays None (a deleted account)."""
    return _user(value) if isinstance(value, str) else value


def _replace_in_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace_in_strings(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _replace_in_strings(item, old, new) for key, item in value.items()}
    return value


class _Renamer:
    """Rewrites a repository's old name to its current one throughout stored objects."""

    def __init__(self, old_full_name: str, repository: _Repository) -> None:
        self._repository = repository
        # A name ends at "/", "?", "{", "#" or the end of the string: "o/r" must not match "o/r2".
        boundary = r"(?=[/?{#]|$)"
        self._api = re.compile(re.escape(f"/repos/{old_full_name}") + boundary, re.IGNORECASE)
        self._web = re.compile(
            re.escape(f"{PUBLIC_WEB_ROOT}/{old_full_name}") + boundary, re.IGNORECASE
        )

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            value = self._api.sub(f"/repos/{self._repository.full_name}", value)
            return self._web.sub(self._repository.web_url, value)
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, dict):
            if value.get("id") == self._repository.github_id and "full_name" in value:
                # An embedded repository object (cross-reference sources) shows the current name.
                return self._repository.as_json()
            return {key: self(item) for key, item in value.items()}
        return value


@dataclass
class _Repository:
    github_id: int
    owner: str
    name: str
    created_at: str
    # Pull requests are issues too on GitHub: their issue side lives here with a pull_request key.
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    timelines: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    pull_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted_issues: set[int] = field(default_factory=set)
    # old number -> (repository id, number) where the issue lives now
    transferred_issues: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def api_url(self) -> str:
        return f"{PUBLIC_API_ROOT}/repos/{self.full_name}"

    @property
    def web_url(self) -> str:
        return f"{PUBLIC_WEB_ROOT}/{self.full_name}"

    def as_json(self) -> dict[str, Any]:
        api = self.api_url
        open_issues = sum(1 for issue in self.issues.values() if issue["state"] == "open")
        return {
            "id": self.github_id,
            "node_id": f"R_{self.github_id}",
            "name": self.name,
            "full_name": self.full_name,
            "private": False,
            "owner": {**_user(self.owner), "type": "Organization"},
            "html_url": self.web_url,
            "description": None,
            "fork": False,
            "url": api,
            "issues_url": f"{api}/issues{{/number}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "commits_url": f"{api}/commits{{/sha}}",
            "created_at": self.created_at,
            "updated_at": self.created_at,
            "pushed_at": self.created_at,
            "default_branch": "main",
            "has_issues": True,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "open_issues_count": open_issues,
        }


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class _NotFoundError(Exception):
    """Raised inside request handling to answer 404 the way GitHub does."""


class _ValidationError(Exception):
    """Raised inside request handling to answer 422 "Validation Failed" like GitHub."""

    def __init__(self, resource: str, field_name: str) -> None:
        super().__init__(f"invalid {field_name}")
        self.body = {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "field": field_name, "code": "invalid"}],
            "documentation_url": DOCUMENTATION_URL,
            "status": "422",
        }


class FakeGitHub:
    """An in-memory GitHub with a real HTTP front; see the module docstring for what it serves."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._repositories: dict[int, _Repository] = {}
        self._ids_by_name: dict[str, int] = {}
        self._ids_by_former_name: dict[str, int] = {}
        self._next_repository_id = 100_001
        self._next_object_id = 9_000_000_001
        self._latest_timestamp = datetime(2000, 1, 1, tzinfo=UTC)
        self._server: _FakeGitHubHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url: str | None = None

        # Faults, settable at any time.
        self._rate_limit_after: int | None = None
        self.rate_limit_reset_seconds: float = 2.0
        self.fail_every: int | None = None
        self.fail_status: int = 502
        self.delay_seconds: float = 0.0

        self.requests: list[tuple[str, str, int]] = []
        self.last_authorization: str | None = None
        self._requests_seen = 0
        self._window_used = 0
        self._window_reset_at: float | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Serve on a free port of 127.0.0.1 in a background thread; return the base URL."""
        if self._server is not None:
            raise RuntimeError("FakeGitHub is already running")
        server = _FakeGitHubHTTPServer(("127.0.0.1", 0), _RequestHandler)
        server.fake = self
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-github",
            daemon=True,
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ faults and the log

    @property
    def rate_limit_after(self) -> int | None:
        """Answer 403 "API rate limit exceeded" once this many counted requests were served.

        Setting it starts a fresh window, so "after N" counts from the moment it is set. When the
        limit is hit the window ends ``rate_limit_reset_seconds`` later and N more are allowed.
        """
        return self._rate_limit_after

    @rate_limit_after.setter
    def rate_limit_after(self, value: int | None) -> None:
        with self._lock:
            self._rate_limit_after = value
            self._window_used = 0
            self._window_reset_at = None

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def reset_log(self) -> None:
        """Forget the request log; ``fail_every`` counts from here again."""
        with self._lock:
            self.requests.clear()
            self._requests_seen = 0

    def paths_requested(self) -> list[str]:
        return [path for _, path, _ in self.requests]

    # ------------------------------------------------------------------ data

    def add_repository(self, owner: str, name: str, github_id: int | None = None) -> dict[str, Any]:
        with self._lock:
            key = f"{owner}/{name}".lower()
            if key in self._ids_by_name:
                raise ValueError(f"repository {owner}/{name} already exists")
            if github_id is None:
                github_id = self._next_repository_id
                self._next_repository_id += 1
            if github_id in self._repositories:
                raise ValueError(f"repository id {github_id} already exists")
            repository = _Repository(github_id, owner, name, created_at="2019-01-01T00:00:00Z")
            self._repositories[github_id] = repository
            self._ids_by_name[key] = github_id
            self._ids_by_former_name.pop(key, None)
            return repository.as_json()

    def has_repository(self, owner: str, name: str) -> bool:
        with self._lock:
            return f"{owner}/{name}".lower() in self._ids_by_name

    def add_issue(
        self,
        owner: str,
        name: str,
        issue_json: Mapping[str, Any],
        comments: Iterable[Mapping[str, Any]] = (),
        timeline: Iterable[Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Store an issue; missing GitHub fields are filled in (only ``title`` really matters).

        ``labels`` may be names, ``user`` a login (``None`` means a deleted account). Without a
        ``timeline`` one is made from the comments ("commented") and, for a closed issue, a
        "closed" event without a commit.
        """
        with self._lock:
            repository = self._repository(owner, name)
            issue = self._complete_issue(repository, copy.deepcopy(dict(issue_json)))
            number = issue["number"]
            if number in repository.issues:
                raise ValueError(f"{repository.full_name}#{number} already exists")
            stored_comments = [
                self._complete_comment(repository, number, copy.deepcopy(dict(comment)))
                for comment in comments
            ]
            if "comments" not in issue_json:
                issue["comments"] = len(stored_comments)
            repository.issues[number] = issue
            repository.comments[number] = stored_comments
            if timeline is None:
                events = [self._commented_event(comment) for comment in stored_comments]
                if issue["state"] == "closed":
                    events.append(self._closed_event(repository, issue))
                repository.timelines[number] = sorted(events, key=lambda event: event["created_at"])
            else:
                repository.timelines[number] = [copy.deepcopy(dict(event)) for event in timeline]
            self._note_timestamp(issue["updated_at"])
            return copy.deepcopy(issue)

    def edit_issue(self, owner: str, name: str, number: int, **fields: Any) -> dict[str, Any]:
        """Change fields of an issue; ``updated_at`` moves later than anything stored so far."""
        with self._lock:
            repository = self._repository(owner, name)
            issue = repository.issues[number]
            now = self._later_time()
            was_open = issue["state"] == "open"
            for key, value in fields.items():
                if key == "labels":
                    value = [self._label(repository, label) for label in value]
                elif key == "user":
                    value = _user_field(value)
                issue[key] = value
            issue["updated_at"] = now
            if issue["state"] == "closed" and was_open:
                if "state_reason" not in fields:
                    issue["state_reason"] = "completed"
                if "closed_at" not in fields:
                    issue["closed_at"] = now
                repository.timelines[number].append(self._closed_event(repository, issue))
            elif issue["state"] == "open" and not was_open:
                issue["closed_at"] = None
                issue["state_reason"] = "reopened"
                reopened = self._event(repository, "reopened", now)
                repository.timelines[number].append(reopened)
            return copy.deepcopy(issue)

    def add_comment(
        self,
        owner: str,
        name: str,
        number: int,
        comment_json: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Add a comment (fields like ``body="..."``, ``user="login"``); bumps ``updated_at``."""
        with self._lock:
            repository = self._repository(owner, name)
            issue = repository.issues[number]
            now = self._later_time()
            comment_fields = {**dict(comment_json or {}), **fields}
            comment_fields.setdefault("created_at", now)
            comment_fields.setdefault("updated_at", comment_fields["created_at"])
            comment = self._complete_comment(repository, number, copy.deepcopy(comment_fields))
            repository.comments[number].append(comment)
            repository.timelines[number].append(self._commented_event(comment))
            issue["comments"] = issue.get("comments", 0) + 1
            issue["updated_at"] = max(now, comment["updated_at"])
            self._note_timestamp(issue["updated_at"])
            return copy.deepcopy(comment)

    def add_pull(self, owner: str, name: str, pull_json: Mapping[str, Any]) -> dict[str, Any]:
        """Store a pull request and its issue side (which the issue list shows).

        A ``files`` list in ``pull_json`` is served at ``/pulls/{n}/files`` and, unless given,
        sets ``changed_files``, ``additions`` and ``deletions``.
        """
        with self._lock:
            repository = self._repository(owner, name)
            pull = copy.deepcopy(dict(pull_json))
            files = pull.pop("files", None)
            number = pull.get("number") or self._next_number(repository)
            if number in repository.pulls or number in repository.issues:
                raise ValueError(f"{repository.full_name}#{number} already exists")
            pull["number"] = number
            if files is None:
                files = _synthesised_files(repository, f"pull {number}")
            files = [_complete_file(repository, entry) for entry in files]
            pull = self._complete_pull(repository, pull, files)
            repository.pulls[number] = pull
            repository.pull_files[number] = files
            issue_side = self._issue_side_of_pull(repository, pull)
            repository.issues[number] = issue_side
            repository.comments[number] = []
            repository.timelines[number] = []
            if pull.get("merged_at"):
                merged = self._event(repository, "merged", pull["merged_at"])
                merged["commit_id"] = pull.get("merge_commit_sha")
                repository.timelines[number].append(merged)
            self._note_timestamp(issue_side["updated_at"])
            return copy.deepcopy(pull)

    def add_commit(
        self, owner: str, name: str, sha: str, commit_json: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Store a commit as ``/commits/{sha}`` serves it (with ``stats`` and ``files``)."""
        with self._lock:
            repository = self._repository(owner, name)
            commit = self._complete_commit(repository, sha, copy.deepcopy(dict(commit_json or {})))
            repository.commits[sha] = commit
            return copy.deepcopy(commit)

    def add_linked_fix(
        self,
        owner: str,
        name: str,
        number: int,
        kind: str,
        ref: str,
        *,
        merge_commit_sha: str | None = None,
    ) -> dict[str, Any]:
        """Record a fix of an issue as GitHub's timeline would show it.

        ``kind="pr"``: a merged pull request ``ref`` whose body says "Fixes #number", plus a
        "cross-referenced" event on the issue. ``kind="commit"``: commit ``ref`` plus a
        "referenced" event, and the issue's "closed" event names the commit (as when a merge
        closes an issue). Returns the pull or commit object.
        """
        with self._lock:
            repository = self._repository(owner, name)
            issue = repository.issues[number]
            closed_at = parse_time(issue.get("closed_at") or issue["updated_at"])
            created_at = parse_time(issue["created_at"])
            # The merge lands moments before GitHub closes the issue.
            landed_at = max(closed_at - timedelta(seconds=30), created_at + timedelta(seconds=1))
            if kind == "pr":
                return self._add_fixing_pull(
                    repository, issue, int(ref), created_at, landed_at, merge_commit_sha
                )
            if kind == "commit":
                return self._add_fixing_commit(repository, issue, ref, landed_at)
            raise ValueError(f"unknown fix kind {kind!r}")

    def rename_repository(
        self, old_owner: str, old_name: str, new_owner: str, new_name: str
    ) -> None:
        """Rename (or move) a repository; the old path answers 301 from now on."""
        with self._lock:
            repository = self._repository(old_owner, old_name)
            old_full_name = repository.full_name
            new_key = f"{new_owner}/{new_name}".lower()
            if new_key in self._ids_by_name and self._ids_by_name[new_key] != repository.github_id:
                raise ValueError(f"repository {new_owner}/{new_name} already exists")
            del self._ids_by_name[old_full_name.lower()]
            self._ids_by_former_name[old_full_name.lower()] = repository.github_id
            repository.owner, repository.name = new_owner, new_name
            self._ids_by_name[new_key] = repository.github_id
            self._ids_by_former_name.pop(new_key, None)
            # Stored objects name the repository in their URLs; GitHub serves the new name.
            renamed = _Renamer(old_full_name, repository)
            for attribute in ("issues", "comments", "timelines", "pulls", "pull_files", "commits"):
                setattr(repository, attribute, renamed(getattr(repository, attribute)))

    def delete_issue(self, owner: str, name: str, number: int) -> None:
        """Delete an issue: it leaves the lists and its paths answer 410 Gone."""
        with self._lock:
            repository = self._repository(owner, name)
            repository.issues.pop(number)
            repository.comments.pop(number, None)
            repository.timelines.pop(number, None)
            repository.deleted_issues.add(number)

    def transfer_issue(
        self,
        owner: str,
        name: str,
        number: int,
        new_owner: str,
        new_name: str,
        new_number: int | None = None,
    ) -> int:
        """Move an issue to another repository; its old paths answer 301 to the new home.

        Returns the issue's number in the target repository (the next free one by default).
        """
        with self._lock:
            source = self._repository(owner, name)
            target = self._repository(new_owner, new_name)
            if new_number is None:
                new_number = self._next_number(target)
            if new_number in target.issues:
                raise ValueError(f"{target.full_name}#{new_number} already exists")
            issue = source.issues.pop(number)
            comments = source.comments.pop(number, [])
            timeline = source.timelines.pop(number, [])
            moves = (
                (
                    f"/repos/{source.full_name}/issues/{number}",
                    f"/repos/{target.full_name}/issues/{new_number}",
                ),
                (f"{source.web_url}/issues/{number}", f"{target.web_url}/issues/{new_number}"),
                (source.api_url, target.api_url),
            )
            for old, new in moves:
                issue = _replace_in_strings(issue, old, new)
                comments = _replace_in_strings(comments, old, new)
            issue["number"] = new_number
            issue["updated_at"] = self._later_time()
            target.issues[new_number] = issue
            target.comments[new_number] = comments
            target.timelines[new_number] = timeline
            source.transferred_issues[number] = (target.github_id, new_number)
            return new_number

    def issue(self, owner: str, name: str, number: int) -> dict[str, Any]:
        """The stored issue as the server would serve it (with public API URLs)."""
        with self._lock:
            return copy.deepcopy(self._repository(owner, name).issues[number])

    def issues(self, owner: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(list(self._repository(owner, name).issues.values()))

    def load_jsonl(self, path: str | Path) -> int:
        """Load issues in the project's import format and return how many were loaded.

        Each line is a GitHub REST issue plus ``"repository": "owner/name"``,
        ``"repository_id"`` (optional), ``"comments_data"`` (comment objects) and
        ``"linked_fixes"`` (``{"kind": "pr"|"commit", "ref": ..., "url": ...}``). Repositories
        are created as needed, with the line's repository id when it has one; each linked fix
        becomes the pull or commit and the timeline events a sync reads (see
        :meth:`add_linked_fix`). When an issue has both, the commit is the pull's merge.
        """
        loaded = 0
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            owner, name = record.pop("repository").split("/", 1)
            repository_id = record.pop("repository_id", None)
            comments = record.pop("comments_data", None) or []
            fixes = record.pop("linked_fixes", None) or []
            if not self.has_repository(owner, name):
                self.add_repository(owner, name, github_id=repository_id)
            self.add_issue(owner, name, record, comments=comments)
            commit_shas = [fix["ref"] for fix in fixes if fix["kind"] == "commit"]
            for fix in fixes:
                merge_commit_sha = None
                if fix["kind"] == "pr" and len(commit_shas) == 1:
                    merge_commit_sha = commit_shas[0]
                self.add_linked_fix(
                    owner,
                    name,
                    record["number"],
                    fix["kind"],
                    str(fix["ref"]),
                    merge_commit_sha=merge_commit_sha,
                )
            loaded += 1
        return loaded

    # ------------------------------------------------------------------ building objects

    def _repository(self, owner: str, name: str) -> _Repository:
        github_id = self._ids_by_name.get(f"{owner}/{name}".lower())
        if github_id is None:
            raise KeyError(f"no repository {owner}/{name}")
        return self._repositories[github_id]

    def _new_id(self) -> int:
        self._next_object_id += 1
        return self._next_object_id

    def _next_number(self, repository: _Repository) -> int:
        taken = (
            set(repository.issues)
            | set(repository.pulls)
            | repository.deleted_issues
            | set(repository.transferred_issues)
        )
        return max(taken, default=0) + 1

    def _note_timestamp(self, text: str | None) -> None:
        if text:
            self._latest_timestamp = max(self._latest_timestamp, parse_time(text))

    def _later_time(self) -> str:
        """Now, or one second after the newest stored timestamp if that is later (sample data
        can lie in the future), so an edit always sorts after everything stored so far."""
        now = datetime.now(UTC).replace(microsecond=0)
        moment = max(now, self._latest_timestamp + timedelta(seconds=1))
        self._latest_timestamp = moment
        return format_time(moment)

    def _label(self, repository: _Repository, label: Any) -> dict[str, Any]:
        if isinstance(label, dict):
            return label
        label_id = 5_000_000 + _stable_number(f"{repository.full_name}:{label}", 1_000_000_000)
        return {
            "id": label_id,
            "node_id": f"LA_{label_id}",
            "url": f"{repository.api_url}/labels/{label}",
            "name": label,
            "color": f"{_stable_number(str(label), 0xFFFFFF):06x}",
            "default": False,
            "description": None,
        }

    def _complete_issue(self, repository: _Repository, issue: dict[str, Any]) -> dict[str, Any]:
        number = issue.get("number") or self._next_number(repository)
        issue["number"] = number
        api = f"{repository.api_url}/issues/{number}"
        if "created_at" not in issue:
            issue["created_at"] = self._later_time()
        issue.setdefault("updated_at", issue["created_at"])
        issue.setdefault("closed_at", None)
        issue.setdefault("state", "closed" if issue["closed_at"] else "open")
        issue.setdefault("state_reason", "completed" if issue["state"] == "closed" else None)
        if issue["state"] == "closed" and not issue["closed_at"]:
            issue["closed_at"] = issue["updated_at"]
        issue_id = issue.setdefault("id", self._new_id())
        defaults: dict[str, Any] = {
            "url": api,
            "repository_url": repository.api_url,
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": f"{repository.web_url}/issues/{number}",
            "node_id": f"I_{issue_id}",
            "title": "",
            "user": _user("octocat"),
            "labels": [],
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": 0,
            "author_association": "NONE",
            "active_lock_reason": None,
            "body": None,
            "reactions": {"url": f"{api}/reactions", "total_count": 0},
            "timeline_url": f"{api}/timeline",
            "performed_via_github_app": None,
        }
        for key, value in defaults.items():
            issue.setdefault(key, value)
        issue["user"] = _user_field(issue["user"])
        issue["labels"] = [self._label(repository, label) for label in issue["labels"]]
        return issue

    def _complete_comment(
        self, repository: _Repository, number: int, comment: dict[str, Any]
    ) -> dict[str, Any]:
        comment_id = comment.setdefault("id", self._new_id())
        if "created_at" not in comment:
            comment["created_at"] = self._later_time()
        comment.setdefault("updated_at", comment["created_at"])
        defaults: dict[str, Any] = {
            "url": f"{repository.api_url}/issues/comments/{comment_id}",
            "html_url": f"{repository.web_url}/issues/{number}#issuecomment-{comment_id}",
            "issue_url": f"{repository.api_url}/issues/{number}",
            "node_id": f"IC_{comment_id}",
            "user": _user("octocat"),
            "author_association": "NONE",
            "body": "",
            "reactions": {"total_count": 0},
            "performed_via_github_app": None,
        }
        for key, value in defaults.items():
            comment.setdefault(key, value)
        comment["user"] = _user_field(comment["user"])
        self._note_timestamp(comment["updated_at"])
        return comment

    def _event(self, repository: _Repository, name: str, created_at: str) -> dict[str, Any]:
        event_id = self._new_id()
        return {
            "id": event_id,
            "node_id": f"E_{event_id}",
            "url": f"{repository.api_url}/issues/events/{event_id}",
            "actor": _user("github-actions"),
            "event": name,
            "commit_id": None,
            "commit_url": None,
            "created_at": created_at,
            "performed_via_github_app": None,
        }

    def _closed_event(self, repository: _Repository, issue: dict[str, Any]) -> dict[str, Any]:
        event = self._event(repository, "closed", issue.get("closed_at") or issue["updated_at"])
        event["state_reason"] = issue.get("state_reason")
        return event

    @staticmethod
    def _commented_event(comment: dict[str, Any]) -> dict[str, Any]:
        # GitHub's timeline repeats the whole comment, tagged as an event.
        return {**copy.deepcopy(comment), "event": "commented", "actor": comment["user"]}

    def _complete_pull(
        self, repository: _Repository, pull: dict[str, Any], files: list[dict[str, Any]]
    ) -> dict[str, Any]:
        number = pull["number"]
        api = f"{repository.api_url}/pulls/{number}"
        if "created_at" not in pull:
            pull["created_at"] = self._later_time()
        pull.setdefault("merged_at", None)
        pull.setdefault("closed_at", pull["merged_at"])
        pull.setdefault("updated_at", pull["closed_at"] or pull["created_at"])
        pull.setdefault("state", "closed" if pull["closed_at"] else "open")
        pull.setdefault("merged", pull["merged_at"] is not None)
        pull_id = pull.setdefault("id", self._new_id())
        pull.setdefault("changed_files", len(files))
        pull.setdefault("additions", sum(entry["additions"] for entry in files))
        pull.setdefault("deletions", sum(entry["deletions"] for entry in files))
        base_sha = hashlib.sha1(f"{repository.full_name} base {number}".encode()).hexdigest()
        head_sha = hashlib.sha1(f"{repository.full_name} head {number}".encode()).hexdigest()
        defaults: dict[str, Any] = {
            "url": api,
            "node_id": f"PR_{pull_id}",
            "html_url": f"{repository.web_url}/pull/{number}",
            "diff_url": f"{repository.web_url}/pull/{number}.diff",
            "patch_url": f"{repository.web_url}/pull/{number}.patch",
            "issue_url": f"{repository.api_url}/issues/{number}",
            "commits_url": f"{api}/commits",
            "comments_url": f"{repository.api_url}/issues/{number}/comments",
            "title": f"Pull request {number}",
            "user": _user("contributor"),
            "body": None,
            "labels": [],
            "locked": False,
            "draft": False,
            "merge_commit_sha": None,
            "head": {"label": f"contributor:fix-{number}", "ref": f"fix-{number}", "sha": head_sha},
            "base": {"label": f"{repository.owner}:main", "ref": "main", "sha": base_sha},
            "author_association": "CONTRIBUTOR",
            "mergeable": None,
            "comments": 0,
            "review_comments": 0,
            "commits": 1,
        }
        for key, value in defaults.items():
            pull.setdefault(key, value)
        pull["user"] = _user_field(pull["user"])
        pull["labels"] = [self._label(repository, label) for label in pull["labels"]]
        return pull

    def _issue_side_of_pull(self, repository: _Repository, pull: dict[str, Any]) -> dict[str, Any]:
        number = pull["number"]
        issue = {
            "number": number,
            "id": self._new_id(),
            "title": pull["title"],
            "user": pull["user"],
            "labels": pull["labels"],
            "state": pull["state"],
            "state_reason": None,
            "comments": pull["comments"],
            "created_at": pull["created_at"],
            "updated_at": pull["updated_at"],
            "closed_at": pull["closed_at"],
            "author_association": pull["author_association"],
            "body": pull["body"],
            "draft": pull["draft"],
            "html_url": pull["html_url"],
            "pull_request": {
                "url": pull["url"],
                "html_url": pull["html_url"],
                "diff_url": pull["diff_url"],
                "patch_url": pull["patch_url"],
                "merged_at": pull["merged_at"],
            },
        }
        return self._complete_issue(repository, issue)

    def _complete_commit(
        self, repository: _Repository, sha: str, commit: dict[str, Any]
    ) -> dict[str, Any]:
        files = [_complete_file(repository, entry) for entry in commit.get("files", [])]
        commit["files"] = files
        additions = sum(entry["additions"] for entry in files)
        deletions = sum(entry["deletions"] for entry in files)
        commit.setdefault(
            "stats",
            {"total": additions + deletions, "additions": additions, "deletions": deletions},
        )
        when = commit.get("commit", {}).get("committer", {}).get("date") or self._later_time()
        author = commit.get("author", _user("contributor"))
        git_person = {"name": "Contributor", "email": "contributor@example.com", "date": when}
        details = commit.setdefault("commit", {})
        details.setdefault("author", dict(git_person))
        details.setdefault("committer", dict(git_person))
        details.setdefault("message", f"Commit {sha[:7]}")
        details.setdefault("url", f"{repository.api_url}/git/commits/{sha}")
        details.setdefault("comment_count", 0)
        defaults: dict[str, Any] = {
            "sha": sha,
            "node_id": f"C_{sha[:12]}",
            "url": f"{repository.api_url}/commits/{sha}",
            "html_url": f"{repository.web_url}/commit/{sha}",
            "comments_url": f"{repository.api_url}/commits/{sha}/comments",
            "author": author,
            "committer": _user("web-flow"),
            "parents": [{"sha": hashlib.sha1(f"parent of {sha}".encode()).hexdigest()}],
        }
        for key, value in defaults.items():
            commit.setdefault(key, value)
        return commit

    def _add_fixing_pull(
        self,
        repository: _Repository,
        issue: dict[str, Any],
        pull_number: int,
        issue_created_at: datetime,
        merged_at: datetime,
        merge_commit_sha: str | None,
    ) -> dict[str, Any]:
        number = issue["number"]
        if pull_number in repository.pulls:
            # One pull request can fix several issues: only the reference is new.
            pull = repository.pulls[pull_number]
        elif pull_number in repository.issues:
            raise ValueError(f"{repository.full_name}#{pull_number} is an issue, not a pull")
        else:
            opened_at = issue_created_at + (merged_at - issue_created_at) / 2
            self.add_pull(
                repository.owner,
                repository.name,
                {
                    "number": pull_number,
                    "title": f"Fix #{number}: {issue['title']}"[:120],
                    "user": "contributor",
                    "body": f"Fixes #{number}\n\nThis addresses the problem reported in #{number}.",
                    "created_at": format_time(opened_at),
                    "merged_at": format_time(merged_at),
                    "merge_commit_sha": merge_commit_sha,
                    "files": _synthesised_files(repository, f"pull {pull_number}"),
                },
            )
            pull = repository.pulls[pull_number]
        reference = {
            "actor": pull["user"],
            "event": "cross-referenced",
            "created_at": pull["created_at"],
            "updated_at": pull["created_at"],
            "source": {
                "type": "issue",
                "issue": {
                    **copy.deepcopy(repository.issues[pull_number]),
                    "repository": repository.as_json(),
                },
            },
        }
        self._add_timeline_event(repository, number, reference)
        return copy.deepcopy(pull)

    def _add_fixing_commit(
        self, repository: _Repository, issue: dict[str, Any], sha: str, landed_at: datetime
    ) -> dict[str, Any]:
        number = issue["number"]
        if sha not in repository.commits:
            when = format_time(landed_at)
            person = {"name": "Contributor", "email": "contributor@example.com", "date": when}
            self.add_commit(
                repository.owner,
                repository.name,
                sha,
                {
                    "commit": {
                        "author": person,
                        "committer": {**person, "name": "GitHub", "email": "noreply@github.com"},
                        "message": f"Fix {issue['title'][:60]} (fixes #{number})",
                    },
                    "files": _synthesised_files(repository, f"commit {sha}"),
                },
            )
        when = repository.commits[sha]["commit"]["committer"]["date"]
        commit_url = f"{repository.api_url}/commits/{sha}"
        referenced = self._event(repository, "referenced", when)
        referenced.update(commit_id=sha, commit_url=commit_url)
        self._add_timeline_event(repository, number, referenced)
        closing = [
            event
            for event in repository.timelines[number]
            if event.get("event") == "closed" and not event.get("commit_id")
        ]
        if closing:
            closing[-1].update(commit_id=sha, commit_url=commit_url)
        return copy.deepcopy(repository.commits[sha])

    def _add_timeline_event(self, repository: _Repository, number: int, event: dict) -> None:
        timeline = repository.timelines[number]
        timeline.append(event)
        timeline.sort(key=lambda item: item.get("created_at") or "")

    # ------------------------------------------------------------------ serving

    def handle(self, method: str, target: str, headers: Mapping[str, str]) -> _Response:
        """Answer one request (the HTTP handler's entry point; usable directly in tests)."""
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        with self._lock:
            self._requests_seen += 1
            self.last_authorization = headers.get("Authorization")
            if self.fail_every and self._requests_seen % self.fail_every == 0:
                message = _SERVER_ERROR_MESSAGES.get(self.fail_status, "Server Error")
                response = self._json_response(self.fail_status, {"message": message})
            else:
                response = self._route(method, target, headers)
            response.headers.update(self._rate_limit_headers())
            self.requests.append((method, target, response.status))
            return response

    def _route(self, method: str, target: str, headers: Mapping[str, str]) -> _Response:
        parts = urlsplit(target)
        path = parts.path.rstrip("/") or "/"
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        if path == "/rate_limit" and method == "GET":
            # Asking about the rate limit is free on GitHub.
            return self._json_response(200, self._rate_limit_body(), headers=headers)
        try:
            if method != "GET":
                raise _NotFoundError
            response = self._route_repository_path(path, parts.query, query)
        except _NotFoundError:
            response = self._json_response(404, _error_body("Not Found", 404))
        except _ValidationError as error:
            response = self._json_response(422, error.body)
        response = self._conditional(response, headers)
        if response.status == 304:
            return response
        if not self._consume_rate_budget():
            return self._rate_limited_response()
        return response

    def _route_repository_path(self, path: str, raw_query: str, query: dict[str, str]) -> _Response:
        by_name = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        by_id = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if by_name:
            key = f"{by_name.group(1)}/{by_name.group(2)}".lower()
            rest = by_name.group(3) or ""
            if key not in self._ids_by_name:
                if key in self._ids_by_former_name:
                    new_path = f"/repositories/{self._ids_by_former_name[key]}{rest}"
                    return self._redirect(new_path, raw_query)
                raise _NotFoundError
            repository = self._repositories[self._ids_by_name[key]]
        elif by_id:
            repository = self._repositories.get(int(by_id.group(1)))
            if repository is None:
                raise _NotFoundError
            rest = by_id.group(2) or ""
        else:
            raise _NotFoundError
        return self._route_in_repository(repository, rest, raw_query, query)

    def _route_in_repository(
        self, repository: _Repository, rest: str, raw_query: str, query: dict[str, str]
    ) -> _Response:
        segments = [segment for segment in rest.split("/") if segment]
        if not segments:
            return self._json_response(200, repository.as_json())
        if segments == ["issues"]:
            return self._list_issues(repository, query)
        if segments[0] == "issues" and len(segments) in (2, 3) and segments[1].isdigit():
            number = int(segments[1])
            if number in repository.deleted_issues:
                return self._json_response(410, _error_body("This issue was deleted", 410))
            if number in repository.transferred_issues:
                target_id, new_number = repository.transferred_issues[number]
                sub_path = f"/{segments[2]}" if len(segments) == 3 else ""
                new_path = f"/repositories/{target_id}/issues/{new_number}{sub_path}"
                return self._redirect(new_path, raw_query)
            if number not in repository.issues:
                raise _NotFoundError
            if len(segments) == 2:
                return self._json_response(200, repository.issues[number])
            if segments[2] == "comments":
                comments = repository.comments[number]
                if "since" in query:
                    since = _parse_query_time(query["since"])
                    comments = [c for c in comments if parse_time(c["updated_at"]) >= since]
                return self._paginated(repository, rest, query, comments)
            if segments[2] == "timeline":
                return self._paginated(repository, rest, query, repository.timelines[number])
            raise _NotFoundError
        if segments[0] == "pulls" and len(segments) in (2, 3) and segments[1].isdigit():
            number = int(segments[1])
            if number not in repository.pulls:
                raise _NotFoundError
            if len(segments) == 2:
                return self._json_response(200, repository.pulls[number])
            if segments[2] == "files":
                return self._paginated(repository, rest, query, repository.pull_files[number])
            raise _NotFoundError
        if segments[0] == "commits" and len(segments) == 2:
            wanted = segments[1].lower()
            matches = [sha for sha in repository.commits if sha.lower().startswith(wanted)]
            if len(matches) != 1 or len(wanted) < 4:
                # GitHub's answer for a sha it cannot find in the repository.
                body = _error_body(f"No commit found for SHA: {segments[1]}", 422)
                return self._json_response(422, body)
            return self._json_response(200, repository.commits[matches[0]])
        raise _NotFoundError

    def _list_issues(self, repository: _Repository, query: dict[str, str]) -> _Response:
        state = query.get("state", "open")
        sort = query.get("sort", "created")
        direction = query.get("direction", "desc")
        if state not in ("open", "closed", "all"):
            raise _ValidationError("Issue", "state")
        if sort not in _ISSUE_SORT_KEYS:
            raise _ValidationError("Issue", "sort")
        if direction not in ("asc", "desc"):
            raise _ValidationError("Issue", "direction")
        wanted_labels = {
            label.strip().lower() for label in query.get("labels", "").split(",") if label.strip()
        }
        since = _parse_query_time(query["since"]) if "since" in query else None
        selected = []
        for issue in repository.issues.values():
            if state != "all" and issue["state"] != state:
                continue
            names = {label["name"].lower() for label in issue["labels"]}
            if not wanted_labels <= names:
                continue
            if since is not None and parse_time(issue["updated_at"]) < since:
                continue
            selected.append(issue)
        sort_field = _ISSUE_SORT_KEYS[sort]

        def sort_key(issue: dict[str, Any]) -> tuple[Any, int]:
            value = issue[sort_field]
            return (value if sort == "comments" else parse_time(value), issue["number"])

        selected.sort(key=sort_key, reverse=direction == "desc")
        return self._paginated(repository, "/issues", query, selected)

    def _paginated(
        self,
        repository: _Repository,
        rest: str,
        query: dict[str, str],
        items: list[dict[str, Any]],
    ) -> _Response:
        per_page = _bounded_int(query.get("per_page"), DEFAULT_PER_PAGE, 1, MAX_PER_PAGE)
        page = _bounded_int(query.get("page"), 1, 1, 10**9)
        last_page = max(1, math.ceil(len(items) / per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        base = f"{self.base_url}/repositories/{repository.github_id}{rest}"

        def link(target_page: int, relation: str) -> str:
            parameters = {**query, "page": str(target_page)}
            return f'<{base}?{urlencode(parameters)}>; rel="{relation}"'

        if page > 1:
            links.append(link(min(page - 1, last_page), "prev"))
        if page < last_page:
            links.append(link(page + 1, "next"))
            links.append(link(last_page, "last"))
        if page > 1:
            links.append(link(1, "first"))
        headers = {"Link": ", ".join(links)} if links else {}
        return self._json_response(200, chunk, extra_headers=headers)

    def _redirect(self, new_path: str, raw_query: str) -> _Response:
        location = f"{self.base_url}{new_path}" + (f"?{raw_query}" if raw_query else "")
        body = {
            "message": "Moved Permanently",
            "url": location,
            "documentation_url": "https://docs.github.com/v3/#http-redirects",
        }
        return self._json_response(301, body, extra_headers={"Location": location})

    def _json_response(
        self,
        status: int,
        body: Any,
        *,
        extra_headers: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> _Response:
        text = json.dumps(body, ensure_ascii=False)
        if self.base_url:
            text = text.replace(PUBLIC_API_ROOT, self.base_url)
        encoded = text.encode("utf-8")
        response_headers = {"Content-Type": "application/json; charset=utf-8"}
        if status == 200:
            response_headers["ETag"] = f'W/"{hashlib.sha256(encoded).hexdigest()[:40]}"'
        response_headers.update(extra_headers or {})
        response = _Response(status, encoded, response_headers)
        return self._conditional(response, headers) if headers is not None else response

    @staticmethod
    def _conditional(response: _Response, headers: Mapping[str, str]) -> _Response:
        etag = response.headers.get("ETag")
        if response.status != 200 or not etag:
            return response
        wanted = headers.get("If-None-Match")
        if not wanted:
            return response
        candidates = {tag.strip().removeprefix("W/") for tag in wanted.split(",")}
        if "*" in candidates or etag.removeprefix("W/") in candidates:
            kept = {"ETag": etag, **{k: v for k, v in response.headers.items() if k == "Link"}}
            return _Response(304, b"", kept)
        return response

    def _consume_rate_budget(self) -> bool:
        now = time.time()
        if self._window_reset_at is not None and now >= self._window_reset_at:
            self._window_used = 0
            self._window_reset_at = None
        limit = self._rate_limit_after
        if limit is not None and self._window_used >= limit:
            if self._window_reset_at is None:
                self._window_reset_at = now + self.rate_limit_reset_seconds
            return False
        self._window_used += 1
        return True

    def _rate_limit_state(self) -> dict[str, int]:
        limit = self._rate_limit_after if self._rate_limit_after is not None else DEFAULT_RATE_LIMIT
        reset_at = self._window_reset_at
        if reset_at is None:
            reset_at = time.time() + 3600
        return {
            "limit": limit,
            "remaining": max(limit - self._window_used, 0),
            "reset": math.ceil(reset_at),
            "used": min(self._window_used, limit),
        }

    def _rate_limit_headers(self) -> dict[str, str]:
        state = self._rate_limit_state()
        return {
            "X-RateLimit-Limit": str(state["limit"]),
            "X-RateLimit-Remaining": str(state["remaining"]),
            "X-RateLimit-Used": str(state["used"]),
            "X-RateLimit-Reset": str(state["reset"]),
            "X-RateLimit-Resource": "core",
        }

    def _rate_limit_body(self) -> dict[str, Any]:
        core = {**self._rate_limit_state(), "resource": "core"}
        search = {"limit": 30, "remaining": 30, "reset": core["reset"], "used": 0}
        graphql = {"limit": 5000, "remaining": 5000, "reset": core["reset"], "used": 0}
        return {
            "resources": {
                "core": core,
                "search": {**search, "resource": "search"},
                "graphql": {**graphql, "resource": "graphql"},
            },
            "rate": core,
        }

    def _rate_limited_response(self) -> _Response:
        user = "127.0.0.1"
        message = (
            f"API rate limit exceeded for {user}. (But here's the good news: Authenticated "
            "requests get a higher rate limit. Check out the documentation for more details.)"
        )
        body = {"message": message, "documentation_url": DOCUMENTATION_URL}
        return self._json_response(403, body)


def _error_body(message: str, status: int) -> dict[str, str]:
    return {"message": message, "documentation_url": DOCUMENTATION_URL, "status": str(status)}


def _parse_query_time(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError:
        raise _ValidationError("Issue", "since") from None


def _bounded_int(text: str | None, default: int, lowest: int, highest: int) -> int:
    try:
        value = int(text) if text is not None else default
    except ValueError:
        value = default
    return min(max(value, lowest), highest)


def _complete_file(repository: _Repository, entry: Mapping[str, Any]) -> dict[str, Any]:
    completed = dict(entry)
    filename = completed.setdefault("filename", "README.md")
    completed.setdefault("additions", 0)
    completed.setdefault("deletions", 0)
    completed.setdefault("changes", completed["additions"] + completed["deletions"])
    completed.setdefault("status", "modified")
    blob_sha = hashlib.sha1(f"{repository.full_name}:{filename}".encode()).hexdigest()
    completed.setdefault("sha", blob_sha)
    completed.setdefault("blob_url", f"{repository.web_url}/blob/{blob_sha}/{filename}")
    completed.setdefault("raw_url", f"{repository.web_url}/raw/{blob_sha}/{filename}")
    completed.setdefault("contents_url", f"{repository.api_url}/contents/{filename}?ref={blob_sha}")
    return completed


def _synthesised_files(repository: _Repository, seed: str) -> list[dict[str, Any]]:
    """One to four plausibly named changed files with small diffs, the same in every run."""
    generator = random.Random(f"{repository.full_name.lower()} {seed}")
    candidates = _FIX_FILE_CANDIDATES.get(repository.full_name.lower(), _GENERIC_FIX_FILES)
    chosen = generator.sample(candidates, k=min(len(candidates), generator.randint(1, 4)))
    files = []
    for filename in chosen:
        additions = generator.randint(1, 80)
        deletions = generator.randint(0, 40)
        files.append(
            {
                "filename": filename,
                "status": "modified",
                "additions": additions,
                "deletions": deletions,
                "changes": additions + deletions,
                "patch": f"@@ -1,{deletions} +1,{additions} @@",
            }
        )
    return files


class _FakeGitHubHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


class _RequestHandler(http.server.BaseHTTPRequestHandler):
    # Keep-alive like GitHub, so a client's connection pooling behaves as in production.
    protocol_version = "HTTP/1.1"
    # An idle kept-alive connection ends on its own instead of pinning a thread forever.
    timeout = 10
    # Headers and body leave in separate writes; without this, Nagle's algorithm meeting the
    # client's delayed ACK stalls every kept-alive response by about 40 ms.
    disable_nagle_algorithm = True
    server: _FakeGitHubHTTPServer

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            # Read the body even though it is unused, so the kept-alive connection stays in step.
            self.rfile.read(length)
        response = self.server.fake.handle(method, self.path, self.headers)
        try:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if response.status != 304:
                self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if response.body and method != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (its timeout fired during an injected delay).
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        # Requests are recorded in FakeGitHub.requests; stderr noise would only clutter test output.
        return
