"""Reading the labeling form: one field group per dimension, named after its key."""

from django import forms
from django.http import QueryDict

from corpus.models import Repository
from labeling.models import Study
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


class AgreementFilterForm(forms.Form):
    dimension = forms.ChoiceField(required=False)
    round = forms.ChoiceField(required=False)
    repository = forms.ChoiceField(required=False)
    level = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[("", "leaf categories"), ("0", "top-level categories")],
        label="Categories",
    )
    intervals = forms.BooleanField(required=False, label="95% intervals (bootstrap, B = 1000)")

    def __init__(self, *args, study: Study, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["dimension"].choices = [("", "first with data")] + [
            (d.key, d.name) for d in Dimension.objects.filter(version_id=study.codebook_version_id)
        ]
        self.fields["round"].choices = [("", "all rounds")] + [
            (name, name) for name in study.rounds.values_list("name", flat=True)
        ]
        repositories = (
            Repository.objects.filter(issues__study_items__study=study)
            .distinct()
            .order_by("owner", "name")
        )
        self.fields["repository"].choices = [("", "all repositories")] + [
            (r.full_name, r.full_name) for r in repositories
        ]

    def cleaned_filters(self) -> dict:
        return {name: self.cleaned_data.get(name) or None for name in self.fields} | {
            "level": self.cleaned_data.get("level"),
            "intervals": bool(self.cleaned_data.get("intervals")),
        }

    def default_filters(self) -> dict:
        return {name: None for name in self.fields} | {"intervals": False}
