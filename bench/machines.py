"""An LLM annotator over a study of 300 issues and the 9 dimensions of the starter codebook,
against the stand-in endpoint (tests/openai_server.py) answering each request after 200 ms:
wall time with 8 requests in flight (target < 60 s), requests per item (target 1 per sample),
and a rerun's requests (target 0: every item is skipped, every answer cached) and wall time.
PostgreSQL when reachable, SQLite otherwise.

    python bench/machines.py [--issues 300] [--latency 0.2] [--in-flight 8] [--samples 1]
"""

import argparse
import os
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per answer")
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES + "_machines")
    arguments = parser.parse_args()

    database_url = arguments.postgres
    if not postgres_database(database_url):
        database_url = f"sqlite:///{tempfile.mkdtemp()}/bench-machines.sqlite3"
    os.environ["MACHINES_MAX_IN_FLIGHT"] = str(arguments.in_flight)
    django_setup(database_url)

    from django.utils import timezone

    from corpus.models import Issue, Repository
    from labeling.services.studies import study_create
    from machines.runs import machine_run_execute
    from machines.services import machine_annotator_get_or_create, machine_run_request
    from tests.openai_server import FakeOpenAI

    samples = sample_issues()
    version = starter_codebook_published()
    repository = Repository.objects.create(owner="bench", name="machines")
    now = timezone.now()
    issues = Issue.objects.bulk_create(
        [
            Issue(
                repository=repository,
                number=number,
                title=samples[number % len(samples)]["title"],
                body=samples[number % len(samples)]["body"] or "",
                state="closed",
                created_at=now,
                updated_at=now,
            )
            for number in range(1, arguments.issues + 1)
        ]
    )
    study = study_create(
        slug="bench-machines", name="Bench", codebook_version=version, issues=issues
    )
    n_dimensions = version.dimensions.count()

    with FakeOpenAI(latency_seconds=arguments.latency) as endpoint:
        annotator, _ = machine_annotator_get_or_create(
            study=study,
            base_url=endpoint.base_url,
            model="stand-in",
            samples=arguments.samples,
            seed=1,
        )
        # The same settings under another name: nothing to skip, every answer from the cache.
        twin, _ = machine_annotator_get_or_create(
            study=study,
            base_url=endpoint.base_url,
            model="stand-in",
            samples=arguments.samples,
            seed=1,
            name="twin",
        )
        timings = []
        for machine in (annotator, annotator, twin):
            started = time.perf_counter()
            run = machine_run_execute(
                run_id=machine_run_request(annotator=machine, enqueue=False).pk
            )
            timings.append((time.perf_counter() - started, run))
        peak = endpoint.max_in_flight

    (first_seconds, first), (rerun_seconds, rerun), (cached_seconds, cached) = timings
    print(
        f"{arguments.issues} issues x {n_dimensions} dimensions, {arguments.samples} sample(s), "
        f"stand-in latency {arguments.latency * 1000:.0f} ms, "
        f"{arguments.in_flight} in flight ({database_url.split(':')[0]})"
    )
    print(
        f"first run: {first_seconds:.1f} s wall, {first.items_done} items done, "
        f"{first.items_failed} failed, {first.requests} requests "
        f"({first.requests / max(1, first.items_done):.2f} per item), "
        f"tokens in {first.tokens_in:,}, out {first.tokens_out:,}; "
        f"at most {peak} requests in flight at the endpoint"
    )
    print(
        f"rerun:     {rerun_seconds:.2f} s wall, {rerun.items_skipped} items skipped, "
        f"{rerun.requests} requests"
    )
    print(
        f"same settings, another annotator: {cached_seconds:.2f} s wall, "
        f"{cached.items_done} items done, {cached.cache_hits} cached answers, "
        f"{cached.requests} requests"
    )
    from django.db import connections

    connections.close_all()
    if database_url.startswith("postgres"):
        postgres_database(database_url, create=False)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
