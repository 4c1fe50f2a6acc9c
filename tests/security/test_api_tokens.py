"""Token guessing on the API: a wrong token is a 401, and after DEFAULT_THROTTLE_RATES
["failed_token"] failures from one address every token from it is a 429 for a while."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts.services import api_token_create

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
    _, key = api_token_create(user=make_user("robot"), name="robot")
    assert get(key).status_code == 200


def test_guessing_tokens_is_throttled_per_address(make_user, settings):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    for number in range(limit(settings)):
        assert get(f"{number:040d}").status_code == 401
    response = get("f" * 40)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["code"] == "throttled"
    # The right token from that address waits too: the guesser cannot tell a hit.
    assert get(key).status_code == 429
    # Other addresses are not affected.
    assert get(key, address="203.0.113.7").status_code == 200
    assert get("f" * 40, address="203.0.113.7").status_code == 401


def test_successes_are_not_counted(make_user, settings):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    for _ in range(limit(settings) + 5):
        assert get(key).status_code == 200


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


def test_a_bearer_header_works_as_well(make_user):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    response = APIClient().get("/api/studies/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200


def test_revoked_expired_and_inactive_users_tokens_are_refused_and_counted(make_user, settings):
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import ApiToken
    from accounts.services import api_token_revoke

    robot = make_user("robot")
    revoked, revoked_key = api_token_create(user=robot, name="revoked")
    api_token_revoke(token=revoked, by=robot)
    expiring, expired_key = api_token_create(
        user=robot, name="expired", expires_at=timezone.now() + timedelta(days=1)
    )
    ApiToken.objects.filter(pk=expiring.pk).update(expires_at=timezone.now())
    idle = make_user("idle")
    _, idle_key = api_token_create(user=idle, name="idle")
    idle.is_active = False
    idle.save(update_fields=["is_active"])

    for key in (revoked_key, expired_key, idle_key):
        response = get(key)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Token"
    # Each counted as a wrong token: the rest of the allowance, then 429.
    for number in range(limit(settings) - 3):
        assert get(f"{number:040d}").status_code == 401
    assert get("f" * 40).status_code == 429


@pytest.mark.parametrize(
    "header",
    [
        "Token",  # no key
        "Token a b",  # two words
        "Bearer ",
        "Token " + "x" * 5000,  # longer than any key: refused before it is hashed
    ],
)
def test_malformed_token_headers_are_a_401_in_the_error_shape(db, header):
    response = APIClient().get("/api/studies/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_a_non_ascii_key_is_a_401_not_an_error(db):
    response = APIClient().get("/api/studies/", HTTP_AUTHORIZATION="Token ключ".encode())
    assert response.status_code == 401


def test_other_schemes_are_left_to_other_authentication(db):
    # Basic is not accepted: no session, no token -> the API's unauthenticated answer.
    response = APIClient().get("/api/studies/", HTTP_AUTHORIZATION="Basic cm9ib3Q6cGFzcw==")
    assert response.status_code == 401
