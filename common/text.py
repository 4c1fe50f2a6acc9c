"""Cleaning and parsing of text that comes from outside (files, GitHub, the command line).

Each rule lives here once, so that an import file, the GitHub client and a command read
"owner/name", a time or a body the same way.
"""

import re
from datetime import UTC, datetime, tzinfo
from typing import Any

# The bounds of the values orjson writes, hence of what a JSON column can be sent.
_JSON_INTEGER_MIN = -(2**63)
_JSON_INTEGER_MAX = 2**64 - 1
# Repository.owner and Repository.name are 100 characters. GitHub's own limits are tighter (an
# owner has at most 39), but an enterprise server or a managed user ("name_shortcode") differs,
# so only the characters GitHub allows and the columns' length are checked.
REPOSITORY_NAME_MAX_LENGTH = 100
_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_GITHUB_WEB_PREFIX = re.compile(r"^(?:https?://)?(?:www\.)?github\.com/", re.IGNORECASE)


def strip_nul(value: Any) -> Any:
    """Remove NUL characters from every string in a JSON-like value.

    PostgreSQL rejects NUL in text and in jsonb, and GitHub bodies occasionally carry them.
    """
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {strip_nul(key): strip_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [strip_nul(item) for item in value]
    return value


class JsonValueError(ValueError):
    """A JSON value that no database column can hold, with its path ("comments_data[0].body")."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str | int] = []

    @property
    def place(self) -> str:
        place = ""
        for segment in self.path:
            if isinstance(segment, int):
                place += f"[{segment}]"
            else:
                place += f".{segment}" if place else segment
        return place

    def __str__(self) -> str:
        return f"{self.place} {self.problem}" if self.path else self.problem


def json_clean(value: Any) -> Any:
    """A decoded JSON value without NUL characters, or JsonValueError naming the first value
    that neither PostgreSQL nor SQLite can store.

    NUL is dropped (PostgreSQL rejects it in text and jsonb; GitHub bodies carry it now and then).
    Refused: a lone surrogate ("\\ud800" is valid JSON but not Unicode text, so neither database
    can encode it) and an integer beyond 64 bits (no JSON column can be sent it). orjson refuses
    both when it parses, so text that orjson read needs only `strip_nul`.
    """
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:
                surrogate = value[error.start]
                raise JsonValueError(
                    f"holds a lone surrogate (\\u{ord(surrogate):04x}), which is not text"
                ) from None
        return value
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            try:
                cleaned[json_clean(key)] = json_clean(item)
            except JsonValueError as error:
                error.path.insert(0, str(key))
                raise
        return cleaned
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(json_clean(item))
            except JsonValueError as error:
                error.path.insert(0, index)
                raise
        return items
    if isinstance(value, int) and not _JSON_INTEGER_MIN <= value <= _JSON_INTEGER_MAX:
        raise JsonValueError("is an integer beyond 64 bits")
    return value


def iso_time_parse(text: str, *, naive_zone: tzinfo | None = None) -> datetime:
    """An ISO 8601 time ("2025-02-20T16:12:14Z", "...+02:00") as an aware datetime in UTC.

    A time without a zone is refused, since guessing one could shift it by hours without a
    trace; a command line that takes plain dates passes the zone to assume as `naive_zone`.
    Raises ValueError when the text is no such time, or when its UTC time falls outside
    years 1 to 9999 ("0001-01-01T00:00:00+05:00" is still year 0 in UTC).
    """
    if not isinstance(text, str):
        raise ValueError(f"is not an ISO 8601 time: {text!r}")
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"is not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        if naive_zone is None:
            raise ValueError(f"has no time zone (add Z or an offset such as +00:00): {text!r}")
        moment = moment.replace(tzinfo=naive_zone)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"is outside the years 1 to 9999 in UTC: {text!r}") from None


def repository_full_name_parse(text: str) -> tuple[str, str]:
    """(owner, name) out of "owner/name", or a github.com URL of the repository.

    Owners are letters, digits, "-" and "_", starting with a letter or digit; names letters,
    digits, "-", "_" and ".", but not "." or "..". Each has at most 100 characters (the
    columns). Raises ValueError saying which rule failed.
    """
    if not isinstance(text, str):
        raise ValueError(f"must be a string 'owner/name', not {text!r}")
    cleaned = _GITHUB_WEB_PREFIX.sub("", text.strip()).removesuffix("/").removesuffix(".git")
    owner, slash, name = cleaned.partition("/")
    if not slash or not owner or not name:
        raise ValueError(f"must be 'owner/name': {text!r}")
    for part, pattern, what in ((owner, _OWNER, "an owner"), (name, _NAME, "a name")):
        if len(part) > REPOSITORY_NAME_MAX_LENGTH:
            raise ValueError(
                f"has {what} longer than {REPOSITORY_NAME_MAX_LENGTH} characters: {text[:120]!r}"
            )
        if not pattern.fullmatch(part) or part in (".", ".."):
            raise ValueError(f"has {what} GitHub does not allow: {text!r}")
    return owner, name


def issue_reference_parse(text: str) -> tuple[str, str, int]:
    """(owner, name, number) out of "owner/name#number"; ValueError if it is not one."""
    full_name, hash_sign, number = (text or "").strip().rpartition("#")
    if not hash_sign or not number.isascii() or not number.isdigit() or int(number) < 1:
        raise ValueError(f"must be owner/name#number: {text!r}")
    owner, name = repository_full_name_parse(full_name)
    return owner, name, int(number)
