"""Load: N annotators labeling at once on gunicorn and PostgreSQL, as in production.

    python bench/load.py [--users 50] [--seconds 60] [--spawn-rate 4] [--warmup 5] [--think S]
                         [--issues N] [--workers W] [--worker-class sync|gthread] [--threads T]
                         [--assign claim|preassign] [--scenario labeling|floor] [--keep] [--reuse]

1. A fresh database (issuecoder_load, dropped and made again), migrated, with a study of
   synthetic issues (the sample file's issues cloned with new numbers and ids, through the
   import service) and the annotators, each with a password. `--assign claim` (the default):
   the study assigns as people go, each "next" claims an item (SELECT ... SKIP LOCKED);
   `preassign`: every item is given to an annotator beforehand. k = 1.
2. gunicorn with the production settings (a generated SECRET_KEY, DEBUG off, the cache and
   throttles in Redis), on 127.0.0.1 and a free port; config/gunicorn.py when it exists, with
   the worker options given here on top.
3. locust (bench/locustfile.py), headless: the annotators start --spawn-rate a second; each
   signs in on the login page, then labels item after item as the labeling page does in a
   browser (see there), pausing --think seconds on average before each save. The ramp-up lasts
   until every annotator has signed in or failed to; the run goes on --seconds after it; then
   no new request starts and those under way finish. `--scenario floor`: the same users ask
   only for the cheapest page, again and again (see bench/locustfile.py): the most this stack
   serves on the machine, whatever the page.
4. Prints requests, req/s, p50/p95/p99 and errors per request type, for the whole run (the
   ramp-up and the sign-ins included) beside the steady state (from --warmup seconds after the
   ramp-up); the users that signed in, failed to, or never made a request. A failed sign-in is
   an error (each checks a PBKDF2 hash, a deliberate ~0.3 s, so that signing everyone in at
   the same instant outlasts the client's 30 s timeout). Then it checks in the database that
   every submit answered with its redirect is stored exactly once, with the answers sent, and
   prints each figure beside its goal.

Every process started here is ended when the script ends, also on Ctrl-C.
"""

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchkit import ROOT, postgres_database

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_load"
DEFAULT_REDIS = "redis://127.0.0.1:6379/4"
SLUG = "load"
PASSWORD = "load-bench-" + "annotator"
# The goals of the person's-pace run: p95 of the labeling requests in the steady state, with
# 100 annotators pausing 2 s on average; 0 errors, failed sign-ins and users that never started
# included; every submit stored once. A closed-loop run (--think 0) is compared with Label
# Studio's on the same machine by bench/peers.py.
GOAL_P95_MS = 100
GOAL_USERS, GOAL_THINK = 100, 2.0
DEFAULT_SPAWN_RATE = 4.0
SIGN_IN = {"login page", "login"}


# ---- the parts that run in child processes -------------------------------------------------


def production_environment(database_url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "DEBUG": "false",
        "PYTHONPATH": str(ROOT),
    }


