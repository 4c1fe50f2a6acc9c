"""The scikit-learn annotator (machines.classical) on a study of 10,000 synthetic issues, made
from the bundled sample issues with words changed, and the 9 dimensions of the starter
codebook, half of the items with gold labels that follow each issue's source (with noise):
training and prediction time (target < 30 s), their peak memory, and the whole run with its
labels stored. Then the similar-issues index of the same study (machines.similar): its first
computation and a cached read. PostgreSQL when reachable, SQLite otherwise.

    python bench/machines_classical.py [--issues 10000] [--gold 0.5]
"""

import argparse
import random
import resource
import sys
import tempfile
import time

from benchkit import (
    DEFAULT_POSTGRES,
    ROOT,
    django_setup,
    postgres_database,
    sample_issues,
    starter_codebook_published,
)


def _mebibytes(kibibytes: int) -> float:
    return kibibytes / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument("--gold", type=float, default=0.5, help="share of items with gold")
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES + "_classical")
    arguments = parser.parse_args()

    database_url = arguments.postgres
    if not postgres_database(database_url):
        database_url = f"sqlite:///{tempfile.mkdtemp()}/bench-classical.sqlite3"
    django_setup(database_url)

    from django.utils import timezone

    from corpus.models import Issue, Repository
    from labeling.disagreements import item_gold
    from labeling.models import Resolution, StudyItem
    from labeling.selectors import study_dimensions
    from labeling.services.studies import study_create
    from machines import classical
    from machines.models import MachineLabel
    from machines.runs import machine_run_execute
    from machines.services import classical_run_request
    from machines.similar import study_neighbours_compute
    from machines.similar_panel import study_neighbours
    from taxonomy.models import Category

    rng = random.Random(7)
    samples = sample_issues()
    vocabulary = " ".join(f"{s['title']} {s['body'] or ''}" for s in samples).split()
    version = starter_codebook_published()
    repository = Repository.objects.create(owner="bench", name="classical")
    now = timezone.now()

    def variant(sample: dict) -> str:
        words = f"{sample['body'] or ''}".split()
        for _ in range(len(words) // 10):  # a tenth of the words changed
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
        noise = " ".join(rng.choice(vocabulary) for _ in range(30))
        return f"{' '.join(words)}\n{noise}"

    issues = Issue.objects.bulk_create(
        [
            Issue(
                repository=repository,
                number=number,
                title=samples[number % len(samples)]["title"],
                body=variant(samples[number % len(samples)]),
                state="closed",
                created_at=now,
                updated_at=now,
            )
            for number in range(1, arguments.issues + 1)
        ],
        batch_size=2000,
    )
    study = study_create(
        slug="bench-classical", name="Bench", codebook_version=version, issues=issues
    )

    # Gold on a share of the items: per dimension, the category of the item's source sample
    # (80 %) or another one; screened out (not a bug) for a fifth of the sources.
    dimensions = study_dimensions(study=study)
    categories: dict[int, list[Category]] = {}
    for category in Category.objects.filter(dimension__version=version, parent=None):
        categories.setdefault(category.dimension_id, []).append(category)
    items = list(
        StudyItem.objects.filter(study=study).order_by("id").values_list("id", "issue__number")
    )
    gold_items = rng.sample(items, int(len(items) * arguments.gold))
    resolutions, chosen = [], []
    for item_id, number in gold_items:
        source = number % len(samples)
        screened_out = source % 5 == 0
        for dimension in dimensions:
            if screened_out and dimension.key != "screening":
                continue
            options = categories[dimension.id]
            if dimension.key == "screening":
                picked = options[1] if screened_out else options[0]
            elif rng.random() < 0.8:
                picked = options[(source * 7 + dimension.position) % len(options)]
            else:
                picked = rng.choice(options)
            resolutions.append(Resolution(item_id=item_id, dimension=dimension, method="consensus"))
            chosen.append(picked)
    Resolution.objects.bulk_create(resolutions, batch_size=2000)
    through = Resolution.categories.through
    through.objects.bulk_create(
        [
            through(resolution_id=resolution.pk, category_id=category.pk)
            for resolution, category in zip(resolutions, chosen, strict=True)
        ],
        batch_size=5000,
    )
    print(
        f"{len(items):,} items x {len(dimensions)} dimensions, {len(gold_items):,} with gold "
        f"({len(resolutions):,} gold labels); {database_url.split(':')[0]}"
    )

    # Training and prediction alone, as the run does them (texts read first).
    started = time.perf_counter()
    item_ids, texts = classical.study_item_texts(study=study)
    gold = item_gold(item_ids=item_ids)
    read_seconds = time.perf_counter() - started
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    counts = classical.count_matrix(texts)
    row_of = {item_id: row for row, item_id in enumerate(item_ids)}
    trained, per_dimension = 0, []
    for dimension in dimensions:
        labeled = sorted(
            (row_of[item_id], by_dimension[dimension.key])
            for item_id, by_dimension in gold.items()
            if dimension.key in by_dimension
        )
        dimension_started = time.perf_counter()
        try:
            classical.dimension_predict(
                counts,
                gold_rows=[row for row, _ in labeled],
                gold_labels=[labels for _, labels in labeled],
                multi_label=dimension.multi_label,
            )
            trained += 1
        except classical.TooLittleGold:
            pass
        per_dimension.append(f"{dimension.key} {time.perf_counter() - dimension_started:.1f}")
    training_seconds = time.perf_counter() - started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"training + prediction: {training_seconds:.1f} s for {trained} dimensions "
        f"({classical.N_FOLDS} folds + a full model each; texts read in {read_seconds:.1f} s)"
    )
    print(f"  per dimension, s: {', '.join(per_dimension)}")
    print(
        f"  peak memory: process peak RSS {_mebibytes(rss_after):.0f} MiB "
        f"({_mebibytes(rss_after - rss_before):+.0f} MiB over the phase)"
    )

    started = time.perf_counter()
    run = machine_run_execute(run_id=classical_run_request(study=study, enqueue=False).pk)
    run_seconds = time.perf_counter() - started
    print(
        f"whole run (read, train, predict, store): {run_seconds:.1f} s, {run.status}, "
        f"{run.items_done:,} items labeled, "
        f"{MachineLabel.objects.filter(run=run).count():,} labels stored"
    )

    started = time.perf_counter()
    study_neighbours_compute(study=study)  # what the background task does at this size
    first_seconds = time.perf_counter() - started
    started = time.perf_counter()
    study_neighbours(study=study)
    cached_seconds = time.perf_counter() - started
    print(
        f"similar-issues index: {first_seconds:.1f} s to compute, "
        f"{cached_seconds * 1000:.0f} ms from the cache"
    )

    from django.db import connections

    connections.close_all()
    if database_url.startswith("postgres"):
        postgres_database(database_url, create=False)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
