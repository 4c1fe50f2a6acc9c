"""The top bar in a real browser: a study's full menu (a superuser who also annotates sees every
link) stays on one line at 1,400 px, and on a phone it becomes a row of its own that scrolls
sideways instead of widening the page."""

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def everything(study, people):
    """annotator1 made a superuser: every global and every study link of the menu."""
    user = people["annotator1"]
    user.is_superuser = True
    user.save(update_fields=["is_superuser"])
    return "annotator1"


def boxes(page) -> dict:
    return {
        name: page.locator(selector).bounding_box()
        for name, selector in [
            ("header", "header.topbar"),
            ("nav", "header nav"),
            ("link", "header nav a >> nth=0"),
            ("brand", "header .brand"),
            ("logout", "header .logout button"),
        ]
    }


@pytest.mark.parametrize("path", ["/studies/demo/", "/studies/demo/codebook/"])
def test_the_whole_menu_is_one_line_at_1400_px(everything, new_page, live_server, path):
    page = new_page(everything, width=1400, height=900)
    page.goto(f"{live_server.url}{path}")

    box = boxes(page)
    links = page.locator("header nav a")
    assert links.count() == 14  # 4 global links, the study and its 9 pages
    # One line: the menu is as high as one link, and the brand, the menu and the log-out
    # button share the bar's one row.
    assert box["nav"]["height"] < 1.5 * box["link"]["height"]
    assert box["header"]["height"] < 2 * box["logout"]["height"]
    assert box["logout"]["y"] < box["nav"]["y"] + box["nav"]["height"]
    tops = {round(links.nth(index).bounding_box()["y"]) for index in range(links.count())}
    assert len(tops) == 1
    # Nothing hidden in a scroll: every link is shown whole.
    assert page.evaluate(
        "() => { const nav = document.querySelector('header nav');"
        " return nav.scrollWidth <= nav.clientWidth; }"
    )


def test_on_a_phone_the_menu_is_a_row_that_scrolls_sideways(everything, new_page, live_server):
    page = new_page(everything, width=390, height=844)
    page.goto(f"{live_server.url}/studies/demo/")

    box = boxes(page)
    # The bar does not widen the page; the menu scrolls sideways, one line under the brand.
    assert page.evaluate("() => document.querySelector('header').scrollWidth") <= 390
    assert box["nav"]["height"] < 2 * box["link"]["height"]
    assert box["nav"]["y"] >= box["brand"]["y"] + box["brand"]["height"]
    assert box["logout"]["y"] < box["nav"]["y"]  # the log-out button stays on the first row
    assert box["nav"]["x"] >= 0 and box["nav"]["x"] + box["nav"]["width"] <= 390
    last = page.locator("header nav a").last
    last.scroll_into_view_if_needed()
    assert last.is_visible()
    last_box = last.bounding_box()
    assert last_box["x"] >= 0 and last_box["x"] + last_box["width"] <= 390
    assert not page.errors
