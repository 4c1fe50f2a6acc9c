"""Reading the labeling form: one field group per dimension, named after its key."""

from django.http import QueryDict

from labeling.services.annotations import DimensionAnswer
from taxonomy.models import Dimension


def answers_from_form(data: QueryDict, dimensions: list[Dimension]) -> dict[str, DimensionAnswer]:
    return {
        dimension.key: DimensionAnswer(
            category_keys=[key for key in data.getlist(f"dim-{dimension.key}") if key],
            unsure=data.get(f"unsure-{dimension.key}") in ("on", "true", "1"),
            rationale=data.get(f"rationale-{dimension.key}", ""),
            evidence=data.get(f"evidence-{dimension.key}", ""),
            proposal=data.get(f"proposal-{dimension.key}", ""),
        )
        for dimension in dimensions
    }


def int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None
