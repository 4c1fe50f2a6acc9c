"""IssueCoder beside Label Studio on the same machine and the same payload.

    python bench/peers.py [--issues 10000] [--rounds 3] [--label-studio PATH]

Label Studio is found by --label-studio, else the environment variable LABEL_STUDIO_BIN, else
`label-studio` on the PATH. Without it, IssueCoder's figures are printed alone.

Each tool runs as its documented single-machine default: SQLite and its development server
(IssueCoder: the settings of `make run`, runserver without the reloader; Label Studio:
`label-studio start --no-browser`), each with a data folder of its own in a temporary folder.
Both are set up once (migrations, an account with an API token, and an empty study of the
starter codebook, k = 1; Label Studio's project is made in each round with the same questions).
The payload: N issues built like bench/import_issues.py builds its dump (the sample file's
issues renumbered, pull requests left out), given to IssueCoder as JSONL and to Label Studio as
the JSON array of the same objects (it reads no JSONL).

Each round starts both from a fresh copy of its set-up database and measures, one tool after
the other (the order swapped each round), so that a drift of the machine touches both:

- cold start: from starting the server to its sign-in page answered;
- import: the payload uploaded over the API (IssueCoder: into the study, with its items made;
  Label Studio: into the project), until the items are ready;
- open one item: the labeling page (signed in) and the item over the API, each a few times;
- submit one annotation over the API (an answer for each of the codebook's 7 screened-in
  dimensions), each a few times;
- export all items over the API (IssueCoder: JSONL; Label Studio: JSON of all tasks, its
  nearest: it has no JSONL export), to the file downloaded;
- closed loop: a few clients asking for the item API again and again, with no pause, for a few
  seconds: requests a second.

Prints the median of the rounds (of all requests for the item and submit rows) beside the
goal. Every server started here is ended when the script ends, also on Ctrl-C.
"""

import argparse
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchkit import ROOT

SAMPLE = ROOT / "corpus" / "data" / "sample-issues.jsonl"
CODEBOOK = ROOT / "taxonomy" / "data" / "llm-training-issues.json"
SLUG = "peers"
PASSWORD = "peers-bench-" + "password"
LS_EMAIL = "bench@example.com"
# What each submit answers: the starter codebook's screened-in answers, as bench/load.py sends.
ANSWERS = {
    "screening": ["include"],
    "symptom": ["crash"],
    "root_cause": ["api_misuse"],
    "fix_pattern": ["fix_api_usage"],
    "debugging_practice": ["error_message_analysis"],
    "testing_practice": ["no_test_change"],
    "training_stage": ["model_initialization"],
}
REPEATS = 5  # requests for one item and submits in each round
LOOP_CLIENTS, LOOP_SECONDS = 4, 5.0
GOAL_RATIO = 3.0  # the issue's goal: at least 3x Label Studio's requests a second


# ---- the payload ---------------------------------------------------------------------------


def payload_write(folder: Path, n_issues: int, seed: int = 7) -> tuple[Path, Path]:
    """N issues as bench/import_issues.py makes them (a sample thread, renumbered, with new
    comment ids), pull requests left out: as JSONL for IssueCoder, as a JSON array for Label
    Studio."""
    samples = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    samples = [sample for sample in samples if sample.get("pull_request") is None]
    rng = random.Random(seed)
    comment_id = 10_000_000
    jsonl, array = folder / "issues.jsonl", folder / "issues.json"
    with jsonl.open("w") as lines, array.open("w") as listed:
        listed.write("[")
        for number in range(1, n_issues + 1):
            record = json.loads(json.dumps(rng.choice(samples)))
            record["number"] = number
            record["id"] = 50_000_000 + number
            for comment in record.get("comments_data") or []:
                comment_id += 1
                comment["id"] = comment_id
            text = json.dumps(record)
            lines.write(text + "\n")
            listed.write(("," if number > 1 else "") + text)
        listed.write("]")
    return jsonl, array


