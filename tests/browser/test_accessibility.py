"""Every page a user reaches, as manager, annotator and adjudicator, at a desktop's 1280 x 800
and a phone's 390 x 844: axe-core (shipped by axe-playwright-python) finds no critical and no
serious violation, and no page is wider than the window. The labeling page's keyboard path
passes over the dimensions that do not apply yet.

With SHELL_SCREENSHOTS set to a folder, each page is also saved there as a full-page PNG."""

import io
import os
import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.core.cache import cache

from accounts.sso_settings import sso_providers_config
from ingest.dispatch import issue_upload_start
from ingest.issue_uploads import issue_upload_run
from labeling.models import Assignment, StudyItem
from taxonomy.drafts import codebook_draft_create
from tests.oidc_server import FakeIdentityProvider
from tests.web.test_resolution_pages import disagree

pytestmark = pytest.mark.browser

SCREENSHOTS = os.environ.get("SHELL_SCREENSHOTS")
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
BLOCKING = {"critical", "serious"}


@pytest.fixture
def pages(study, people, codebook_version):
    """The study with one item in resolution, a codebook draft, and the manager able to set up
    studies and see the sources (a superuser who is still no annotator). The pages each role
    reaches, by a short name."""
    manager = people["manager"]
    manager.is_superuser = True
    manager.save(update_fields=["is_superuser"])
    items = list(study.items.order_by("id"))
    disputed = items[0]
    disagree(disputed, people)
    disputed.refresh_from_db()
    assert disputed.status == StudyItem.Status.IN_RESOLUTION
    draft = codebook_draft_create(version=codebook_version, label="0.2.0")
    fresh = Assignment.objects.filter(annotator=people["annotator1"]).exclude(item=disputed)[0]
    version = codebook_version.id
    # An issue import done, with a line refused: its results and error report on the page.
    dump = issue_upload_start(
        study=study, user=manager, stream=io.BytesIO(b"{not json\n"), size=10,
        filename="issues.jsonl",
    )  # fmt: skip
    issue_upload_run(job_id=dump.id)
    overseeing = {
        "overview": "/studies/demo/",
        "agreement": "/studies/demo/agreement/",
        "disagreements": "/studies/demo/disagreements/",
        "resolve": f"/studies/demo/items/{disputed.id}/resolve/",
        "report": "/studies/demo/report/",
        "recheck": "/studies/demo/recheck/",
        "home": "/",
        "codebooks": "/codebooks/",
        "codebook": f"/codebooks/versions/{version}/",
        "tokens": "/account/tokens/",
        "account": "/account/",
        "activity": "/studies/demo/activity/",
        "missing": "/studies/no-such-study/",
    }
    return {
        None: {"login": "/accounts/login/", "missing": "/no-such-page/"},
        "manager": {
            **overseeing,
            "members": "/studies/demo/members/",
            "export": "/studies/demo/export/",
            "study-codebook": "/studies/demo/codebook/",
            "proposals": "/studies/demo/proposals/",
            "codebook-edit": f"/codebooks/versions/{draft.id}/edit/",
            "codebook-diff": f"/codebooks/diff/?from={version}&to={draft.id}",
            "sources": "/sources/",
            "new-study": "/studies/new/",
            "machines": "/studies/demo/machines/",
            "rounds": "/studies/demo/rounds/",
            "invitations": "/studies/demo/invitations/",
            "import": "/studies/demo/import/",
            "codebook-import": "/codebooks/import/",
            "issue-import": "/studies/demo/import/issues/",
            "restore": "/studies/restore/",
        },
        "adjudicator": overseeing,
        "annotator1": {
            "home": "/",
            "overview": "/studies/demo/",
            "queue": "/studies/demo/queue/",
            "label": f"/studies/demo/items/{fresh.item_id}/",
            "label-submitted": f"/studies/demo/items/{disputed.id}/",
            "recheck": "/studies/demo/recheck/",
            "codebooks": "/codebooks/",
            "codebook": f"/codebooks/versions/{version}/",
            "tokens": "/account/tokens/",
            "account": "/account/",
            "forbidden": "/studies/demo/agreement/",
        },
    }


