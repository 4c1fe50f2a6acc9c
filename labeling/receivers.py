"""Labeling's answers to what the corpus announces (`corpus.signals`)."""

from collections.abc import Sequence
from typing import Any

from labeling.services.upstream_changes import item_upstream_changes_record


def study_items_flag_on_upstream_change(
    *, issue_ids: Sequence[int], gone: bool = False, **kwargs: Any
) -> None:
    item_upstream_changes_record(issue_ids=issue_ids, gone=gone)
