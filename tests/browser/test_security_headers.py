"""The Content-Security-Policy in a real browser: the pages work under it and nothing on them is
refused (Chromium reports every refusal on the console)."""

import re

import pytest

from config.settings import base

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def production_policy(settings):
    """The policy of every environment, without the eval the other browser tests need."""
    settings.CONTENT_SECURITY_POLICY = base.CONTENT_SECURITY_POLICY


def csp_violations(page) -> list[str]:
    """Collects what Chromium reports refusing under the policy."""
    violations: list[str] = []

    def on_console(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    page.on("console", on_console)
    return violations


def test_the_labeling_page_works_under_the_policy(study, new_page, live_server):
    page = new_page("annotator1")
    violations = csp_violations(page)
    page.goto(f"{live_server.url}/studies/demo/next/")
    page.wait_for_url(re.compile(r"/studies/demo/items/\d+/$"))
    policy = page.evaluate(
        "fetch(location.href).then(response => response.headers.get('content-security-policy'))"
    )
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    page.keyboard.press("?")  # the page's own script opens the shortcuts
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert dialog.is_visible()
    page.keyboard.press("Escape")
    # A key pressed while the dialog is still closing goes to the dialog and is lost.
    dialog.wait_for(state="hidden")
    page.keyboard.press("1")  # a draft saved with htmx/fetch
    # A function, not an expression: Playwright evaluates expressions with eval, which the
    # policy refuses.
    page.wait_for_function(
        "() => document.getElementById('save-state').textContent.includes('saved')"
    )
    page.wait_for_load_state("networkidle")
    assert violations == []
    assert not page.errors


def test_the_agreement_page_and_the_login_page_under_the_policy(study, new_page, live_server):
    page = new_page()
    violations = csp_violations(page)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("manager")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/studies/demo/agreement/")
    page.wait_for_load_state("networkidle")
    assert page.get_by_role("heading").first.is_visible()
    assert violations == []
    assert not page.errors


def test_the_api_docs_render_under_their_policy(study, new_page, live_server):
    page = new_page("manager")
    violations = csp_violations(page)
    page.goto(f"{live_server.url}/api/docs/")
    # Swagger UI built the page from the schema: the operations are listed.
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() > 10
    page.wait_for_load_state("networkidle")
    assert violations == []
    assert not page.errors
