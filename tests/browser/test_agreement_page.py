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
