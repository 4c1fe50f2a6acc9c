"""Which address the API throttles and the login lockouts count by: the peer (REMOTE_ADDR), never
an X-Forwarded-For header a client sent, unless TRUSTED_PROXY_COUNT proxies stand in front; then
the entry the outermost proxy appended, for the throttles and the lockouts alike."""

import pytest
from django.core.cache import cache
from django.test import Client, RequestFactory, override_settings
from rest_framework.test import APIClient
from rest_framework.throttling import BaseThrottle

from accounts.services import api_token_create
from common import middleware
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.66"
VICTIM = "198.51.100.7"
PROXY = "10.0.0.2"


@pytest.fixture(autouse=True)
def fresh_counts():
    cache.clear()
    yield
    cache.clear()


def failed_token_limit(settings) -> int:
    return int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["failed_token"].split("/")[0])


def get(token: str, address: str, forwarded_for: str | None = None):
    headers = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    return APIClient().get(
        "/api/studies/", HTTP_AUTHORIZATION=f"Token {token}", REMOTE_ADDR=address, **headers
    )


def proxies(count: int):
    """The settings of an instance behind `count` proxies: the app's count and DRF's."""
    from django.conf import settings

    return override_settings(
        TRUSTED_PROXY_COUNT=count, REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": count}
    )


def test_a_forged_header_does_not_escape_the_token_throttle(db, settings):
    limit = failed_token_limit(settings)
    statuses = [
        get(f"{number:040d}", ATTACKER, forwarded_for=f"192.0.2.{number}").status_code
        for number in range(limit + 2)
    ]
    assert statuses == [401] * limit + [429, 429]


def test_a_forged_header_does_not_lock_another_address_out(make_user, settings):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    for number in range(failed_token_limit(settings)):
        get(f"{number:040d}", ATTACKER, forwarded_for=VICTIM)
    assert get(key, VICTIM).status_code == 200
    assert get(key, ATTACKER).status_code == 429


def test_behind_a_proxy_the_address_it_appended_counts(make_user, settings):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    with proxies(1):
        # Whatever the client puts in front, the proxy's entry (last) is the client's address.
        for number in range(failed_token_limit(settings)):
            get(f"{number:040d}", PROXY, forwarded_for=f"192.0.2.{number}, {ATTACKER}")
        assert get(key, PROXY, forwarded_for=f"{VICTIM}, {ATTACKER}").status_code == 429
        # Everyone else behind the same proxy still gets in, even naming the attacker first.
        assert get(key, PROXY, forwarded_for=f"{ATTACKER}, {VICTIM}").status_code == 200


@pytest.mark.parametrize(
    ("count", "forwarded_for", "expected"),
    [
        (0, None, PROXY),
        (0, VICTIM, PROXY),
        (1, None, PROXY),
        (1, VICTIM, VICTIM),
        (1, f"{ATTACKER}, {VICTIM}", VICTIM),
        (2, f"{ATTACKER}, {VICTIM}, 10.0.0.1", VICTIM),
        (3, VICTIM, VICTIM),  # more proxies counted than entries: the first entry
    ],
)
def test_throttles_and_lockouts_read_the_same_address(count, forwarded_for, expected):
    headers = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, **headers)
    with proxies(count):
        assert middleware.client_address(request) == expected
        # What every DRF throttle (user, anonymous, failed tokens) keys on.
        assert BaseThrottle().get_ident(request) == expected


def test_an_entry_that_is_no_address_gives_the_peer():
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="'; DROP")
    with proxies(1):
        assert middleware.client_address(request) == PROXY


def test_behind_a_proxy_a_login_lockout_is_of_the_client_not_the_proxy(make_user, settings):
    # Counted by the proxy's address, five wrong passwords would lock the user out for everyone.
    make_user("target")
    with proxies(1), override_settings(AXES_ENABLED=True):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            response = Client().post(
                "/accounts/login/",
                {"username": "target", "password": PASSWORD[::-1]},
                REMOTE_ADDR=PROXY,
                HTTP_X_FORWARDED_FOR=ATTACKER,
            )
        assert response.status_code == 429
        response = Client().post(
            "/accounts/login/",
            {"username": "target", "password": PASSWORD},
            REMOTE_ADDR=PROXY,
            HTTP_X_FORWARDED_FOR=VICTIM,
        )
        assert response.status_code == 302
