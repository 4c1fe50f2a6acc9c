"""Labeling's answers to what the corpus announces (`corpus.signals`)."""

from collections.abc import Sequence
from typing import Any

from labeling.services.studies import study_items_flag_changed


def study_items_flag_on_upstream_change(*, issue_ids: Sequence[int], **kwargs: Any) -> None:
    study_items_flag_changed(issue_ids=issue_ids)
