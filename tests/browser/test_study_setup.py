"""Setting a study up in a real browser, as a paper reports it: closed issues with a linked fix,
N per repository, seed 7, two annotators and a pilot round. The live count follows the form, the
overview shows the funnel, and the study holds exactly what the same rule draws when called
directly."""

import os
import re

import pytest
from django.contrib.auth.models import Permission

from corpus.selectors import IssueSelection
from labeling.models import Study
from labeling.services.setup import SamplingRule, study_sample_preview

pytestmark = pytest.mark.browser
SCREENSHOTS = os.environ.get("SETUP_SCREENSHOTS")  # a folder, to look at the pages


def shoot(page, name: str, *, full_page: bool = True) -> None:
    if SCREENSHOTS:
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=full_page)


def preview_row(page, system: str) -> tuple[int, int]:
    cells = page.locator(f'#sample-preview tr[data-system="{system}"] td')
    return int(cells.nth(0).inner_text()), int(cells.nth(1).inner_text())


def test_manager_sets_up_a_stratified_study_with_a_pilot(
    codebook_version, sample_issues, people, new_page, live_server
):
    manager = people["manager"]
    manager.user_permissions.add(Permission.objects.get(codename="add_study"))
    page = new_page("manager")
    page.get_by_role("link", name="New study").click()
    page.wait_for_url(f"{live_server.url}/studies/new/")
    assert preview_row(page, "all") == (45, 45)

    page.get_by_label("Name", exact=True).fill("Fixes per system")
    page.get_by_label("Slug").fill("fixes")
    page.get_by_label("Description").fill("Closed issues with a linked fix, 2 per system.")
    page.get_by_label("Codebook version").select_option(index=0)
    page.get_by_label("State").select_option("closed")
    page.get_by_label("Has a linked fix").select_option("yes")
    page.wait_for_function(
        "(document.querySelector('#sample-preview tr[data-system=all] td')"
        "?.textContent ?? '').trim() === '8'"
    )
    page.get_by_label("Sampling").select_option("per_repository")
    page.get_by_label("N", exact=True).fill("2")
    page.get_by_label("Seed").fill("7")
    page.wait_for_function(
        "(document.querySelectorAll('#sample-preview tr[data-system=all] td')[1]"
        "?.textContent ?? '').trim() === '6'"
    )
    rule = SamplingRule(
        selection=IssueSelection(state="closed", has_fix=True),
        method="stratified",
        per_repository=2,
        seed=7,
    )
    expected = study_sample_preview(rule=rule)
    for system, candidates in expected.candidates.items():
        assert preview_row(page, system) == (candidates, expected.sampled[system])
    page.get_by_label("Pilot round: items").fill("2")
    page.get_by_label("Annotators", exact=True).select_option(["annotator1", "annotator2"])
    page.get_by_label("Adjudicators").select_option(["adjudicator"])
    # Not full-page: that resizes the viewport for a moment, and a click right after it may
    # land before the layout settles.
    shoot(page, "study-new", full_page=False)
    assert not page.errors

    page.get_by_role("button", name="Create study").click()
    page.wait_for_url(f"{live_server.url}/studies/fixes/")
    assert page.get_by_text("6 items drawn").is_visible()
    funnel = page.locator("table.funnel")
    assert funnel.is_visible()
    total = funnel.locator("tr.total td")
    assert [total.nth(i).inner_text() for i in range(2)] == ["8", "6"]
    assert page.get_by_text(
        re.compile(r"Stratified, 2 per repository, seed 7, of closed issues with a linked fix")
    ).is_visible()
    assert page.get_by_role("heading", name="Progress per annotator").is_visible()
    assert page.get_by_role("button", name="Label next item").count() == 0
    shoot(page, "study-overview")

    study = Study.objects.get(slug="fixes")
    drawn = {
        str(item.issue): item.round.name
        for item in study.items.select_related("issue__repository", "round")
    }
    # The same rule picks the same issues: the study holds exactly what it draws when called
    # directly, the first two drawn in the pilot round.
    assert sorted(drawn) == sorted(expected.references)
    assert {ref for ref, name in drawn.items() if name == "Pilot"} == set(expected.references[:2])
    assert set(
        study.memberships.filter(role="annotator").values_list("user__username", flat=True)
    ) == {
        "annotator1",
        "annotator2",
    }
    assert not page.errors


def test_a_bad_form_keeps_what_was_entered(
    codebook_version, sample_issues, people, new_page, live_server
):
    people["manager"].user_permissions.add(Permission.objects.get(codename="add_study"))
    page = new_page("manager")
    page.goto(f"{live_server.url}/studies/new/")
    page.get_by_label("Name", exact=True).fill("Majority")
    page.get_by_label("Slug").fill("majority")
    page.get_by_label("Resolution").select_option("majority")
    page.get_by_label("Words in title or body").fill("cuda")
    page.get_by_role("button", name="Create study").click()
    assert page.get_by_text("A majority decides only with k of 3 or more.").is_visible()
    assert page.get_by_label("Name", exact=True).input_value() == "Majority"
    assert page.get_by_label("Words in title or body").input_value() == "cuda"
    shoot(page, "study-new-error")
    assert not Study.objects.exists()
