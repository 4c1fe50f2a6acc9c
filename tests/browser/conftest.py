"""Browser tests: Playwright drives Debian's Chromium (the `chromium` binary on PATH) against
Django's live server. They fail in CI when Chromium is missing and skip elsewhere."""

import os
import shutil

import pytest

from tests.conftest import require_service

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "a-long-test-password"
AUTOSAVE_DELAY_MS = 800  # web/static/web/labeling.js, saveSoon

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make between
# browser steps are ordinary synchronous calls all the same.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium")
    require_service(
        executable is not None,
        "Chromium",
        "install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser, live_server):
    contexts = []

    def open_page(username: str | None = None, *, width: int = 1280, height: int = 800):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.errors = errors
        if username:
            page.goto(f"{live_server.url}/accounts/login/")
            page.get_by_label("Username").fill(username)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url(f"{live_server.url}/")
        return page

    yield open_page
    # Let background saves finish before the database is emptied for the next test: a labeling
    # page sends its draft 800 ms after the last change, later than "network idle" (500 ms
    # without requests) can see, and a save still running while the tables are truncated
    # deadlocks on PostgreSQL.
    for context in contexts:
        for page in context.pages:
            if "/items/" in page.url:
                page.wait_for_timeout(AUTOSAVE_DELAY_MS + 200)
            page.wait_for_load_state("networkidle")
        context.close()
