"""The agreement page in a browser: choosing a dimension and a pair keeps the filters, the
per-pair table says which pairs count, the per-repository table sits side by side, and the page
runs under the Content-Security-Policy."""

import os
import re
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.management import call_command

from labeling.services.studies import study_create
from taxonomy.services import codebook_load
from tests.labeling.test_agreement_report import GRANT_CODEBOOK, issue_rows, write_csv
from tests.web.agreement_pilot import pilot_study_create

SCREENSHOTS = os.environ.get("AGREEMENT_SCREENSHOTS")  # a folder, to look at the page


@pytest.fixture
def issue_study(db, sample_issues, people, tmp_path):
    version, _ = codebook_load(data=GRANT_CODEBOOK, publish=True)
    study = study_create(
        slug="grants", name="Grants", codebook_version=version, k=2, managers=[people["manager"]]
    )
    issues = sorted(sample_issues, key=lambda issue: issue.id)
    rows = issue_rows(issues)
    call_command(
        "import_annotations",
        "--study",
        "grants",
        write_csv(tmp_path / "rows.csv", rows),
        "--create-users",
    )
    return study


def test_choosing_a_dimension_and_a_pair_keeps_the_filters(issue_study, new_page, live_server):
    page = new_page("manager", width=1400)
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security" in message.text else None
        ),
    )
    page.goto(f"{live_server.url}/studies/grants/agreement/")
    page.get_by_label("Pairs count from (shared items, default 10)").fill("5")
    page.get_by_label("Categories").select_option("0")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"min_pair_items=5"))

    page.get_by_role("link", name="Reason *").click()
    page.wait_for_url(re.compile(r"dimension=reason"))
    page.get_by_role("link", name="Decision *").click()
    page.wait_for_url(re.compile(r"dimension=decision"))
    pairs = page.locator("table#agreement-pairs-decision")
    assert pairs.get_by_role("row", name=re.compile("reader_a reader_c 1")).is_visible()
    assert pairs.get_by_text("no: fewer than 5 shared items").count() == 2  # 1 and 0 items
    pairs.get_by_role("link", name="reader_a").nth(1).click()  # the reader_a / reader_c pair
    page.wait_for_url(re.compile(r"pair=reader_a%2Creader_c"))
    assert page.get_by_role(
        "img", name="Confusion matrix of reader_a and reader_c on Decision"
    ).is_visible()

    query = parse_qs(urlparse(page.url).query)
    assert query["min_pair_items"] == ["5"] and query["level"] == ["0"]
    assert query["dimension"] == ["decision"]
    assert page.get_by_label("Pairs count from (shared items, default 10)").input_value() == "5"
    repositories = page.locator("table#agreement-repositories")
    group = repositories.get_by_role("columnheader", name="microsoft/DeepSpeed", exact=True)
    assert group.is_visible() and group.get_attribute("colspan") == "3"
    assert repositories.get_by_role("columnheader", name="weighted κ").count() == 3
    if SCREENSHOTS:
        page.screenshot(path=os.path.join(SCREENSHOTS, "agreement.png"), full_page=True)
    assert violations == [] and not page.errors


@pytest.fixture
def pilot_study(db, codebook_version, sample_issues, people, make_user, tmp_path):
    return pilot_study_create(
        codebook_version=codebook_version,
        issues=sample_issues,
        manager=people["manager"],
        make_user=make_user,
        tmp_path=tmp_path,
    )


# The text of every <text> of an SVG whose box is not inside the SVG's box (a label cut off).
TEXT_OUTSIDE_ITS_SVG = """svg => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll("text")].filter(text => {
    const r = text.getBoundingClientRect();
    return r.left < box.left - 0.5 || r.right > box.right + 0.5
      || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
  }).map(text => text.textContent.trim());
}"""


# Elements of the page's content that run off the right of the screen, outside a box of their
# own that scrolls sideways.
OUTSIDE_THE_SCREEN = """main => [...main.querySelectorAll("*")]
  .filter(element => !element.closest(".table-scroll, .figure-scroll")
    && element.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map(element => element.tagName + "." + element.className)"""


@pytest.mark.parametrize("width", [1400, 390])
@pytest.mark.parametrize("dimension", ["symptom", "debugging_practice"])
def test_a_pilot_page_reads_at_a_glance_on_a_desktop_and_a_phone(
    pilot_study, new_page, live_server, width, dimension
):
    page = new_page("manager", width=width, height=900)
    page.goto(f"{live_server.url}/studies/pilot/agreement/?dimension={dimension}")
    chart = page.get_by_role("img", name=re.compile("Cohen's κ and Krippendorff's α per dimension"))
    assert chart.is_visible()
    # Every dimension has its κ marks (each pair's, below the minimum) and its α mark.
    assert chart.locator("circle.mark.pair").count() >= 9 * 1
    assert chart.locator("rect.mark.alpha").count() == 9
    assert chart.locator(".dimension-name").first.text_content() == "Screening"
    name = "annotator1 and annotator2 on " + ("Symptom" if dimension == "symptom" else "Debugging")
    heatmap = page.get_by_role("img", name=re.compile("Confusion matrix of " + name))
    assert heatmap.is_visible()
    assert (
        heatmap.get_by_text(
            "Excessive Memory Usage / Leak" if dimension == "symptom" else "Code Inspection"
        ).count()
        >= 1
    )
    for svg in (chart, heatmap):
        assert svg.evaluate(TEXT_OUTSIDE_ITS_SVG) == []
    cell = heatmap.locator("rect.cell").first.bounding_box()
    assert cell["width"] >= 32 and cell["height"] >= 32
    sizes = heatmap.locator("text").evaluate_all(
        "texts => texts.map(text => parseFloat(getComputedStyle(text).fontSize))"
    )
    assert min(sizes) >= 12
    # The warnings take one line a kind, their sentences folded.
    warnings = page.locator(".agreement-warnings")
    assert warnings.locator("summary").count() <= 3
    assert not page.get_by_text("Only 6 items with two or more ratings").first.is_visible()
    box = warnings.bounding_box()
    assert box["y"] + box["height"] < 900 * 2  # within the first two screens, on a phone too
    # Nothing of the page runs off the screen: wide figures and tables scroll in their own box.
    assert page.locator("main").evaluate(OUTSIDE_THE_SCREEN) == []
    if SCREENSHOTS:
        name = f"agreement-pilot-{dimension}-{width}"
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}-first-screen.png"))
        for part in ("kappa-chart", "figures", "heatmap-figure"):
            page.locator(f".{part}").screenshot(
                path=os.path.join(SCREENSHOTS, f"{name}-{part}.png")
            )
    assert not page.errors


@pytest.mark.parametrize("width", [1400, 390])
def test_a_study_without_labels_says_so_in_one_line(study, new_page, live_server, width):
    page = new_page("manager", width=width, height=900)
    page.goto(f"{live_server.url}/studies/demo/agreement/")
    warnings = page.locator(".agreement-warnings summary")
    assert warnings.count() == 1
    assert warnings.inner_text() == "No item with two or more ratings: every dimension"
    assert page.get_by_text("No κ or α to chart yet").is_visible()
    assert page.locator("main").evaluate(OUTSIDE_THE_SCREEN) == []
    if SCREENSHOTS:
        page.screenshot(
            path=os.path.join(SCREENSHOTS, f"agreement-demo-{width}.png"), full_page=True
        )
    assert not page.errors
