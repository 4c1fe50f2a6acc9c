"""The labeling page in a real browser: keyboard only, drafts, blindness, skipping, big issues,
lost connections."""

import json
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from corpus.models import Issue
from labeling.models import Annotation, Assignment
from tests.browser.conftest import AUTOSAVE_DELAY_MS

pytestmark = pytest.mark.browser


def chosen(username: str) -> dict[str, list[str]]:
    """The stored labels of the user's first assignment that has any, by dimension key."""
    labels: dict[str, list[str]] = {}
    for annotation in Annotation.objects.filter(assignment__annotator__username=username):
        keys = sorted(c.key for c in annotation.categories.all())
        if keys:
            labels[annotation.dimension.key] = keys
    return labels


def open_next(page, live_server) -> str:
    """Press "Label next item" on the queue (a POST: claiming is never a GET); the item's URL."""
    page.goto(f"{live_server.url}/studies/demo/queue/")
    page.get_by_role("button", name="Label next item").click()
    page.wait_for_url(re.compile(r"/studies/demo/items/\d+/$"))
    return page.url


def test_label_with_the_keyboard_only_submit_and_reload(study, new_page, live_server):
    page = new_page("annotator1")
    item_url = open_next(page, live_server)
    # screening, symptom, root cause (+ unsure), fix pattern, debugging practice, then three
    # dimensions on to the stage.
    keys = ["1", "j", "1", "j", "2", "u", "j", "1", "j", "1", "j", "j", "j", "1"]
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: url != item_url)

    assignment = Assignment.objects.get(annotator__username="annotator1", status="submitted")
    labels = chosen("annotator1")
    assert labels["screening"] == ["include"]
    assert labels["symptom"] == ["crash"]
    assert labels["root_cause"] == ["external_api_misuse"]
    assert Annotation.objects.get(assignment=assignment, dimension__key="root_cause").unsure
    assert assignment.seconds_spent >= 0

    page.goto(item_url)
    assert page.get_by_label("External Library API Misuse").is_checked()
    assert page.get_by_label("Unsure about Root cause").is_checked()
    assert not page.errors


def test_a_key_from_the_closed_shortcuts_close_button_is_the_pages(study, new_page, live_server):
    # Just after Escape closes the list, its Close button (in a form of its own) may still be
    # the key's target: the page takes the key, as it does once the focus is back on it.
    page = new_page("annotator1")
    open_next(page, live_server)
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
    page.evaluate(
        """() => {
          const dialog = document.getElementById("shortcuts");
          const close = dialog.querySelector("button");
          dialog.close();
          close.dispatchEvent(new KeyboardEvent("keydown", { key: "1", bubbles: true }));
        }"""
    )
    assert page.locator("fieldset[data-dimension=screening] input:checked").count() == 1
    page.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    assert not page.errors


# A number pressed at once after Escape closed the shortcuts used to be lost (about one run
# in ten): the list's Close button, in a form of its own, still had the focus, and the page
# ignored keys from other forms.
def test_shortcuts_and_filter(study, new_page, live_server):
    page = new_page("annotator1")
    open_next(page, live_server)
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert dialog.is_visible()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    page.keyboard.press("1")  # screened in: the other dimensions apply, and `j` reaches them
    page.wait_for_function(
        "!document.querySelector('fieldset[data-dimension=root_cause]').disabled"
    )
    # The screening's draft saved first, so that the save below is told apart from it.
    page.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    page.evaluate("() => { document.getElementById('save-state').textContent = ''; }")
    page.keyboard.press("j")
    page.keyboard.press("j")  # root cause
    page.keyboard.press("/")
    page.keyboard.type("deadlock")
    page.keyboard.press("Tab")
    page.keyboard.press("k")
    page.keyboard.press("j")
    first_visible = page.evaluate(
        "document.querySelector('fieldset[data-dimension=root_cause] "
        "li.category:not([hidden]) input').value"
    )
    assert page.locator("fieldset[data-dimension=root_cause] li.category:not([hidden])").count() < 5
    page.keyboard.press("1")
    page.wait_for_function(
        "document.getElementById('save-state').textContent.includes('saved')", timeout=20_000
    )
    assert chosen("annotator1")["root_cause"] == [first_visible]


