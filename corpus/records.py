"""GitHub's issues, comments and linked fixes as plain records, and the one parser of GitHub's
issue JSON. The GitHub client (ingest/github.py) and the import file (corpus/issue_import.py)
both use it, so an issue is read by the same rules wherever it comes from. Plain Python: no
Django here, so that the client may import it.

The rules:

* Author: a null user, or a user without a login, is GitHub's "ghost" (a deleted account). A
  login is kept whole; one longer than its column (100) is refused, since a cut login could name
  another account.
* Pull request: the object has a "pull_request" that is not null. GitHub sends that key on
  pull requests only; some exports write it as null on plain issues.
* Times: ISO 8601 with "Z" or an offset, kept in UTC. A time without a zone is refused (a guess
  could shift it by hours), and so is one that leaves the years 1 to 9999 in UTC.
* Numbers mirror the columns, so that SQLite (which has no integer bounds) refuses what
  PostgreSQL would: an issue number is 1 to 2^31-1, a comments count and a fix's sizes 0 to
  2^31-1 (integer), GitHub ids 1 to 2^63-1 (bigint). true and 3.0 are not integers.
* Text: what a cut would turn into something else (owner, name, login, a fix's ref and url) is
  refused when longer than its column, and a fix's url that is not http(s) is refused (pages
  link it); free text is cut (title 10,000, state_reason 30, evidence 200 characters).
* Labels: a list of names or of label objects with a name; anything else (``"labels": "bug"``)
  is refused rather than read as the labels b, u and g.
* Duplicates inside one issue object: two comments with one id, or two fixes with one kind and
  ref, make the object an error. Which copy is right cannot be told, and the database keeps one
  row per id. (The same issue twice in a file is another matter: the import merges it, the
  newer copy winning; see `corpus.services.issues_import`.)
* The object must be clean JSON already: no NUL, no lone surrogate, no integer beyond 64 bits.
  `common.text.json_clean` sees to it; `issue_file_lines` and the client apply it.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from common.text import iso_time_parse, repository_full_name_parse

GHOST_LOGIN = "ghost"  # GitHub shows content of deleted accounts as written by "ghost"
# The columns' limits (corpus/models.py; tests/corpus/test_records.py checks they agree).
LOGIN_MAX_LENGTH = 100
TITLE_MAX_LENGTH = 10_000
STATE_REASON_MAX_LENGTH = 30
FIX_REF_MAX_LENGTH = 100
FIX_URL_MAX_LENGTH = 500
FIX_EVIDENCE_MAX_LENGTH = 200
INTEGER_MAX = 2**31 - 1  # PositiveIntegerField is a PostgreSQL integer
BIG_INTEGER_MAX = 2**63 - 1  # BigIntegerField
ISSUE_STATES = ("open", "closed")
FIX_KINDS = ("pr", "commit")
_REPOSITORY_IN_API_PATH = re.compile(r"/repos/([^/]+)/([^/?#]+)")


class RecordError(ValueError):
    """An object that cannot be stored; the message names the field."""


@dataclass
class CommentRecord:
    github_id: int
    author: str
    body: str
    created_at: datetime
    updated_at: datetime


@dataclass
class FixRecord:
    """A pull request or commit that fixed the issue. The sizes are None when unknown (GitHub no
    longer has a force-pushed commit); ``url`` is GitHub's web page of the fix, or ""."""

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
    # GitHub's object without the body and the thread, which have columns and rows of their own.
    raw: dict[str, Any]
    comments: list[CommentRecord] = field(default_factory=list)
    linked_fixes: list[FixRecord] = field(default_factory=list)
    # GitHub's id of the repository, when the object names it: the repository's identity
    # whatever name the object gives (a name changes with a rename, the id never does).
    repository_github_id: int | None = None

    @property
    def repository_key(self) -> tuple[str, str]:
        return (self.owner, self.name)


