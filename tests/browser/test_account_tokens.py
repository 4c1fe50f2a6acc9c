"""The new API key's copy button in a real browser, under the production policy: it copies the
key with the Clipboard API, and without that API it selects the key and says what to do."""

import pytest
from playwright.sync_api import expect

from config.settings import base

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def production_policy(settings):
    """The policy of every environment: the button's script must work without eval or inline
    scripts."""
    settings.CONTENT_SECURITY_POLICY = base.CONTENT_SECURITY_POLICY


def create_token(page, live_server) -> str:
    page.goto(f"{live_server.url}/account/tokens/")
    page.get_by_label("Name").fill("lab server")
    page.get_by_role("button", name="Create token").click()
    page.wait_for_load_state()
    return page.get_by_label("Key", exact=True).input_value()


def test_the_copy_button_puts_the_key_on_the_clipboard(people, new_page, live_server):
    page = new_page("manager")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    key = create_token(page, live_server)

    page.get_by_role("button", name="Copy key").click()

    # The Clipboard API answers with a promise: wait for the status rather than read it at once.
    expect(page.get_by_role("status").filter(has_text="Copied.")).to_be_visible()
    assert page.evaluate("() => navigator.clipboard.readText()") == key
    assert key.startswith("ic_")
    assert not page.errors


def test_without_the_clipboard_api_the_key_is_selected(people, new_page, live_server):
    page = new_page("manager")
    # A browser without the Clipboard API (or an insecure origin).
    page.add_init_script("Object.defineProperty(navigator, 'clipboard', {value: undefined})")
    key = create_token(page, live_server)

    page.get_by_role("button", name="Copy key").click()

    field = page.get_by_label("Key", exact=True)
    selection = field.evaluate("input => [input.selectionStart, input.selectionEnd]")
    assert selection == [0, len(key)]
    status = page.locator("#copy-state")
    assert status.inner_text() in ("Copied.", "Selected: press Ctrl+C (⌘C on a Mac) to copy.")
    assert not page.errors
