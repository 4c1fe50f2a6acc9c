"""The speed figures of a study from end to end, each beside its goal, on the embedded default
(SQLite, the development server), as a newcomer runs it:

* the import of N issues with their comments (`manage.py import_issues`, end to end: stored,
  rendered, sanitised, facets; the best of 3 runs);
* in process, through Django's test client (the full request), for each study size: open one
  item (the page and the API), submit one (completing the item, leaving it open for a second
  annotator, and after a draft save as the page makes), claim the next item in a study handed
  out as people go (k = 2, three quarters of the items held once), the annotator's queue
  (first 100, with labels),
  `/api/issues/` (first 100), and the time and queries of each; then the agreement report of
  the size x 3 annotators x 9 dimensions over HTTP (without and with 1,000 bootstrap
  resamples) and the JSONL export with every raw label, streamed (first byte, whole);
* the development server on the largest study: from its start to the first page, its memory
  once idle, and its peak and idle memory after streaming that export.

    python bench/speed.py [--issues 10000] [--sizes 1000 10000]

The goals are those of the speed issue, measured on 2 cores; a goal on a figure that should not
grow with the study ("flat") compares the largest size with the smallest, in the request's CPU
time (this process's), which swings less than its wall time with what else the machine does.
"""

import argparse
import json
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchkit import (
    ROOT,
    bytecode_compiled,
    django_setup,
    form_submitted,
    labels_made,
    machine_pace_ms,
    messages_shown,
    run_child,
    sample_issues,
    starter_codebook_published,
)
from import_issues import make_dump

SAMPLES = 30  # requests timed per figure (the median is printed)
PASSWORD = "speed-bench-password"  # noqa: S105 (a throwaway database's user)


