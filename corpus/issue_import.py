"""The issue import file (JSONL, or a JSON array): GitHub REST issue objects, each optionally with
`repository`, `comments_data` and `linked_fixes`. This module turns one object into plain records
or a clear error; it knows nothing of the database.
"""

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

import orjson

from common.text import strip_nul

# One issue with a 1 MB body and hundreds of comments fits well below this.
MAX_LINE_BYTES = 16 * 1024 * 1024
_REPOSITORY_URL = re.compile(r"/repos/([^/]+)/([^/]+?)/?$")
_FULL_NAME = re.compile(r"^([A-Za-z0-9_.\-]+)/([A-Za-z0-9_.\-]+)$")


class RecordError(ValueError):
    pass


@dataclass
class CommentRecord:
    github_id: int
    author: str
    body: str
    created_at: datetime
    updated_at: datetime


@dataclass
class FixRecord:
    kind: str
    ref: str
    url: str = ""
    merged_at: datetime | None = None
    files_changed: int | None = None
    additions: int | None = None
    deletions: int | None = None
    evidence: str = ""


@dataclass
class IssueRecord:
    owner: str
    name: str
    number: int
    github_id: int | None
    is_pull_request: bool
    title: str
    body: str
    state: str
    state_reason: str
    author: str
    labels: list[str]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    comments_count: int
    raw: dict[str, Any]
    comments: list[CommentRecord] = field(default_factory=list)
    linked_fixes: list[FixRecord] = field(default_factory=list)

    @property
    def repository_key(self) -> tuple[str, str]:
        return (self.owner, self.name)