def issue_record_parse(obj: Any, *, repository: tuple[str, str] | None = None) -> IssueRecord:
    """Validate one GitHub REST issue object and return its record, or raise RecordError.

    The object may carry the import file's extras: ``repository`` ("owner/name"),
    ``repository_id`` (GitHub's id of the repository), ``comments_data`` (GitHub comment
    objects) and ``linked_fixes`` (see `fix_record_parse`). The repository is `repository` when
    given, else the object's ``repository``, else the one in its ``repository_url``; its id is
    ``repository_id``, else the ``id`` of a ``repository`` given as the API's object.
    """
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object")
    owner, name = _repository(obj, repository)
    repository_github_id = None if repository is not None else _repository_id(obj)
    number = _integer(obj.get("number"), "number", minimum=1, maximum=INTEGER_MAX)
    title = obj.get("title")
    if not isinstance(title, str):
        raise RecordError("title is missing" if title is None else "title must be a string")
    state = obj.get("state") or "open"
    if state not in ISSUE_STATES:
        raise RecordError(f"state must be open or closed, not {_shown(state)}")
    comments = _comments(obj.get("comments_data"))
    comments_count = obj.get("comments")
    created_at = _time(obj.get("created_at"), "created_at")
    return IssueRecord(
        owner=owner,
        name=name,
        number=number,
        github_id=_integer(obj.get("id"), "id", minimum=1, maximum=BIG_INTEGER_MAX, required=False),
        is_pull_request=obj.get("pull_request") is not None,
        title=title[:TITLE_MAX_LENGTH],
        body=_text(obj.get("body"), "body"),
        state=state,
        state_reason=_text(obj.get("state_reason"), "state_reason")[:STATE_REASON_MAX_LENGTH],
        author=_login(obj.get("user"), "user"),
        labels=_labels(obj.get("labels")),
        created_at=created_at,
        updated_at=_time(obj.get("updated_at"), "updated_at", required=False) or created_at,
        closed_at=_time(obj.get("closed_at"), "closed_at", required=False),
        comments_count=len(comments)
        if comments_count is None
        else _integer(comments_count, "comments", minimum=0, maximum=INTEGER_MAX),
        raw={
            key: value
            for key, value in obj.items()
            if key not in ("body", "comments_data", "linked_fixes")
        },
        comments=comments,
        linked_fixes=_fixes(obj.get("linked_fixes")),
        repository_github_id=repository_github_id,
    )


def comment_record_parse(obj: Any, *, place: str = "comment") -> CommentRecord:
    """One GitHub comment object (an issue comment, or a timeline "commented" event)."""
    if not isinstance(obj, dict):
        raise RecordError(f"{place} must be an object")
    github_id = _integer(obj.get("id"), f"{place}.id", minimum=1, maximum=BIG_INTEGER_MAX)
    created_at = _time(obj.get("created_at"), f"{place}.created_at")
    return CommentRecord(
        github_id=github_id,
        author=_login(obj.get("user"), f"{place}.user"),
        body=_text(obj.get("body"), f"{place}.body"),
        created_at=created_at,
        updated_at=_time(obj.get("updated_at"), f"{place}.updated_at", required=False)
        or created_at,
    )


