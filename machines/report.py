"""The agreement report's machine figures: `report_add_machines` is registered in
labeling.report_extensions (machines.apps) and adds to each dimension
`"machines": {name: {"kappa_vs_gold", "kappa_vs_humans", "precision", "recall", "delegation",
...}}` and `"machine_pairs": [{"a", "b", "n", "kappa"}]`. The human figures are left as they are:
machine labels are not in the report's label tables.
"""

from __future__ import annotations

from labeling.disagreements import item_gold
from labeling.models import StudyItem
from machines.agreement import MachineRating, machine_figures
from machines.models import MachineAnnotator
from machines.selectors import study_machine_ratings
from taxonomy.models import Category

# ---------------------------------------------------------------------------------------------


def report_add_machines(*, study, tables, filters, level, dimensions: dict[str, dict]) -> None:
    """Add "machines" and "machine_pairs" to each dimension of an agreement report: the latest
    label of every machine annotator of the study on each item the report's round and
    repository filters admit, against the report's human ratings and the items' gold labels."""
    for report in dimensions.values():
        report["machines"] = {}
        report["machine_pairs"] = []
    ratings = study_machine_ratings(
        study=study, dimension_ids=[table.dimension.id for table in tables.values()]
    )
    if not ratings:
        return
    items = StudyItem.objects.filter(study=study)
    if filters.round_name:
        items = items.filter(round__name=filters.round_name)
    if filters.repository:
        owner, _, name = filters.repository.partition("/")
        items = items.filter(issue__repository__owner=owner, issue__repository__name=name)
    admitted = set(items.values_list("id", flat=True).order_by())
    raters = set(
        MachineAnnotator.objects.filter(study=study, counts_toward_k=True).values_list(
            "name", flat=True
        )
    )
    # A machine's seats (the one human replaced design) are in the human tables; the machine
    # figures measure machines against people only.
    seats = set(
        MachineAnnotator.objects.filter(study=study, rater_user__isnull=False).values_list(
            "rater_user__username", flat=True
        )
    )
    roll_ups = _roll_ups(study, level)
    gold = item_gold(item_ids=sorted(admitted))
    for key, table in tables.items():
        if key not in dimensions:
            continue
        roll_up = roll_ups.get(table.dimension.id, {})
        by_machine = {
            name: {
                item: MachineRating(
                    frozenset(roll_up.get(k, k) for k in rating.categories), rating.confidence
                )
                for item, rating in by_item.items()
                if item in admitted
            }
            for name, by_item in ratings.get(key, {}).items()
        }
        if not by_machine:
            continue
        humans: dict[str, dict[int, frozenset[str]]] = {}
        for item, annotator, label_set in zip(
            table.item_ids, table.annotators, table.label_sets, strict=True
        ):
            if annotator not in seats:
                humans.setdefault(annotator, {})[item] = label_set
        gold_of = {
            item: frozenset(roll_up.get(k, k) for k in by_dimension[key])
            for item, by_dimension in gold.items()
            if key in by_dimension
        }
        figures, pairs = machine_figures(
            machines=by_machine,
            humans=humans,
            gold=gold_of,
            categories=table.categories,
            multi_label=table.dimension.multi_label,
        )
        for name, machine in figures.items():
            machine["counts_as_rater"] = name in raters
        dimensions[key]["machines"] = figures
        dimensions[key]["machine_pairs"] = pairs


def _roll_ups(study, level: int | None) -> dict[int, dict[str, str]]:
    """Per dimension id, category key -> its ancestor's key at `level` (0: top level), as the
    report rolls up people's labels; {} when the report is not rolled up."""
    if level is None:
        return {}
    rows = list(
        Category.objects.filter(dimension__version_id=study.codebook_version_id).values_list(
            "id", "parent_id", "key", "dimension_id"
        )
    )
    parent_of = {row[0]: row[1] for row in rows}
    key_of = {row[0]: row[2] for row in rows}
    rolled: dict[int, dict[str, str]] = {}
    for category_id, _, key, dimension_id in rows:
        path = [category_id]
        while parent_of[path[-1]] is not None:
            path.append(parent_of[path[-1]])
        path.reverse()
        rolled.setdefault(dimension_id, {})[key] = key_of[path[min(level, len(path) - 1)]]
    return rolled
