"""GitHub-flavoured Markdown to safe HTML, done once when an issue or comment is stored.

cmark-gfm, GitHub's own parser (through cmarkgfm), renders (GFM tables, strikethrough, autolinks,
raw HTML as GitHub allows it) and nh3 (the Ammonia sanitiser) keeps only harmless
tags and attributes, so no script, style, event handler or javascript: link from an issue can
reach a page. Remote images are never loaded: they become links, which keeps annotators' browsers
from calling out and keeps the page light. Both are C and Rust: a 10k-issue import renders in
well under a second.
"""

import html
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options

from corpus.facets import issue_facets

# Code blocks longer than this are folded, so that a 2,000-line log doesn't bury the discussion.
LONG_BLOCK_LINES = 40

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "ol", "p", "pre", "q", "s",
    "samp", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "tt", "ul", "var",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    # No attribute on every tag, instead of Ammonia's default title and lang: a title on any
    # tag is where mutation-XSS payloads carry their markup.
    "*": set(),
    "a": {"href", "title", "class"},
    "abbr": {"title"},
    "code": {"class"},
    "pre": {"class"},
    "details": {"class"},
    "span": {"class"},
    "td": {"align"},
    "th": {"align"},
}
# The classes the renderer writes itself. Any other class from an issue's raw HTML is dropped: it
# would let the text wear the application's own styles (a fake warning or saved-state line, a
# sticky or visually hidden block) even with style attributes gone.
RENDERER_CLASSES = {"a": {"remote-image"}, "details": {"long-block"}}
_LANGUAGE_CLASS = re.compile(r"language-[\w+#.-]+")  # a fenced block's info string
_IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_IMG_SRC = re.compile(r"""\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_IMG_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


def _image_link(src: str, alt: str) -> str:
    label = alt.strip() or "image"
    return (
        f'<a href="{html.escape(src, quote=True)}" class="remote-image">'
        f"[image: {html.escape(label)}]</a>"
    )


def _raw_img_to_link(match: re.Match[str]) -> str:
    tag = match.group(0)
    src = _IMG_SRC.search(tag)
    alt = _IMG_ALT.search(tag)
    if src is None:
        return ""
    return _image_link(
        html.unescape(next(g for g in src.groups() if g is not None)),
        html.unescape(next((g for g in alt.groups() if g is not None), "")) if alt else "",
    )


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if attribute != "class":
        return value
    allowed = RENDERER_CLASSES.get(tag, set())
    kept = [
        token
        for token in value.split()
        if token in allowed or (tag == "code" and _LANGUAGE_CLASS.fullmatch(token))
    ]
    return " ".join(kept) or None


# A fenced or indented block as cmark writes it: its text is escaped, so its newlines are the
# source's.
_CODE_BLOCK = re.compile(r"<pre(?:\s[^>]*)?><code(?:\s[^>]*)?>(.*?)</code></pre>", re.DOTALL)
# Raw HTML is kept for nh3 to clean, as GitHub keeps it for its own sanitiser.
_CMARK_OPTIONS = Options.CMARK_OPT_UNSAFE
# GitHub's extensions but the task list, whose checkboxes the sanitiser would drop anyway
# (the "[ ]" stays as text). Code blocks keep class="language-…" (not GitHub's <pre lang>).
_CMARK_EXTENSIONS = ["table", "autolink", "tagfilter", "strikethrough"]


def _fold(match: re.Match[str]) -> str:
    """A code block longer than LONG_BLOCK_LINES, folded into a details element."""
    lines = match.group(1).count("\n")
    if lines <= LONG_BLOCK_LINES:
        return match.group(0)
    return (
        f'<details class="long-block"><summary>{lines} lines of code or log</summary>'
        f"{match.group(0)}</details>"
    )


# Built once: nh3.clean() builds its sanitiser again on each call, which took three times as
# long as sanitising a typical comment.
_SANITISER = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    attribute_filter=_attribute_filter,
    url_schemes={"http", "https", "mailto"},
    link_rel="nofollow noopener noreferrer",
    strip_comments=True,
)


def render_markdown(text: str) -> str:
    """Safe HTML for a GitHub Markdown text."""
    if not text:
        return ""
    rendered = cmarkgfm.markdown_to_html_with_extensions(
        text.replace("\x00", ""), options=_CMARK_OPTIONS, extensions=_CMARK_EXTENSIONS
    )
    # Markdown images and raw <img> tags alike: cmark writes both as <img>.
    rendered = _IMG_TAG.sub(_raw_img_to_link, rendered)
    rendered = _CODE_BLOCK.sub(_fold, rendered)
    return _SANITISER.clean(rendered)


class RenderedThread(NamedTuple):
    """What is stored of an issue's texts besides the texts: the body's and each comment's HTML
    (a rendered empty body is "<p></p>", an empty comment stays ""), and the issue's facets."""

    body_html: str
    comments_html: list[str]
    facets: dict[str, Any]


def issue_thread_render(title: str, body: str, comments: Sequence[str]) -> RenderedThread:
    """Render an issue whose whole thread is `comments` (in thread order: by creation time,
    then id). Pure, so that it can run in another process."""
    return RenderedThread(
        body_html=render_markdown(body) or "<p></p>",
        comments_html=[
            (render_markdown(comment) or "<p></p>") if comment else "" for comment in comments
        ],
        facets=issue_facets(title, body, comments),
    )


def issue_threads_render(
    threads: Sequence[tuple[str, str, Sequence[str]]],
) -> list[RenderedThread]:
    """`issue_thread_render` of each (title, body, comments): one task for a worker process."""
    return [issue_thread_render(*thread) for thread in threads]