def child_setup(n_issues: int, n_users: int, assign: str) -> None:
    """Migrate, collect the static files and build the study unless it is there (--reuse);
    prints its facts as JSON."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    from labeling.models import Study

    study = Study.objects.filter(slug=SLUG).first()
    if study is None:
        study = _study_build(n_issues, n_users, assign)
    version = study.codebook_version
    print(
        json.dumps(
            {
                "items": study.items.count(),
                "dimensions": list(
                    version.dimensions.order_by("position").values_list("key", flat=True)
                ),
                "users": sorted(
                    study.memberships.filter(role="annotator").values_list(
                        "user__username", flat=True
                    )
                ),
                "seconds": time.perf_counter() - started,
            }
        )
    )


def _study_build(n_issues: int, n_users: int, assign: str):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection

    from corpus.models import Issue, IssueComment
    from corpus.services import issue_texts_render, issues_import
    from labeling.models import Membership
    from labeling.services.studies import study_create, study_items_add, study_member_add
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load

    version, _ = codebook_load(
        data=codebook_file_read((ROOT / "taxonomy/data/llm-training-issues.json").read_bytes()),
        publish=True,
    )
    samples = [
        json.loads(line)
        for line in (ROOT / "corpus/data/sample-issues.jsonl").read_text().splitlines()
    ]
    samples = [sample for sample in samples if sample.get("pull_request") is None]

    def clones():
        for n in range(n_issues):
            issue = json.loads(json.dumps(samples[n % len(samples)]))
            issue["number"] = 1_000_000 + n
            issue["id"] = 9_000_000_000 + n
            issue.pop("node_id", None)
            for position, comment in enumerate(issue.get("comments_data") or []):
                comment["id"] = 8_000_000_000 + n * 1_000 + position
            yield n + 1, issue

    report = issues_import(objects=clones(), render=False)
    assert not report.errors, report.errors[:3]
    # Each distinct text rendered once, by the service, and its HTML and facets copied to the
    # clones: rendering all of them would take minutes and give the same result.
    issue_texts_render(
        issue_ids=list(
            Issue.objects.filter(number__lt=1_000_000 + len(samples)).values_list("id", flat=True)
        )
    )
    assert (Issue._meta.db_table, IssueComment._meta.db_table) == (
        "corpus_issue",
        "corpus_issuecomment",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE corpus_issue AS clone SET body_html = first.body_html, "
            "facets = first.facets FROM corpus_issue AS first "
            "WHERE clone.body_html = '' AND first.repository_id = clone.repository_id "
            "AND first.number = 1000000 + (clone.number - 1000000) %% %s",
            [len(samples)],
        )
        cursor.execute(
            "UPDATE corpus_issuecomment AS clone SET body_html = first.body_html "
            "FROM corpus_issuecomment AS first WHERE clone.body_html = '' "
            "AND first.github_id = 8000000000 + (clone.github_id - 8000000000) / 1000 %% %s "
            "* 1000 + clone.github_id %% 1000",
            [len(samples)],
        )
    assert not Issue.objects.filter(body_html="").exists()
    User = get_user_model()
    # One hash for all: the same password, and 50 PBKDF2 rounds saved.
    password = make_password(PASSWORD)
    users = [
        User.objects.create(username=f"annotator{n:03d}", password=password) for n in range(n_users)
    ]
    issues = list(Issue.objects.filter(number__gte=1_000_000).order_by("id"))
    if assign == "preassign":
        study = study_create(
            slug=SLUG, name="Load", codebook_version=version, k=1, annotators=users,
            issues=issues,
        )  # fmt: skip
    else:
        study = study_create(slug=SLUG, name="Load", codebook_version=version, k=1)
        for user in users:
            study_member_add(study=study, user=user, role=Membership.Role.ANNOTATOR)
        study_items_add(study=study, issue_ids=[issue.id for issue in issues])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # statistics as autovacuum would give a live site
    return study


def cpu_seconds(master_pid: int) -> dict[str, float]:
    """CPU time used so far by gunicorn (master, workers, workers already replaced), by this
    client process, and by the whole machine. The rest of the machine's is mostly PostgreSQL:
    its backends are not counted one by one, since a worker's backend ends when the worker is
    replaced, and takes its CPU time along."""
    import psutil

    def used(times) -> float:
        return times.user + times.system

    master = psutil.Process(master_pid)
    times = master.cpu_times()
    web = used(times) + times.children_user + times.children_system
    for worker in master.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            web += used(worker.cpu_times())
    machine = psutil.cpu_times()
    return {
        "gunicorn": web,
        "client": used(psutil.Process().cpu_times()),
        "machine": sum(machine) - machine.idle - getattr(machine, "iowait", 0.0),
    }


def child_drive(config_path: str) -> None:
    """Run the locust users (bench/locustfile.py) and write every request's outcome to a file.

    The users start --spawn-rate a second and each labels as soon as it has signed in. The
    ramp-up lasts until every user has signed in or failed to (or a deadline); the steady state
    is the --seconds after it (less --warmup); then no new request starts."""
    import gevent
    from locust.env import Environment

    sys.path.insert(0, str(ROOT / "bench"))
    import locustfile
    from locustfile import Annotator, Run

    config = json.loads(Path(config_path).read_text())
    locustfile.configure(
        slug=config["slug"], origin=config["origin"], dimensions=config["dimensions"],
        credentials=[(name, PASSWORD) for name in config["users"]], think=config["think"],
        scenario=config["scenario"],
    )  # fmt: skip
    n_users = len(config["users"])
    # (name, start in seconds since the epoch, milliseconds, error or None)
    samples: list[tuple[str, float, float, str | None]] = []

    environment = Environment(user_classes=[Annotator], host=config["host"])

    def on_request(name, response_time, exception, start_time=None, **_):
        start = start_time if start_time is not None else time.time() - response_time / 1000
        samples.append((name, start, response_time, None if exception is None else str(exception)))

    environment.events.request.add_listener(on_request)
    runner = environment.create_local_runner()
    started = time.time()
    runner.start(n_users, spawn_rate=config["spawn_rate"])
    # Every user started, then a minute for the last sign-ins (the client's timeout is 30 s).
    deadline = started + n_users / config["spawn_rate"] + 60
    runner.spawning_greenlet.join()
    while Run.signed_in + Run.sign_in_failed < n_users and time.time() < deadline:
        gevent.sleep(0.1)
    ramp_end = time.time()
    steady_from = ramp_end + config["warmup"]
    gevent.sleep(max(0.0, steady_from - time.time()))
    cpu_before = cpu_seconds(config["gunicorn_pid"])
    gevent.sleep(max(0.0, config["seconds"] - config["warmup"]))
    cpu_after = cpu_seconds(config["gunicorn_pid"])
    Run.stopping = True
    stopped = time.time()
    if Run.active > 0:
        Run.idle.wait(timeout=30)  # the requests under way finish
    finished = time.time()
    runner.quit()
    Path(config["output"]).write_text(
        json.dumps(
            {
                "samples": samples,
                "started": started,
                "ramp_end": ramp_end,
                "steady_from": steady_from,
                "stopped": stopped,
                "finished": finished,
                "spawned": Run.spawned,
                "signed_in": Run.signed_in,
                "sign_in_failed": Run.sign_in_failed,
                "sign_in_exceptions": Run.sign_in_exceptions,
                "labeling": len(Run.labeling),
                "out_of_items": Run.out_of_items,
                "submits": Run.submits,
                "answers": locustfile.ANSWERS,
                "cpu_seconds": {name: cpu_after[name] - cpu_before[name] for name in cpu_after},
            }
        )
    )


def child_check(submits_path: str) -> None:
    """Each submit answered with its redirect: one assignment, submitted, with one annotation
    per dimension holding the answers sent; and no submitted assignment beyond those."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db.models import Count

    from labeling.models import Annotation, Assignment

    sent = json.loads(Path(submits_path).read_text())
    submits = [tuple(pair) for pair in sent["submits"]]
    expected = {key: sorted(values) for key, values in sent["answers"].items()}
    seen = set(submits)
    rows = {
        (username, item_id): (pk, status)
        for pk, username, item_id, status in Assignment.objects.filter(
            item__study__slug=SLUG
        ).values_list("pk", "annotator__username", "item_id", "status")
    }
    annotations: dict[int, dict[str, list[str]]] = {}
    for assignment_id, key, category in Annotation.objects.filter(
        assignment__item__study__slug=SLUG
    ).values_list("assignment_id", "dimension__key", "categories__key"):
        keys = annotations.setdefault(assignment_id, {}).setdefault(key, [])
        if category is not None:
            keys.append(category)
    duplicates = (
        Annotation.objects.filter(assignment__item__study__slug=SLUG)
        .values("assignment_id", "dimension_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    lost, wrong = 0, 0
    for key in seen:
        if key not in rows or rows[key][1] != Assignment.Status.SUBMITTED:
            lost += 1
            continue
        stored = {k: sorted(v) for k, v in annotations.get(rows[key][0], {}).items() if v}
        if stored != expected:
            wrong += 1
    # Submitted during this run (a reused database holds earlier runs' submits too).
    submitted = set(
        Assignment.objects.filter(
            item__study__slug=SLUG,
            status=Assignment.Status.SUBMITTED,
            submitted_at__gte=datetime.fromisoformat(sent["since"]),
        ).values_list("annotator__username", "item_id")
    )
    print(
        json.dumps(
            {
                "answered": len(submits),
                "repeated_in_answers": len(submits) - len(seen),
                "lost": lost,
                "wrong_answers": wrong,
                "duplicate_annotations": duplicates,
                "submitted_in_database": len(submitted),
                "submitted_unanswered": len(submitted - seen),
            }
        )
    )


# ---- the parent: set up, serve, drive, report ----------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_json(arguments: list[str], environment: dict[str, str]) -> dict:
    completed = subprocess.run(
        [sys.executable, __file__, *arguments], cwd=ROOT, env=environment,
        capture_output=True, text=True,
    )  # fmt: skip
    if completed.returncode != 0:
        sys.stderr.write(completed.stderr[-4000:])
        raise SystemExit(f"{arguments[0]} failed")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def gunicorn_start(arguments, environment: dict, port: int, log: Path) -> subprocess.Popen:
    command = [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application"]
    if (ROOT / "config/gunicorn.py").exists():
        command += ["-c", "config/gunicorn.py"]
    command += ["--bind", f"127.0.0.1:{port}"]
    for option, value in (
        ("--workers", arguments.workers),
        ("--worker-class", arguments.worker_class),
        ("--threads", arguments.threads),
    ):
        if value is not None:
            command += [option, str(value)]
    # A session of its own: Ctrl-C reaches this script, which then ends gunicorn's whole group.
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def wait_until_serving(process: subprocess.Popen, url: str, log: Path) -> None:
    import urllib.request  # here: the driver child must import ssl after gevent patched it

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("gunicorn stopped:\n" + log.read_text()[-3000:])
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (our http URL)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not answer within 60 s:\n" + log.read_text()[-3000:])


def stop_group(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest rank."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def gunicorn_workers(log: Path, at_start: int) -> str:
    """The worker class, the workers running at the start, and how many were booted in all:
    more when max_requests replaced some during the run."""
    text = log.read_text()
    kind = re.search(r"Using worker: (\w+)", text)
    booted = text.count("Booting worker")
    return f"{at_start} {kind.group(1) if kind else '?'} workers ({booted} booted in all)"


def window_figures(samples: list, seconds: float) -> dict[str, dict]:
    """Count, req/s, p50/p95/p99 and errors of each request type, of the labeling requests
    ("labeling": all but the sign-ins) and of all ("total", sign-ins included)."""
    by_name: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    for name, _, milliseconds, error in samples:
        by_name.setdefault(name, []).append(milliseconds)
        errors[name] = errors.get(name, 0) + (error is not None)
    groups = {name: [name] for name in by_name}
    groups["labeling"] = [name for name in by_name if name not in SIGN_IN]
    groups["total"] = list(by_name)
    figures = {}
    for group, names in groups.items():
        values = sorted(value for name in names for value in by_name[name])
        figures[group] = {
            "count": len(values),
            "req_s": len(values) / seconds if seconds > 0 else math.nan,
            "p50": percentile(values, 0.50),
            "p95": percentile(values, 0.95),
            "p99": percentile(values, 0.99),
            "errors": sum(errors[name] for name in names),
        }
    return figures


def report(result: dict) -> dict:
    """The whole run (ramp-up and sign-ins included) beside the steady state, by request type."""
    samples = result["samples"]
    whole_seconds = result["finished"] - result["started"]
    steady_seconds = result["stopped"] - result["steady_from"]
    steady = [s for s in samples if result["steady_from"] <= s[1] < result["stopped"]]
    whole_figures = window_figures(samples, whole_seconds)
    steady_figures = window_figures(steady, steady_seconds)
    order = [n for n in ("next", "page", "draft", "submit", "floor") if n in whole_figures]
    order += [*sorted(SIGN_IN & whole_figures.keys()), "labeling", "total"]
    columns = f"{'count':>6} {'req/s':>6} {'p50':>6} {'p95':>6} {'p99':>6} {'errors':>6}"
    steady_start = result["steady_from"] - result["started"]
    print(
        f"{'':<11}{f'whole run, {whole_seconds:.0f} s':<42}   "
        f"steady state, {steady_seconds:.0f} s (from {steady_start:.0f} s)"
    )
    print(f"{'request':<11}{columns}   {columns}   (ms)")

    def cells(figures: dict | None) -> str:
        if figures is None:
            return f"{0:>6} {'':>6} {'':>6} {'':>6} {'':>6} {0:>6}"
        return (
            f"{figures['count']:>6} {figures['req_s']:>6.1f} {figures['p50']:>6.0f} "
            f"{figures['p95']:>6.0f} {figures['p99']:>6.0f} {figures['errors']:>6}"
        )

    for name in order:
        print(f"{name:<11}{cells(whole_figures.get(name))}   {cells(steady_figures.get(name))}")
    distinct: list[str] = []
    for *_, message in samples:
        if message is not None and message not in distinct:
            distinct.append(message)
    for message in (distinct + result["sign_in_exceptions"])[:5]:
        print(f"  error: {message[:200]}")
    empty = {"count": 0, "req_s": math.nan, "p95": math.nan, "errors": 0}
    return {
        "whole": whole_figures.get("labeling", empty),
        "steady": steady_figures.get("labeling", empty),
        # Failed sign-ins are errors: a failed request each, or an exception of the client.
        "errors": whole_figures["total"]["errors"] + len(result["sign_in_exceptions"]),
    }


def goals(arguments, figures: dict, check: dict | None, never_started: int) -> None:
    """Each figure beside its goal. `never_started`: the users that made no labeling request
    and whose sign-in did not fail (a failed one is counted among the errors already)."""

    def verdict(met: bool) -> str:
        return "met" if met else "missed"

    steady, whole = figures["steady"], figures["whole"]
    at_goal = arguments.users == GOAL_USERS and arguments.think == GOAL_THINK
    setting = (
        "" if at_goal else f" (this run: {arguments.users} users, think {arguments.think:g} s)"
    )
    print(f"{'figure':<44} {'this run':>22}   goal")
    # Met or missed only at the goal's own setting: another one does not tell.
    outcome = f": {verdict(steady['p95'] < GOAL_P95_MS)}" if at_goal else ""
    print(
        f"{'p95 of the labeling requests, steady state':<44} {steady['p95']:>19.0f} ms   "
        f"< {GOAL_P95_MS} ms at {GOAL_USERS} users, think {GOAL_THINK:g} s{setting}{outcome}"
    )
    print(
        f"{'p95 of the labeling requests, whole run':<44} {whole['p95']:>19.0f} ms   "
        f"(the ramp-up included)"
    )
    errors = figures["errors"] + never_started
    counted = f"{errors} ({figures['errors']} + {never_started})"
    print(f"{'errors + users that never started':<44} {counted:>22}   0: {verdict(errors == 0)}")
    if check is not None:
        stored = check["answered"] - check["lost"] - check["wrong_answers"]
        once = (
            stored == check["answered"]
            and check["duplicate_annotations"] == 0
            and check["repeated_in_answers"] == 0
            and check["submitted_unanswered"] == 0
        )
        counted = f"{stored} of {check['answered']}"
        print(
            f"{'submits stored once, with their answers':<44} {counted:>22}   "
            f"every one: {verdict(once)}"
        )
    if arguments.think == 0:
        print(
            f"{'closed loop (no pause), steady state':<44} {steady['req_s']:>16.1f} req/s   "
            ">= 3x Label Studio's on the same machine (bench/peers.py runs it)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument(
        "--seconds", type=float, default=60, help="how long to run once every user has signed in"
    )
    parser.add_argument(
        "--spawn-rate",
        type=float,
        default=DEFAULT_SPAWN_RATE,
        help=f"users started a second (default {DEFAULT_SPAWN_RATE:g}): each sign-in checks a "
        "password hash, a deliberate ~0.3 s of CPU",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="seconds after the ramp-up left out of the steady state too (default 5)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds an annotator pauses before each draft save and the submit (0: none)",
    )
    parser.add_argument("--issues", type=int, help="items in the study (default 100 a user)")
    parser.add_argument("--workers", type=int, help="gunicorn workers (default 4, or the config's)")
    parser.add_argument("--worker-class", help="sync (default) or gthread")
    parser.add_argument("--threads", type=int, help="threads of a gthread worker")
    parser.add_argument("--assign", choices=("claim", "preassign"), default="claim")
    parser.add_argument(
        "--scenario",
        choices=("labeling", "floor"),
        default="labeling",
        help="labeling (default), or floor: only the cheapest page, again and again",
    )
    parser.add_argument("--postgres", default=os.environ.get("LOAD_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument("--redis", default=os.environ.get("LOAD_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--reuse", action="store_true", help="use the kept database again (its unused items)"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        kind, *rest = arguments.child
        if kind == "setup":
            child_setup(int(rest[0]), int(rest[1]), rest[2])
        elif kind == "drive":
            child_drive(rest[0])
        else:
            child_check(rest[0])
        return
    if arguments.spawn_rate <= 0:
        parser.error("--spawn-rate must be above 0")
    arguments.warmup = min(max(arguments.warmup, 0.0), arguments.seconds / 2)
    if not (ROOT / "config/gunicorn.py").exists() and arguments.workers is None:
        arguments.workers = 4
    n_issues = arguments.issues or 100 * arguments.users
    if not arguments.reuse and not postgres_database(arguments.postgres):
        print("load: PostgreSQL is needed.")
        return
    environment = production_environment(arguments.postgres, arguments.redis)
    gunicorn = None
    # Ctrl-C or a TERM ends the run the same way: the finally below ends gunicorn.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with tempfile.TemporaryDirectory(prefix="issuecoder-load-") as folder:
            folder = Path(folder)
            # Hashed static files collected as the image build does (the manifest storage
            # needs them), into a folder of this run.
            environment["STATIC_ROOT"] = str(folder / "static")
            print(f"setting up {n_issues} items, {arguments.users} annotators ...", flush=True)
            setup = run_json(
                ["--child", "setup", str(n_issues), str(arguments.users), arguments.assign],
                environment,
            )
            print(f"  done in {setup['seconds']:.0f} s", flush=True)
            port = free_port()
            host = f"http://127.0.0.1:{port}"
            log = folder / "gunicorn.log"
            gunicorn = gunicorn_start(arguments, environment, port, log)
            wait_until_serving(gunicorn, host + "/accounts/login/", log)
            time.sleep(2)  # the other workers finish booting
            workers_at_start = log.read_text().count("Booting worker")
            config = {
                "host": host,
                "origin": f"https://127.0.0.1:{port}",
                "slug": SLUG,
                "users": setup["users"],
                "dimensions": setup["dimensions"],
                "seconds": arguments.seconds,
                "spawn_rate": arguments.spawn_rate,
                "warmup": arguments.warmup,
                "think": arguments.think,
                "scenario": arguments.scenario,
                "output": str(folder / "result.json"),
                "gunicorn_pid": gunicorn.pid,
            }
            (folder / "config.json").write_text(json.dumps(config))
            load_before = os.getloadavg()
            since = datetime.now(UTC).isoformat()
            driver = subprocess.run(
                [sys.executable, __file__, "--child", "drive", str(folder / "config.json")],
                cwd=ROOT,
            )
            load_after = os.getloadavg()
            if driver.returncode != 0:
                raise SystemExit("the locust driver failed")
            result = json.loads((folder / "result.json").read_text())
            workers = gunicorn_workers(log, workers_at_start)
            stop_group(gunicorn)
            # What the application logged beyond one INFO line a request: errors, refusals.
            errors_logged = [
                line
                for line in log.read_text().splitlines()
                if "Traceback" in line or '"level": "ERROR"' in line or '"level": "WARNING"' in line
            ]
            never_signed_in = arguments.users - result["signed_in"] - result["sign_in_failed"]
            never_started = arguments.users - result["labeling"]
            print(
                f"\nload: {arguments.users} annotators, started {arguments.spawn_rate:g} a "
                f"second, pausing {arguments.think:g} s on average before each save; ramp-up "
                f"{result['ramp_end'] - result['started']:.0f} s (until every user had signed in "
                f"or failed to), then {arguments.seconds:g} s and "
                f"{result['finished'] - result['stopped']:.1f} s to finish; gunicorn "
                f"{workers}, production settings; PostgreSQL "
                f"{setup['items']} items ({arguments.assign}, k = 1); {os.cpu_count()} cores "
                f"shared with the client; load average {load_before[0]:.1f} before, "
                f"{load_after[0]:.1f} after"
            )
            print(
                f"users: {result['spawned']} started, {result['signed_in']} signed in, "
                f"{result['sign_in_failed']} failed to sign in, {never_signed_in} still signing "
                f"in at the end of the ramp-up; {never_started} never made a labeling request"
            )
            figures = report(result)
            cpu = result["cpu_seconds"]
            n_requests = sum(
                1
                for name, start, _, _ in result["samples"]
                if name not in SIGN_IN and result["steady_from"] <= start < result["stopped"]
            )
            n_requests = max(n_requests, 1)
            per_request = {name: 1000 * seconds / n_requests for name, seconds in cpu.items()}
            rest = per_request["machine"] - per_request["gunicorn"] - per_request["client"]
            server = per_request["machine"] - per_request["client"]
            print(
                "CPU per request in the steady state: gunicorn "
                f"{per_request['gunicorn']:.1f} ms, the client "
                f"{per_request['client']:.1f} ms, the rest of the machine (PostgreSQL, Redis, the "
                f"kernel) {rest:.1f} ms; {os.cpu_count()} cores given to the server alone would "
                f"serve about {1000 * (os.cpu_count() or 1) / server:.0f} req/s (a ceiling: CPU "
                "only)"
            )
            if result["out_of_items"]:
                print(f"  {result['out_of_items']} annotators ran out of items: use more --issues")
            if errors_logged:
                print(f"  the server logged {len(errors_logged)} errors or warnings, the first:")
                for line in errors_logged[:3]:
                    print(f"    {line[:300]}")
            (folder / "submits.json").write_text(
                json.dumps(
                    {"submits": result["submits"], "answers": result["answers"], "since": since}
                )
            )
            # The floor scenario writes nothing: there is nothing to check.
            check = (
                run_json(["--child", "check", str(folder / "submits.json")], environment)
                if arguments.scenario == "labeling"
                else None
            )
        if check is not None:
            print(
                f"submits answered with a redirect: {check['answered']}; stored exactly once "
                f"with their answers: {check['answered'] - check['lost'] - check['wrong_answers']}"
                f"; lost {check['lost']}, wrong answers {check['wrong_answers']}, duplicate "
                f"annotations {check['duplicate_annotations']}, the same submit answered twice "
                f"{check['repeated_in_answers']}; submitted in the database "
                f"{check['submitted_in_database']} ({check['submitted_unanswered']} without an "
                "answer)"
            )
        goals(arguments, figures, check, max(0, never_started - result["sign_in_failed"]))
    finally:
        stop_group(gunicorn)
        if not (arguments.keep or arguments.reuse):
            postgres_database(arguments.postgres, create=False)


if __name__ == "__main__":
    main()
