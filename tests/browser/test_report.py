"""The report page in a real browser, under the production Content-Security-Policy: the charts
render (inline SVG, no script), nothing is refused, the filters apply and a download keeps them."""

import csv
import io
from urllib.parse import parse_qs, urlparse

import pytest

from config.settings import base
from exports.tables import TIMES
from tests.exports.paper_study import MEGATRON, paper_study

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def production_policy(settings):
    settings.CONTENT_SECURITY_POLICY = base.CONTENT_SECURITY_POLICY


@pytest.fixture
def study(codebook_version, sample_issues, people):
    return paper_study(
        codebook_version=codebook_version, sample_issues=sample_issues, people=people
    )[0]


def test_the_report_shows_its_charts_and_nothing_is_refused(study, new_page, live_server):
    page = new_page("manager")
    refused: list[str] = []
    page.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.goto(f"{live_server.url}/studies/paper/")
    page.get_by_role("link", name="Report", exact=True).click()
    page.wait_for_url(f"{live_server.url}/studies/paper/report/")
    page.wait_for_load_state("networkidle")

    charts = page.get_by_role("img")
    assert charts.count() >= 10
    root_cause = page.get_by_role("img", name="Root cause per system")
    root_cause.scroll_into_view_if_needed()
    box = root_cause.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100
    # Bars were laid out: the widest bar of the chart has a width on screen.
    widths = root_cause.locator("rect.bar").evaluate_all(
        "bars => bars.map(bar => bar.getBoundingClientRect().width)"
    )
    assert max(widths) > 50
    heatmap = page.get_by_role("img", name=f"Symptom {TIMES} Root cause")
    assert heatmap.locator("rect.cell").count() == 16

    # Filters apply, and a download link carries them.
    page.get_by_label("Repository").select_option(MEGATRON)
    page.get_by_label("Categories").select_option("parent")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_load_state("networkidle")
    query = parse_qs(urlparse(page.url).query)
    assert query["repository"] == [MEGATRON] and query["level"] == ["parent"]
    section = page.locator("section#distribution-root_cause")
    with page.expect_download() as download_info:
        section.get_by_role("link", name="CSV").click()
    download = download_info.value
    assert (
        download.suggested_filename == "paper-distribution-root_cause-nvidiamegatron-lm-parent.csv"
    )
    with open(download.path(), encoding="utf-8") as stream:
        rows = list(csv.reader(io.StringIO(stream.read())))
    assert rows[0][1] == MEGATRON
    assert ["API Misuse", "1", "50.0", "1", "50.0"] in rows

    assert refused == []
    assert not page.errors