def fix_record_parse(obj: Any, *, place: str = "linked fix") -> FixRecord:
    """One fix: ``{"kind": "pr" | "commit", "ref": number or sha, "url", "merged_at",
    "files_changed", "additions", "deletions", "evidence"}``; all but kind and ref may be left
    out (an import file's fix without evidence says "imported")."""
    if not isinstance(obj, dict) or obj.get("kind") not in FIX_KINDS:
        raise RecordError(f"{place}.kind must be 'pr' or 'commit'")
    ref = obj.get("ref")
    if isinstance(ref, int) and not isinstance(ref, bool):
        ref = str(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise RecordError(f"{place}.ref is missing")
    ref = ref.strip()
    if len(ref) > FIX_REF_MAX_LENGTH:
        raise RecordError(f"{place}.ref is longer than {FIX_REF_MAX_LENGTH} characters")
    url = _text(obj.get("url"), f"{place}.url")
    if len(url) > FIX_URL_MAX_LENGTH:
        raise RecordError(f"{place}.url is longer than {FIX_URL_MAX_LENGTH} characters")
    if url and not is_http_url(url):
        # Refused, not dropped, like every other field at fault: pages link the URL, and a
        # javascript: or data: one would run in the reader's session.
        raise RecordError(f"{place}.url must be an http or https URL, not {_shown(url)}")

    def size(key: str) -> int | None:
        return _integer(
            obj.get(key), f"{place}.{key}", minimum=0, maximum=INTEGER_MAX, required=False
        )

    return FixRecord(
        kind=obj["kind"],
        ref=ref,
        url=url,
        merged_at=_time(obj.get("merged_at"), f"{place}.merged_at", required=False),
        files_changed=size("files_changed"),
        additions=size("additions"),
        deletions=size("deletions"),
        evidence=(_text(obj.get("evidence"), f"{place}.evidence") or "imported")[
            :FIX_EVIDENCE_MAX_LENGTH
        ],
    )


def is_http_url(url: Any) -> bool:
    """Whether a URL is one that pages may link: http(s) with a host. Pages and the API check
    stored URLs with it too, since rows imported before the check may hold another scheme."""
    if not isinstance(url, str) or url != url.strip():
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in {"http", "https"} and bool(parts.netloc)


def repository_in_api_url(url: Any) -> tuple[str, str] | None:
    """(owner, name) out of a GitHub API URL such as .../repos/owner/name/commits/sha, unchecked."""
    if not isinstance(url, str) or not url:
        return None
    match = _REPOSITORY_IN_API_PATH.search(urlsplit(url).path)
    return (match.group(1), match.group(2)) if match else None


# --------------------------------------------------------------------------- fields


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(
    value: Any, place: str, *, minimum: int, maximum: int, required: bool = True
) -> int | None:
    if value is None:
        if required:
            raise RecordError(f"{place} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{place} must be an integer, not {_shown(value)}")
    if not minimum <= value <= maximum:
        raise RecordError(f"{place} must be between {minimum} and {maximum}, not {value}")
    return value


def _time(value: Any, place: str, *, required: bool = True) -> datetime | None:
    if value is None or value == "":
        if required:
            raise RecordError(f"{place} is missing")
        return None
    try:
        return iso_time_parse(value)
    except ValueError as error:
        raise RecordError(f"{place} {error}") from None


def _text(value: Any, place: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordError(f"{place} must be a string, not {_shown(value)}")
    return value


def _login(user: Any, place: str) -> str:
    if user is None:
        return GHOST_LOGIN
    if not isinstance(user, dict):
        raise RecordError(f"{place} must be an object with a login, not {_shown(user)}")
    login = user.get("login")
    if login is None or login == "":
        return GHOST_LOGIN
    if not isinstance(login, str):
        raise RecordError(f"{place}.login must be a string, not {_shown(login)}")
    if len(login) > LOGIN_MAX_LENGTH:
        raise RecordError(f"{place}.login is longer than {LOGIN_MAX_LENGTH} characters")
    return login


def _repository(obj: dict[str, Any], given: tuple[str, str] | None) -> tuple[str, str]:
    if given is not None:
        place, full_name = "repository", f"{given[0]}/{given[1]}"
    elif obj.get("repository") is not None:
        place, full_name = "repository", obj["repository"]
        if isinstance(full_name, dict):  # the API's own repository object
            place, full_name = "repository.full_name", full_name.get("full_name")
    elif (in_url := repository_in_api_url(obj.get("repository_url"))) is not None:
        place, full_name = "repository_url", f"{in_url[0]}/{in_url[1]}"
    else:
        raise RecordError(
            "repository is missing (give 'repository': 'owner/name' or repository_url)"
        )
    try:
        return repository_full_name_parse(full_name)
    except ValueError as error:
        raise RecordError(f"{place} {error}") from None


def _repository_id(obj: dict[str, Any]) -> int | None:
    place, value = "repository_id", obj.get("repository_id")
    if value is None and isinstance(obj.get("repository"), dict):
        place, value = "repository.id", obj["repository"].get("id")
    return _integer(value, place, minimum=1, maximum=BIG_INTEGER_MAX, required=False)


def _labels(labels: Any) -> list[str]:
    if labels is None:
        return []
    if not isinstance(labels, list):
        raise RecordError(f"labels must be a list of names or label objects, not {_shown(labels)}")
    names = []
    for index, label in enumerate(labels):
        name = label.get("name") if isinstance(label, dict) else label
        if not isinstance(name, str) or not name:
            raise RecordError(f"labels[{index}] has no name")
        names.append(name)
    return names


def _comments(comments_data: Any) -> list[CommentRecord]:
    if comments_data is None:
        return []
    if not isinstance(comments_data, list):
        raise RecordError("comments_data must be a list")
    comments: list[CommentRecord] = []
    positions: dict[int, int] = {}
    for index, item in enumerate(comments_data):
        comment = comment_record_parse(item, place=f"comments_data[{index}]")
        if comment.github_id in positions:
            raise RecordError(
                f"comments_data[{index}].id {comment.github_id} repeats "
                f"comments_data[{positions[comment.github_id]}]"
            )
        positions[comment.github_id] = index
        comments.append(comment)
    return comments


def _fixes(fixes_data: Any) -> list[FixRecord]:
    if fixes_data is None:
        return []
    if not isinstance(fixes_data, list):
        raise RecordError("linked_fixes must be a list")
    fixes: list[FixRecord] = []
    positions: dict[tuple[str, str], int] = {}
    for index, item in enumerate(fixes_data):
        fix = fix_record_parse(item, place=f"linked_fixes[{index}]")
        key = (fix.kind, fix.ref)
        if key in positions:
            raise RecordError(
                f"linked_fixes[{index}] ({fix.kind} {fix.ref}) repeats "
                f"linked_fixes[{positions[key]}]"
            )
        positions[key] = index
        fixes.append(fix)
    return fixes
