"""Faults: the database restarting under load, Redis restarting during a sync, a worker killed
mid-export. Everything runs on 127.0.0.1 against a private PostgreSQL cluster and a private
redis-server that this script starts, restarts and removes (even when a scenario fails);
the machine's own servers are never touched.

* db: gunicorn (production settings) and 20 annotators' threads saving drafts and submitting
  through the API; PostgreSQL restarted (`pg_ctl restart -m fast`) mid-run. Prints requests
  and statuses before, during and after, the outage, the time to the first success after it,
  and checks every submit answered 2xx against the database: lost and duplicated.
* redis: a Celery worker syncing a repository from the stand-in GitHub (a small delay a page);
  Redis restarted empty mid-sync. Prints how the run finished, its duration, issues stored
  against upstream, duplicates.
* worker: an export of a study big enough to take seconds; the worker SIGKILLed after some
  progress and a new one started (with beat, lease 5 s). Prints the time to recovery, the
  final status, rows, files written for the job and attempts.

    python bench/faults.py [--scenario db|redis|worker|all]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from benchkit import ROOT

sys.path.insert(0, str(ROOT))

from tests.celery_worker import CeleryWorker
from tests.faults.servers import (
    PrivatePostgres,
    PrivateRedis,
    free_port,
    github_with_issues,
    port_open,
    wait_until,
)

ANNOTATORS = 20
WEB_ITEMS = 2_000
SYNC_ISSUES = 300
EXPORT_ITEMS = 30_000
EXPORT_LEASE_SECONDS = 5


def django_start(database_url: str, redis_url: str, media_root: str) -> None:
    os.environ.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        MEDIA_ROOT=media_root,
        DJANGO_SETTINGS_MODULE="config.settings.test",
        EXPORTS_QUEUE="faults",
        INGEST_QUEUE="faults",
        LOG_LEVEL="ERROR",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# ----------------------------------------------------------------------------------- db


def web_study() -> dict[str, str]:
    """A study of WEB_ITEMS issues for ANNOTATORS annotators, k = 2; their API tokens."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.services import api_token_create
    from corpus.models import Issue, Repository
    from labeling.services.studies import study_create
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load

    version, _ = codebook_load(
        data=codebook_file_read((ROOT / "taxonomy/data/llm-training-issues.json").read_bytes()),
        publish=True,
    )
    repository = Repository.objects.create(owner="faults", name="web")
    now = timezone.now()
    Issue.objects.bulk_create(
        Issue(repository=repository, number=n, title=f"Hang after step {n}", state="closed",
              author="reporter", labels=["bug"], created_at=now, updated_at=now, closed_at=now)
        for n in range(1, WEB_ITEMS + 1)
    )  # fmt: skip
    users = [get_user_model().objects.create_user(f"web{i}") for i in range(ANNOTATORS)]
    study_create(
        slug="faults", name="Faults", codebook_version=version, k=2, annotators=users,
        issues=list(Issue.objects.filter(repository=repository)),
    )  # fmt: skip
    return {user.username: api_token_create(user=user, name="faults")[1] for user in users}


