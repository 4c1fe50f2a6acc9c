"""The API's JSON parser: DRF's, refusing JSON nested deeper than any request needs.

Python's json module recurses once per level, so a body of a few thousand brackets raises
RecursionError, which nothing turns into a 4xx: the client got an HTML 500. The deepest request
the API takes (answers -> dimension -> categories) is four levels; MAX_DEPTH leaves ample room
and stays far below both the recursion limit and orjson's 255 levels (the JSON columns).
"""

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_DEPTH = 32


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in a decoded JSON value (a scalar: 0), iteratively."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        stack.extend((child, depth) for child in children)
    return deepest


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        too_deep = ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if json_depth(data) > MAX_DEPTH:
            raise too_deep
        return data
