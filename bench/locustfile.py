"""The annotators of bench/load.py, as locust users: each signs in on the login page, then labels
item after item the way the labeling page does it in a browser. bench/load.py starts them a few
a second (its --spawn-rate), and each starts labeling as soon as it has signed in.

One round: POST /studies/{slug}/next/ (only the first time: a submit already redirects to the
next item), GET the labeling page, 2-3 background draft saves (the page's autosave route, the
whole form each time, more dimensions answered each time), then the submit (the form's POST,
which claims the next item and redirects to it). Static files are left out: a browser has them
cached after the first page.

The "floor" scenario (`bench/load.py --scenario floor`): the same signed-in users ask, again
and again, for the cheapest page an annotator has, the "next item" page (the session, the user,
the study and one query, then a small template or a redirect). What it serves is the most this
stack serves on the machine for any page, and so the ceiling of the labeling scenario.

bench/load.py drives these users (`configure`, then locust's runner); it is not meant for the
`locust` command on its own.
"""

import random
import re
import time
from urllib.parse import urlencode

import gevent
from gevent.event import Event
from locust import FastHttpUser, constant, task
from locust.exception import StopUser

ITEM_PATH = re.compile(r"/studies/[\w-]+/items/(\d+)/$")
VERSION_INPUT = re.compile(r'name="version" value="(\d+)"')

# What the drafts and the submit choose: the starter codebook's screened-in answers (as in the
# tests), given a dimension or a few at a time, as an annotator would.
ANSWERS = {
    "screening": ["include"],
    "symptom": ["crash"],
    "root_cause": ["api_misuse"],
    "fix_pattern": ["fix_api_usage"],
    "debugging_practice": ["error_message_analysis"],
    "testing_practice": ["no_test_change"],
    "training_stage": ["model_initialization"],
}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
RATIONALE = {"root_cause": "The traceback shows the optimizer built before the extension."}


class Run:
    """State shared by the users of one run (one gevent process, so no locks)."""

    slug = ""
    origin = ""
    dimensions: list[str] = []
    credentials: list[tuple[str, str]] = []
    spawned = 0
    signed_in = 0
    sign_in_failed = 0
    # Why a sign-in failed when no request says so (an exception in the client, not a response).
    sign_in_exceptions: list[str] = []
    labeling: set[str] = set()  # the users who made a request after signing in
    stopping = False
    idle: Event = Event()
    active = 0
    submits: list[tuple[str, int]] = []  # (username, item id) of every submit answered 302
    out_of_items = 0
    think = 0.0  # mean seconds an annotator reads or thinks before a draft save or the submit
    scenario = "labeling"  # or "floor" (see above)


def configure(
    *,
    slug: str,
    origin: str,
    dimensions: list[str],
    credentials: list,
    think: float = 0.0,
    scenario: str = "labeling",
) -> None:
    Run.slug, Run.origin, Run.dimensions, Run.think = slug, origin, dimensions, think
    Run.scenario = scenario
    Run.credentials = [tuple(pair) for pair in credentials]


def form_body(answered: int, *, version: str, seconds: int, action: str, csrf: str = "") -> str:
    """The labeling form as the browser sends it, urlencoded: every dimension's fields, the
    first `answered` dimensions of ANSWERS chosen, the rest empty."""
    chosen = dict(list(ANSWERS.items())[:answered])
    fields: list[tuple[str, str]] = [
        ("version", version),
        ("seconds_spent", str(seconds)),
        ("action", action),
    ]
    for key in Run.dimensions:
        fields += [(f"dim-{key}", value) for value in chosen.get(key, [])]
        fields += [
            (f"rationale-{key}", RATIONALE.get(key, "") if key in chosen else ""),
            (f"evidence-{key}", ""),
            (f"proposal-{key}", ""),
        ]
    if csrf:
        fields.append(("csrfmiddlewaretoken", csrf))
    return urlencode(fields)


