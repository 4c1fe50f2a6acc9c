"""Machine annotators measured like people: per dimension, each machine's Cohen's kappa against
gold and against each human annotator, precision and recall against gold per category, a
delegation table (for confidence thresholds, the share of items the machine would take and its
agreement with gold on them), and the kappa of every pair of machines (model-model agreement,
the signal of whether a dimension suits a model at all).

This module is the arithmetic (no Django; kappa from `labeling.agreement.cohen_kappa`);
`machines.report` reads the labels and extends the agreement report with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

# The package, not its function: its numerical modules (numpy) load at the first kappa.
from labeling import agreement

DELEGATION_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
NONE_APPLIES = ""  # a single-label "none applies", as a value of its own (as in the report)


@dataclass(frozen=True)
class MachineRating:
    categories: frozenset[str]
    confidence: float


def pair_kappa(
    first: Mapping[int, Collection[str]],
    second: Mapping[int, Collection[str]],
    *,
    categories: Sequence[str],
    multi_label: bool,
) -> tuple[int, float | None]:
    """(shared items, kappa) of two raters given as item -> category keys. Single-label: the
    kappa of the chosen keys; multi-label: the mean over categories of the binary (chosen or
    not) kappas that are defined, as the report does for people."""
    shared = sorted(first.keys() & second.keys())
    if not shared:
        return 0, None
    if not multi_label:
        a = [next(iter(sorted(first[item])), NONE_APPLIES) for item in shared]
        b = [next(iter(sorted(second[item])), NONE_APPLIES) for item in shared]
        return len(shared), _rounded(agreement.cohen_kappa(a, b))
    used = set(categories) | {key for item in shared for key in (*first[item], *second[item])}
    kappas = []
    for key in sorted(used):
        a = [key in first[item] for item in shared]
        b = [key in second[item] for item in shared]
        value = agreement.cohen_kappa(a, b, labels=[False, True])
        if value is not None:
            kappas.append(value)
    return len(shared), _rounded(sum(kappas) / len(kappas)) if kappas else None


def precision_recall(
    machine: Mapping[int, Collection[str]], gold: Mapping[int, Collection[str]]
) -> dict:
    """Per category, over the items both labeled: precision (of the machine's choices of it,
    the share gold has too), recall (of gold's, the share the machine chose) and support (gold's
    count); and their macro means over the categories that have a value."""
    shared = machine.keys() & gold.keys()
    keys = sorted({key for item in shared for key in (*machine[item], *gold[item])})
    per_category = {}
    for key in keys:
        chosen = sum(key in machine[item] for item in shared)
        support = sum(key in gold[item] for item in shared)
        both = sum(key in machine[item] and key in gold[item] for item in shared)
        per_category[key] = {
            "precision": _rounded(both / chosen) if chosen else None,
            "recall": _rounded(both / support) if support else None,
            "support": support,
        }
    return {
        "precision": _mean(v["precision"] for v in per_category.values()),
        "recall": _mean(v["recall"] for v in per_category.values()),
        "per_category": per_category,
    }


def delegation_table(
    machine: Mapping[int, MachineRating],
    gold: Mapping[int, Collection[str]],
    thresholds: Sequence[float] = DELEGATION_THRESHOLDS,
) -> list[dict]:
    """For each threshold, of the items with gold: the share whose machine confidence reaches
    it (the items a model would take over) and the share of those it labeled exactly as gold."""
    shared = [item for item in machine if item in gold]
    rows = []
    for threshold in thresholds:
        taken = [item for item in shared if machine[item].confidence >= threshold - 1e-9]
        agreeing = sum(machine[item].categories == frozenset(gold[item]) for item in taken)
        rows.append(
            {
                "threshold": threshold,
                "n": len(taken),
                "share": _rounded(len(taken) / len(shared)) if shared else None,
                "agreement_with_gold": _rounded(agreeing / len(taken)) if taken else None,
            }
        )
    return rows


def machine_figures(
    *,
    machines: Mapping[str, Mapping[int, MachineRating]],
    humans: Mapping[str, Mapping[int, Collection[str]]],
    gold: Mapping[int, Collection[str]],
    categories: Sequence[str],
    multi_label: bool,
) -> tuple[dict[str, dict], list[dict]]:
    """The "machines" and "machine_pairs" entries of one dimension."""
    figures = {}
    for name in sorted(machines):
        ratings = machines[name]
        labels = {item: rating.categories for item, rating in ratings.items()}
        n_gold, kappa_gold = pair_kappa(
            labels, gold, categories=categories, multi_label=multi_label
        )
        figures[name] = {
            "n_items": len(labels),
            "n_gold": n_gold,
            "kappa_vs_gold": kappa_gold,
            "kappa_vs_humans": {
                human: pair_kappa(labels, rated, categories=categories, multi_label=multi_label)[1]
                for human, rated in sorted(humans.items())
            },
            **precision_recall(labels, gold),
            "delegation": delegation_table(ratings, gold),
        }
    pairs = []
    for a, b in itertools.combinations(sorted(machines), 2):
        n, kappa = pair_kappa(
            {item: r.categories for item, r in machines[a].items()},
            {item: r.categories for item, r in machines[b].items()},
            categories=categories,
            multi_label=multi_label,
        )
        pairs.append({"a": a, "b": b, "n": n, "kappa": kappa})
    return figures, pairs


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _mean(values) -> float | None:
    present = [value for value in values if value is not None]
    return _rounded(sum(present) / len(present)) if present else None
