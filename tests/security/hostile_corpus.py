"""The hostile issue Markdown corpus (hostile_payloads.jsonl) and the checks of what the
renderer makes of it, shared by the fast test and the Chromium test.

Each line of the corpus is one payload: `name`, `category`, `markdown` (the issue text as GitHub
would send it), `shows` (text that must still be visible once the payload is neutralised) and,
for the classics, `source` (the public list it comes from). Every payload tries to run
``window.__pwned = '<name>'`` or ``alert()``.
"""

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from corpus.rendering import ALLOWED_ATTRIBUTES, ALLOWED_TAGS

CORPUS_FILE = Path(__file__).with_name("hostile_payloads.jsonl")
REPOSITORY = "mallory/hostile-markdown"
SAFE_SCHEMES = {"http", "https", "mailto"}
# Elements that run script, load content, submit or restyle the page: none may come out, even if
# someone widens ALLOWED_TAGS.
FORBIDDEN_TAGS = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "form",
    "input", "button", "select", "textarea", "svg", "math", "base", "meta", "link", "img",
    "video", "audio", "source", "template", "noscript", "portal",
}  # fmt: skip
URL_ATTRIBUTES = {
    "href", "src", "action", "formaction", "data", "poster", "background", "srcdoc", "srcset",
    "xlink:href", "ping", "cite", "dynsrc", "lowsrc",
}  # fmt: skip
# The classes the renderer itself writes; any other class would let an issue dress its text in
# the application's own styles (a fake warning, a hidden or sticky block).
RENDERER_CLASSES = {"remote-image", "long-block"}
RENDERER_CLASS_PREFIX = "language-"
ADDED_ATTRIBUTES = {"a": {"rel"}}  # nh3 sets rel on every link
# The URL standard drops ASCII tab and newline anywhere and C0 controls and spaces at either end.
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


@dataclass(frozen=True)
class Payload:
    name: str
    category: str
    markdown: str
    shows: tuple[str, ...]
    source: str = ""


def hostile_payloads() -> list[Payload]:
    payloads = []
    with CORPUS_FILE.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            payloads.append(
                Payload(
                    name=row["name"],
                    category=row["category"],
                    markdown=row["markdown"],
                    shows=tuple(row["shows"]),
                    source=row.get("source", ""),
                )
            )
    return payloads


def url_scheme(value: str) -> str | None:
    """The scheme a browser reads in an attribute value that is already entity-decoded, or None
    for a relative URL."""
    cleaned = _TAB_OR_NEWLINE.sub("", value).strip("".join(chr(c) for c in range(0x21)))
    match = _SCHEME.match(cleaned)
    return match.group(1).lower() if match else None


class _Inspector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # attribute values and text decoded as a browser
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_TAGS or tag not in ALLOWED_TAGS:
            self.problems.append(f"<{tag}> element")
        allowed = ALLOWED_ATTRIBUTES.get(tag, set()) | ADDED_ATTRIBUTES.get(tag, set())
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.problems.append(f"event handler {name} on <{tag}>")
            elif name == "style":
                self.problems.append(f"style attribute on <{tag}>")
            elif name not in allowed:
                self.problems.append(f"attribute {name} on <{tag}>")
            if name in URL_ATTRIBUTES and url_scheme(value) not in SAFE_SCHEMES | {None}:
                self.problems.append(f"{name}={value!r} on <{tag}>")
            if name == "class":
                for token in value.split():
                    if token not in RENDERER_CLASSES and not token.startswith(
                        RENDERER_CLASS_PREFIX
                    ):
                        self.problems.append(f"class {token!r} on <{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.problems.append(f"comment <!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.problems.append(f"declaration <!{decl}>")

    def unknown_decl(self, data: str) -> None:
        self.problems.append(f"declaration <![{data}]>")

    def handle_pi(self, data: str) -> None:
        self.problems.append(f"processing instruction <?{data}>")


def html_inspect(html: str) -> tuple[list[str], str]:
    """(what is unsafe in a sanitised fragment, its text with whitespace collapsed)."""
    inspector = _Inspector()
    inspector.feed(html)
    inspector.close()
    return inspector.problems, text_collapse("".join(inspector.text))


def text_collapse(text: str) -> str:
    return " ".join(text.split())


def hostile_issue_object(
    *, number: int, body: str, comments: list[Payload], title: str = ""
) -> dict[str, Any]:
    """A GitHub issue object, as an import file holds it, with the payloads as its comments."""
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC).isoformat().replace("+00:00", "Z")
    return {
        "repository": REPOSITORY,
        "number": number,
        "id": 900_000 + number,
        "title": title or f"Hostile payloads {number}",
        "body": body,
        "state": "open",
        "user": {"login": "mallory"},
        "created_at": when,
        "updated_at": when,
        "comments_data": [
            {
                "id": 800_000 + number * 1_000 + index,
                "user": {"login": "mallory"},
                "body": comment.markdown,
                "created_at": when,
                "updated_at": when,
            }
            for index, comment in enumerate(comments)
        ],
    }


def hostile_issue_objects(payloads: list[Payload], *, per_issue: int) -> list[dict[str, Any]]:
    """Issue objects carrying the payloads: the first of every `per_issue` payloads is an issue's
    body, the others its comments."""
    objects = []
    for number, start in enumerate(range(0, len(payloads), per_issue), start=1):
        body, *comments = payloads[start : start + per_issue]
        objects.append(
            hostile_issue_object(
                number=number,
                body=body.markdown,
                comments=comments,
                title=f"Hostile payload {body.name} <script>window.__pwned='title'</script>",
            )
        )
    return objects
