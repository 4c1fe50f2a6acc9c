"""GitHub-flavoured Markdown to safe HTML, done once when an issue or comment is stored.

markdown-it-py parses (GFM tables, strikethrough, autolinks, raw HTML as GitHub allows it) and nh3
(the Ammonia sanitiser) keeps only harmless tags and attributes, so no script, style, event
handler or javascript: link from an issue can reach a page. Remote images are never loaded: they
become links, which keeps annotators' browsers from calling out and keeps the page light.
"""

import html
import re

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

# Code blocks longer than this are folded, so that a 2,000-line log doesn't bury the discussion.
LONG_BLOCK_LINES = 40

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "ol", "p", "pre", "q", "s",
    "samp", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "tt", "ul", "var",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
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


class _Renderer(RendererHTML):
    def image(self, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env)
        return _image_link(str(token.attrGet("src") or ""), alt)

    def fence(self, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _fold(super().fence(tokens, idx, options, env), tokens[idx].content)

    def code_block(self, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _fold(super().code_block(tokens, idx, options, env), tokens[idx].content)


def _fold(rendered: str, content: str) -> str:
    lines = content.count("\n")
    if lines <= LONG_BLOCK_LINES:
        return rendered
    return (
        f'<details class="long-block"><summary>{lines} lines of code or log</summary>'
        f"{rendered}</details>"
    )


_markdown = MarkdownIt("gfm-like", {"html": True, "linkify": True}, renderer_cls=_Renderer)


def render_markdown(text: str) -> str:
    """Safe HTML for a GitHub Markdown text."""
    if not text:
        return ""
    rendered = _markdown.render(text.replace("\x00", ""))
    rendered = _IMG_TAG.sub(_raw_img_to_link, rendered)
    return nh3.clean(
        rendered,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )
