"""Brute force on the login pages: django-axes locks a username out from one address after
AXES_FAILURE_LIMIT failures, with a 429 page, on the site's login page and the admin's."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("axes_on")]

PASSWORD = "a-long-test-password"


@pytest.fixture
def axes_on():
    # The test settings turn axes off, since the suite logs in with client.login().
    with override_settings(AXES_ENABLED=True):
        yield


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_a_username_is_locked_out_after_five_failures(client, make_user, settings, url):
    make_user("target", is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(url, {"username": "target", "password": "wrong"})
        assert response.status_code == 200  # the form again, with its error
    response = client.post(url, {"username": "target", "password": "wrong"})
    assert response.status_code == 429
    assert b"Too many login attempts" in response.content
    assert int(response["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()

    # Locked: even the right password is refused, and nobody is logged in.
    response = client.post(url, {"username": "target", "password": PASSWORD})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_per_username_and_address(client, make_user, settings):
    make_user("target")
    make_user("colleague")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "target", "password": "wrong"})
    # Another user from the same address still logs in.
    response = client.post("/accounts/login/", {"username": "colleague", "password": PASSWORD})
    assert response.status_code == 302
    # The same user from another address too.
    client.logout()
    response = client.post(
        "/accounts/login/",
        {"username": "target", "password": PASSWORD},
        REMOTE_ADDR="203.0.113.9",
    )
    assert response.status_code == 302


def test_axes_reset_unlocks(client, make_user, settings):
    make_user("target")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "target", "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": "target", "password": PASSWORD}).status_code
        == 429
    )
    call_command("axes_reset")
    response = client.post("/accounts/login/", {"username": "target", "password": PASSWORD})
    assert response.status_code == 302


def test_the_lockout_ends_after_the_cool_off(client, make_user, settings):
    from axes.models import AccessAttempt

    make_user("target")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "target", "password": "wrong"})
    # The failures are older than the cool-off now.
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    response = client.post("/accounts/login/", {"username": "target", "password": PASSWORD})
    assert response.status_code == 302


def test_a_forwarded_for_header_does_not_change_the_address(client, make_user, settings):
    make_user("target")
    for number in range(settings.AXES_FAILURE_LIMIT):
        client.post(
            "/accounts/login/",
            {"username": "target", "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"198.51.100.{number}",
        )
    response = client.post(
        "/accounts/login/",
        {"username": "target", "password": PASSWORD},
        HTTP_X_FORWARDED_FOR="198.51.100.200",
    )
    assert response.status_code == 429
