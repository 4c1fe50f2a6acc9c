"""The error pages wear the app shell; the 500 page renders as Django renders it, with an empty
context: no request, no user, no database."""

import pytest
from django.template import loader

from tests.conftest import PASSWORD


def test_the_500_page_needs_no_request_and_no_database():
    # Unmarked, this test may not touch the database: pytest-django refuses any query.
    html = loader.get_template("500.html").render()
    assert 'class="shell"' in html and "Something went wrong" in html


@pytest.mark.django_db
def test_a_missing_page_is_the_branded_404(client, people):
    assert client.login(username="manager", password=PASSWORD)
    response = client.get("/studies/no-such-study/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="shell"' in html and "Page not found" in html and "Skip to content" in html
