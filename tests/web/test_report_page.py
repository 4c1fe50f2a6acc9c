"""The report page (/studies/{slug}/report/) through the test client: who may open it, the
tables and charts it shows, downloads in every format that keep the filters, the zip of all
tables, bad filters, and hostile text from a codebook."""

import csv
import io
import json
import re
import zipfile
from html import unescape
from urllib.parse import parse_qs, urlparse

import pytest

from common.tables import table_csv
from exports.report_files import FORMATS
from exports.tables import ReportFilters, distribution_table, paper_table_specs
from labeling.services.studies import round_save, study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.services import codebook_load
from tests.conftest import PASSWORD
from tests.exports.paper_study import DEEPSPEED, MEGATRON, paper_study, submit

URL = "/studies/paper/report/"
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "svg": "image/svg+xml",
}


@pytest.fixture
def study(codebook_version, sample_issues, people):
    return paper_study(
        codebook_version=codebook_version, sample_issues=sample_issues, people=people
    )[0]


def login(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


def download_links(html: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'href="(\?[^"]*format=[^"]*)"', html)]


@pytest.mark.parametrize(
    ("username", "status"),
    [("manager", 200), ("adjudicator", 200), ("annotator1", 403), ("outsider", 404)],
)
def test_only_managers_and_adjudicators_open_the_report(client, study, username, status):
    response = login(client, username).get(URL)
    assert response.status_code == status
    download = client.get(URL, {"table": "funnel", "format": "csv"})
    assert download.status_code == status


def test_anonymous_users_are_sent_to_log_in(client, study):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_report_link_is_in_the_study_nav_of_those_who_oversee(client, study):
    assert 'href="/studies/paper/report/"' in login(client, "manager").get(URL).content.decode()
    overview = login(client, "annotator1").get("/studies/paper/").content.decode()
    assert 'href="/studies/paper/report/"' not in overview


def test_every_table_is_on_the_page_with_its_chart(client, study):
    html = login(client, "manager").get(URL).content.decode()
    specs = paper_table_specs(study=study)
    for spec in specs:
        assert f'id="{spec.key}"' in html
        assert f'id="chart-{spec.key}-title"' in html
    assert html.count("<svg ") == len(specs)
    assert html.count("<table ") == len(specs)
    assert "<script>" not in html.split("<main")[1]
    # A number of the root cause table, as the page prints it: 1 (33.3%) of DeepSpeed's three.
    assert "1 (33.3%)" in html


def test_download_links_keep_the_filters(client, study):
    filters = {"round": "Main", "repository": MEGATRON, "level": "parent"}
    html = login(client, "manager").get(URL, filters).content.decode()
    links = download_links(html)
    specs = paper_table_specs(study=study)
    assert len(links) == 4 * len(specs) + 1  # four formats a table, and the zip
    for link in links:
        query = parse_qs(urlparse(link).query)
        assert query["round"] == ["Main"]
        assert query["repository"] == [MEGATRON]
        assert query["level"] == ["parent"]
    # The form shows the filters in force.
    assert '<option value="Main" selected>' in html
    assert f'<option value="{MEGATRON}" selected>' in html
    assert '<option value="parent" selected>' in html


@pytest.mark.parametrize("file_format", list(FORMATS))
def test_each_format_downloads_with_its_type_and_a_name_that_says_the_filters(
    client, study, file_format
):
    response = login(client, "manager").get(
        URL,
        {"table": "distribution-root_cause", "format": file_format, "round": "Main",
         "repository": DEEPSPEED, "level": "parent"},
    )  # fmt: skip
    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPES[file_format]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == (
        'attachment; filename="paper-distribution-root_cause-main-microsoftdeepspeed-parent.'
        f'{file_format}"'
    )
    body = response.content.decode()
    if file_format == "csv":
        rows = list(csv.reader(io.StringIO(body)))
        assert rows[0] == ["Root cause", DEEPSPEED, f"{DEEPSPEED} (%)", "All systems",
                           "All systems (%)"]  # fmt: skip
        # Main round, DeepSpeed: D2 (internal API misuse) and D3 (race condition).
        assert ["API Misuse", "1", "50.0", "1", "50.0"] in rows
        filtered = distribution_table(
            study=study,
            dimension_key="root_cause",
            filters=ReportFilters(round_name="Main", repository=DEEPSPEED, level=0),
        )
        assert body == table_csv(filtered)
    elif file_format == "md":
        assert "| API Misuse | 1 (50.0%) | 1 (50.0%) |" in body
    elif file_format == "tex":
        assert r"\toprule" in body and r"API Misuse & 1 (50.0\%) & 1 (50.0\%) \\" in body
    else:
        assert body.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
        assert "<script" not in body


