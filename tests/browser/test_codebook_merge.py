"""A codebook changes mid-study, in a real browser: the manager starts a draft, merges two root
causes and splits a symptom, publishes, moves the study; the labels follow the merge, the
annotator concerned sees what to re-check, and agreement is reported per version."""

import re

import pytest

from labeling.models import Annotation, Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from taxonomy.models import Category, CodebookVersion
from tests.conftest import SCREENED_IN

pytestmark = pytest.mark.browser


def submit(item, user, **changes):
    assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=user),
        user=user,
        answers={
            k: DimensionAnswer(category_keys=v) for k, v in {**SCREENED_IN, **changes}.items()
        },
        submit=True,
    )


def root_cause_of(item, user) -> list[str]:
    annotation = Annotation.objects.get(
        assignment__item=item, assignment__annotator=user, dimension__key="root_cause"
    )
    return sorted(c.key for c in annotation.categories.all())


def test_a_manager_merges_two_categories_mid_study(study, people, new_page, live_server):
    first, second = people["annotator1"], people["annotator2"]
    a, b = study.items.order_by("id")[:2]
    submit(a, first, root_cause=["type_error"])
    submit(a, second, root_cause=["typo_wrong_identifier"])
    submit(b, first, symptom=["hang"])
    submit(b, second, symptom=["hang"])

    manager = new_page("manager")
    manager.goto(f"{live_server.url}/studies/demo/")
    manager.get_by_role("link", name="Codebook", exact=True).click()
    manager.get_by_label("Label of the new version").fill("0.2.0")
    manager.get_by_role("button", name="Start a draft from version 0.1.0").click()
    manager.wait_for_url(re.compile(r"/codebooks/versions/\d+/edit/$"))
    editor_url = manager.url

    manager.get_by_text("Merge categories of Root cause").click()  # the form opens under it
    manager.get_by_label("Categories to merge (root_cause)").select_option("type_error")
    manager.get_by_label("Merge into (root_cause)").select_option("typo_wrong_identifier")
    manager.get_by_role("button", name="Merge in Root cause").click()
    manager.wait_for_load_state()
    assert "Merged type_error into typo_wrong_identifier" in manager.content()

    draft = CodebookVersion.objects.get(label="0.2.0")
    hang = Category.objects.get(dimension__version=draft, dimension__key="symptom", key="hang")
    # A category's forms come on demand (htmx).
    manager.locator(f"#cat-{hang.id}").get_by_role("link", name="Edit hang").click()
    manager.get_by_label("Split hang into").fill("deadlock Deadlock\nstall Stall")
    manager.get_by_role("button", name="Split hang").click()
    manager.wait_for_load_state()
    assert manager.url.startswith(editor_url)

    manager.get_by_label("I understand that version 0.2.0 can never change").check()
    manager.get_by_role("button", name="Publish version 0.2.0").click()
    # A redirect keeps the fragment of the editor's last form.
    manager.wait_for_url(re.compile(r"/codebooks/versions/\d+/(#.*)?$"))
    assert "version 0.2.0 · Published" in manager.content()

    manager.goto(f"{live_server.url}/studies/demo/codebook/")
    manager.get_by_label("Move the study to version").select_option(label="0.2.0")
    manager.get_by_role("button", name="Move Demo to the new version").click()
    manager.wait_for_load_state()
    assert manager.get_by_text(re.compile(r"Demo moved to version 0\.2\.0")).is_visible()

    # The labels followed the merge.
    assert root_cause_of(a, first) == ["typo_wrong_identifier"]
    assert root_cause_of(a, second) == ["typo_wrong_identifier"]
    # Agreement per version: the labels were given under 0.1.0.
    table = manager.locator("#agreement-per-version")
    assert table.get_by_role("row", name=re.compile(r"0\.1\.0 Root cause")).count() == 1

    # The annotator concerned sees what to re-check, and re-checks it on the labeling page.
    annotator = new_page("annotator1")
    annotator.goto(f"{live_server.url}/studies/demo/")
    annotator.get_by_role("link", name="To re-check").click()
    row = annotator.locator("#recheck-labels tbody tr")
    assert row.count() == 1
    assert "split Hang (hang) into Deadlock (deadlock), Stall (stall)" in row.inner_text()
    row.get_by_role("link").click()
    annotator.wait_for_url(re.compile(r"/studies/demo/items/\d+/$"))
    assert annotator.get_by_role("note").first.inner_text().startswith("To re-check:")
    annotator.get_by_role("radio", name="Deadlock", exact=True).check()
    annotator.get_by_role("button", name=re.compile("Submit")).click()
    annotator.wait_for_load_state()
    annotator.goto(f"{live_server.url}/studies/demo/recheck/")
    assert "Nothing of yours to re-check" in annotator.content()
    assert not annotator.errors and not manager.errors