def child(database_url: str, size: int) -> None:
    """Build a study of `size` items and time the requests on it; print the figures as JSON."""
    django_setup(database_url)
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["testserver"]
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from corpus.models import Issue, IssueComment, Repository
    from corpus.rendering import render_markdown
    from labeling.models import Assignment, StudyItem
    from labeling.services.holders import items_holders_recount
    from labeling.services.studies import study_create

    samples = sample_issues()
    version = starter_codebook_published()
    users = get_user_model().objects
    raters = [users.create_user(f"rater{i}") for i in range(3)]
    labeler = users.create_user("labeler")
    manager = users.create_user("manager", password=PASSWORD)
    repositories = [Repository.objects.create(owner="bench", name=f"repo{i}") for i in range(3)]
    now = timezone.now()
    texts = [(s["title"], s["body"] or "", render_markdown(s["body"] or "")) for s in samples]
    Issue.objects.bulk_create(
        [
            Issue(
                repository=repositories[n % 3],
                number=n,
                title=texts[n % len(texts)][0],
                body=texts[n % len(texts)][1],
                body_html=texts[n % len(texts)][2] or "<p></p>",
                state="closed",
                created_at=now,
                updated_at=now,
                comments_count=2,
            )
            for n in range(1, size + 1)
        ],
        batch_size=2000,
    )
    issue_ids = list(Issue.objects.values_list("id", flat=True))
    IssueComment.objects.bulk_create(
        [
            IssueComment(
                issue_id=issue_id,
                github_id=issue_id * 10 + j,
                author="someone",
                body="same here",
                body_html="<p>same here</p>",
                created_at=now,
                updated_at=now,
            )
            for issue_id in issue_ids
            for j in range(2)
        ],
        batch_size=5000,
    )

    def study_of_all(slug: str, k: int, annotators: list) -> tuple:
        study = study_create(
            slug=slug, name=slug, codebook_version=version, k=k, managers=[manager]
        )
        round_ = study.rounds.get()
        StudyItem.objects.bulk_create(
            [StudyItem(study=study, issue_id=i, round=round_) for i in issue_ids],
            batch_size=5000,
        )
        item_ids = list(study.items.order_by("id").values_list("id", flat=True))
        from labeling.services.studies import study_member_add

        for user in annotators:
            study_member_add(study=study, user=user, role="annotator")
        return study, item_ids

    # "agree": every item labeled by 3 raters on the 9 dimensions, for the report and export.
    agree, agree_items = study_of_all("agree", 3, raters)
    Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=item_id,
                study=agree,
                annotator=user,
                status="submitted",
                submitted_at=now,
            )
            for item_id in agree_items
            for user in raters
        ],
        batch_size=5000,
    )
    labels_made(version=version)

    # "label": every item to one annotator, to open and submit.
    label, label_items = study_of_all("label", 1, [labeler])
    Assignment.objects.bulk_create(
        [Assignment(item_id=i, study=label, annotator=labeler) for i in label_items],
        batch_size=5000,
    )
    # "pair": every item to the labeler and a rater (k = 2), to submit the first of two labels:
    # most submits of a study with k >= 2 leave the item open for the others.
    pair, pair_items = study_of_all("pair", 2, [labeler, raters[0]])
    Assignment.objects.bulk_create(
        [
            Assignment(item_id=i, study=pair, annotator=u)
            for i in pair_items
            for u in (labeler, raters[0])
        ],
        batch_size=5000,
    )
    # "claim": k = 2, handed out as people go; a rater holds three quarters of the items once,
    # as in the first pass through a study, and the labeler claims the next item.
    claim, claim_items = study_of_all("claim", 2, [labeler, raters[1]])
    Assignment.objects.bulk_create(
        [
            Assignment(item_id=i, study=claim, annotator=raters[1])
            for i in claim_items[: size * 3 // 4]
        ],
        batch_size=5000,
    )
    # Counted as the services count them when they hand items out.
    items_holders_recount(item_ids=StudyItem.objects.values_list("id", flat=True))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    person, overseer = Client(), Client()
    person.force_login(labeler)
    overseer.force_login(manager)
    picked = random.Random(5).sample(label_items[SAMPLES * 4 :], SAMPLES * 2)
    to_open, to_submit = picked[:SAMPLES], picked[SAMPLES:]
    # The first 100 items of the queue get labels, as after a morning's work.
    for item_id in label_items[:100]:
        form_submitted(person, f"/studies/label/items/{item_id}/")
    person.get(f"/studies/label/items/{to_open[0]}/")  # warm the category trees' cache

    def timed(request, ids, expected: int, before=None) -> dict:
        timings, cpu, queries = [], [], 0
        for item_id in ids:
            if before is not None:
                before(item_id)  # not timed
            with CaptureQueriesContext(connection) as captured:
                started, started_cpu = time.perf_counter(), time.process_time()
                response = request(item_id)
                timings.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
            assert response.status_code == expected, response.status_code
            queries = max(queries, len(captured))
            messages_shown(person)
        return _figure(timings, cpu, queries)

    pair_sample = random.Random(7).sample(pair_items, 2 * SAMPLES)
    figures = {
        "page": timed(lambda i: person.get(f"/studies/label/items/{i}/"), to_open, 200),
        "item_api": timed(
            lambda i: person.get(f"/api/studies/label/items/{i}/labeling/"), to_open, 200
        ),
        "submit": timed(
            lambda i: form_submitted(person, f"/studies/label/items/{i}/"), to_submit, 302
        ),
        "submit_open": timed(
            lambda i: form_submitted(person, f"/studies/pair/items/{i}/"),
            pair_sample[:SAMPLES],
            302,
        ),
        # As on the page, which saves drafts in the background before the submit.
        "submit_after_draft": timed(
            lambda i: form_submitted(person, f"/studies/pair/items/{i}/"),
            pair_sample[SAMPLES:],
            302,
            before=lambda i: form_submitted(person, f"/studies/pair/items/{i}/", action="draft"),
        ),
        "queue": timed(
            lambda i: person.get("/api/studies/label/queue/?page_size=100"), to_open, 200
        ),
        "issues": timed(lambda i: person.get("/api/issues/?page_size=100"), to_open, 200),
    }
    claims, claims_cpu, claim_queries = [], [], 0
    for _ in range(SAMPLES):
        with CaptureQueriesContext(connection) as captured:
            started, started_cpu = time.perf_counter(), time.process_time()
            response = person.post("/studies/claim/next/")
            claims.append(time.perf_counter() - started)
            claims_cpu.append(time.process_time() - started_cpu)
        assert response.status_code == 302, response.status_code
        claim_queries = max(claim_queries, len(captured))
        # Submitted, outside the timing, so that the next request claims an item again.
        Assignment.objects.filter(
            item__study__slug="claim", annotator=labeler, status=Assignment.Status.TODO
        ).update(status=Assignment.Status.SUBMITTED)
    figures["claim"] = _figure(claims, claims_cpu, claim_queries)
    for name, query in (("agreement", ""), ("agreement_b1000", "?bootstrap=1000")):
        best = float("inf")
        for _ in range(3 if not query else 1):
            started = time.perf_counter()
            response = overseer.get(f"/api/studies/agree/agreement/{query}")
            best = min(best, time.perf_counter() - started)
            assert response.status_code == 200, response.status_code
        figures[name] = {"seconds": best}
    started = time.perf_counter()
    response = overseer.get("/studies/agree/export/download/?format=jsonl&raw=on")
    assert response.status_code == 200, response.status_code
    stream = iter(response.streaming_content)
    size_bytes = len(next(stream))
    first_byte = time.perf_counter() - started
    size_bytes += sum(len(chunk) for chunk in stream)
    figures["export"] = {
        "first_byte_seconds": first_byte,
        "seconds": time.perf_counter() - started,
        "mb": size_bytes / 1e6,
    }
    print(json.dumps(figures))


def _figure(timings: list[float], cpu: list[float], queries: int) -> dict:
    """A request's figure: the median time (what its goal is in) and CPU time of this process,
    in ms, and the most queries one made."""
    return {
        "ms": 1000 * statistics.median(timings),
        "cpu_ms": 1000 * statistics.median(cpu),
        "queries": queries,
    }


def server_figures(database_url: str, port: int) -> dict:
    """Start the development server on the study's database: seconds to the first page, its
    resident memory idle, and its peak and idle memory after streaming the export."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    environment.pop("REDIS_URL", None)
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/accounts/login/", timeout=5) as page:  # noqa: S310
                    page.read()
                break
            except OSError:
                if server.poll() is not None or time.perf_counter() - started > 120:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.05)
        first_page = time.perf_counter() - started
        idle = _memory_mb(server.pid)
        opener = _signed_in(base)
        with opener.open(f"{base}/studies/agree/export/download/?format=jsonl&raw=on") as export:
            while export.read(1 << 16):
                pass
        after = _memory_mb(server.pid)
        return {
            "first_page_seconds": first_page,
            "idle_mb": idle["VmRSS"],
            "peak_mb": after["VmHWM"],
            "after_export_mb": after["VmRSS"],
        }
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)


def _memory_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


def _signed_in(base: str) -> urllib.request.OpenerDirector:
    """A client signed in as the study's manager through the login form."""
    import http.cookiejar
    import re
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/accounts/login/") as page:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode())
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token.group(1), "username": "manager", "password": PASSWORD}
    ).encode()
    request = urllib.request.Request(  # noqa: S310 (the server this script started)
        f"{base}/accounts/login/", data=body, headers={"Referer": f"{base}/accounts/login/"}
    )
    with opener.open(request) as answer:
        answer.read()
    return opener


def import_seconds(folder: Path, issues: int, runs: int = 3) -> tuple[float, int]:
    """`manage.py import_issues` of a dump of `issues` issues into a migrated SQLite database,
    timed from the command's start to its end: the best of `runs`, each into a fresh copy of
    the migrated database (as bench/import_issues.py times it). One run swings by a tenth with
    what else the machine does."""
    dump = folder / "dump.jsonl"
    make_dump(dump, issues)
    comments = sum(len(json.loads(line)["comments_data"]) for line in dump.open())
    migrated, database = folder / "migrated.sqlite3", folder / "import.sqlite3"
    environment = {**os.environ, "DATABASE_URL": f"sqlite:///{migrated}"}
    environment.pop("REDIS_URL", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=environment, check=True)
    environment["DATABASE_URL"] = f"sqlite:///{database}"
    best = float("inf")
    for _ in range(runs):
        shutil.copyfile(migrated, database)
        started = time.perf_counter()
        subprocess.run(
            [*manage, "import_issues", str(dump)],
            cwd=ROOT,
            env=environment,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        best = min(best, time.perf_counter() - started)
        for leftover in folder.glob("import.sqlite3*"):
            leftover.unlink()
    return best, comments


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=10_000, help="issues imported")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "SIZE"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    sizes = sorted(args.sizes)
    bytecode_compiled()
    paces = [machine_pace_ms()]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        imported, comments = import_seconds(folder, args.issues)
        by_size = {}
        for size in sizes:
            url = f"sqlite:///{folder}/study-{size}.sqlite3"
            by_size[size] = run_child(__file__, url, str(size))
        server = server_figures(f"sqlite:///{folder}/study-{sizes[-1]}.sqlite3", args.port)
    paces.append(machine_pace_ms())
    _print(args.issues, comments, imported, sizes, by_size, server, paces)


