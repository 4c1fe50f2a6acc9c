"""Every payload of the hostile Markdown corpus through the real rendering path: what comes out
holds no element, attribute or URL that could run script or restyle the page, and the payload's
harmless text is still there. The Chromium side is tests/browser/test_hostile_markdown.py."""

import io
import json
from collections import Counter

import pytest

from corpus.issue_import import issue_file_lines
from corpus.models import Issue, IssueComment
from corpus.rendering import render_markdown
from corpus.services import issues_import
from tests.security.hostile_corpus import (
    REPOSITORY,
    hostile_issue_object,
    hostile_issue_objects,
    hostile_payloads,
    html_inspect,
    text_collapse,
    url_scheme,
)

PAYLOADS = hostile_payloads()


def test_the_corpus_covers_every_family_of_attack():
    names = [payload.name for payload in PAYLOADS]
    assert len(names) == len(set(names))
    assert len(PAYLOADS) >= 80
    per_category = Counter(payload.category for payload in PAYLOADS)
    for category in (
        "script", "event-handler", "url-scheme", "svg", "mathml", "css", "embedding",
        "entities", "comment-cdata", "mxss", "template", "link-title",
    ):  # fmt: skip
        assert per_category[category] >= 2, category
    assert all(payload.shows for payload in PAYLOADS)


@pytest.mark.parametrize(
    ("value", "scheme"),
    [
        ("https://example.com/", "https"),
        ("/studies/", None),
        ("x", None),
        ("javascript%3Aalert(1)", None),  # no colon: a relative path
        ("JaVaScRiPt:alert(1)", "javascript"),
        (" \x01javascript:alert(1)", "javascript"),
        ("jav\tas\ncript:alert(1)", "javascript"),
        ("data:text/html,x", "data"),
    ],
)
def test_the_scheme_is_read_as_a_browser_reads_it(value, scheme):
    assert url_scheme(value) == scheme


def test_the_inspector_sees_what_it_must_refuse():
    problems, _ = html_inspect(
        '<p onclick="x" style="color:red">a</p><a href="jav&#x09;ascript:x" class="warning">b</a>'
        "<svg></svg><!-- c -->"
    )
    assert problems == [
        "event handler onclick on <p>",
        "style attribute on <p>",
        "href='jav\\tascript:x' on <a>",
        "class 'warning' on <a>",
        "<svg> element",
        "comment <!-- c -->",
    ]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda payload: payload.name)
def test_a_hostile_payload_is_neutralised_and_its_text_kept(payload):
    problems, text = html_inspect(render_markdown(payload.markdown))
    assert problems == []
    for shown in payload.shows:
        assert text_collapse(shown) in text


def test_legitimate_github_markdown_keeps_its_shape():
    rendered = render_markdown(
        "```python\nprint(1)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[docs](https://pytorch.org/docs/) ![plot](https://example.com/p.png) "
        "<mailto:a@example.com>\n\n- [ ] todo\n- [x] done\n\n~~old~~ **new**"
    )
    assert '<pre><code class="language-python">print(1)' in rendered
    assert "<table>" in rendered and "<td>2</td>" in rendered
    assert '<a href="https://pytorch.org/docs/" rel="nofollow noopener noreferrer">docs</a>' in (
        rendered
    )
    assert 'href="https://example.com/p.png" class="remote-image"' in rendered
    assert 'href="mailto:a@example.com"' in rendered
    assert "<li>[ ] todo</li>" in rendered and "<del>old</del>" in rendered
    long_log = render_markdown("```\n" + "line\n" * 60 + "```")
    assert long_log.startswith('<details class="long-block"><summary>60 lines')


def test_every_payload_is_stored_safely_through_the_import(db):
    """Each payload as an issue's body and again as a comment, read from a JSONL import file and
    stored by the import service that production uses; what is stored for the pages is safe."""
    objects = hostile_issue_objects(PAYLOADS, per_issue=1)
    objects.append(
        hostile_issue_object(number=len(objects) + 1, body="The thread", comments=PAYLOADS)
    )
    import_file = io.BytesIO(b"".join(json.dumps(obj).encode() + b"\n" for obj in objects))
    report = issues_import(objects=issue_file_lines(import_file))
    assert report.errors == []
    issues = Issue.objects.filter(repository__owner=REPOSITORY.split("/")[0])
    assert issues.count() == len(PAYLOADS) + 1
    stored = [*issues.exclude(body="The thread").values_list("body_html", flat=True)]
    stored += IssueComment.objects.filter(issue__in=issues).values_list("body_html", flat=True)
    assert len(stored) == len(PAYLOADS) * 2
    for body_html in stored:
        problems, _ = html_inspect(body_html)
        assert problems == []
