"""/health/: the database and the broker checked, 200 or 503, for anyone, without a session."""

import socket

import pytest

from tests.celery_worker import redis_reachable
from tests.conftest import require_service


def closed_port() -> int:
    """A local port nothing listens on (the moment it is read)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def broker_url(settings):
    """The real Redis of the session, as the broker the health check pings."""
    require_service(
        redis_reachable(settings.REDIS_URL),
        "Redis",
        "set REDIS_URL=redis://127.0.0.1:6379/0 to run this test",
    )
    settings.CELERY_BROKER_URL = settings.REDIS_URL
    return settings.REDIS_URL


def test_with_the_database_and_the_broker_up_it_is_ok(client, db, broker_url):
    response = client.get("/health/")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["broker"]["ms"] >= 0 and body["checks"]["database"]["ms"] >= 0


def test_a_broker_that_does_not_answer_is_a_503_naming_the_broker(client, db, settings):
    port = closed_port()
    settings.CELERY_BROKER_URL = f"redis://:a-secret-password@127.0.0.1:{port}/0"

    response = client.get("/health/")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["broker"]["error"] == "ConnectionError"
    # The class of the error only: no host, port or password of the broker's URL.
    text = response.content.decode()
    assert str(port) not in text and "secret" not in text and "127.0.0.1" not in text


def test_the_embedded_default_has_no_broker_to_check(client, db, settings):
    settings.CELERY_BROKER_URL = None

    response = client.get("/health/")

    assert response.status_code == 200
    assert response.json()["checks"]["broker"] == {"ok": True, "configured": False}


def test_it_needs_no_login_sets_no_cookie_and_runs_one_query(
    client, db, broker_url, django_assert_num_queries
):
    with django_assert_num_queries(1):  # the SELECT 1: no session, no user
        response = client.get("/health/", HTTP_COOKIE="sessionid=not-a-session")

    assert response.status_code == 200
    assert not response.cookies
    assert "Set-Cookie" not in response.headers
    assert "no-store" in response["Cache-Control"]


def test_it_only_answers_reads(client, db):
    assert client.post("/health/").status_code == 405
    assert client.head("/health/").status_code in (200, 503)