def _timestamp(value: Any, place: str, *, required: bool = True) -> datetime | None:
    if value in (None, ""):
        if required:
            raise RecordError(f"{place} is missing")
        return None
    if not isinstance(value, str):
        raise RecordError(f"{place} must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise RecordError(f"{place} is not an ISO 8601 time: {value!r}") from error
    if parsed.tzinfo is None:
        raise RecordError(f"{place} has no time zone: {value!r}")
    return parsed


def _login(user: Any) -> str:
    # GitHub shows deleted accounts as "ghost"; a null user is one of those.
    if isinstance(user, dict) and isinstance(user.get("login"), str):
        return user["login"][:100]
    return "ghost"


def _int(value: Any, place: str, *, required: bool = True) -> int | None:
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{place} must be an integer")
    return value


def _repository(obj: dict[str, Any]) -> tuple[str, str]:
    full_name = obj.get("repository")
    if isinstance(full_name, dict):  # the API's own repository object
        full_name = full_name.get("full_name")
    if isinstance(full_name, str) and (match := _FULL_NAME.match(full_name.strip())):
        return match.group(1), match.group(2)
    url = obj.get("repository_url")
    if isinstance(url, str) and (match := _REPOSITORY_URL.search(url)):
        return match.group(1), match.group(2)
    raise RecordError("repository is missing (give 'repository': 'owner/name' or repository_url)")


def issue_record_from_object(obj: Any) -> IssueRecord:
    """Validate one issue object of the import format and return its record.

    The object must be free of NUL characters already (`issue_file_lines` sees to that).
    """
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object")
    owner, name = _repository(obj)
    number = _int(obj.get("number"), "number")
    if number is None or number <= 0:
        raise RecordError("number must be a positive integer")
    title = obj.get("title")
    if not isinstance(title, str):
        raise RecordError("title is missing")
    body = obj.get("body") or ""
    if not isinstance(body, str):
        raise RecordError("body must be a string")
    labels = []
    for index, label in enumerate(obj.get("labels") or []):
        label_name = label.get("name") if isinstance(label, dict) else label
        if not isinstance(label_name, str):
            raise RecordError(f"labels[{index}] has no name")
        labels.append(label_name)
    state = obj.get("state") or "open"
    if state not in ("open", "closed"):
        raise RecordError(f"state must be open or closed, not {state!r}")

    comments = []
    comments_data = obj.get("comments_data") or []
    if not isinstance(comments_data, list):
        raise RecordError("comments_data must be a list")
    for index, comment in enumerate(comments_data):
        place = f"comments_data[{index}]"
        if not isinstance(comment, dict):
            raise RecordError(f"{place} must be an object")
        comment_body = comment.get("body") or ""
        if not isinstance(comment_body, str):
            raise RecordError(f"{place}.body must be a string")
        comments.append(
            CommentRecord(
                github_id=_int(comment.get("id"), f"{place}.id"),
                author=_login(comment.get("user")),
                body=comment_body,
                created_at=_timestamp(comment.get("created_at"), f"{place}.created_at"),
                updated_at=_timestamp(
                    comment.get("updated_at") or comment.get("created_at"), f"{place}.updated_at"
                ),
            )
        )

    fixes = []
    fixes_data = obj.get("linked_fixes") or []
    if not isinstance(fixes_data, list):
        raise RecordError("linked_fixes must be a list")
    for index, fix in enumerate(fixes_data):
        place = f"linked_fixes[{index}]"
        if not isinstance(fix, dict) or fix.get("kind") not in ("pr", "commit"):
            raise RecordError(f"{place}.kind must be 'pr' or 'commit'")
        ref = fix.get("ref")
        if isinstance(ref, int) and not isinstance(ref, bool):
            ref = str(ref)
        if not isinstance(ref, str) or not ref.strip():
            raise RecordError(f"{place}.ref is missing")
        fixes.append(
            FixRecord(
                kind=fix["kind"],
                ref=ref.strip()[:100],
                url=str(fix.get("url") or "")[:500],
                merged_at=_timestamp(fix.get("merged_at"), f"{place}.merged_at", required=False),
                files_changed=_int(
                    fix.get("files_changed"), f"{place}.files_changed", required=False
                ),
                additions=_int(fix.get("additions"), f"{place}.additions", required=False),
                deletions=_int(fix.get("deletions"), f"{place}.deletions", required=False),
                evidence=str(fix.get("evidence") or "imported")[:200],
            )
        )

    # Body and thread have columns of their own; raw keeps the rest of GitHub's object.
    raw = {k: v for k, v in obj.items() if k not in ("body", "comments_data", "linked_fixes")}
    comments_count = obj.get("comments")
    return IssueRecord(
        owner=owner,
        name=name,
        number=number,
        github_id=_int(obj.get("id"), "id", required=False),
        is_pull_request="pull_request" in obj and obj["pull_request"] is not None,
        title=title[:10_000],
        body=body,
        state=state,
        state_reason=str(obj.get("state_reason") or "")[:30],
        author=_login(obj.get("user")),
        labels=labels,
        created_at=_timestamp(obj.get("created_at"), "created_at"),
        updated_at=_timestamp(obj.get("updated_at") or obj.get("created_at"), "updated_at"),
        closed_at=_timestamp(obj.get("closed_at"), "closed_at", required=False),
        comments_count=comments_count if isinstance(comments_count, int) else len(comments),
        raw=raw,
        comments=comments,
        linked_fixes=fixes,
    )


def issue_file_lines(stream: IO[bytes]) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded object or RecordError) from an import file.

    JSONL is read a line at a time, so memory stays flat whatever the file size; a file that starts
    with `[` is a JSON array and is read whole.
    """
    first = stream.read(1)
    while first and first.isspace():
        first = stream.read(1)
    if first == b"[":
        content = first + stream.read()
        try:
            array = _decode(content.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            yield 1, RecordError(f"not a valid JSON array: {error}")
            return
        if not isinstance(array, list):
            yield 1, RecordError("a JSON file must hold an array of issue objects")
            return
        yield from enumerate(array, start=1)
        return
    yield from _jsonl(_prepend(first, stream))


def _decode(text: str | bytes) -> Any:
    """JSON without NUL characters. Walking every string costs more than parsing, so only text
    that holds an escaped NUL is walked. orjson parses about three times faster than the standard
    library; what it refuses (lone surrogates, integers beyond 64 bits) the standard library
    still reads, or reports with its clearer message."""
    try:
        decoded = orjson.loads(text)
    except orjson.JSONDecodeError:
        decoded = json.loads(text)
    escaped_nul = b"\\u0000" if isinstance(text, bytes) else "\\u0000"
    return strip_nul(decoded) if escaped_nul in text else decoded


def _prepend(first: bytes, stream: IO[bytes]) -> Iterable[bytes]:
    rest = stream.readline(MAX_LINE_BYTES + 1)
    yield first + rest
    while line := stream.readline(MAX_LINE_BYTES + 1):
        yield line


def _jsonl(lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
    line_number = 0
    skipping_long_line = False
    for line in lines:
        if skipping_long_line:
            skipping_long_line = not line.endswith(b"\n")
            continue
        line_number += 1
        if len(line) > MAX_LINE_BYTES:
            skipping_long_line = not line.endswith(b"\n")
            yield line_number, RecordError(f"line is longer than {MAX_LINE_BYTES} bytes")
            continue
        if not line.strip():
            continue
        try:
            yield line_number, _decode(line.replace(b"\x00", b""))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            yield line_number, RecordError(f"not valid JSON: {error}")
