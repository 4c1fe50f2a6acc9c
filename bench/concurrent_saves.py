"""Saves of one study by many annotators at once (PostgreSQL).

Each of N threads is one annotator saving drafts of their own item, as fast as they can. A save
locks only its assignment row; before, its join also locked the study and codebook version rows,
so that all saves of a study waited for each other. The "study row locked" figures emulate that
by taking the same study lock inside each save's transaction.

    python bench/concurrent_saves.py [--annotators 8] [--saves 100] [--postgres URL]
"""

import argparse
import statistics
import threading
import time

from benchkit import DEFAULT_POSTGRES, django_setup, postgres_database, run_child


def child(database_url: str, n_annotators: int, n_saves: int) -> None:
    django_setup(database_url)
    import json

    from benchkit import ROOT
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from corpus.issue_import import issue_file_lines
    from corpus.services import issues_import
    from labeling.models import Study
    from labeling.services.annotations import DimensionAnswer, assignment_save
    from labeling.services.studies import item_next_for_annotator, study_create
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load

    version, _ = codebook_load(
        data=codebook_file_read((ROOT / "taxonomy/data/llm-training-issues.json").read_bytes()),
        publish=True,
    )
    with (ROOT / "corpus/data/sample-issues.jsonl").open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    from corpus.models import Issue

    users = [get_user_model().objects.create_user(f"annotator{i}") for i in range(n_annotators)]
    study = study_create(
        slug="bench", name="bench", codebook_version=version, k=1, annotators=users,
        issues=list(Issue.objects.all()),
    )  # fmt: skip
    assignments = {user.pk: item_next_for_annotator(study=study, user=user) for user in users}
    symptoms = ["crash", "hang"]

    def run(lock_study: bool) -> dict:
        barrier = threading.Barrier(n_annotators)
        latencies: list[float] = []
        lock = threading.Lock()

        def annotate(user) -> None:
            mine: list[float] = []
            try:
                barrier.wait()
                for n in range(n_saves):
                    started = time.perf_counter()
                    with transaction.atomic():
                        if lock_study:
                            Study.objects.select_for_update().get(pk=study.pk)
                        assignment_save(
                            assignment=assignments[user.pk],
                            user=user,
                            answers={"symptom": DimensionAnswer(category_keys=[symptoms[n % 2]])},
                            submit=False,
                        )
                    mine.append(time.perf_counter() - started)
            finally:
                connection.close()
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=annotate, args=(user,)) for user in users]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        latencies.sort()
        return {
            "saves_per_second": len(latencies) / elapsed,
            "p50_ms": 1000 * statistics.median(latencies),
            "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        }

    run(False)  # warm caches and connections
    print(json.dumps({"assignment row only": run(False), "study row locked": run(True)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--saves", type=int, default=100)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("child_arguments", nargs="*", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        url, annotators, saves = arguments.child_arguments
        child(url, int(annotators), int(saves))
        return
    if not postgres_database(arguments.postgres):
        print("concurrent saves: PostgreSQL is needed (SQLite runs one write at a time anyway).")
        return
    figures = run_child(
        __file__, arguments.postgres, str(arguments.annotators), str(arguments.saves)
    )
    postgres_database(arguments.postgres, create=False)
    print(
        f"concurrent draft saves, PostgreSQL, {arguments.annotators} annotators x "
        f"{arguments.saves} saves each:"
    )
    for name, figure in figures.items():
        print(
            f"  {name:<20} {figure['saves_per_second']:7.0f} saves/s   "
            f"p50 {figure['p50_ms']:6.1f} ms   p95 {figure['p95_ms']:6.1f} ms"
        )


if __name__ == "__main__":
    main()
