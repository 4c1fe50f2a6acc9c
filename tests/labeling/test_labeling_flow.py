"""The thin labeling slice end to end through the test client."""

import re

import pytest

from labeling.models import Annotation, AnnotationRevision, Assignment

PASSWORD = "a-long-test-password"


def label_form(client, url: str) -> dict:
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    version = re.search(r'name="version" value="(\d+)"', html).group(1)
    return {"html": html, "version": version}


@pytest.fixture
def annotator_client(client, study, people):
    client.login(username="annotator1", password=PASSWORD)
    return client


def test_annotator_logs_in_labels_an_issue_and_it_is_stored(client, study, people):
    login = client.post(
        "/accounts/login/", {"username": "annotator1", "password": PASSWORD}, follow=True
    )
    assert login.status_code == 200 and b"Demo" in login.content

    next_response = client.post("/studies/demo/next/")
    assert next_response.status_code == 302
    item_url = next_response.url
    form = label_form(client, item_url)
    assert 'name="dim-root_cause" value="api_misuse"' in form["html"]
    assert "API Misuse" in form["html"]

    response = client.post(
        item_url,
        {
            "version": form["version"],
            "action": "submit",
            "dim-screening": "include",
            "dim-symptom": "crash",
            "dim-root_cause": "api_misuse",
            "dim-fix_pattern": "fix_api_usage",
            "dim-training_stage": "installation_build",
            "dim-debugging_practice": ["error_message_analysis"],
            "unsure-root_cause": "on",
            "rationale-root_cause": "wrong call into the optimizer",
            "seconds_spent": "42",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    # Submitting opens the next item: the submit's POST claims it, never a GET.
    assert re.fullmatch(r"/studies/demo/items/\d+/", response.url) and response.url != item_url

    assignment = Assignment.objects.get(annotator=people["annotator1"], status="submitted")
    assert assignment.seconds_spent == 42
    root_cause = Annotation.objects.get(assignment=assignment, dimension__key="root_cause")
    assert [c.key for c in root_cause.categories.all()] == ["api_misuse"]
    assert root_cause.unsure and root_cause.rationale == "wrong call into the optimizer"
    assert AnnotationRevision.objects.filter(annotation=root_cause).count() == 1
    # The next item is a different one.
    assert client.post("/studies/demo/next/").url != item_url


def test_submit_without_required_dimensions_is_refused_and_nothing_is_submitted(
    annotator_client, people
):
    item_url = annotator_client.post("/studies/demo/next/").url
    form = label_form(annotator_client, item_url)
    response = annotator_client.post(
        item_url, {"version": form["version"], "action": "submit", "dim-symptom": "crash"}
    )
    assert response.status_code == 400
    assert b"Choose a category for" in response.content
    assert not Assignment.objects.filter(status="submitted").exists()


def test_draft_is_kept_and_reloaded(annotator_client, people):
    item_url = annotator_client.post("/studies/demo/next/").url
    form = label_form(annotator_client, item_url)
    response = annotator_client.post(
        item_url, {"version": form["version"], "action": "draft", "dim-symptom": "crash"}
    )
    assert response.status_code == 302
    html = label_form(annotator_client, item_url)["html"]
    assert re.search(r'value="crash"[^>]*checked', html)
    assert Assignment.objects.get(annotator=people["annotator1"], status="draft")
    # The next item is the draft until it is finished.
    assert annotator_client.post("/studies/demo/next/").url == item_url


def test_stale_version_from_another_tab_is_refused(annotator_client, people):
    item_url = annotator_client.post("/studies/demo/next/").url
    form = label_form(annotator_client, item_url)
    annotator_client.post(item_url, {"version": form["version"], "dim-symptom": "crash"})
    stale = annotator_client.post(item_url, {"version": form["version"], "dim-symptom": "hang"})
    assert stale.status_code == 409
    annotation = Annotation.objects.get(dimension__key="symptom")
    assert [c.key for c in annotation.categories.all()] == ["crash"]


def test_skip_needs_a_reason(annotator_client, people):
    item_url = annotator_client.post("/studies/demo/next/").url
    form = label_form(annotator_client, item_url)
    refused = annotator_client.post(item_url, {"version": form["version"], "action": "skip"})
    assert refused.status_code == 400
    done = annotator_client.post(item_url, {"action": "skip", "skip_reason": "not about training"})
    assert done.status_code == 302
    assignment = Assignment.objects.get(annotator=people["annotator1"], status="skipped")
    assert assignment.skip_reason == "not about training"


def test_annotator_cannot_open_an_item_that_is_not_theirs(client, study, people, make_user):
    other = make_user("annotator3")
    from labeling.services.studies import study_member_add

    study_member_add(study=study, user=other, role="annotator")
    client.login(username="annotator1", password=PASSWORD)
    item_url = client.post("/studies/demo/next/").url
    client.logout()
    client.login(username="annotator3", password=PASSWORD)
    assert client.get(item_url).status_code == 404
    assert client.post(item_url, {"action": "submit"}).status_code == 404


def test_outsider_cannot_see_the_study(client, study, people):
    client.login(username="outsider", password=PASSWORD)
    assert client.get("/studies/demo/").status_code == 404
    assert client.get("/studies/demo/queue/").status_code == 404
    assert b"Demo" not in client.get("/").content


def test_queue_shows_progress_and_filters(annotator_client, people):
    item_url = annotator_client.post("/studies/demo/next/").url
    form = label_form(annotator_client, item_url)
    annotator_client.post(item_url, {"version": form["version"], "dim-symptom": "crash"})
    page = annotator_client.get("/studies/demo/queue/?status=drafts").content.decode()
    assert "0 of 45 done · 1 drafts" in page
    assert page.count("/studies/demo/items/") == 1


def test_the_queue_comes_in_pages(annotator_client, monkeypatch):
    """An annotator may hold thousands of items: the queue page shows them a page at a time,
    and a filter stays on from page to page."""
    monkeypatch.setattr("web.views.studies.QUEUE_PAGE_SIZE", 20)
    first = annotator_client.get("/studies/demo/queue/").content.decode()
    assert first.count("/studies/demo/items/") == 20
    assert "Items 1\u201320 of 45" in first and "page=2" in first and 'rel="prev"' not in first
    last = annotator_client.get("/studies/demo/queue/?page=3").content.decode()
    assert last.count("/studies/demo/items/") == 5 and 'rel="next"' not in last
    assert annotator_client.get("/studies/demo/queue/?page=99").status_code == 200  # the last
    todo = annotator_client.get("/studies/demo/queue/?status=todo").content.decode()
    assert "status=todo&amp;page=2" in todo


def test_labeling_page_queries_do_not_grow_with_comments(
    annotator_client, django_assert_max_num_queries
):
    item_url = annotator_client.post("/studies/demo/next/").url
    # The first view renders each dimension's category tree once (one query each) and caches it.
    # Then: session, user, study, assignment, fixes, comments, labels, the similar-issues
    # index's freshness and the study's items, the top bar's studies.
    annotator_client.get(item_url)
    with django_assert_max_num_queries(12):
        annotator_client.get(item_url)


def test_labeling_page_shows_facets_fixes_and_definitions(annotator_client, study, people):
    from labeling.models import Assignment

    # Two annotators and k = 2: annotator1 has every item.
    assignment = Assignment.objects.get(annotator=people["annotator1"], item__issue__number=7061)
    html = annotator_client.get(f"/studies/demo/items/{assignment.item_id}/").content.decode()
    assert "Facts found in the text" in html and "AttributeError" in html
    assert 'class="definition"' in html  # every category carries its definition
    assert "Keyboard shortcuts" in html


def _queries(client, method: str, url: str, data=None) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        getattr(client, method)(url, data or {})
    return len(captured)


def test_page_and_submit_queries_do_not_grow_with_comments(annotator_client, study, people):
    from corpus.models import IssueComment
    from labeling.models import Assignment

    assignments = list(
        Assignment.objects.filter(annotator=people["annotator1"]).order_by("item_id")[:2]
    )
    quiet, busy = (a.item for a in assignments)
    IssueComment.objects.filter(issue=quiet.issue).delete()
    base = busy.issue.comments.first() or IssueComment(issue=busy.issue)
    IssueComment.objects.bulk_create(
        [
            IssueComment(
                issue=busy.issue,
                github_id=9_000_000 + n,
                body=f"comment {n}",
                body_html=f"<p>comment {n}</p>",
                created_at=base.created_at or busy.issue.created_at,
                updated_at=base.created_at or busy.issue.created_at,
            )
            for n in range(60)
        ]
    )
    annotator_client.get(f"/studies/demo/items/{quiet.id}/")  # fills the category-tree cache
    page_quiet = _queries(annotator_client, "get", f"/studies/demo/items/{quiet.id}/")
    page_busy = _queries(annotator_client, "get", f"/studies/demo/items/{busy.id}/")
    assert page_quiet == page_busy

    answers = {
        "action": "submit",
        "dim-screening": "include",
        "dim-symptom": "crash",
        "dim-root_cause": "api_misuse",
        "dim-fix_pattern": "fix_api_usage",
        "dim-training_stage": "installation_build",
        "dim-debugging_practice": ["error_message_analysis", "reproduction_minimization"],
    }
    submit_quiet = _queries(annotator_client, "post", f"/studies/demo/items/{quiet.id}/", answers)
    submit_busy = _queries(annotator_client, "post", f"/studies/demo/items/{busy.id}/", answers)
    assert submit_quiet == submit_busy
    assert submit_busy <= 30
    assert (
        Assignment.objects.filter(annotator=people["annotator1"], status="submitted").count() == 2
    )


def test_codebook_pages_show_definitions(annotator_client, codebook_version):
    listing = annotator_client.get("/codebooks/").content.decode()
    assert f"/codebooks/versions/{codebook_version.id}/" in listing
    page = annotator_client.get(f"/codebooks/versions/{codebook_version.id}/").content.decode()
    assert "External Library API Misuse" in page and "Include:" in page and "Source:" in page


def test_the_page_reads_comments_without_their_markdown_source(annotator_client, people):
    from corpus.models import IssueComment
    from corpus.selectors import issue_thread
    from labeling.models import Assignment

    item = Assignment.objects.filter(annotator=people["annotator1"]).order_by("item_id")[0].item
    IssueComment.objects.create(
        issue=item.issue,
        github_id=9_100_000,
        body="SOURCE-ONLY " + "log line\n" * 50_000,  # a pasted log: the source is large
        body_html="<p>the comment as shown</p>",
        created_at=item.issue.created_at,
        updated_at=item.issue.created_at,
    )
    comments = issue_thread(issue=item.issue).comments
    assert all("body" in comment.get_deferred_fields() for comment in comments)
    html = annotator_client.get(f"/studies/demo/items/{item.id}/").content.decode()
    assert "the comment as shown" in html
    assert "SOURCE-ONLY" not in html