class Annotator(FastHttpUser):
    # No pause between items; within one, `Run.think` (0 by default: 50 annotators who never
    # pause are the load, not 50 real people) before each draft save and the submit.
    wait_time = constant(0)
    # Behind the production proxy every request arrives as HTTPS, so the CSRF check also
    # compares the origin; the browser sends one with every POST.
    default_headers = {"X-Forwarded-Proto": "https"}
    network_timeout = 30.0
    connection_timeout = 10.0

    def on_start(self) -> None:
        Run.spawned += 1
        self.username, password = Run.credentials.pop()
        try:
            signed_in = self._sign_in(password)
        except Exception as error:  # any failure of the client is a failed sign-in
            Run.sign_in_exceptions.append(f"{self.username}: {error!r}")
            signed_in = False
        if not signed_in:
            Run.sign_in_failed += 1
            raise StopUser(f"{self.username} could not sign in")
        self.item_id: int | None = None
        self.started = time.monotonic()
        Run.signed_in += 1
        Run.active += 1

    def _sign_in(self, password: str) -> bool:
        """The login page, then its form; a failure (a timeout included) is a failed request
        named "login page" or "login", so that it counts as an error."""
        with self.client.get(
            "/accounts/login/", name="login page", catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"login page: {response.status_code}")
                return False
        with self.client.post(
            "/accounts/login/",
            data=urlencode({"username": self.username, "password": password, "next": "/"}),
            headers=self._post_headers("/accounts/login/", **FORM),
            name="login",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code != 302:
                response.failure(f"login: {response.status_code} instead of a redirect")
                return False
        return True

    def _cookies(self) -> dict:
        """The session and CSRF cookies, sent by hand: they are Secure (production), and the
        client's cookie jar keeps but never sends them over the plain HTTP of this run, where
        a browser would send them over the proxy's HTTPS."""
        return {"Cookie": "; ".join(f"{c.name}={c.value}" for c in self.client.cookiejar)}

    def _post_headers(self, path: str, **more: str) -> dict:
        return {
            **self._cookies(),
            "X-CSRFToken": self._csrf(),
            "Origin": Run.origin,
            "Referer": Run.origin + path,
            **more,
        }

    def _csrf(self) -> str:
        for cookie in self.client.cookiejar:
            if cookie.name == "csrftoken":
                return cookie.value
        return ""

    def _leave(self) -> None:
        """Wait here for the runner to end this user: no request of it starts any more."""
        Run.active -= 1
        if Run.active <= 0:
            Run.idle.set()
        gevent.sleep(3600)

    def _stop_if_asked(self) -> None:
        if Run.stopping:
            self._leave()
        Run.labeling.add(self.username)

    def _follow(self, location: str) -> None:
        match = ITEM_PATH.search(location)
        if match is None:  # the queue page: nothing left to label
            Run.out_of_items += 1
            self._leave()
        self.item_id = int(match.group(1))

    def _next_page(self) -> None:
        """The floor scenario's one request: the "next item" page, which shows the button that
        claims an item, or sends to the item the user holds."""
        self._stop_if_asked()
        with self.client.get(
            f"/studies/{Run.slug}/next/",
            headers=self._cookies(),
            name="floor",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            # 302: the user holds an item from an earlier run (--reuse), and goes to it.
            if response.status_code not in (200, 302):
                response.failure(f"next page: {response.status_code}")

    def _think(self) -> None:
        if Run.think > 0:
            gevent.sleep(random.uniform(0.5, 1.5) * Run.think)

    def _seconds(self) -> int:
        return int(time.monotonic() - self.started)

    @task
    def label_one_item(self) -> None:
        if Run.scenario == "floor":
            self._next_page()
            return
        slug = Run.slug
        if self.item_id is None:
            self._stop_if_asked()
            path = f"/studies/{slug}/next/"
            with self.client.post(
                path,
                data=urlencode({"csrfmiddlewaretoken": self._csrf()}),
                headers=self._post_headers(path, **FORM),
                name="next",
                allow_redirects=False,
                catch_response=True,
            ) as response:
                if response.status_code != 302:
                    response.failure(f"next: {response.status_code} instead of a redirect")
                    return
            self._follow(response.headers["Location"])
        page = f"/studies/{slug}/items/{self.item_id}/"
        self._stop_if_asked()
        with self.client.get(
            page, headers=self._cookies(), name="page", catch_response=True
        ) as response:
            found = VERSION_INPUT.search(response.text or "")
            if response.status_code != 200 or found is None:
                response.failure(f"page: {response.status_code}, no form")
                self.item_id = None
                return
        version = found.group(1)
        n_dimensions = len(ANSWERS)
        drafts = random.choice((2, 3))
        for n in range(drafts):
            answered = max(1, round(n_dimensions * (n + 1) / drafts))
            self._think()
            self._stop_if_asked()
            with self.client.post(
                page + "draft/",
                data=form_body(answered, version=version, seconds=self._seconds(), action="draft"),
                headers=self._post_headers(page, Accept="application/json", **FORM),
                name="draft",
                catch_response=True,
            ) as response:
                if response.status_code != 200:
                    response.failure(f"draft: {response.status_code} {(response.text or '')[:120]}")
                    self.item_id = None
                    return
                version = str(response.json()["version"])
        self._think()
        self._stop_if_asked()
        with self.client.post(
            page,
            data=form_body(
                n_dimensions,
                version=version,
                seconds=self._seconds(),
                action="submit",
                csrf=self._csrf(),
            ),
            headers=self._post_headers(page, **FORM),
            name="submit",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            location = response.headers.get("Location", "") if response.status_code == 302 else ""
            if not location or location.endswith(page):
                response.failure(f"submit: {response.status_code}, not on to the next item")
                self.item_id = None
                return
        Run.submits.append((self.username, self.item_id))
        self._follow(location)
