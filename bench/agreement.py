"""Benchmark of labeling.agreement on a synthetic study.

10,000 items x 3 annotators x 9 dimensions (5 single-label, two of them ordinal, and 4
multi-label; 10 categories each), annotators correlated through a hidden true label. Times
the full report without and with bootstrap intervals, and compares with NLTK's AnnotationTask
on the same data.

Run from the project root:  python bench/agreement.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Run as a script, sys.path[0] is bench/; the package lives one level up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeling.agreement import dimension_agreement

SEED = 20240601
N_ITEMS = 10_000
ANNOTATORS = ("alice", "bob", "carol")
ANNOTATOR_ACCURACY = (0.85, 0.78, 0.70)  # chance of copying the hidden true answer
N_CATEGORIES = 10
BOOTSTRAP_RESAMPLES = 1000
REPEATS = 5


@dataclass(frozen=True)
class Dimension:
    name: str
    multi_label: bool
    ordinal: bool = False
    weights: str | None = None


DIMENSIONS = (
    Dimension("issue_type", multi_label=False),
    Dimension("component", multi_label=False),
    Dimension("root_cause", multi_label=False),
    Dimension("severity", multi_label=False, ordinal=True, weights="linear"),
    Dimension("effort", multi_label=False, ordinal=True, weights="quadratic"),
    Dimension("symptoms", multi_label=True),
    Dimension("affected_layers", multi_label=True),
    Dimension("fix_patterns", multi_label=True),
    Dimension("discussion_topics", multi_label=True),
)


@dataclass(frozen=True)
class DimensionRows:
    dimension: Dimension
    categories: list[str]
    item_ids: list[int]
    annotators: list[str]
    label_sets: list[tuple[str, ...]]


def synthesize_dimension(dimension: Dimension, rng: np.random.Generator) -> DimensionRows:
    categories = [f"{dimension.name}_{index}" for index in range(N_CATEGORIES)]
    if dimension.multi_label:
        chosen = _multi_label_answers(rng)
    else:
        chosen = _single_label_answers(rng, ordinal=dimension.ordinal)
    item_ids, annotators, label_sets = [], [], []
    for annotator_index, annotator in enumerate(ANNOTATORS):
        for item_id in range(N_ITEMS):
            item_ids.append(item_id)
            annotators.append(annotator)
            label_sets.append(tuple(categories[c] for c in chosen[annotator_index][item_id]))
    return DimensionRows(dimension, categories, item_ids, annotators, label_sets)


def _single_label_answers(rng: np.random.Generator, *, ordinal: bool) -> list[list[list[int]]]:
    prevalence = 1.0 / np.arange(1, N_CATEGORIES + 1)  # Zipf-like: a few common categories
    truth = rng.choice(N_CATEGORIES, size=N_ITEMS, p=prevalence / prevalence.sum())
    answers = []
    for accuracy in ANNOTATOR_ACCURACY:
        if ordinal:  # ordinal mistakes land on a neighbouring level
            noise = truth + rng.choice([-1, 1], size=N_ITEMS)
            mistaken = np.clip(noise, 0, N_CATEGORIES - 1)
        else:
            mistaken = rng.integers(0, N_CATEGORIES, size=N_ITEMS)
        label = np.where(rng.random(N_ITEMS) < accuracy, truth, mistaken)
        none_applies = rng.random(N_ITEMS) < 0.03
        answers.append(
            [[] if skip else [int(code)] for code, skip in zip(label, none_applies, strict=True)]
        )
    return answers


def _multi_label_answers(rng: np.random.Generator) -> list[list[list[int]]]:
    prevalence = np.linspace(0.35, 0.03, N_CATEGORIES)
    truth = rng.random((N_ITEMS, N_CATEGORIES)) < prevalence
    answers = []
    for accuracy in ANNOTATOR_ACCURACY:
        missed = rng.random(truth.shape) < (1.0 - accuracy)
        spurious = rng.random(truth.shape) < 0.03
        used = (truth & ~missed) | (~truth & spurious)
        answers.append([list(np.flatnonzero(row)) for row in used])
    return answers


def full_report(study: list[DimensionRows], bootstrap: int) -> list[dict]:
    return [
        dimension_agreement(
            rows.item_ids,
            rows.annotators,
            rows.label_sets,
            categories=rows.categories,
            multi_label=rows.dimension.multi_label,
            ordinal=rows.dimension.ordinal,
            weights=rows.dimension.weights,
            bootstrap=bootstrap,
            seed=SEED,
        )
        for rows in study
    ]


@dataclass(frozen=True)
class Timing:
    wall: list[float]  # seconds per run
    cpu: list[float]  # process CPU seconds per run (all threads)

    def summary(self) -> str:
        return (
            f"median {statistics.median(self.wall):.3f} s, best {min(self.wall):.3f} s "
            f"over {len(self.wall)} runs (CPU {statistics.median(self.cpu):.3f} s)"
        )


def time_runs(function: Callable[[], object], repeats: int) -> Timing:
    wall, cpu = [], []
    for _ in range(repeats):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - wall_start)
        cpu.append(time.process_time() - cpu_start)
    return Timing(wall, cpu)


def nltk_statistics(rows: DimensionRows) -> dict[str, tuple[float, float]]:
    """NLTK's AnnotationTask on one dimension: {statistic: (seconds, value)}.

    Single-label: Krippendorff's alpha and kappa (Cohen's, averaged over annotator pairs).
    Multi-label: alpha with the MASI distance (NLTK's other coefficients are not the
    per-category binary kappas reported here, so they are not comparable).
    """
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import binary_distance, masi_distance

    def masi_with_empty_sets(labels_a: frozenset, labels_b: frozenset) -> float:
        # NLTK's masi_distance divides by zero on two empty sets, which are identical.
        return 0.0 if not labels_a and not labels_b else masi_distance(labels_a, labels_b)

    multi_label = rows.dimension.multi_label
    triples = [
        (annotator, item_id, frozenset(labels) if multi_label else (labels or ("",))[0])
        for item_id, annotator, labels in zip(
            rows.item_ids, rows.annotators, rows.label_sets, strict=True
        )
    ]
    timings = {}
    start = time.perf_counter()
    task = AnnotationTask(
        data=triples, distance=masi_with_empty_sets if multi_label else binary_distance
    )
    setup = time.perf_counter() - start
    statistics_to_time = (
        {"alpha": task.alpha} if multi_label else {"alpha": task.alpha, "kappa": task.kappa}
    )
    for name, compute in statistics_to_time.items():
        start = time.perf_counter()
        value = compute()
        timings[name] = (time.perf_counter() - start + setup, value)
        setup = 0.0  # the task is built once
    return timings


def main() -> None:
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    study = [synthesize_dimension(dimension, rng) for dimension in DIMENSIONS]
    n_ratings = sum(len(rows.item_ids) for rows in study)
    print(
        f"Synthetic study: {N_ITEMS} items x {len(ANNOTATORS)} annotators x {len(study)} "
        f"dimensions = {n_ratings} ratings (built in {time.perf_counter() - started:.1f} s)"
    )

    # Other processes competing for the cores inflate wall time; the load shows whether they did.
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    full_report(study, bootstrap=0)  # warm-up: imports, first-call allocations
    plain = time_runs(lambda: full_report(study, bootstrap=0), REPEATS)
    print(f"Full report, no intervals:    {plain.summary()}; target < 0.5 s")
    with_intervals = time_runs(lambda: full_report(study, bootstrap=BOOTSTRAP_RESAMPLES), 3)
    print(
        f"Full report, bootstrap B={BOOTSTRAP_RESAMPLES}: {with_intervals.summary()}; target < 5 s"
    )
    for dimension in full_report([study[0], study[3], study[5]], bootstrap=BOOTSTRAP_RESAMPLES):
        headline = dimension["headline"]
        print(
            f"  e.g. headline kappa ({headline['statistic']}) {headline['value']:.3f} "
            f"{_interval(headline['ci95'])}, Fleiss {dimension['fleiss_kappa']:.3f} "
            f"{_interval(dimension['fleiss_kappa_ci95'])}, alpha "
            f"{dimension['krippendorff_alpha']:.3f} "
            f"{_interval(dimension['krippendorff_alpha_ci95'])}"
        )

    print("\nPer dimension (no intervals):")
    for rows in study:
        seconds = min(time_runs(lambda rows=rows: full_report([rows], bootstrap=0), 3).wall)
        report = full_report([rows], bootstrap=0)[0]
        kind = "multi " if rows.dimension.multi_label else "single"
        extra = (
            f"alpha_jaccard={report['krippendorff_alpha_jaccard']:.3f}  "
            f"mean_jaccard={report['mean_jaccard']:.3f}"
            if rows.dimension.multi_label
            else f"alpha_ordinal={report['krippendorff_alpha_ordinal']:.3f}"
            if rows.dimension.ordinal
            else f"pairs={report['percent_agreement']:.3f}"
        )
        print(
            f"  {rows.dimension.name:<18} {kind} {seconds * 1000:7.1f} ms  "
            f"kappa={report['cohen_kappa']['mean']:.3f}  "
            f"fleiss={report['fleiss_kappa']:.3f}  gwet={report['fleiss_kappa_gwet']:.3f}  "
            f"alpha={report['krippendorff_alpha']:.3f}  {extra}"
        )

    print("\nNLTK AnnotationTask on the full data of one dimension of each kind:")
    for rows in (study[0], study[5]):
        ours_seconds = min(time_runs(lambda rows=rows: full_report([rows], bootstrap=0), 3).wall)
        ours = full_report([rows], bootstrap=0)[0]
        ours_values = {"alpha": ours["krippendorff_alpha"], "kappa": ours["cohen_kappa"]["mean"]}
        nltk = nltk_statistics(rows)
        nltk_seconds = sum(seconds for seconds, _ in nltk.values())
        kind = "multi-label, MASI" if rows.dimension.multi_label else "single-label"
        print(f"  {rows.dimension.name} ({kind}):")
        for name, (seconds, value) in nltk.items():
            print(
                f"    NLTK {name:<5} {seconds:7.3f} s  value {value:.6f}  "
                f"(ours {ours_values[name]:.6f})"
            )
        print(
            f"    NLTK total {nltk_seconds:.3f} s for {' + '.join(nltk)}; our whole report for "
            f"the dimension {ours_seconds * 1000:.1f} ms -> {nltk_seconds / ours_seconds:.0f}x"
        )


def _interval(bounds: list[float] | None) -> str:
    return "[-]" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


if __name__ == "__main__":
    main()