def test_draft_survives_a_reload(study, new_page, live_server):
    page = new_page("annotator1")
    item_url = open_next(page, live_server)
    page.get_by_label("Include").check()
    page.locator("fieldset[data-dimension=screening] summary").click()
    page.get_by_label("Rationale for Screening").fill("a real training bug")
    page.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    page.reload()
    assert page.get_by_label("Include").is_checked()
    assert page.get_by_label("Rationale for Screening").input_value() == "a real training bug"
    draft = Assignment.objects.get(annotator__username="annotator1", status="draft")
    assert draft.item_id == int(item_url.rstrip("/").split("/")[-1])


def test_a_lost_connection_queues_the_save_and_retries(study, new_page, live_server):
    page = new_page("annotator1")
    open_next(page, live_server)
    page.context.set_offline(True)
    page.get_by_label("Not a Bug (False Positive)").check()
    page.wait_for_function("document.getElementById('save-state').textContent.includes('Offline')")
    assert not Annotation.objects.exists()
    page.context.set_offline(False)
    page.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    assert chosen("annotator1") == {"screening": ["not_a_bug"]}


def test_two_tabs_cannot_overwrite_each_other_silently(study, new_page, live_server):
    first = new_page("annotator1")
    item_url = open_next(first, live_server)
    second = first.context.new_page()
    second.goto(item_url)
    first.get_by_label("Include").check()
    first.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    second.get_by_label("Duplicate").check()
    second.wait_for_function(
        "document.getElementById('save-state').textContent.includes('another tab')"
    )
    assert chosen("annotator1") == {"screening": ["include"]}


def test_annotator2_never_sees_annotator1s_labels(study, new_page, live_server):
    first = new_page("annotator1")
    item_url = open_next(first, live_server)
    first.get_by_label("Include").check()
    first.locator("fieldset[data-dimension=screening] summary").click()
    first.get_by_label("Rationale for Screening").fill("secret reasoning of annotator1")
    first.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")

    second = new_page("annotator2")
    second.goto(item_url)  # the same item is assigned to both (k = 2 of 2 annotators)
    assert not second.get_by_label("Include").is_checked()
    assert "secret reasoning" not in second.content()
    second.goto(f"{live_server.url}/api/studies/demo/")
    assert "secret reasoning" not in second.content()
    assert second.goto(f"{live_server.url}/studies/demo/agreement/").status == 403


def test_skip_with_a_reason(study, new_page, live_server):
    page = new_page("annotator1")
    item_url = open_next(page, live_server)
    page.keyboard.press("s")
    page.keyboard.type("not about a training system")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url != item_url)
    skipped = Assignment.objects.get(annotator__username="annotator1", status="skipped")
    assert skipped.skip_reason == "not about a training system"


def test_an_issue_with_200_comments_and_a_1mb_traceback_stays_usable(
    codebook_version, people, new_page, live_server, tmp_path
):
    traceback = (
        "Traceback (most recent call last):\n"
        + "".join(
            f'  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", '
            f"line {n}, in step\n    self.optimizer.step()\n"
            for n in range(9_000)
        )
        + "torch.cuda.OutOfMemoryError: CUDA out of memory.\n"
    )
    record = {
        "repository": "microsoft/DeepSpeed",
        "number": 424242,
        "id": 424242,
        "title": "OOM with ZeRO-3 offload",
        "body": "Training crashes:\n\n```\n" + traceback + "```\n",
        "state": "closed",
        "user": {"login": "reporter"},
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-02T00:00:00Z",
        "comments_data": [
            {
                "id": 1_000_000 + n,
                "user": {"login": f"user{n}"},
                "body": f"Same here, comment {n} with `code` and a [link](https://example.org/{n}).",
                "created_at": "2024-01-01T01:00:00Z",
                "updated_at": "2024-01-01T01:00:00Z",
            }
            for n in range(200)
        ],
    }
    assert len(record["body"]) > 1_000_000
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(record))
    call_command("import_issues", str(path))
    from labeling.services.studies import study_create

    study_create(
        slug="demo",
        name="Demo",
        codebook_version=codebook_version,
        k=1,
        annotators=[people["annotator1"]],
        issues=list(Issue.objects.all()),
    )
    page = new_page("annotator1")
    open_next(page, live_server)
    assert page.locator("section.comment").count() == 200
    assert page.locator("details.long-block").count() == 1  # the traceback is folded
    page.keyboard.press("2")  # screened out: nothing else is required
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/studies/demo/queue/$"))
    assert Assignment.objects.get().status == "submitted"


