"""A linked fix's URL becomes a link only when it is http(s): the import refuses other schemes,
and pages and the API leave alone the ones stored before (run on SQLite and PostgreSQL)."""

import io
import json

import pytest
from rest_framework.test import APIClient

from corpus.issue_import import issue_file_lines
from corpus.models import LinkedFix
from corpus.records import RecordError, fix_record_parse, is_http_url
from corpus.services import issues_import
from labeling.models import Assignment
from tests.corpus.test_bad_lines import issue, with_fix

BAD_URLS = [
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    "java\tscript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "//evil.example/x",
    "https:///no-host",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_fix_url_that_is_not_http_is_refused_with_its_field(url):
    assert not is_http_url(url)
    with pytest.raises(RecordError, match=r"linked fix\.url must be an http or https URL"):
        fix_record_parse({"kind": "pr", "ref": "7", "url": url})


@pytest.mark.parametrize(
    "url", ["https://github.com/acme/trainer/pull/7", "http://git.example.org/c/abc", ""]
)
def test_http_and_empty_fix_urls_are_kept(url):
    assert fix_record_parse({"kind": "pr", "ref": "7", "url": url}).url == url


@pytest.mark.django_db
def test_an_import_line_with_a_javascript_fix_url_is_reported_and_skipped():
    lines = [issue(1), issue(2, **with_fix(url="javascript:alert(1)")), issue(3)]
    stream = io.BytesIO(b"\n".join(json.dumps(line).encode() for line in lines))
    report = issues_import(objects=issue_file_lines(stream))
    assert report.created == 2
    assert len(report.errors) == 1
    number, message = report.errors[0]
    assert number == 2 and "linked_fixes[0].url must be an http or https URL" in message
    assert not LinkedFix.objects.filter(url__startswith="javascript").exists()


@pytest.fixture
def stored_bad_fix(study, people):
    """A fix row imported before the check: created directly, as an old database holds it."""
    assignment = Assignment.objects.filter(annotator=people["annotator1"]).first()
    issue_row = assignment.item.issue
    LinkedFix.objects.filter(issue=issue_row).delete()
    LinkedFix.objects.create(
        issue=issue_row, kind="pr", ref="4242", url="javascript:alert(document.cookie)"
    )
    LinkedFix.objects.create(
        issue=issue_row, kind="commit", ref="abc1234", url="https://github.com/acme/x/commit/a"
    )
    return assignment


def test_a_stored_javascript_fix_url_renders_as_text_not_a_link(client, people, stored_bad_fix):
    client.force_login(people["annotator1"])
    response = client.get(f"/studies/demo/items/{stored_bad_fix.item_id}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "#4242" in page
    assert "javascript:" not in page
    assert 'href="https://github.com/acme/x/commit/a"' in page


def test_the_api_returns_an_empty_url_for_a_stored_javascript_fix_url(people, stored_bad_fix):
    client = APIClient()
    client.force_authenticate(people["manager"])
    response = client.get(f"/api/issues/{stored_bad_fix.item.issue_id}/")
    assert response.status_code == 200
    urls = {fix["ref"]: fix["url"] for fix in response.json()["linked_fixes"]}
    assert urls == {"4242": "", "abc1234": "https://github.com/acme/x/commit/a"}