def label_config() -> str:
    """Label Studio's questions: one choice block per dimension of the starter codebook, with
    all its categories (nested ones flattened), multiple choice where the codebook allows it."""
    codebook = json.loads(CODEBOOK.read_text())

    def keys(categories: list) -> list[str]:
        found = []
        for category in categories:
            found.append(category["key"])
            found += keys(category.get("children") or [])
        return found

    blocks = []
    for dimension in codebook["dimensions"]:
        choice = "multiple" if dimension.get("multi_label") else "single"
        options = "".join(f'<Choice value="{key}"/>' for key in keys(dimension["categories"]))
        blocks.append(
            f'<Choices name="{dimension["key"]}" toName="body" choice="{choice}">{options}'
            "</Choices>"
        )
    return (
        '<View><Header value="$title"/><Text name="body" value="$body"/>'
        + "".join(blocks)
        + ("</View>")
    )


# ---- IssueCoder's set-up, in a child process ----------------------------------------------


def child_setup() -> None:
    """Migrate the SQLite database, load the starter codebook, make the account, its token and
    an empty study that assigns as people go; print the token as JSON."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts.services import api_token_create
    from labeling.models import Membership
    from labeling.services.studies import study_create, study_member_add
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load

    call_command("migrate", verbosity=0)
    version, _ = codebook_load(data=codebook_file_read(CODEBOOK.read_bytes()), publish=True)
    user = get_user_model().objects.create_user(username="bench", password=PASSWORD)
    study = study_create(slug=SLUG, name="Peers", codebook_version=version, k=1)
    for role in (Membership.Role.MANAGER, Membership.Role.ANNOTATOR):
        study_member_add(study=study, user=user, role=role)
    _, key = api_token_create(user=user, name="peers")
    print(json.dumps({"token": key}))


# ---- servers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """One tool's development server on its own copy of the data, and a client of it."""

    name = ""
    login_path = ""

    def __init__(self, folder: Path) -> None:
        import requests

        self.folder = folder
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.api = requests.Session()  # the token
        self.browser = requests.Session()  # signed in on the sign-in page
        self.log = folder / "server.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def start(self) -> float:
        """Start the server; seconds until its sign-in page answers 200."""
        import requests

        started = time.perf_counter()
        self.process = subprocess.Popen(
            self.command(), cwd=self.folder, env=self.environment(), stdout=self.log.open("w"),
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} stopped:\n" + self.log.read_text()[-2000:])
            try:
                if requests.get(self.base + self.login_path, timeout=5).status_code == 200:
                    return time.perf_counter() - started
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not answer within 300 s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass

    def sign_in(self, fields: dict[str, str]) -> None:
        page = self.browser.get(self.base + self.login_path, timeout=30)
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        response = self.browser.post(
            self.base + self.login_path,
            data={**fields, "csrfmiddlewaretoken": found.group(1) if found else ""},
            headers={"Referer": self.base + self.login_path},
            allow_redirects=False,
            timeout=60,
        )
        if response.status_code != 302:
            raise RuntimeError(f"{self.name}: signing in gave {response.status_code}")

    def checked(self, response, *expected: int):
        if response.status_code not in expected:
            raise RuntimeError(
                f"{self.name}: {response.request.method} {response.url} gave "
                f"{response.status_code}: {response.text[:300]}"
            )
        return response

    # What each round measures, in seconds; each tool says how.
    def setup_round(self) -> None:
        raise NotImplementedError

    def import_issues(self) -> float:
        raise NotImplementedError

    def open_page(self) -> float:
        raise NotImplementedError

    def open_api(self) -> float:
        raise NotImplementedError

    def submit(self) -> float:
        raise NotImplementedError

    def export(self) -> tuple[float, int]:
        raise NotImplementedError

    def item_api_path(self) -> str:
        raise NotImplementedError


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