def scenario_db(postgres: PrivatePostgres, database_url: str, redis_url: str, work: Path) -> None:
    import requests
    from django.db import connection

    from tests.conftest import SCREENED_IN

    tokens = web_study()
    connection.close()
    port = free_port()
    log = (work / "gunicorn.log").open("wb")
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-b",
               f"127.0.0.1:{port}", "--workers", "2", "--threads", "4"]  # fmt: skip
    if (ROOT / "config" / "gunicorn.py").exists():
        command += ["-c", "config/gunicorn.py"]
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "SECRET_KEY": uuid.uuid4().hex * 2,
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": "WARNING",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    base = f"http://127.0.0.1:{port}"
    answers = {name: {"categories": values} for name, values in SCREENED_IN.items()}
    records: list[tuple[float, str, str]] = []  # (time, kind, status or error)
    submitted: list[int] = []
    stop = threading.Event()
    lock = threading.Lock()

    def annotate(token: str) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"

        def call(kind: str, path: str, body: dict | None = None):
            try:
                response = session.post(base + path, json=body, timeout=10)
                outcome = str(response.status_code)
            except requests.RequestException as error:
                response, outcome = None, type(error).__name__
            with lock:
                records.append((time.monotonic(), kind, outcome))
            if response is not None and response.status_code == 503:
                time.sleep(min(0.5, float(response.headers.get("Retry-After", 1))))
            return response

        while not stop.is_set():
            response = call("next", "/api/studies/faults/next/")
            if response is None or response.status_code != 200:
                time.sleep(0.1) if response is None or response.status_code != 204 else stop.wait()
                continue
            assignment = response.json()
            body = {"version": assignment["version"], "seconds_spent": 3, "answers": answers}
            response = call("draft", f"/api/assignments/{assignment['id']}/draft/", body)
            if response is None or response.status_code != 200:
                continue
            body["version"] = response.json().get("version", body["version"])
            response = call("submit", f"/api/assignments/{assignment['id']}/submit/", body)
            if response is not None and 200 <= response.status_code < 300:
                with lock:
                    submitted.append(assignment["id"])

    try:
        wait_until(lambda: port_open(port), 30, "gunicorn")
        # Both workers loaded (Django starts lazily in each) before the clock starts.
        warm = requests.Session()
        warm.headers["Authorization"] = f"Token {next(iter(tokens.values()))}"
        for _ in range(8):
            warm.get(f"{base}/api/studies/faults/", timeout=30)
        threads = [threading.Thread(target=annotate, args=(t,)) for t in tokens.values()]
        for thread in threads:
            thread.start()
        time.sleep(8)
        restart_began = time.monotonic()
        postgres.restart()
        restart_ended = time.monotonic()
        time.sleep(8)
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
    finally:
        server.terminate()
        server.wait(timeout=20)

    def phase(moment: float) -> str:
        if moment < restart_began:
            return "before"
        return "during" if moment < restart_ended else "after"

    by_phase: dict[str, Counter] = {"before": Counter(), "during": Counter(), "after": Counter()}
    for moment, _, outcome in records:
        by_phase[phase(moment)][outcome] += 1
    failures = [moment for moment, _, outcome in records if outcome != "200" and outcome != "204"]
    first_success = min(
        (m for m, _, outcome in records if m >= restart_ended and outcome in ("200", "204")),
        default=None,
    )
    print("db: PostgreSQL restarted under 20 annotators (gunicorn 2 workers x 4 threads)")
    for name, counts in by_phase.items():
        print(
            f"  {name:6} requests {sum(counts.values()):5}  statuses {dict(sorted(counts.items()))}"
        )
    print(f"  restart (pg_ctl restart -m fast): {restart_ended - restart_began:.2f} s")
    if failures:
        print(f"  clients saw failures for {max(failures) - min(failures):.2f} s")
    if first_success is not None:
        print(f"  first success {first_success - restart_ended:.2f} s after the restart")
    import psycopg

    with psycopg.connect(database_url) as check:
        stored = dict(
            check.execute(
                "SELECT id, status FROM labeling_assignment WHERE id = ANY(%s)", [submitted]
            ).fetchall()
        )
        duplicated = check.execute(
            "SELECT count(*) FROM (SELECT assignment_id, dimension_id FROM labeling_annotation "
            "GROUP BY 1, 2 HAVING count(*) > 1) AS twice"
        ).fetchone()[0]
    lost = sum(1 for pk in set(submitted) if stored.get(pk) != "submitted")
    duplicated += len(submitted) - len(set(submitted))
    print(f"  submits answered 2xx: {len(submitted)}; lost: {lost}, duplicated: {duplicated}")


# -------------------------------------------------------------------------------- redis