def test_all_tables_download_as_one_zip_in_every_format(client, study):
    response = login(client, "manager").get(URL, {"format": "zip", "level": "parent"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="paper-tables-parent.zip"'
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    specs = paper_table_specs(study=study)
    assert sorted(names) == sorted(
        f"paper-{spec.key}-parent.{extension}" for spec in specs for extension in FORMATS
    )


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ({"round": "Nope"}, 400, "Unknown round"),
        ({"repository": "someone/else"}, 400, "Unknown repository"),
        ({"level": "middle"}, 400, "Unknown level"),
        ({"table": "funnel", "format": "exe"}, 400, "Unknown format"),
        ({"table": "funnel", "format": "csv", "round": "Nope"}, 400, "Unknown round"),
        ({"table": "nope", "format": "csv"}, 404, ""),
    ],
)
def test_bad_filters_formats_and_tables_are_refused(client, study, query, status, named):
    response = login(client, "manager").get(URL, query)
    assert response.status_code == status
    assert named in response.content.decode()
    if status == 400 and "format" not in query:
        assert "<table " not in response.content.decode()  # no unfiltered table passed off


HOSTILE = "<script>alert(1)</script>"
HOSTILE_CODEBOOK = {
    "name": "hostile",
    "version": "1",
    "dimensions": [
        {
            "key": "kind",
            "name": 'Kind "of" <b>bug</b>',
            "categories": [
                {"key": "xss", "name": HOSTILE},
                {"key": "amp", "name": "A & B {50%} $x_1$"},
            ],
        }
    ],
}


def test_hostile_names_are_escaped_in_the_page_and_every_file(client, sample_issues, people):
    version, _ = codebook_load(
        data=codebook_file_read(json.dumps(HOSTILE_CODEBOOK).encode()), publish=True
    )
    study = study_create(
        slug="hostile",
        name="Hostile",
        codebook_version=version,
        k=1,
        annotators=[people["annotator1"]],
        managers=[people["manager"]],
        issues=sample_issues[:2],
        round_name='"><script>alert(2)</script>',
    )
    round_save(study=study, name="Main & more")
    first, second = study.items.order_by("id")
    submit(first, people["annotator1"], {"kind": ["xss"]})
    submit(second, people["annotator1"], {"kind": ["amp"]})
    login(client, "manager")
    page = client.get("/studies/hostile/report/").content.decode()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>bug</b>" not in page
    for link in download_links(page):
        assert client.get("/studies/hostile/report/" + link).status_code == 200
    svg = client.get(
        "/studies/hostile/report/", {"table": "distribution-kind", "format": "svg"}
    ).content.decode()
    assert "<script" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "<b>" not in svg
    tex = client.get(
        "/studies/hostile/report/", {"table": "distribution-kind", "format": "tex"}
    ).content.decode()
    assert r"\textless{}script\textgreater{}" in tex and r"A \& B \{50\%\} \$x\_1\$" in tex
    markdown = client.get(
        "/studies/hostile/report/", {"table": "distribution-kind", "format": "md"}
    ).content.decode()
    assert "<script>" not in markdown
    # The round named like markup is a filter value like any other, escaped in the form.
    filtered = client.get("/studies/hostile/report/", {"round": '"><script>alert(2)</script>'})
    assert filtered.status_code == 200
    assert "<script>alert(2)" not in filtered.content.decode()
