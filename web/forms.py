"""The pages' forms: the labeling form (one field group per dimension, named after its key),
the agreement filters, setting a study up, and adding a member."""

from datetime import UTC, date, datetime, time

from django import forms
from django.contrib.auth import get_user_model
from django.http import QueryDict

from common.names import NAME_MAX_LENGTH, NameKind, NameValidator
from corpus.models import Repository
from corpus.selectors import IssueSelection, repository_names
from labeling.agreement import DEFAULT_MIN_PAIR_ITEMS
from labeling.agreement_report import MAX_BOOTSTRAP, MAX_MIN_PAIR_ITEMS, PAGE_BOOTSTRAP
from labeling.models import Membership, Round, Study
from labeling.services.annotations import DimensionAnswer
from labeling.services.setup import MAX_SEED, RoundPlan, SamplingRule
from taxonomy.models import CodebookVersion, Dimension
from taxonomy.selectors import codebook_version_list_published


def answers_from_form(data: QueryDict, dimensions: list[Dimension]) -> dict[str, DimensionAnswer]:
    """The answers of the labeling form. Text is taken whole (the service refuses what is too
    long); only the line breaks a browser sends as CRLF become LF, because a textarea's
    `maxlength` counts a line break as one character and the limit must agree with it."""
    return {
        dimension.key: DimensionAnswer(
            category_keys=[key for key in data.getlist(f"dim-{dimension.key}") if key],
            unsure=data.get(f"unsure-{dimension.key}") in ("on", "true", "1"),
            rationale=_line_breaks(data.get(f"rationale-{dimension.key}", "")),
            evidence=_line_breaks(data.get(f"evidence-{dimension.key}", "")),
            proposal=_line_breaks(data.get(f"proposal-{dimension.key}", "")),
        )
        for dimension in dimensions
    }


def _line_breaks(text: str) -> str:
    return text.replace("\r\n", "\n")


def int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


class AgreementFilterForm(forms.Form):
    """The agreement page's filters, and what the page shows (dimension, pair). Every link of
    the page is built from `link_query`, so that it keeps what was chosen."""

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
    min_pair_items = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_MIN_PAIR_ITEMS,
        label=f"Pairs count from (shared items, default {DEFAULT_MIN_PAIR_ITEMS})",
    )
    intervals = forms.BooleanField(required=False, label="95% intervals (bootstrap)")
    bootstrap = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BOOTSTRAP,
        label=f"Resamples (B, default {PAGE_BOOTSTRAP:,})",
    )
    # "a,b": the pair of annotators whose confusion matrix is shown (usernames have no comma).
    pair = forms.CharField(required=False, max_length=400, widget=forms.HiddenInput)

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

    def bootstrap_resamples(self, filters: dict) -> int:
        """Resamples for the intervals: none without them, PAGE_BOOTSTRAP unless given."""
        return (filters["bootstrap"] or PAGE_BOOTSTRAP) if filters["intervals"] else 0

    def minimum_overlap(self, filters: dict) -> int:
        """The minimum shared items of a counted pair: DEFAULT_MIN_PAIR_ITEMS unless given."""
        return filters["min_pair_items"] or DEFAULT_MIN_PAIR_ITEMS

    def link_query(self, filters: dict) -> dict[str, str]:
        """The chosen values as query parameters, the way this form reads them back; what was
        left to its default stays out, so that it follows the default."""
        query = {}
        for name, value in filters.items():
            if value is None or value is False or value == "":
                continue
            query[name] = "on" if value is True else str(value)
        return query


# Setting a study up (/studies/new/)

SAMPLING_METHODS = [
    ("all", "All matching issues"),
    ("random", "Random: N in all"),
    ("per_repository", "Stratified: N per repository"),
    ("proportional", "Stratified: N in all, in proportion to the repositories"),
]
HAS_FIX_CHOICES = [("", "either"), ("yes", "yes"), ("no", "no")]
DEFAULT_SEED = 7


def _day_start(day: date | None) -> datetime | None:
    """A date of the form as the start of that day in UTC (selections compare aware datetimes)."""
    return datetime.combine(day, time.min, tzinfo=UTC) if day else None


