"""The issue import file (JSONL, or a JSON array): GitHub REST issue objects, each optionally with
`repository`, `comments_data` and `linked_fixes`. This module reads the file into
(line number, object or RecordError) pairs; `corpus.records.issue_record_parse` turns an object
into a record. It knows nothing of the database.
"""

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from common.text import JsonValueError, json_clean
from corpus.records import RecordError

# One issue with a 1 MB body and hundreds of comments fits well below this.
MAX_LINE_BYTES = 16 * 1024 * 1024


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
            array, needs_cleaning = _decode(content.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            yield 1, RecordError(f"not a valid JSON array: {error}")
            return
        if not isinstance(array, list):
            yield 1, RecordError("a JSON file must hold an array of issue objects")
            return
        for number, item in enumerate(array, start=1):
            yield number, _cleaned(item) if needs_cleaning else item
        return
    yield from _jsonl(_prepend(first, stream))


def _decode(text: str | bytes) -> tuple[Any, bool]:
    """(decoded JSON, whether it needs `json_clean`). orjson parses about three times faster
    than the standard library; what it refuses (lone surrogates, and NaN) the standard library
    still reads, or reports with its clearer message, and such a value is then checked whole.
    Walking every string costs more than parsing, so what orjson read is walked only when it
    holds an escaped NUL."""
    try:
        decoded = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        try:
            return json.loads(text), True
        except RecursionError:
            # Nested deeper than orjson's limit: the standard library recurses once a level.
            raise error from None
    escaped_nul = b"\\u0000" if isinstance(text, bytes) else "\\u0000"
    return decoded, escaped_nul in text


def _cleaned(value: Any) -> Any:
    """The value without NUL, or a RecordError naming the part no database can store."""
    try:
        return json_clean(value)
    except JsonValueError as error:
        return RecordError(str(error))
    except RecursionError:
        return RecordError("nests lists and objects too deeply to be stored")


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
            decoded, needs_cleaning = _decode(line.replace(b"\x00", b""))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            yield line_number, RecordError(f"not valid JSON: {error}")
            continue
        yield line_number, _cleaned(decoded) if needs_cleaning else decoded
