"""The agreement report from the database: a study of 10k items x 3 annotators x 9 dimensions
(the starter codebook: single- and multi-label) over 3 repositories, stored in SQLite and
PostgreSQL, then the label table query, the full report without and with bootstrap intervals
(B = 1000), the per-repository table (one read split by repository) beside the same numbers
from one filtered report per repository, and the agreement page's numbers (report, rounds and
repositories from one read) beside the three functions that read the labels each.

    python bench/agreement_db.py [--items 10000] [--postgres URL]

`bench/agreement.py` times the arithmetic alone on arrays; this adds the database.
"""

import argparse
import json
import os
import tempfile
import time

from benchkit import (
    DEFAULT_POSTGRES,
    django_setup,
    labels_made,
    postgres_database,
    run_child,
    starter_codebook_published,
)


def child(database_url: str, n_items: int) -> None:
    django_setup(database_url)
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpus.models import Issue, Repository
    from labeling.agreement_report import (
        LabelTableFilter,
        study_agreement_report,
        study_agreement_views,
        study_label_table,
        study_repository_agreement,
        study_round_statuses,
    )
    from labeling.models import Annotation, Assignment, StudyItem
    from labeling.services.studies import study_create

    started = time.perf_counter()
    version = starter_codebook_published()
    users = [get_user_model().objects.create_user(f"annotator{i}") for i in range(3)]
    study = study_create(slug="bench", name="bench", codebook_version=version, k=3)
    repositories = [Repository.objects.create(owner="bench", name=f"repo{i}") for i in range(3)]
    now = timezone.now()
    Issue.objects.bulk_create(
        [
            Issue(
                repository=repositories[n % 3],
                number=n,
                title=f"issue {n}",
                created_at=now,
                updated_at=now,
            )
            for n in range(1, n_items + 1)
        ],
        batch_size=2000,
    )
    round_ = study.rounds.get()
    StudyItem.objects.bulk_create(
        [
            StudyItem(study=study, issue_id=i, round=round_)
            for i in Issue.objects.values_list("id", flat=True)
        ],
        batch_size=2000,
    )
    Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=item_id,
                study=study,
                annotator=user,
                status="submitted",
                submitted_at=now,
            )
            for item_id in StudyItem.objects.values_list("id", flat=True)
            for user in users
        ],
        batch_size=5000,
    )
    labels_made(version=version, extra=0.4)
    setup_seconds = time.perf_counter() - started

    timings = {}
    for label, function in (
        ("label table", lambda: study_label_table(study=study)),
        ("report", lambda: study_agreement_report(study=study)),
        ("report, B=1000", lambda: study_agreement_report(study=study, bootstrap=1000)),
        ("by repository", lambda: study_repository_agreement(study=study)),
        (
            "filtered reports",
            lambda: [
                study_agreement_report(
                    study=study, filters=LabelTableFilter(repository=r.full_name)
                )
                for r in repositories
            ],
        ),
        ("page, one read", lambda: study_agreement_views(study=study)),
        (
            "page, three reads",
            lambda: (
                study_agreement_report(study=study),
                study_round_statuses(study=study),
                study_repository_agreement(study=study),
            ),
        ),
    ):
        best = float("inf")
        for _ in range(3 if "B=" not in label else 1):
            started = time.perf_counter()
            function()
            best = min(best, time.perf_counter() - started)
        timings[label] = best
    print(
        json.dumps(
            {"setup_seconds": setup_seconds, "annotations": Annotation.objects.count(), **timings}
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "ITEMS"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    print(f"study: {args.items} items x 3 annotators x 9 dimensions (starter codebook)")
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, url in (
            ("SQLite", f"sqlite:///{folder}/agreement.sqlite3"),
            ("PostgreSQL", args.postgres),
        ):
            if label == "PostgreSQL" and not postgres_database(url):
                continue
            results[label] = run_child(__file__, url, str(args.items))
    print(f"{'seconds (best of 3; B=1000 once)':<34}" + "".join(f"{n:>12}" for n in results))
    annotations = "".join(f"{r['annotations']:>12}" for r in results.values())
    print(f"{'annotations':<34}{annotations}")
    for measure in MEASURES:
        print(f"{measure:<34}" + "".join(f"{r[measure]:>12.2f}" for r in results.values()))
    print(
        "report = label table from the database plus the arithmetic of every dimension; "
        "by repository = one read split by repository, beside one filtered report per "
        "repository; page = the agreement page's report, rounds and repositories, from one "
        "read or from the three functions"
    )


MEASURES = (
    "label table",
    "report",
    "report, B=1000",
    "by repository",
    "filtered reports",
    "page, one read",
    "page, three reads",
)


if __name__ == "__main__":
    main()