def test_narrow_window_still_labels(study, new_page, live_server):
    page = new_page("annotator1", width=480, height=800)
    open_next(page, live_server)
    page.get_by_label("Include").check()
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_load_state()
    assert chosen("annotator1") == {"screening": ["include"]}


def test_the_page_and_the_submit_check_agree_on_which_dimensions_apply(
    study, new_page, live_server
):
    """For every answer to screening (none, then each category), the dimensions the page greys
    out are exactly those the service's rule (Dimension.applies_given) says do not apply."""
    from taxonomy.selectors import dimensions_of_version

    dimensions = list(dimensions_of_version(version=study.codebook_version))
    conditional = [d for d in dimensions if d.applies_when]
    assert conditional, "the starter codebook has dimensions that apply after screening"
    screening = next(d for d in dimensions if d.key == "screening")
    page = new_page("annotator1")
    open_next(page, live_server)

    def greyed() -> set[str]:
        return set(
            page.locator("fieldset.dimension.not-applicable").evaluate_all(
                "nodes => nodes.map(n => n.dataset.dimension)"
            )
        )

    def expected(keys: set[str]) -> set[str]:
        chosen = {d.key: set() for d in dimensions} | {"screening": keys}
        return {d.key for d in conditional if not d.applies_given(chosen)}

    assert greyed() == expected(set())
    for category in screening.categories.order_by("position"):
        page.locator(f'fieldset[data-dimension=screening] input[value="{category.key}"]').check()
        assert greyed() == expected({category.key}), category.key
    assert not page.errors


def _delay_draft_replies(page, delay_ms: int) -> list[int]:
    """Let every background draft save reach the server at once but hold its reply for
    `delay_ms`, as a slow network does; the statuses of those replies, in order."""
    statuses: list[int] = []

    def slow_reply(route):
        response = route.fetch()
        statuses.append(response.status)
        page.wait_for_timeout(delay_ms)
        route.fulfill(response=response)

    page.route(re.compile(r"/studies/demo/items/\d+/draft/$"), slow_reply)
    return statuses


def _until_the_server_answered(page, statuses: list[int]) -> None:
    """Wait until the server has answered a draft save (its reply is still held back)."""
    for _ in range(100):
        if statuses:
            return
        page.wait_for_timeout(50)
    raise AssertionError("no draft save reached the server")


def test_a_submit_right_after_a_draft_save_waits_for_it_instead_of_conflicting(
    study, new_page, live_server
):
    """A change and Ctrl+Enter while the background draft save is on its way: the submit is
    held until the draft's reply brings the new version, then sent with it (no "changed in
    another tab"); it carries the later change, and no draft save follows it."""
    page = new_page("annotator1")
    item_url = open_next(page, live_server)
    draft_statuses = _delay_draft_replies(page, 600)
    item_posts: list[int] = []
    page.on(
        "response",
        lambda response: (
            item_posts.append(response.status)
            if response.request.method == "POST" and response.url == item_url
            else None
        ),
    )
    page.keyboard.press("2")  # screened out: nothing else is required
    page.wait_for_timeout(AUTOSAVE_DELAY_MS)
    _until_the_server_answered(page, draft_statuses)  # the draft is saved, its reply held back
    page.keyboard.press("3")  # changed her mind: out of scope
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: url != item_url)
    page.wait_for_timeout(AUTOSAVE_DELAY_MS + 700)  # a late draft save would have gone by now

    assert item_posts == [302], item_posts
    assert draft_statuses == [200]
    item_id = int(item_url.rstrip("/").split("/")[-1])
    assignment = Assignment.objects.get(annotator__username="annotator1", item_id=item_id)
    assert assignment.status == "submitted"
    assert chosen("annotator1") == {"screening": ["out_of_scope"]}
    assert not page.errors


