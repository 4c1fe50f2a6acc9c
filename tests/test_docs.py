"""The documentation site: it builds strictly, the methods page has every anchor the app links
to, it loads nothing from elsewhere, and the app serves it read-only only when told to."""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import clear_url_caches

import config.urls
from labeling.agreement_methods import METHODS_ANCHORS, methods_url

ROOT = Path(settings.BASE_DIR)
METHODS_SOURCE = ROOT / "docs" / "agreement-methods.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `make docs` builds it, into a folder of the test's own."""
    site_dir = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}{result.stderr}"
    return site_dir


def script_sources(response) -> list[str]:
    policy = response.headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    return directives["script-src"].split()


def element_ids(html: str) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', html))


def test_every_methods_anchor_exists_in_the_built_page(site):
    built = element_ids((site / "agreement-methods" / "index.html").read_text())
    missing = sorted(set(METHODS_ANCHORS.values()) - built)
    assert not missing, f"anchors of labeling.agreement_methods missing on the page: {missing}"


def test_every_heading_of_the_methods_page_names_its_anchor():
    """Anchors derived from heading text would change with a reworded heading, and every link
    of the app to that section with it."""
    headings, in_code = [], False
    for line in METHODS_SOURCE.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{2,6} ", line):
            headings.append(line)
    assert headings
    unanchored = [line for line in headings if not re.search(r"\{#[a-z0-9-]+\}\s*$", line)]
    assert not unanchored, unanchored


def test_the_site_loads_nothing_from_elsewhere(site):
    """Labs work offline: no web font, script, stylesheet or image from another host."""
    outside = re.compile(
        r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.IGNORECASE
    )
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 3
    for page in pages:
        html = page.read_text()
        assert not outside.search(html), page
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page


def test_methods_url_links_a_figure_to_its_section(settings):
    settings.DOCS_URL = "/docs/"
    assert methods_url() == "/docs/agreement-methods/"
    assert methods_url("percent_agreement") == "/docs/agreement-methods/#percent-agreement"
    assert methods_url("per_category.kappa") == "/docs/agreement-methods/#per-category-kappa"
    settings.DOCS_URL = "https://docs.example.org/issuecoder"
    assert (
        methods_url("headline") == "https://docs.example.org/issuecoder/agreement-methods/#headline"
    )
    with pytest.raises(KeyError):
        methods_url("no_such_figure")


@contextmanager
def routes_with(**overrides) -> Iterator[None]:
    """config.urls built under these settings: it decides at import whether /docs/ exists.
    Rebuilt under the test settings afterwards, so no other test sees the route."""
    try:
        with override_settings(**overrides):
            importlib.reload(config.urls)
            clear_url_caches()
            yield
    finally:
        importlib.reload(config.urls)
        clear_url_caches()


# No database marker: a documentation page that queried the database would fail here.
def test_the_app_serves_the_built_site_when_told_to(client, site):
    with routes_with(DOCS_SERVE=True, DOCS_ROOT=str(site)):
        home = client.get("/docs/")
        assert home.status_code == 200
        assert "IssueCoder" in b"".join(home.streaming_content).decode()
        # The theme's own inline scripts run on these pages, and only there.
        assert "'unsafe-inline'" in script_sources(home)

        methods = client.get("/docs/agreement-methods/")
        assert methods.status_code == 200
        page = b"".join(methods.streaming_content).decode()
        assert set(METHODS_ANCHORS.values()) <= element_ids(page)

        assert client.get("/docs/agreement-methods")["Location"] == "/docs/agreement-methods/"
        stylesheet = next((site / "assets" / "stylesheets").glob("main.*.min.css"))
        response = client.get(f"/docs/assets/stylesheets/{stylesheet.name}")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/css")

        assert client.get("/docs/no-such-page/").status_code == 404
        assert client.post("/docs/").status_code == 405
        # Elsewhere the policy stays as strict as ever.
        assert "'unsafe-inline'" not in script_sources(client.get("/no-such-page/"))


def test_the_served_site_stays_inside_its_folder(client, site):
    secret = site.parent / "secret.txt"
    secret.write_text("not for the web")
    with routes_with(DOCS_SERVE=True, DOCS_ROOT=str(site)):
        for url in (
            "/docs/../secret.txt",
            "/docs/%2e%2e/secret.txt",
            "/docs/assets/..%2f..%2fsecret.txt",
            f"/docs/{secret}",
            f"/docs//{secret}",
            "/docs/../../manage.py",
        ):
            response = client.get(url)
            assert response.status_code == 404, url


def test_the_docs_route_follows_the_setting_then_debug(client, site):
    with routes_with(DOCS_SERVE=False, DEBUG=True, DOCS_ROOT=str(site)):
        assert client.get("/docs/").status_code == 404
    with routes_with(DOCS_SERVE=None, DEBUG=True, DOCS_ROOT=str(site)):
        assert client.get("/docs/").status_code == 200
    with routes_with(DOCS_SERVE=None, DEBUG=False, DOCS_ROOT=str(site)):
        assert client.get("/docs/").status_code == 404


def test_an_unbuilt_site_is_a_404_that_says_so(client, tmp_path):
    with routes_with(DOCS_SERVE=True, DOCS_ROOT=str(tmp_path / "site")):
        response = client.get("/docs/")
        assert response.status_code == 404


def generated_reference_pages() -> dict[Path, str]:
    script = ROOT / "docs" / "gen_reference.py"
    spec = importlib.util.spec_from_file_location("gen_reference", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pages()


def test_the_generated_reference_pages_are_up_to_date():
    """docs/reference/cli.md and api.md are written from the commands' parsers and the OpenAPI
    schema; a command or an operation changed without `make docs-reference` fails here."""
    for path, text in generated_reference_pages().items():
        committed = path.read_text() if path.exists() else ""
        assert committed == text, f"{path.relative_to(ROOT)} is stale: run `make docs-reference`"


def settings_variables() -> set[str]:
    """Every environment variable the settings, the gunicorn configuration and the backup
    command read."""
    sources = [
        *(ROOT / "config" / "settings").glob("*.py"),
        ROOT / "config" / "gunicorn.py",
        ROOT / "exports" / "management" / "commands" / "backup.py",
    ]
    text = "\n".join(path.read_text() for path in sources)
    read = re.compile(r"""(?:env(?:\.\w+)?\(|environ\.get\()\s*["']([A-Z][A-Z0-9_]+)["']""")
    return set(read.findall(text))


def test_the_configuration_page_names_every_environment_variable():
    variables = settings_variables()
    assert {"DATABASE_URL", "TRUSTED_PROXY_COUNT", "DOCS_SERVE", "GUNICORN_BIND"} <= variables
    page = (ROOT / "docs" / "operations" / "configuration.md").read_text()
    missing = sorted(name for name in variables if f"`{name}`" not in page)
    assert not missing, f"variables read by the settings but missing on the page: {missing}"
    makefile = (ROOT / "Makefile").read_text()
    for name in re.findall(r"^([A-Z_]+) \?=", makefile, re.MULTILINE):
        if name != "PYTHON":
            assert f"`{name}`" in page, name
