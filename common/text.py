"""Cleaning of text that comes from outside (files, GitHub)."""

from typing import Any


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
