"""The codebook pages as a researcher meets them: publishing asks for a confirmation the server
checks, the diff words a merge without naming the target among its sources, the proposals page
names categories, and the editor stays light on the starter codebook."""

import re

import pytest
from django.urls import reverse

from labeling.models import Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from taxonomy.drafts import codebook_draft_create, draft_category_merge, draft_category_update
from taxonomy.models import Category, CodebookVersion
from tests.conftest import PASSWORD


def login(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


@pytest.fixture
def draft(codebook_version):
    return codebook_draft_create(version=codebook_version, label="0.2.0")


# ----------------------------------------------------------------------------- publishing


def test_publishing_asks_for_a_confirmation_that_the_server_checks(client, study, draft):
    login(client, "manager")
    edit = reverse("codebook_edit", args=[draft.id])

    page = client.get(edit).content.decode()
    form = re.search(r'<form[^>]*>(?:(?!</form>).)*value="publish".*?</form>', page, re.S).group()
    assert re.search(r'<input type="checkbox" name="confirm" value="1" required>', form)
    assert "can never change once published" in form

    unconfirmed = client.post(edit, {"action": "publish"})
    assert unconfirmed.status_code == 400
    assert "Tick the box to confirm" in unconfirmed.content.decode()
    draft.refresh_from_db()
    assert draft.status == CodebookVersion.Status.DRAFT

    confirmed = client.post(edit, {"action": "publish", "confirm": "1"})
    assert confirmed.status_code == 302
    draft.refresh_from_db()
    assert draft.is_published


# ----------------------------------------------------------------------------- the diff


def _merged_lines(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", line) for line in re.findall(r"<li>Merged .*?</li>", page)]


def test_the_diff_words_a_merge_without_the_target_among_its_sources(client, study, draft):
    root_cause = draft.dimensions.get(key="root_cause")
    symptom = draft.dimensions.get(key="symptom")
    draft_category_merge(
        dimension=root_cause,
        source_keys=["type_error", "tensor_shape_mismatch"],
        target_key="api_misuse",
    )
    # A target renamed in the same draft is named by its new key, its old one beside it.
    draft_category_update(category=symptom.categories.get(key="hang"), key="stall")
    draft_category_merge(dimension=symptom, source_keys=["build_failure"], target_key="stall")
    login(client, "manager")

    page = client.get(
        reverse("codebook_diff") + f"?from={study.codebook_version_id}&to={draft.id}"
    ).content.decode()

    assert _merged_lines(page) == [
        "Merged build_failure into stall (formerly hang)",
        "Merged tensor_shape_mismatch, type_error into api_misuse",
    ]


# ----------------------------------------------------------------------------- proposals


def test_the_proposals_page_names_categories(client, study, people):
    first = people["annotator1"]
    item = study.items.order_by("id").first()
    assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=first),
        user=first,
        answers={
            "root_cause": DimensionAnswer(category_keys=["numerical_error"], proposal="Silent NaN")
        },
        submit=False,
    )
    login(client, "manager")
    url = reverse("study_proposals", args=["demo"])

    page = client.get(url).content.decode()
    mapped = client.post(
        url,
        {
            "action": "map",
            "dimension": "root_cause",
            "text": "silent nan",
            "category": "api_misuse",
        },
        follow=True,
    ).content.decode()

    assert '<option value="api_misuse">API Misuse (api_misuse)</option>' in page
    assert '<option value="api_misuse">api_misuse</option>' not in page
    assert "mapped to an existing category: API Misuse (api_misuse, version 0.1.0)" in mapped
    decision = re.search(r"Mapped to an existing category: (.*?) \(0\.1\.0\)</td>", mapped)
    assert decision.group(1) == 'API Misuse <code class="muted">api_misuse</code>'


# ----------------------------------------------------------------------------- the editor

# The starter codebook's draft made a 505,287-byte editor page with 448 forms (four per
# category); it is under 100 kB now, the forms of a category coming on demand.
EDITOR_MAX_BYTES = 128_000


def test_the_editor_page_stays_light_on_the_starter_codebook(client, study, draft):
    login(client, "manager")
    edit = reverse("codebook_edit", args=[draft.id])
    n_categories = Category.objects.filter(dimension__version=draft).count()
    n_dimensions = draft.dimensions.count()

    page = client.get(edit)

    assert page.status_code == 200
    assert len(page.content) < EDITOR_MAX_BYTES, len(page.content)
    html = page.content.decode()
    # Forms per dimension (settings, merge, add, mapping), for the draft (label, publish,
    # discard) and the top bar's log out; none per category.
    assert html.count("<form") <= 4 * n_dimensions + 4 < n_categories
    hang = draft.dimensions.get(key="symptom").categories.get(key="hang")
    assert f'<a href="?category={hang.id}#cat-{hang.id}" hx-get="?category={hang.id}"' in html
    assert 'aria-label="Edit hang"' in html and "Save hang" not in html


def test_a_categorys_forms_come_on_demand(client, study, draft, codebook_version):
    login(client, "manager")
    edit = reverse("codebook_edit", args=[draft.id])
    hang = draft.dimensions.get(key="symptom").categories.get(key="hang")

    fragment = client.get(edit, {"category": hang.id}, HTTP_HX_REQUEST="true")
    opened = client.get(edit, {"category": hang.id})  # without JavaScript: in the page
    other_version = Category.objects.get(dimension__version=codebook_version, key="crash")
    elsewhere = client.get(edit, {"category": other_version.id}, HTTP_HX_REQUEST="true")

    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert "<html" not in text and text.count("<form") == 4
    for button in ("Save hang", "Move hang", "Move hang up", "Remove hang", "Split hang"):
        assert f">{button}</button>" in text
    assert 'name="csrfmiddlewaretoken"' in text
    assert '<option value="crash">crash</option>' in text  # a parent to move under
    assert '<option value="hang"' not in text  # not under itself
    assert opened.status_code == 200 and ">Save hang</button>" in opened.content.decode()
    assert 'aria-label="Edit hang"' not in opened.content.decode()  # open already
    assert elsewhere.status_code == 404


def test_saving_a_category_comes_back_to_its_open_forms(client, study, draft):
    login(client, "manager")
    edit = reverse("codebook_edit", args=[draft.id])
    hang = draft.dimensions.get(key="symptom").categories.get(key="hang")

    saved = client.post(edit, {"action": "category", "category": hang.id, "name": "Hang or stall"})
    refused = client.post(edit, {"action": "move", "category": hang.id, "parent": "nothing"})

    assert saved.status_code == 302
    assert saved.url == f"{edit}?category={hang.id}#cat-{hang.id}"
    assert refused.status_code == 400
    assert ">Save hang</button>" in refused.content.decode()  # the failed change's forms stay
