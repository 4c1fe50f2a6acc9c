from typing import Any, TypeVar

from django.db import models

ModelT = TypeVar("ModelT", bound=models.Model)


def model_update(
    *, instance: ModelT, fields: list[str], data: dict[str, Any]
) -> tuple[ModelT, bool]:
    """Set the given fields from `data` (when present and different) and save only those.

    Returns the instance and whether anything changed.
    """
    changed: list[str] = []
    for field in fields:
        if field in data and getattr(instance, field) != data[field]:
            setattr(instance, field, data[field])
            changed.append(field)
    if changed:
        instance.full_clean(
            exclude=[f.name for f in instance._meta.fields if f.name not in changed]
        )
        if any(f.name == "updated_at" for f in instance._meta.fields):
            changed.append("updated_at")
        instance.save(update_fields=changed)
    return instance, bool(changed)