def _print(issues, comments, imported, sizes, by_size, server, paces) -> None:
    small, large = by_size[sizes[0]], by_size[sizes[-1]]
    span = f"{sizes[0]:,} -> {sizes[-1]:,} items"

    def request(name: str, *, flat: bool = False) -> str:
        times = " -> ".join(f"{by_size[s][name]['ms']:.1f}" for s in sizes)
        queries = " -> ".join(str(by_size[s][name]["queries"]) for s in sizes)
        shown = f"{times} ms, {queries} queries"
        if flat:
            # Judged on CPU time: a few ms of wall time swing with whatever else the machine
            # does, which made a flat figure read "grows" on a busy minute.
            growth = large[name]["cpu_ms"] / small[name]["cpu_ms"]
            shown += f", CPU x{growth:.2f} ({'flat' if growth < 1.5 else 'grows'})"
        return shown

    agreement, export = large["agreement"], large["export"]
    rows = [
        (
            "import_issues, end to end (best of 3)",
            f"{issues:,} issues + {comments:,} comments: {imported:.2f} s",
            "<= 2 s (10k)",
        ),
        (
            f"open one item, page ({span})",
            request("page", flat=True),
            "<= 10 ms, <= 12 queries, flat",
        ),
        (
            f"open one item, API ({span})",
            request("item_api", flat=True),
            "<= 10 ms, <= 12 queries, flat",
        ),
        (
            f"submit, completing the item (k = 1; {span})",
            request("submit"),
            "<= 10 ms, <= 12 queries",
        ),
        (
            f"submit, the item still open (k = 2; {span})",
            request("submit_open"),
            "<= 10 ms, <= 12 queries",
        ),
        (
            f"submit after a draft save (k = 2; {span})",
            request("submit_after_draft"),
            "<= 10 ms, <= 12 queries",
        ),
        (
            f"claim the next item (k = 2, 3/4 held once; {span})",
            request("claim", flat=True),
            "flat",
        ),
        (f"queue, first 100 with labels ({span})", request("queue"), "<= 30 ms"),
        (f"/api/issues/ first 100 ({span})", request("issues", flat=True), "<= 15 ms, flat"),
        (
            f"agreement {sizes[-1]:,} x 3 x 9 over HTTP",
            f"{agreement['seconds']:.2f} s; B = 1000: {large['agreement_b1000']['seconds']:.2f} s",
            "< 0.5 s; B = 1000: < 2 s",
        ),
        (
            f"export {sizes[-1]:,} items, JSONL with raw labels, streamed",
            f"first byte {1000 * export['first_byte_seconds']:.0f} ms, "
            f"whole {export['seconds']:.2f} s ({export['mb']:.0f} MB)",
            "10k < 1 s, 100k < 10 s",
        ),
        (
            "warm start to the first page (runserver)",
            f"{server['first_page_seconds']:.2f} s",
            "< 1.5 s",
        ),
        (
            "web process memory",
            f"idle {server['idle_mb']:.0f} MB; after the export "
            f"{server['after_export_mb']:.0f} MB, peak {server['peak_mb']:.0f} MB",
            "< 150 MB idle, < 200 MB peak",
        ),
    ]
    width = max(len(row[0]) for row in rows)
    print(f"SQLite, the development server's settings; medians of {SAMPLES} requests in process")
    for figure, now, goal in rows:
        print(f"{figure:<{width}}  {now}   [goal {goal}]")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:.0f} MB")
    print(
        f"machine pace at the start and the end: {paces[0]:.1f} -> {paces[1]:.1f} ms for "
        "sum(range(1_000_000)) (best of 5); figures of two runs compare at like paces"
    )


if __name__ == "__main__":
    main()