class SampleRuleForm(forms.Form):
    """Which issues of the corpus a study draws and how: the part of the setup form that the live
    count reads on its own."""

    repositories = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every repository of the corpus.",
    )
    state = forms.ChoiceField(
        choices=[("any", "any"), ("open", "open"), ("closed", "closed")], initial="any"
    )
    labels = forms.CharField(
        required=False, label="GitHub labels", help_text="Separate with commas; empty: any."
    )
    labels_match = forms.ChoiceField(
        choices=[("any", "any of them"), ("all", "all of them")],
        initial="any",
        label="An issue carries",
    )
    created_after = forms.DateField(
        required=False,
        label="Created on or after",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    created_before = forms.DateField(
        required=False,
        label="Created before",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    has_fix = forms.ChoiceField(
        choices=HAS_FIX_CHOICES, required=False, label="Has a linked fix", initial=""
    )
    query = forms.CharField(
        required=False,
        label="Words in title or body",
        help_text="Every word must occur.",
    )
    method = forms.ChoiceField(choices=SAMPLING_METHODS, initial="all", label="Sampling")
    sample_size = forms.IntegerField(
        required=False,
        min_value=1,
        label="N",
        help_text="Random and in proportion: N in all; per repository: N of each.",
    )
    seed = forms.IntegerField(
        min_value=0, max_value=MAX_SEED, initial=DEFAULT_SEED, help_text="7 by default."
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["repositories"].choices = [(name, name) for name in repository_names()]

    def clean(self) -> dict:
        data = super().clean()
        if data.get("method", "all") != "all" and data.get("sample_size") is None:
            self.add_error("sample_size", "This sampling method needs N.")
        after, before = data.get("created_after"), data.get("created_before")
        if after and before and after >= before:
            self.add_error("created_before", "The date range ends before it starts.")
        return data

    def rule(self) -> SamplingRule:
        data = self.cleaned_data
        method, size = data["method"], data.get("sample_size")
        return SamplingRule(
            selection=IssueSelection(
                repositories=tuple(data["repositories"]),
                state=data["state"],
                labels=tuple(label.strip() for label in data["labels"].split(",") if label.strip()),
                labels_match=data["labels_match"],
                created_after=_day_start(data.get("created_after")),
                created_before=_day_start(data.get("created_before")),
                has_fix={"yes": True, "no": False}.get(data.get("has_fix") or ""),
                query=data["query"].strip(),
            ),
            method="stratified" if method in ("per_repository", "proportional") else method,
            size=size if method in ("random", "proportional") else None,
            per_repository=size if method == "per_repository" else None,
            seed=data["seed"],
        )


def _people():
    return get_user_model().objects.filter(is_active=True).order_by("username")


class StudySetupForm(SampleRuleForm):
    name = forms.CharField(
        max_length=NAME_MAX_LENGTH[NameKind.STUDY_NAME],
        validators=[NameValidator(NameKind.STUDY_NAME)],
    )
    slug = forms.SlugField(
        max_length=100, help_text="The study's address: /studies/SLUG/ (letters, digits, -)."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    codebook_version = forms.ModelChoiceField(
        queryset=CodebookVersion.objects.none(), label="Codebook version", empty_label=None
    )
    k = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Annotators per item (k)")
    overlap = forms.IntegerField(
        min_value=0,
        max_value=100,
        initial=100,
        label="Overlap (%)",
        help_text="The share of items coded by k annotators; the rest by one.",
    )
    blind = forms.BooleanField(
        required=False,
        initial=True,
        label="Blind labeling",
        help_text="Annotators see only their own labels.",
    )
    resolution_rule = forms.ChoiceField(
        choices=Study.ResolutionRule.choices,
        initial=Study.ResolutionRule.ADJUDICATION,
        label="Resolution",
    )
    # Not required: a form posted without it (an older page) keeps the default.
    screen_in_override = forms.TypedChoiceField(
        choices=Study.ScreenInOverride.choices,
        required=False,
        empty_value=Study.ScreenInOverride.RELABEL,
        initial=Study.ScreenInOverride.RELABEL,
        label="Screened in over the annotators",
        help_text=(
            "When an adjudicator screens in an item its annotators screened out, who labels "
            "the dimensions that now apply."
        ),
    )
    show_similar_gold = forms.BooleanField(
        required=False,
        initial=False,
        label="Gold labels of similar issues",
        help_text=(
            "The labeling page lists similar issues of the study; with this, their gold labels "
            "too (never other people's labels)."
        ),
    )
    pilot_size = forms.IntegerField(
        required=False,
        min_value=1,
        label="Pilot round: items",
        help_text="The first items drawn; empty: no pilot round. The main round takes the rest.",
    )
    annotators = forms.ModelMultipleChoiceField(queryset=_people(), required=False)
    managers = forms.ModelMultipleChoiceField(
        queryset=_people(), required=False, help_text="You manage the study in any case."
    )
    adjudicators = forms.ModelMultipleChoiceField(queryset=_people(), required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["codebook_version"].queryset = codebook_version_list_published()
        for role in ("annotators", "managers", "adjudicators"):
            self.fields[role].queryset = _people()
            self.fields[role].widget.attrs["size"] = 6

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if Study.objects.filter(slug=slug).exists():
            raise forms.ValidationError("A study with this slug exists already.")
        return slug

    def clean(self) -> dict:
        data = super().clean()
        k = data.get("k")
        if k is not None:
            if data.get("resolution_rule") == Study.ResolutionRule.MAJORITY and k < 3:
                self.add_error("resolution_rule", "A majority decides only with k of 3 or more.")
            if data.get("overlap") is not None and data["overlap"] < 100 and k < 2:
                self.add_error("overlap", "An overlap below 100 % needs k of 2 or more.")
            annotators = data.get("annotators")
            if annotators and len(annotators) < k:
                self.add_error(
                    "annotators",
                    f"k = {k} needs at least {k} annotators; {len(annotators)} chosen.",
                )
        return data

    def rounds(self) -> list[RoundPlan]:
        pilot = self.cleaned_data.get("pilot_size")
        main = [RoundPlan("Main", kind=Round.Kind.MAIN)]
        return [RoundPlan("Pilot", kind=Round.Kind.PILOT, size=pilot), *main] if pilot else main

    def setup_arguments(self, *, creator) -> dict:
        data = self.cleaned_data
        managers = list(data["managers"])
        if creator.pk not in {user.pk for user in managers}:
            managers.append(creator)
        return {
            "slug": data["slug"],
            "name": data["name"],
            "description": data["description"],
            "codebook_version": data["codebook_version"],
            "rule": self.rule(),
            "rounds": self.rounds(),
            "k": data["k"],
            "overlap": data["overlap"] / 100,
            "blind": data["blind"],
            "resolution_rule": data["resolution_rule"],
            "screen_in_override": data["screen_in_override"],
            "show_similar_gold": data["show_similar_gold"],
            "annotators": list(data["annotators"]),
            "managers": managers,
            "adjudicators": list(data["adjudicators"]),
        }


# The members page (/studies/{slug}/members/)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR)

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"No active user is called {username!r}.")
        return user


# The machine annotators page (/studies/{slug}/machines/)


class MachineAnnotatorForm(forms.Form):
    """An LLM annotator's settings. Types only: the rules (an http(s) URL, the key's variable
    name, bounds, one name for one set of settings) are machines.services'."""

    name = forms.CharField(
        max_length=100, required=False, help_text="How reports name it; the model's name if empty"
    )
    base_url = forms.CharField(
        label="Base URL",
        max_length=500,
        help_text="An OpenAI-compatible endpoint, e.g. https://api.openai.com/v1",
    )
    model = forms.CharField(max_length=200, help_text="The model's name, as the endpoint knows it")
    api_key_env = forms.CharField(
        label="API key variable",
        max_length=100,
        required=False,
        help_text="The NAME of the environment variable holding the key (e.g. OPENAI_API_KEY), "
        "never the key; empty for an endpoint that takes none",
    )
    temperature = forms.FloatField(initial=0.0, min_value=0, max_value=2)
    seed = forms.IntegerField(required=False, min_value=0, help_text="Empty: none sent")
    samples = forms.IntegerField(
        initial=1,
        min_value=1,
        max_value=20,
        help_text="Answers per item; confidence is their agreement",
    )
