"""The hostile Markdown corpus (tests/security/hostile_payloads.jsonl) in Chromium: stored through
the import service as issue bodies and comments, shown on the labeling and resolution pages, once
under the production Content-Security-Policy and once with no policy at all, so that the
sanitiser alone is shown to stop every payload. Links are hovered, focused and clicked, and every
element of the issue gets the events that inline handlers wait for; nothing may run, open a
dialog, navigate or call out, and the payloads' harmless text stays on the page."""

import io
import json

import pytest
from playwright.sync_api import Error as PlaywrightError

from config.settings import base
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from labeling.models import StudyItem
from labeling.services.studies import study_create
from tests.security.hostile_corpus import (
    REPOSITORY,
    hostile_issue_objects,
    hostile_payloads,
    text_collapse,
)

pytestmark = pytest.mark.browser
PAYLOADS = hostile_payloads()
# Payloads on one page: the issue's body and its comments. Each is rendered on its own, so an
# unclosed tag in one cannot swallow the next.
PER_PAGE = 26
SAFE_PROTOCOLS = ["http:", "https:", "mailto:"]
FORBIDDEN = [
    "script", "style", "iframe", "frame", "object", "embed", "applet", "form", "input", "button",
    "select", "textarea", "svg", "math", "base", "meta", "link", "img", "video", "audio",
    "source", "template", "noscript", "portal",
]  # fmt: skip

# What the live DOM of the issue holds that could run, load or restyle (Chromium's own parse of
# the stored HTML, the last word on mutation tricks).
DOM_PROBLEMS = """([forbidden, safeProtocols]) => {
  const problems = [];
  for (const root of document.querySelectorAll("#issue .markdown")) {
    for (const element of root.querySelectorAll("*")) {
      const tag = element.localName;
      if (element.namespaceURI !== "http://www.w3.org/1999/xhtml") problems.push("foreign " + tag);
      if (forbidden.includes(tag)) problems.push("<" + tag + ">");
      for (const attribute of element.attributes) {
        const name = attribute.name.toLowerCase();
        if (name.startsWith("on") || name === "style" || name === "srcdoc") {
          problems.push(name + " on <" + tag + ">");
        }
      }
      const link = tag === "a" && element.hasAttribute("href");
      if (link && !safeProtocols.includes(element.protocol)) {
        problems.push("link to " + element.protocol);
      }
    }
  }
  return problems;
}"""

# Keeps the page where it is when a safe link is clicked (an http(s) link leaving is expected
# and would end the check); a link with any other scheme is left to do what it does.
STAY_ON_SAFE_LINKS = """(safeProtocols) => {
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[href]");
    if (link && safeProtocols.includes(link.protocol)) event.preventDefault();
  }, true);
}"""

# Every event an inline handler of the corpus waits for, on every element of the issue, and every
# folded block opened (a toggle event).
PROVOKE = """() => {
  const events = [
    "mouseover", "mouseenter", "mousemove", "mousedown", "mouseup", "click", "dblclick",
    "pointerover", "pointerdown", "focus", "focusin", "blur", "toggle", "load",
    "error", "animationstart", "animationend", "transitionend", "begin", "start",
  ];
  for (const root of document.querySelectorAll("#issue .markdown")) {
    for (const details of root.querySelectorAll("details")) details.open = true;
    for (const element of root.querySelectorAll("*")) {
      for (const type of events) element.dispatchEvent(new Event(type, { bubbles: true }));
      if (typeof element.focus === "function") element.focus();
    }
  }
}"""


@pytest.fixture
def hostile_study(codebook_version, people):
    objects = hostile_issue_objects(PAYLOADS, per_issue=PER_PAGE)
    import_file = io.BytesIO(b"".join(json.dumps(obj).encode() + b"\n" for obj in objects))
    report = issues_import(objects=issue_file_lines(import_file))
    assert report.errors == []
    study_create(
        slug="hostile",
        name="Hostile",
        codebook_version=codebook_version,
        k=1,
        annotators=[people["annotator1"]],
        managers=[people["manager"]],
        issues=list(Issue.objects.filter(repository__owner=REPOSITORY.split("/")[0])),
    )
    items = StudyItem.objects.filter(study__slug="hostile").order_by("issue__number")
    return [
        (item.id, PAYLOADS[index * PER_PAGE : (index + 1) * PER_PAGE])
        for index, item in enumerate(items)
    ]


class Watch:
    """What a page does that a payload could have caused."""

    def __init__(self, page, live_server) -> None:
        self.page = page
        self.origin = live_server.url
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.navigations: list[str] = []
        self.refusals: list[str] = []
        page.on("dialog", self._dialog)
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("framenavigated", self._navigated)
        page.on("console", self._console)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _navigated(self, frame) -> None:
        if frame == self.page.main_frame:
            self.navigations.append(frame.url)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text:
            self.refusals.append(message.text)

    def clear(self) -> None:
        for seen in (self.dialogs, self.requests, self.navigations, self.refusals):
            seen.clear()
        self.page.errors.clear()

    def outside_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(self.origin + "/")]


def check_page(watch: Watch, url: str, payloads, policy: str) -> None:
    page = watch.page
    watch.clear()
    response = page.goto(url)
    assert response.ok, url
    assert ("content-security-policy" in response.headers) == (policy == "production"), policy
    watch.navigations.clear()  # the visit itself
    assert page.evaluate(DOM_PROBLEMS, [FORBIDDEN, SAFE_PROTOCOLS]) == []
    page.evaluate(STAY_ON_SAFE_LINKS, SAFE_PROTOCOLS)
    page.evaluate(PROVOKE)
    context = f"{policy} policy, {url}"
    links = page.locator("#issue .markdown a")
    for index in range(links.count()):
        link = links.nth(index)
        try:
            if link.is_visible():
                link.hover(timeout=2_000)
                link.click(timeout=2_000)
            link.focus(timeout=2_000)
        except PlaywrightError as error:  # a link that ran script may have replaced the page
            pytest.fail(f"{context}: the page was lost at its link {index}: {error.message}")
    page.wait_for_timeout(100)  # handlers of load and error events fire a moment later
    assert page.evaluate("() => typeof window.__pwned") == "undefined", context
    assert watch.dialogs == [], context
    assert watch.navigations == [] and page.url == url, context
    assert watch.outside_requests() == [], context
    assert watch.refusals == [], context  # nothing even tried to run
    assert page.errors == [], context
    text = text_collapse(page.locator("#issue").inner_text())
    missing = [
        (payload.name, shown)
        for payload in payloads
        for shown in payload.shows
        if text_collapse(shown) not in text
    ]
    assert missing == [], context


# The production policy, then none: the sanitiser alone must stop every payload.
@pytest.mark.parametrize("policy", ["production", "no"])
def test_no_hostile_payload_runs_on_the_pages_that_show_issues(
    policy, hostile_study, new_page, live_server, settings
):
    settings.CONTENT_SECURITY_POLICY = (
        base.CONTENT_SECURITY_POLICY if policy == "production" else None
    )
    annotator = Watch(new_page("annotator1"), live_server)
    manager = Watch(new_page("manager"), live_server)
    study_url = f"{live_server.url}/studies/hostile"
    for item_id, payloads in hostile_study:
        check_page(annotator, f"{study_url}/items/{item_id}/", payloads, policy)
        check_page(manager, f"{study_url}/items/{item_id}/resolve/", payloads, policy)
    assert sum(len(payloads) for _, payloads in hostile_study) == len(PAYLOADS)
