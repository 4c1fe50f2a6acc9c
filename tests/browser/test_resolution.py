"""From labeling to a fully resolved gold set in a real browser: two annotators disagree on one
dimension, the adjudicator resolves it with the keyboard, and an annotator sees the gold label."""

import os
import re

import pytest

from labeling.models import Resolution, StudyItem
from labeling.services.studies import study_create

pytestmark = pytest.mark.browser
SCREENSHOTS = os.environ.get("RESOLUTION_SCREENSHOTS")  # a folder, to look at the pages


@pytest.fixture
def one_item_study(codebook_version, sample_issues, people):
    return study_create(
        slug="demo",
        name="Demo",
        codebook_version=codebook_version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
        issues=sample_issues[:1],
    )


def label_with_keyboard(page, live_server, root_cause_key: str) -> str:
    """Screening Include, symptom Crash, root cause the n-th, then the required rest; submit."""
    page.goto(f"{live_server.url}/studies/demo/queue/")
    page.get_by_role("button", name="Label next item").click()  # a POST: claiming is never a GET
    page.wait_for_url(re.compile(r"/studies/demo/items/\d+/$"))
    item_url = page.url
    # screening, symptom, root cause, fix pattern, debugging practice, then three dimensions on
    # to the stage (as in test_labeling_page's keyboard test).
    keys = ["1", "j", "1", "j", root_cause_key, "j", "1", "j", "1", "j", "j", "j", "1"]
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: url != item_url)
    return item_url


def shoot(page, name: str, selector: str | None = None) -> None:
    if not SCREENSHOTS:
        return
    path = os.path.join(SCREENSHOTS, f"{name}.png")
    if selector:
        page.locator(selector).screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=True)


def test_from_two_labels_to_a_resolved_gold_set(one_item_study, new_page, live_server):
    first = new_page("annotator1")
    item_url = label_with_keyboard(first, live_server, "1")  # API Misuse
    second = new_page("annotator2")
    label_with_keyboard(second, live_server, "2")  # External Library API Misuse
    item = StudyItem.objects.get()
    assert item.status == StudyItem.Status.IN_RESOLUTION

    adjudicator = new_page("adjudicator")
    adjudicator.goto(f"{live_server.url}/studies/demo/")
    adjudicator.get_by_role("link", name="Disagreements", exact=True).click()
    adjudicator.wait_for_url(re.compile(r"/disagreements/$"))
    assert adjudicator.get_by_text("1 open disagreement").is_visible()
    assert adjudicator.get_by_label("Dimension").input_value() == ""
    row = adjudicator.locator("table.disagreements tbody tr")
    assert row.count() == 1
    assert "Root cause" in row.inner_text()
    shoot(adjudicator, "disagreements")

    # Tab to the row's Resolve link and open it with Enter.
    resolve = adjudicator.get_by_role("link", name="Resolve Root cause")
    for _ in range(40):
        adjudicator.keyboard.press("Tab")
        if resolve.evaluate("link => link === document.activeElement"):
            break
    else:
        pytest.fail("the Resolve link is not reachable with Tab")
    adjudicator.keyboard.press("Enter")
    adjudicator.wait_for_url(re.compile(r"/items/\d+/resolve/"))
    decision = adjudicator.get_by_role("form", name="Decision on Root cause")
    assert decision.is_visible()
    side_by_side = adjudicator.locator("#dimension-root_cause table").inner_text()
    assert "annotator1" in side_by_side and "annotator2" in side_by_side
    assert "API Misuse" in side_by_side and "External Library API Misuse" in side_by_side
    shoot(adjudicator, "resolve")
    shoot(adjudicator, "resolve-root-cause", "#dimension-root_cause")

    # Keyboard: focus the labelled gold radio, pick with Space, Tab to the method and the note,
    # type why, Tab to the button, Enter.
    choice = decision.get_by_label("External Library API Misuse", exact=True)
    choice.focus()
    adjudicator.keyboard.press("Space")
    assert choice.is_checked()
    for _ in range(60):
        adjudicator.keyboard.press("Tab")
        if decision.get_by_label("Note on Root cause").evaluate(
            "note => note === document.activeElement"
        ):
            break
    else:
        pytest.fail("the note is not reachable with Tab")
    adjudicator.keyboard.type("the call into the external library was wrong")
    adjudicator.keyboard.press("Tab")
    button = decision.get_by_role("button", name="Save the gold label of Root cause")
    assert button.evaluate("button => button === document.activeElement")
    adjudicator.keyboard.press("Enter")
    adjudicator.wait_for_url(re.compile(r"/disagreements/(#.*)?$"))
    assert "is resolved" in adjudicator.locator(".messages").inner_text()
    assert adjudicator.get_by_text("0 open disagreements").is_visible()

    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    gold = Resolution.objects.get(item=item, dimension__key="root_cause")
    assert [c.key for c in gold.categories.all()] == ["external_api_misuse"]
    assert gold.method == "adjudicated"

    adjudicator.goto(f"{live_server.url}/studies/demo/items/{item.id}/resolve/")
    assert adjudicator.locator(".item-status").inner_text() == "Resolved"
    adjudicator.locator("#dimension-root_cause summary").first.click()
    adjudicator.locator("#dimension-root_cause details.history summary").click()
    shoot(adjudicator, "resolved-root-cause", "#dimension-root_cause")
    adjudicator.goto(f"{live_server.url}/studies/demo/")
    assert "0 in resolution, 1 resolved" in adjudicator.content()

    first.goto(item_url)
    outcome = first.get_by_role("region", name="Outcome of this item")
    assert outcome.is_visible()
    assert "External Library API Misuse" in outcome.inner_text()
    assert "the call into the external library was wrong" in outcome.inner_text()
    first.get_by_label("Add to the discussion").fill("Agreed, thanks.")
    first.get_by_role("button", name="Post comment").click()
    first.wait_for_url(re.compile(r"#discussion$"))
    assert "Agreed, thanks." in first.get_by_role("region", name="Discussion").inner_text()
    shoot(first, "outcome")

    for page in (first, second, adjudicator):
        assert not page.errors