def test_a_held_submit_still_meets_a_real_conflict(study, new_page, live_server):
    """Another tab saved first: the draft save on its way and the submit held behind it are both
    refused, and the other tab's labels stay."""
    first = new_page("annotator1")
    item_url = open_next(first, live_server)
    second = first.context.new_page()
    second.goto(item_url)
    second.get_by_label("Duplicate").check()
    second.wait_for_function("document.getElementById('save-state').textContent.includes('saved')")
    first.bring_to_front()
    draft_statuses = _delay_draft_replies(first, 600)
    first.keyboard.press("2")
    first.wait_for_timeout(AUTOSAVE_DELAY_MS)
    _until_the_server_answered(first, draft_statuses)
    with first.expect_response(
        lambda response: response.url == item_url and response.request.method == "POST"
    ) as submitted:
        first.keyboard.press("Control+Enter")
    assert submitted.value.status == 409
    assert draft_statuses == [409]
    first.wait_for_load_state()
    expect(first.get_by_text("changed in another tab").first).to_be_visible()
    assert Assignment.objects.get(annotator__username="annotator1", status="draft")
    assert chosen("annotator1") == {"screening": ["duplicate"]}


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def _hidden_choices(page, definition) -> list[str]:
    """The category choices of the page (their labels) that the shown definition covers."""
    box = definition.bounding_box()
    assert box, "the definition is shown"
    labels = page.locator("li.category:not([hidden]) > label")
    return [
        labels.nth(index).inner_text()
        for index in range(labels.count())
        if (other := labels.nth(index).bounding_box()) and _overlap(box, other)
    ]


@pytest.mark.parametrize("width", [1280, 360])
def test_a_definition_shows_without_hiding_the_other_categories(
    study, new_page, live_server, width
):
    """The definition of the focused category (the keyboard's) and, in a window wide enough,
    of the hovered one shows where it covers no other choice; it stays the input's
    accessible description."""
    page = new_page("annotator1", width=width)
    open_next(page, live_server)
    page.keyboard.press("1")  # screened in: the other dimensions apply, and `j` reaches them
    page.keyboard.press("j")
    page.keyboard.press("j")  # root cause: categories with long definitions
    page.keyboard.press("1")  # API Misuse, focused
    api_misuse = page.locator('input[value="api_misuse"]')
    expect(api_misuse).to_be_focused()
    expect(api_misuse).to_have_accessible_description(re.compile(r"\S{3,}.*Include:"))
    definition = page.locator("#" + api_misuse.get_attribute("aria-describedby"))
    expect(definition).to_be_visible()
    assert _hidden_choices(page, definition) == []

    if width >= 1280:
        wrong_default = page.locator('input[value="wrong_default"]')
        wrong_default.hover()
        hovered = page.locator("#" + wrong_default.get_attribute("aria-describedby"))
        expect(hovered).to_be_visible()
        assert _hidden_choices(page, hovered) == []
    assert not page.errors


@pytest.fixture
def study_with_examples(sample_issues, people):
    """The demo study on the starter codebook, whose Include carries examples."""
    from labeling.services.studies import study_create
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load
    from tests.conftest import CODEBOOK_FILE

    data = json.loads(CODEBOOK_FILE.read_bytes())
    screening = next(d for d in data["dimensions"] if d["key"] == "screening")
    include = next(c for c in screening["categories"] if c["key"] == "include")
    include["examples"] = ["microsoft/DeepSpeed#4242", "<b>not markup</b>"]
    version, _ = codebook_load(data=codebook_file_read(json.dumps(data).encode()), publish=True)
    return study_create(
        slug="demo",
        name="Demo",
        codebook_version=version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        issues=sample_issues,
    )


def test_a_categorys_examples_show_with_its_definition_and_take_the_keyboard(
    study_with_examples, new_page, live_server
):
    page = new_page("annotator1")
    open_next(page, live_server)
    page.keyboard.press("1")  # Include, focused: its definition shows with the examples
    include = page.locator('input[value="include"]')
    expect(include).to_be_focused()
    definition = page.locator("#" + include.get_attribute("aria-describedby"))
    expect(definition).to_contain_text("Examples: microsoft/DeepSpeed#4242, <b>not markup</b>")
    expect(include).to_have_accessible_description(re.compile(r"microsoft/DeepSpeed#4242"))
    example = definition.get_by_role("link", name="microsoft/DeepSpeed#4242")
    assert example.get_attribute("href") == "https://github.com/microsoft/DeepSpeed/issues/4242"
    assert _hidden_choices(page, definition) == []

    page.keyboard.press("Tab")  # from the category to its example, still shown
    expect(example).to_be_focused()
    expect(example).to_be_visible()
    assert include.is_checked()
    assert not page.errors
