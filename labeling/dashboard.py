"""Reads of a study's progress: the screening funnel per system, progress per annotator and per
round, and the items that changed upstream since they were labeled. A fixed number of queries
whatever the study size."""

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q

from labeling.models import Assignment, Resolution, Study, StudyItem
from labeling.selectors import study_dimensions

FUNNEL_STEPS = ("candidates", "sampled", "screened_in", "labeled", "resolved")


@dataclass
class FunnelRow:
    system: str  # a repository, "owner/name"; "all" for the total
    counts: dict[str, int | None] = field(default_factory=dict)


def study_funnel(*, study: Study) -> list[FunnelRow]:
    """candidates → sampled → screened in → labeled → resolved, per repository and in all.

    Candidates are what the study's selection matched when it was set up (unknown, None, for a
    study made from a list of issues). Screened in counts items whose gold screening lets the
    other dimensions apply; labeled, items every needed annotator submitted; resolved, items
    with all their gold labels.
    """
    candidates = (study.sampling or {}).get("candidates")
    items = list(
        StudyItem.objects.filter(study=study).values_list(
            "id", "issue__repository__owner", "issue__repository__name", "status"
        )
    )
    system_of = {item_id: f"{owner}/{name}" for item_id, owner, name, _ in items}
    screening = _screening_rule(study)
    screened_in: set[int] = set()
    if screening is not None:
        screening_key, dependant = screening
        gold: dict[int, set[str]] = defaultdict(set)
        for item_id, key in Resolution.objects.filter(
            item__study=study, dimension__key=screening_key
        ).values_list("item_id", "categories__key"):
            if key is None:
                gold[item_id]
            else:
                gold[item_id].add(key)
        screened_in = {
            item_id
            for item_id, keys in gold.items()
            if dependant.applies_given({screening_key: keys})
        }
    counts: dict[str, Counter] = defaultdict(Counter)
    for item_id, _, _, status in items:
        for system in (system_of[item_id], "all"):
            counts[system]["sampled"] += 1
            counts[system]["labeled"] += status != StudyItem.Status.OPEN
            counts[system]["resolved"] += status == StudyItem.Status.RESOLVED
            counts[system]["screened_in"] += item_id in screened_in
    systems = sorted({*system_of.values(), *(candidates or {})})
    rows = []
    for system in [*systems, "all"]:
        row = {step: counts[system][step] for step in FUNNEL_STEPS[1:]}
        if candidates is None:
            row["candidates"] = None
        elif system == "all":
            row["candidates"] = sum(candidates.values())
        else:
            row["candidates"] = candidates.get(system, 0)
        if screening is None:
            row["screened_in"] = None
        rows.append(FunnelRow(system, {step: row[step] for step in FUNNEL_STEPS}))
    return rows


def _screening_rule(study: Study):
    """(screening key, a dimension that depends on it): the dimension others apply after."""
    dimensions = study_dimensions(study=study)
    for dimension in dimensions:
        if dimension.applies_when:
            return next(iter(dimension.applies_when)), dimension
    return None


@dataclass
class AnnotatorProgress:
    annotator: str
    assigned: int
    todo: int
    drafts: int
    submitted: int
    skipped: int
    seconds_spent: int
    median_seconds: float | None

    @property
    def percent(self) -> int:
        open_or_done = self.assigned - self.skipped
        return round(100 * self.submitted / open_or_done) if open_or_done else 0


def study_annotator_progress(*, study: Study) -> list[AnnotatorProgress]:
    """Per annotator with assignments: how many items in each state, and time spent."""
    per: dict[str, Counter] = defaultdict(Counter)
    seconds: dict[str, list[int]] = defaultdict(list)
    for username, status, spent in Assignment.objects.filter(item__study=study).values_list(
        "annotator__username", "status", "seconds_spent"
    ):
        per[username][status] += 1
        per[username]["seconds"] += spent
        if status == Assignment.Status.SUBMITTED:
            seconds[username].append(spent)
    return [
        AnnotatorProgress(
            annotator=username,
            assigned=sum(counts[s] for s in Assignment.Status.values),
            todo=counts[Assignment.Status.TODO],
            drafts=counts[Assignment.Status.DRAFT],
            submitted=counts[Assignment.Status.SUBMITTED],
            skipped=counts[Assignment.Status.SKIPPED],
            seconds_spent=counts["seconds"],
            median_seconds=statistics.median(seconds[username]) if seconds[username] else None,
        )
        for username, counts in sorted(per.items())
    ]


def study_round_progress(*, study: Study) -> list[dict]:
    """Per round: items, labeled (every needed annotator submitted), resolved."""
    return list(
        study.rounds.order_by("position")
        .annotate(
            n_items=Count("items"),
            labeled=Count("items", filter=~Q(items__status=StudyItem.Status.OPEN)),
            resolved=Count("items", filter=Q(items__status=StudyItem.Status.RESOLVED)),
        )
        .values("name", "kind", "n_items", "labeled", "resolved")
    )


def study_changed_upstream(*, study: Study, limit: int = 50) -> list[StudyItem]:
    """Items whose issue changed on GitHub after someone labeled them, most recent first."""
    return list(
        StudyItem.objects.filter(study=study, changed_upstream_at__isnull=False)
        .select_related("issue__repository")
        .order_by("-changed_upstream_at")[:limit]
    )
