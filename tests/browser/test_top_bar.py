"""The app shell in a real browser: the study's tabs are the same on every page of the study,
the current one marked, and only the pages the user may open; on a phone the menu folds behind
one button and no page is wider than the window."""

import pytest

pytestmark = pytest.mark.browser

MANAGER_TABS = [
    "Overview", "Agreement", "Disagreements", "Report", "To re-check",
    "Codebook", "Proposals", "Members", "Machines", "Export",
]  # fmt: skip


def tabs(page) -> list[str]:
    return page.locator("nav.study-tabs a").all_inner_texts()


@pytest.mark.parametrize(
    ("path", "current"),
    [
        ("/studies/demo/", "Overview"),
        ("/studies/demo/agreement/", "Agreement"),
        ("/studies/demo/disagreements/", "Disagreements"),
        ("/studies/demo/codebook/", "Codebook"),
        ("/studies/demo/export/", "Export"),
        ("/studies/demo/machines/", "Machines"),
    ],
)
def test_a_manager_sees_the_same_tabs_everywhere_and_no_queue(
    study, new_page, live_server, path, current
):
    page = new_page("manager")
    page.goto(f"{live_server.url}{path}")
    assert tabs(page) == MANAGER_TABS  # a manager who does not annotate has no queue
    assert page.locator("nav.study-tabs a[aria-current=page]").inner_text() == current
    header = page.locator("header.shell").bounding_box()
    assert header["height"] < 120  # one bar and one row of tabs
    assert not page.errors


def test_an_annotator_sees_their_queue_and_not_the_overseers_pages(study, new_page, live_server):
    page = new_page("annotator1")
    page.goto(f"{live_server.url}/studies/demo/queue/")
    assert tabs(page) == ["Overview", "My queue", "To re-check"]
    assert page.locator("nav.study-tabs a[aria-current=page]").inner_text() == "My queue"


def test_the_switcher_and_the_user_menu_open_and_close(study, new_page, live_server):
    page = new_page("manager")
    page.goto(f"{live_server.url}/studies/demo/")
    page.locator("details.switcher summary").click()
    assert page.get_by_role("link", name="All my studies").is_visible()
    page.keyboard.press("Escape")
    assert not page.get_by_role("link", name="All my studies").is_visible()
    page.locator("details.user-menu summary").click()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(lambda url: "/accounts/" in url or url.endswith("/"))
    assert not page.errors


def test_on_a_phone_the_menu_folds_behind_one_button(study, new_page, live_server):
    page = new_page("manager", width=390, height=844)
    page.goto(f"{live_server.url}/studies/demo/")
    toggle = page.get_by_role("button", name="Menu")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not page.locator("nav.study-tabs").is_visible()
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert tabs(page) == MANAGER_TABS
    page.locator("nav.study-tabs").get_by_role("link", name="Members").click()
    page.wait_for_url(f"{live_server.url}/studies/demo/members/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not page.errors


def test_the_skip_link_leads_to_the_content(study, new_page, live_server):
    page = new_page("manager")
    page.goto(f"{live_server.url}/studies/demo/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
