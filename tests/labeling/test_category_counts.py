"""The codebook's Markdown export with a study's counts (?study=SLUG) counts only what the asker
may see: a manager every item, an adjudicator the items in resolution or resolved, never the
labels of an item whose last annotator has not yet given theirs. A study the asker cannot see
is a 404 over the API, as on the page; one they see without overseeing it is a 403."""

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from labeling.models import StudyItem
from tests.conftest import PASSWORD
from tests.labeling.test_resolution import submit

COUNT = re.compile(r"\(`(?P<key>[a-z_]+)`\).* — labels: (?P<labels>\d+), gold: (?P<gold>\d+)$")


def counts_of(markdown: str) -> dict[str, tuple[int, int]]:
    """category key -> (labels, gold); keys are unique across the starter codebook."""
    return {
        match["key"]: (int(match["labels"]), int(match["gold"]))
        for line in markdown.splitlines()
        if (match := COUNT.search(line))
    }


@pytest.fixture
def half_labeled(study, people):
    """One item in resolution (both annotators disagree on the root cause), one still open
    (annotator1 said numerical_error; annotator2 has not submitted)."""
    disputed, open_item = study.items.order_by("id")[:2]
    submit(disputed, people["annotator1"], root_cause=["api_misuse"])
    submit(disputed, people["annotator2"], root_cause=["configuration_error"])
    submit(open_item, people["annotator1"], root_cause=["numerical_error"])
    disputed.refresh_from_db()
    open_item.refresh_from_db()
    assert (disputed.status, open_item.status) == (
        StudyItem.Status.IN_RESOLUTION,
        StudyItem.Status.OPEN,
    )
    return study


def api_export(user, target, **query) -> object:
    client = APIClient()
    client.force_authenticate(user)
    parameters = {"as": "markdown", "study": target.slug, **query}
    return client.get(f"/api/codebook-versions/{target.codebook_version_id}/export/", parameters)


def page_export(client, user, study):
    assert client.login(username=user.username, password=PASSWORD)
    return client.get(
        reverse("codebook_export", args=[study.codebook_version_id]),
        {"format": "markdown", "study": study.slug},
    )


def test_an_adjudicator_s_counts_leave_out_the_items_still_being_labeled(half_labeled, people):
    response = api_export(people["adjudicator"], half_labeled)

    assert response.status_code == 200
    markdown = response.content.decode()
    counts = counts_of(markdown)
    assert counts["api_misuse"] == (1, 0)
    assert counts["configuration_error"] == (1, 0)
    assert counts["numerical_error"] == (0, 0)  # annotator1's label on the open item
    # Both labels of the disputed item (agreed, hence its gold label), none of the open one.
    assert counts["include"] == (2, 1)
    assert "of the items of the study Demo in resolution or resolved" in markdown


def test_a_manager_s_counts_take_every_item(half_labeled, people):
    counts = counts_of(api_export(people["manager"], half_labeled).content.decode())

    assert counts["numerical_error"] == (1, 0)
    assert counts["include"] == (3, 1)


def test_the_page_counts_as_the_api_does(client, half_labeled, people):
    adjudicator = page_export(client, people["adjudicator"], half_labeled)
    client.logout()
    manager = page_export(client, people["manager"], half_labeled)
    adjudicator, manager = (counts_of(r.content.decode()) for r in (adjudicator, manager))

    assert adjudicator["numerical_error"] == (0, 0) and adjudicator["include"] == (2, 1)
    assert manager["numerical_error"] == (1, 0) and manager["include"] == (3, 1)


def test_the_command_line_counts_every_item(half_labeled):
    out = io.StringIO()
    call_command(
        "export_codebook",
        half_labeled.codebook_version.codebook.name,
        "--format",
        "markdown",
        "--study",
        half_labeled.slug,
        stdout=out,
    )

    assert counts_of(out.getvalue())["numerical_error"] == (1, 0)


def test_an_unseen_study_is_a_404_and_an_annotator_s_a_403(half_labeled, people):
    for user in (people["outsider"], people["manager"]):
        response = api_export(user, half_labeled, study="no-such-study")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert api_export(people["outsider"], half_labeled).status_code == 404
    refused = api_export(people["annotator1"], half_labeled)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
