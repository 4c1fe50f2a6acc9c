"""Token guessing on the API: a wrong token is a 401, and after DEFAULT_THROTTLE_RATES
["failed_token"] failures from one address every token from it is a 429 for a while."""

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_counts():
    cache.clear()
    yield
    cache.clear()


def limit(settings) -> int:
    return int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["failed_token"].split("/")[0])


def get(token: str, address: str = "127.0.0.1"):
    return APIClient().get(
        "/api/studies/", HTTP_AUTHORIZATION=f"Token {token}", REMOTE_ADDR=address
    )


def test_a_wrong_token_is_a_401_with_the_scheme(db):
    response = get("0" * 40)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["error"]["code"] == "authentication_failed"


def test_a_right_token_works(make_user):
    token = Token.objects.create(user=make_user("robot"))
    assert get(token.key).status_code == 200


def test_guessing_tokens_is_throttled_per_address(make_user, settings):
    token = Token.objects.create(user=make_user("robot"))
    for number in range(limit(settings)):
        assert get(f"{number:040d}").status_code == 401
    response = get("f" * 40)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["code"] == "throttled"
    # The right token from that address waits too: the guesser cannot tell a hit.
    assert get(token.key).status_code == 429
    # Other addresses are not affected.
    assert get(token.key, address="203.0.113.7").status_code == 200
    assert get("f" * 40, address="203.0.113.7").status_code == 401


def test_successes_are_not_counted(make_user, settings):
    token = Token.objects.create(user=make_user("robot"))
    for _ in range(limit(settings) + 5):
        assert get(token.key).status_code == 200


def test_every_environment_throttles_users_and_anonymous_requests():
    # The test settings switch the rate throttles off (tests make many requests); the base
    # settings, which production uses, have both.
    from config.settings import base

    framework = base.REST_FRAMEWORK
    assert framework["DEFAULT_THROTTLE_CLASSES"] == [
        "rest_framework.throttling.UserRateThrottle",
        "rest_framework.throttling.AnonRateThrottle",
    ]
    assert {"user", "anon", "failed_token"} <= set(framework["DEFAULT_THROTTLE_RATES"])
