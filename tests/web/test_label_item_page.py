"""The labeling page's category trees: each category's examples beside its definition, linked to
the issues on GitHub, and the kept (cached) HTML that carries them."""

import json
import re
from html.parser import HTMLParser

import pytest

from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.services import codebook_load
from tests.conftest import CODEBOOK_FILE, PASSWORD

EXAMPLES = [
    "microsoft/DeepSpeed#4242",
    "https://example.org/a-case?x=1&y=2",
    "<script>alert(1)</script>",
    "javascript:alert(1)",
    'NVIDIA/Megatron-LM#12" onmouseover="alert(1)',
]


class _Definition(HTMLParser):
    """The text, elements, attributes and links (href, text) inside the element with an id."""

    def __init__(self, element_id: str) -> None:
        super().__init__(convert_charrefs=True)  # text and attributes decoded as a browser
        self.element_id = element_id
        self.open = 0  # elements open inside the definition, itself included
        self.text: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.links: list[tuple[str, str]] = []
        self._link: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.open:
            self.open = int(dict(attrs).get("id") == self.element_id)
            return
        self.open += tag != "br"
        self.tags.append(tag)
        self.attributes.extend(name for name, _ in attrs)
        if tag == "a":
            self._link = [dict(attrs).get("href") or "", ""]

    def handle_endtag(self, tag: str) -> None:
        if not self.open:
            return
        self.open -= 1
        if tag == "a" and self._link is not None:
            self.links.append((self._link[0], self._link[1].strip()))
            self._link = None

    def handle_data(self, data: str) -> None:
        if self.open:
            self.text.append(data)
            if self._link is not None:
                self._link[1] += data

    @classmethod
    def of(cls, html: str, element_id: str) -> "_Definition":
        parser = cls(element_id)
        parser.feed(html)
        return parser


@pytest.fixture
def study_with_examples(sample_issues, people):
    data = json.loads(CODEBOOK_FILE.read_bytes())
    screening = next(d for d in data["dimensions"] if d["key"] == "screening")
    include = next(c for c in screening["categories"] if c["key"] == "include")
    include["examples"] = EXAMPLES
    version, _ = codebook_load(data=codebook_file_read(json.dumps(data).encode()), publish=True)
    return study_create(
        slug="demo",
        name="Demo",
        codebook_version=version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        issues=sample_issues,
    )


def _examples_shown(html: str) -> _Definition:
    definition = _Definition.of(html, "def-screening-include")
    assert definition.text, "the definition of Include is on the page"
    return definition


def _check_examples(html: str) -> None:
    definition = _examples_shown(html)
    assert definition.links == [
        ("https://github.com/microsoft/DeepSpeed/issues/4242", "microsoft/DeepSpeed#4242"),
        ("https://example.org/a-case?x=1&y=2", "https://example.org/a-case?x=1&y=2"),
    ]
    text = " ".join("".join(definition.text).split())
    assert "Examples:" in text
    # Not links, shown as the text they are: nothing in an example becomes markup.
    for example in EXAMPLES[2:]:
        assert example in text
    assert definition.tags.count("a") == 2 and "script" not in definition.tags
    assert "onmouseover" not in definition.attributes


def test_a_categorys_examples_show_beside_its_definition_linked_to_the_issues(
    client, study_with_examples
):
    client.login(username="annotator1", password=PASSWORD)
    item_url = client.post("/studies/demo/next/").url
    first = client.get(item_url).content.decode()  # rendered, then kept in the cache
    _check_examples(first)
    _check_examples(client.get(item_url).content.decode())  # from the cache

    version = re.search(r'name="version" value="(\d+)"', first).group(1)
    saved = client.post(
        item_url, {"version": version, "action": "draft", "dim-screening": "include"}
    )
    assert saved.status_code == 302
    labeled = client.get(item_url).content.decode()  # an item with labels: rendered for it
    assert re.search(r'data-key="include" checked', labeled)
    _check_examples(labeled)


def test_the_cache_does_not_serve_the_trees_of_a_template_that_changed(
    client, study_with_examples, settings, tmp_path
):
    """A release that changes the templates (as the one that added the examples did) shows the
    new HTML at once, not what the cache kept from the one before."""
    client.login(username="annotator1", password=PASSWORD)
    item_url = client.post("/studies/demo/next/").url
    assert "Examples:" in client.get(item_url).content.decode()  # kept in the cache

    (tmp_path / "web").mkdir()
    original = (settings.BASE_DIR / "web" / "templates" / "web" / "_categories.html").read_text()
    (tmp_path / "web" / "_categories.html").write_text(
        original.replace("<strong>Examples:</strong>", "<strong>Seen in:</strong>")
    )
    settings.TEMPLATES = [
        {**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}
    ]
    html = client.get(item_url).content.decode()
    assert "Seen in:" in html and "Examples:" not in html