class IssueCoder(Server):
    name = "IssueCoder"
    login_path = "/accounts/login/"

    def __init__(self, folder: Path, template: Path, token: str, payload: Path) -> None:
        super().__init__(folder)
        shutil.copy(template, folder / "db.sqlite3")
        self.payload = payload
        self.api.headers["Authorization"] = f"Token {token}"
        self.item_id: int | None = None

    def environment(self) -> dict[str, str]:
        return ic_environment(self.folder / "db.sqlite3")

    def command(self) -> list[str]:
        # `make run` serves with runserver, no reloader (manage.py demo --serve).
        return [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", str(self.port)]

    def setup_round(self) -> None:
        self.sign_in({"username": "bench", "password": PASSWORD})

    def import_issues(self) -> float:
        started = time.perf_counter()
        with self.payload.open("rb") as stream:
            job = self.checked(
                self.api.post(
                    f"{self.base}/api/studies/{SLUG}/issue-imports/",
                    files={"file": (self.payload.name, stream, "application/x-ndjson")},
                    timeout=1800,
                ),
                201, 202,
            ).json()  # fmt: skip
        while job["status"] not in ("done", "failed"):
            time.sleep(0.05)
            job = self.checked(
                self.api.get(f"{self.base}/api/studies/{SLUG}/issue-imports/{job['id']}/"), 200
            ).json()
        seconds = time.perf_counter() - started
        if job["status"] != "done" or job["errors_total"]:
            raise RuntimeError(f"IssueCoder's import: {job}")
        self.items = job["items_added"]
        return seconds

    def claim(self) -> dict:
        """The annotator's next item (claimed as people go): its assignment."""
        return self.checked(self.api.post(f"{self.base}/api/studies/{SLUG}/next/"), 200).json()

    def item_api_path(self) -> str:
        if self.item_id is None:
            self.item_id = self.claim()["item"]
        return f"/api/studies/{SLUG}/items/{self.item_id}/labeling/"

    def open_page(self) -> float:
        self.item_api_path()  # claims an item when none is held
        page = f"{self.base}/studies/{SLUG}/items/{self.item_id}/"
        return timed(lambda: self.checked(self.browser.get(page, timeout=60), 200))

    def open_api(self) -> float:
        url = self.base + self.item_api_path()
        return timed(lambda: self.checked(self.api.get(url, timeout=60), 200))

    def submit(self) -> float:
        assignment = self.claim()
        url = f"{self.base}/api/assignments/{assignment['id']}/submit/"
        body = {
            "answers": {key: {"categories": value} for key, value in ANSWERS.items()},
            "version": assignment["version"],
            "seconds_spent": 30,
        }
        seconds = timed(lambda: self.checked(self.api.post(url, json=body, timeout=60), 200))
        self.item_id = None  # the next item to open is the one the next "next" claims
        return seconds

    def export(self) -> tuple[float, int]:
        started = time.perf_counter()
        job = self.checked(
            self.api.post(
                f"{self.base}/api/studies/{SLUG}/exports/", json={"format": "jsonl"}, timeout=600
            ),
            202,
        ).json()
        while job["status"] not in ("done", "failed"):
            time.sleep(0.05)
            job = self.checked(self.api.get(f"{self.base}/api/exports/{job['id']}/"), 200).json()
        if job["status"] != "done":
            raise RuntimeError(f"IssueCoder's export: {job}")
        data = self.checked(
            self.api.get(f"{self.base}/api/exports/{job['id']}/download/", timeout=600), 200
        ).content
        self.exported_rows = data.count(b"\n")
        return time.perf_counter() - started, len(data)


def ic_environment(database: Path) -> dict[str, str]:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{database}",
        "PYTHONPATH": str(ROOT),
    }
    # No Redis: the embedded default runs its tasks (the import, the export) in the process.
    environment.pop("REDIS_URL", None)
    return environment


