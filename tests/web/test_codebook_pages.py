"""The codebook pages as a researcher meets them: publishing asks for a confirmation the server
checks, the diff words a merge without naming the target among its sources, the proposals page
names categories, and the editor stays light on the starter codebook."""

import re

import pytest
from django.urls import reverse

from taxonomy.drafts import codebook_draft_create
from taxonomy.models import CodebookVersion
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