def blocking_violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{violation['id']} ({violation['impact']}): "
        + "; ".join(node["target"][0] for node in violation["nodes"][:5])
        for violation in results.response["violations"]
        if violation["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("username", [None, "manager", "adjudicator", "annotator1"])
def test_every_page_passes_axe_and_fits_the_window(pages, new_page, live_server, username, width):
    page = new_page(username, width=WIDTHS[width][0], height=WIDTHS[width][1])
    problems: list[str] = []
    for name, path in pages[username].items():
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        where = f"{username or 'anonymous'} {width} {name} {path}"
        problems += [f"{where}: {violation}" for violation in blocking_violations(page)]
        scroll_width, inner_width = page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
        if scroll_width > inner_width:
            problems.append(f"{where}: {scroll_width} px wide in a {inner_width} px window")
        if SCREENSHOTS:
            os.makedirs(SCREENSHOTS, exist_ok=True)
            page.screenshot(
                path=os.path.join(SCREENSHOTS, f"{width}-{username or 'anonymous'}-{name}.png"),
                full_page=True,
            )
    assert problems == [], "\n".join(problems)
    assert not page.errors


def test_the_keyboard_path_skips_what_does_not_apply(study, new_page, live_server):
    page = new_page("annotator1")
    page.goto(f"{live_server.url}/studies/demo/queue/")
    page.get_by_role("button", name="Label next item").click()
    page.wait_for_url(re.compile(r"/studies/demo/items/\d+/$"))
    current = "document.querySelector('fieldset.dimension.current').dataset.dimension"
    waiting = page.locator("fieldset.dimension.not-applicable")

    # Nothing screened yet: the rest waits for the screening, disabled, and `j` stays put.
    assert waiting.count() == 8
    assert waiting.evaluate_all("fieldsets => fieldsets.every(fieldset => fieldset.disabled)")
    page.keyboard.press("j")
    assert page.evaluate(current) == "screening"
    page.keyboard.press("2")  # Not a Bug: the rest still does not apply
    page.keyboard.press("j")
    page.keyboard.press("1")  # so this is the screening's first choice again, not a symptom
    assert page.evaluate(current) == "screening"
    assert page.get_by_label("Include").is_checked()
    assert not page.locator("fieldset[data-dimension=symptom] input:checked").count()

    # Screened in: the next dimension opens, to the keys and to Tab.
    assert waiting.count() == 0
    page.keyboard.press("j")
    assert page.evaluate(current) == "symptom"
    assert page.evaluate("document.activeElement.name") == "dim-symptom"

    # Screened out again: Tab from the screening goes past every disabled dimension.
    page.keyboard.press("k")
    page.keyboard.press("2")
    assert page.evaluate(current) == "screening"
    assert waiting.count() == 8
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "submit-button":
            break
        assert page.evaluate("!document.activeElement.closest('fieldset.not-applicable')")
    assert page.evaluate("document.activeElement.id") == "submit-button"
    assert not page.errors


@pytest.fixture
def sso(settings):
    """Single sign-on configured, the lab's provider being the stand-in, GitHub too."""
    with FakeIdentityProvider() as idp:
        settings.SOCIALACCOUNT_PROVIDERS = sso_providers_config(
            oidc_server_url=idp.base_url,
            oidc_client_id=idp.client_id,
            oidc_client_secret=idp.client_secret,
            oidc_name="Lab Login",
            github_client_id="gh-client",
            github_client_secret=idp.client_secret,  # never used: GitHub is not called
        )
        cache.clear()  # the SSO_PER_HOUR counts
        yield idp


@pytest.mark.parametrize("width", WIDTHS)
def test_the_login_page_with_single_sign_on_passes_axe(sso, new_page, live_server, width):
    page = new_page(width=WIDTHS[width][0], height=WIDTHS[width][1])
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.get_by_role("button", name="Sign in with Lab Login").is_visible()
    assert page.get_by_role("button", name="Sign in with GitHub").is_visible()
    assert blocking_violations(page) == []
    scroll_width, inner_width = page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth]"
    )
    assert scroll_width <= inner_width
    page.goto(f"{live_server.url}/accounts/oidc/lab/login/")  # the start page of a GET
    assert blocking_violations(page) == []


def test_a_browser_signs_in_through_the_provider(db, sso, new_page, live_server):
    """The button's POST, the redirect to the provider (allowed by the login page's
    form-action), the provider's redirect back, and home: in Chromium, under the policy."""
    page = new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("button", name="Sign in with Lab Login").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_text("person").first.is_visible()
    assert ("POST", "/token", 200) in sso.requests
    assert not page.errors