def scenario_redis(redis: PrivateRedis, database_url: str, work: Path) -> None:
    from django.db.models import Count

    from corpus.models import Issue
    from ingest.dispatch import sync_request
    from ingest.models import SyncRun
    from ingest.sources import source_create

    github = github_with_issues("faults", "sync", SYNC_ISSUES)
    github.start()
    github.delay_seconds = 0.01
    from django.conf import settings

    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = github.base_url, ""
    worker = CeleryWorker(
        "faults",
        {"DATABASE_URL": database_url, "REDIS_URL": redis.url, "GITHUB_API_URL": github.base_url,
         "GITHUB_TOKEN": "", "INGEST_QUEUE": "faults", "INGEST_PER_PAGE": "20",
         "INGEST_LEASE_SECONDS": "10", "LOG_LEVEL": "WARNING"},
        work,
    )  # fmt: skip
    worker.start()
    try:
        source = source_create(repository="faults/sync")
        started = time.monotonic()
        run = sync_request(source=source)
        issues = Issue.objects.filter(repository__name="sync")
        wait_until(lambda: issues.count() >= SYNC_ISSUES // 4, 120, "a quarter of the issues")
        at_restart = issues.count()
        restarted_at = time.monotonic()
        redis.restart(down_seconds=1)
        wait_until(
            lambda: (
                SyncRun.objects.filter(source=source, status__in=("done", "failed"))
                .filter(status="done")
                .exists()
                or SyncRun.objects.get(pk=run.pk).status in ("done", "failed")
            ),
            180,
            "the sync",
        )
        finished = time.monotonic()
    finally:
        worker.stop()
        github.stop()
    final = SyncRun.objects.get(pk=run.pk)
    duplicates = issues.values("number").annotate(n=Count("id")).filter(n__gt=1).count()
    how = "the same execution carried on" if final.attempts == 1 else "retried after its lease"
    print("redis: Redis restarted empty (1 s down) mid-sync")
    print(f"  issues stored at the restart: {at_restart} of {SYNC_ISSUES}")
    print(f"  run {final.status} ({how}; attempts {final.attempts})")
    print(f"  {finished - started:.1f} s in all, {finished - restarted_at:.1f} s after the restart")
    print(f"  issues stored {issues.count()} / upstream {SYNC_ISSUES}; duplicates {duplicates}")


# ------------------------------------------------------------------------------- worker


def scenario_worker(redis: PrivateRedis, database_url: str, work: Path, media: Path) -> None:
    from django.contrib.auth import get_user_model

    from exports.jobs import export_job_start
    from exports.models import ExportJob
    from labeling.models import Membership, Study

    build_export_study()
    study = Study.objects.get(slug="bench")
    manager = get_user_model().objects.create_user("faults-manager")
    Membership.objects.create(study=study, user=manager, role="manager")
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis.url, "EXPORTS_QUEUE": "faults",
           "INGEST_QUEUE": "faults", "MEDIA_ROOT": str(media), "LOG_LEVEL": "WARNING",
           "EXPORT_LEASE_SECONDS": str(EXPORT_LEASE_SECONDS)}  # fmt: skip
    worker = CeleryWorker("faults", env, work)
    worker.start()
    try:
        job = export_job_start(study=study, user=manager, format="csv", raw=True)
        wait_until(
            lambda: ExportJob.objects.get(pk=job.pk).rows_done > 0, 120, "the export's progress"
        )
        worker.kill()
        killed_at = time.monotonic()
        at_kill = ExportJob.objects.get(pk=job.pk)
        worker.start("-B", "-s", str(work / "beat-schedule"))
        wait_until(
            lambda: ExportJob.objects.get(pk=job.pk).status in ("done", "failed"), 180, "the job"
        )
        recovered_at = time.monotonic()
    finally:
        worker.stop()
    final = ExportJob.objects.get(pk=job.pk)
    files = [path.name for path in (media / "exports").glob(f"bench-{job.pk}-*")]
    print(
        f"worker: SIGKILL mid-export of {final.rows_total} items (lease {EXPORT_LEASE_SECONDS} s)"
    )
    print(
        f"  killed at rows_done {at_kill.rows_done} / {at_kill.rows_total}, status {at_kill.status}"
    )
    print(f"  recovered in {recovered_at - killed_at:.1f} s (lease, beat's re-queue, a new export)")
    print(f"  final {final.status}, rows_done {final.rows_done} / rows_total {final.rows_total}, "
          f"files for the job {len(files)}, attempts {final.attempts}")  # fmt: skip


def build_export_study() -> None:
    """bench/export.py's study, built on the database this process uses (Django is set up)."""
    import django.core.management
    import export as export_bench

    migrate = django.core.management.call_command
    setup = export_bench.django_setup
    export_bench.django_setup = lambda url: migrate("migrate", verbosity=0)
    try:
        export_bench.build(os.environ["DATABASE_URL"], EXPORT_ITEMS)
    finally:
        export_bench.django_setup = setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=["db", "redis", "worker", "all"], default="all")
    scenario = parser.parse_args().scenario
    if not PrivatePostgres.available() or not PrivateRedis.available():
        print("needs PostgreSQL's initdb and redis-server; skipping")
        return
    with (
        tempfile.TemporaryDirectory() as folder,
        PrivatePostgres() as postgres,
        PrivateRedis() as redis,
    ):
        work = Path(folder)
        database_url = postgres.create_database("faults")
        django_start(database_url, redis.url, str(work / "media"))
        if scenario in ("db", "all"):
            scenario_db(postgres, database_url, redis.url, work)
        if scenario in ("redis", "all"):
            from django.db import connection

            connection.close()
            scenario_redis(redis, database_url, work)
        if scenario in ("worker", "all"):
            scenario_worker(redis, database_url, work, work / "media")


if __name__ == "__main__":
    main()
