"""The activity log of a study as a file: JSON Lines, one act a line, oldest first (a log reads
forward). The export page offers it beside the dataset; the Parquet file carries it too."""

from collections.abc import Iterator

import orjson

from labeling.models import Study
from labeling.selectors import study_event_data, study_event_list

CONTENT_TYPE = "application/x-ndjson"


def study_activity_rows(*, study: Study) -> list[dict]:
    """The log as plain data, oldest first."""
    return [study_event_data(event) for event in reversed(list(study_event_list(study=study)))]


def study_activity_lines(*, study: Study) -> Iterator[bytes]:
    for row in study_activity_rows(study=study):
        yield orjson.dumps(row) + b"\n"


def study_activity_filename(study: Study) -> str:
    return f"{study.slug}-activity.jsonl"