class LabelStudio(Server):
    name = "Label Studio"
    login_path = "/user/login/"

    def __init__(self, folder: Path, template: Path, binary: str, token: str, payload: Path):
        super().__init__(folder)
        shutil.copytree(template, folder / "data")
        self.binary, self.payload = binary, payload
        self.api.headers["Authorization"] = f"Token {token}"
        self.project: int | None = None
        self.task_ids: list[int] = []

    def environment(self) -> dict[str, str]:
        return ls_environment(self.folder / "data")

    def command(self) -> list[str]:
        return [
            self.binary, "start", "--no-browser", "--data-dir", str(self.folder / "data"),
            "--port", str(self.port), "--internal-host", "127.0.0.1",
        ]  # fmt: skip

    def setup_round(self) -> None:
        self.sign_in({"email": LS_EMAIL, "password": PASSWORD})
        self.project = self.checked(
            self.api.post(
                f"{self.base}/api/projects/",
                json={"title": "Peers", "label_config": label_config()},
                timeout=60,
            ),
            201,
        ).json()["id"]

    def import_issues(self) -> float:
        started = time.perf_counter()
        with self.payload.open("rb") as stream:
            result = self.checked(
                self.api.post(
                    f"{self.base}/api/projects/{self.project}/import",
                    files={"file": (self.payload.name, stream, "application/json")},
                    timeout=1800,
                ),
                201,
            ).json()
        # The community edition imports in the request; a job elsewhere would be polled here.
        seconds = time.perf_counter() - started
        self.items = result.get("task_count")
        tasks = self.checked(
            self.api.get(
                f"{self.base}/api/tasks/",
                params={"project": self.project, "page_size": 2 * REPEATS + 2, "fields": "all"},
                timeout=60,
            ),
            200,
        ).json()
        self.task_ids = [task["id"] for task in tasks["tasks"]]
        return seconds

    def item_api_path(self) -> str:
        return f"/api/tasks/{self.task_ids[0]}/"

    def open_page(self) -> float:
        page = f"{self.base}/projects/{self.project}/data?task={self.task_ids[0]}"
        return timed(lambda: self.checked(self.browser.get(page, timeout=60), 200))

    def open_api(self) -> float:
        url = self.base + self.item_api_path()
        return timed(lambda: self.checked(self.api.get(url, timeout=60), 200))

    def submit(self) -> float:
        task = self.task_ids.pop()
        body = {
            "result": [
                {
                    "from_name": key,
                    "to_name": "body",
                    "type": "choices",
                    "value": {"choices": value},
                }
                for key, value in ANSWERS.items()
            ],
            "lead_time": 30,
        }
        url = f"{self.base}/api/tasks/{task}/annotations/"
        return timed(lambda: self.checked(self.api.post(url, json=body, timeout=60), 201))

    def export(self) -> tuple[float, int]:
        started = time.perf_counter()
        data = self.checked(
            self.api.get(
                f"{self.base}/api/projects/{self.project}/export",
                params={"exportType": "JSON", "download_all_tasks": "true"},
                timeout=600,
            ),
            200,
        ).content
        self.exported_rows = len(json.loads(data))
        return time.perf_counter() - started, len(data)


def ls_environment(data: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "LABEL_STUDIO_BASE_DATA_DIR": str(data),
        "DJANGO_DB": "sqlite",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "false",
    }


def closed_loop(server: Server) -> float:
    """LOOP_CLIENTS clients asking for the item over the API with no pause: requests a second."""
    import requests

    url = server.base + server.item_api_path()
    headers = dict(server.api.headers)
    stop = time.monotonic() + LOOP_SECONDS
    counts = [0] * LOOP_CLIENTS

    def client(index: int) -> None:
        with requests.Session() as session:
            session.headers.update(headers)
            while time.monotonic() < stop:
                if session.get(url, timeout=60).status_code == 200:
                    counts[index] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(LOOP_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


# ---- set-up of each tool, once -------------------------------------------------------------


def ic_template(folder: Path) -> tuple[Path, str]:
    database = folder / "template.sqlite3"
    completed = subprocess.run(
        [sys.executable, __file__, "--child", "setup"], cwd=ROOT, env=ic_environment(database),
        capture_output=True, text=True,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError("IssueCoder's set-up failed:\n" + completed.stderr[-3000:])
    return database, json.loads(completed.stdout.strip().splitlines()[-1])["token"]


def ls_template(folder: Path, binary: str) -> tuple[Path, str]:
    data = folder / "data"
    token = secrets.token_hex(20)
    command = [
        binary, "init", "--quiet", "--no-browser", "--data-dir", str(data),
        "--username", LS_EMAIL, "--password", PASSWORD, "--user-token", token,
        "--enable-legacy-api-token", "--agree-fix-sqlite",
    ]  # fmt: skip
    completed = subprocess.run(
        command, cwd=folder, env=ls_environment(data), capture_output=True, text=True
    )
    if completed.returncode != 0 or not (data / "label_studio.sqlite3").exists():
        raise RuntimeError(
            "Label Studio's set-up failed:\n" + (completed.stdout + completed.stderr)[-3000:]
        )
    return data, token


def label_studio_find(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("LABEL_STUDIO_BIN"), "label-studio"):
        if candidate:
            found = shutil.which(candidate)
            if found:
                return found
    return None


# ---- the rounds and the table ----------------------------------------------------------------

ROWS = [
    ("cold start to the sign-in page", "cold", "s"),
    ("import of the payload", "import", "s"),
    ("open one item: page", "page", "ms"),
    ("open one item: API", "api", "ms"),
    ("submit one annotation (API)", "submit", "ms"),
    ("export of all items", "export", "s"),
    ("closed loop: item API", "loop", "req/s"),
]


def run_round(servers: list[Server], figures: dict, notes: list[str]) -> None:
    """One round: each server from a fresh copy, each measure taken one tool after the other."""

    def each(key: str, measure: Callable[[Server], object]) -> None:
        for server in servers:
            try:
                value = measure(server)
            except Exception as error:  # a tool that fails a step loses that row, not the run
                note = f"{server.name}, {key}: {str(error)[:300]}"
                if note not in notes:
                    notes.append(note)
                continue
            values = value if isinstance(value, list) else [value]
            figures.setdefault((server.name, key), []).extend(values)

    try:
        # Started one at a time: a cold start has the machine to itself.
        for server in servers:
            seconds = server.start()
            figures.setdefault((server.name, "cold"), []).append(seconds)
        for server in servers:
            server.setup_round()
        each("import", lambda server: server.import_issues())
        for server in servers:
            figures.setdefault((server.name, "items"), []).append(server.items)
        for _ in range(REPEATS):
            each("page", lambda server: 1000 * server.open_page())
            each("api", lambda server: 1000 * server.open_api())
        for _ in range(REPEATS):
            each("submit", lambda server: 1000 * server.submit())

        def export(server: Server) -> float:
            seconds, size = server.export()
            figures.setdefault((server.name, "export_bytes"), []).append(size)
            figures.setdefault((server.name, "export_rows"), []).append(server.exported_rows)
            return seconds

        each("export", export)
        each("loop", closed_loop)
    finally:
        for server in servers:
            server.stop()


def cell(values: list[float] | None, unit: str) -> str:
    if not values:
        return "-"
    value = statistics.median(values)
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.0f} ms"
    return f"{value:.1f} req/s"


def goal(key: str, ours: list | None, theirs: list | None) -> str:
    """The loop's goal (3x Label Studio's requests a second); the other rows have none, and
    show how many times quicker or slower IssueCoder is."""
    if key == "loop":
        text = f">= {GOAL_RATIO:g}x Label Studio's"
        if ours and theirs:
            ratio = statistics.median(ours) / statistics.median(theirs)
            text += f": {ratio:.1f}x, {'met' if ratio >= GOAL_RATIO else 'missed'}"
        return text
    if not (ours and theirs):
        return "-"
    ratio = statistics.median(theirs) / statistics.median(ours)
    return "- (" + (f"{ratio:.1f}x quicker" if ratio >= 1 else f"{1 / ratio:.1f}x slower") + ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=10_000, help="issues in the payload")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--label-studio",
        help="the label-studio command (default: $LABEL_STUDIO_BIN, else label-studio on PATH)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child_setup()
        return
    binary = label_studio_find(arguments.label_studio)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    figures: dict[tuple[str, str], list] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="issuecoder-peers-") as folder:
        folder = Path(folder)
        jsonl, array = payload_write(folder, arguments.issues)
        print(
            f"payload: {arguments.issues} issues, {jsonl.stat().st_size / 1e6:.0f} MB JSONL; "
            + (f"Label Studio: {binary}" if binary else "Label Studio not found: IssueCoder alone"),
            flush=True,
        )
        started = time.perf_counter()
        ic_folder = folder / "issuecoder"
        ic_folder.mkdir()
        ic_database, ic_token = ic_template(ic_folder)
        print(f"IssueCoder set up in {time.perf_counter() - started:.0f} s", flush=True)
        ls_data = ls_token = None
        if binary:
            started = time.perf_counter()
            ls_folder = folder / "label-studio"
            ls_folder.mkdir()
            try:
                ls_data, ls_token = ls_template(ls_folder, binary)
                print(f"Label Studio set up in {time.perf_counter() - started:.0f} s", flush=True)
            except RuntimeError as error:
                notes.append(str(error)[:500])
                binary = None
        for number in range(arguments.rounds):
            round_folder = folder / f"round{number}"
            servers: list[Server] = []
            (round_folder / "ic").mkdir(parents=True)
            servers.append(IssueCoder(round_folder / "ic", ic_database, ic_token, jsonl))
            if binary:
                (round_folder / "ls").mkdir()
                servers.append(LabelStudio(round_folder / "ls", ls_data, binary, ls_token, array))
            if number % 2:
                servers.reverse()
            started = time.perf_counter()
            try:
                run_round(servers, figures, notes)
            except RuntimeError as error:
                notes.append(f"round {number + 1}: {str(error)[:500]}")
            print(f"round {number + 1} in {time.perf_counter() - started:.0f} s", flush=True)
    names = ["IssueCoder"] + (["Label Studio"] if binary else [])
    print(
        f"\npeers: {arguments.issues} issues; SQLite and the development server each; median "
        f"of {arguments.rounds} rounds ({REPEATS} requests a round for the item and the submit; "
        f"the loop: {LOOP_CLIENTS} clients for {LOOP_SECONDS:g} s); {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    header = f"{'figure':<32} " + " ".join(f"{name:>14}" for name in names)
    print(header + "   goal")
    for label, key, unit in ROWS:
        ours = figures.get(("IssueCoder", key))
        theirs = figures.get(("Label Studio", key)) if binary else None
        cells = [cell(ours, unit)] + ([cell(theirs, unit)] if binary else [])
        print(
            f"{label:<32} " + " ".join(f"{c:>14}" for c in cells) + f"   {goal(key, ours, theirs)}"
        )
    for name in names:
        items = figures.get((name, "items"))
        size = figures.get((name, "export_bytes"))
        rows = figures.get((name, "export_rows"))
        if items or size:
            print(
                f"{name}: items imported {items[-1] if items else '?'}; export "
                f"{rows[-1] if rows else '?'} items, "
                f"{(statistics.median(size) / 1e6 if size else 0):.1f} MB"
            )
    if binary:
        print(
            "Label Studio's page is its app's shell (the task comes over its API afterwards); "
            "IssueCoder's page holds the item. Label Studio exports all tasks as JSON (it has no "
            "JSONL), with each task's data; IssueCoder's JSONL has one row per item."
        )
    for note in notes:
        print(f"  skipped: {note}")


if __name__ == "__main__":
    main()
