"""Personal API tokens over the API and their services: create (the key once), list (no keys),
revoke (own only), limits, and the copy of DRF's old tokens."""

import hashlib
import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.selectors import api_token_for_key
from accounts.services import (
    KEY_PREFIX,
    MAX_ACTIVE_TOKENS,
    api_token_create,
    api_token_revoke,
    api_token_touch,
)
from common.exceptions import ApplicationError, PermissionDeniedError


@pytest.fixture
def session(make_user):
    """A signed-in browser session of "alice"."""
    user = make_user("alice")
    client = APIClient()
    client.force_login(user)
    return client, user


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_create_returns_the_key_once_and_stores_only_its_hash(session):
    client, _ = session
    response = client.post("/api/tokens/", {"name": "export script"}, format="json")
    assert response.status_code == 201
    body = response.json()
    key = body["key"]
    assert key.startswith(KEY_PREFIX)
    assert body["key_prefix"] == key[:8]
    assert body["active"] is True
    stored = ApiToken.objects.get(pk=body["id"])
    assert stored.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {str(value) for value in ApiToken.objects.values_list().get(pk=stored.pk)}
    # The key works, and the list never shows it again.
    listed = with_token(key).get("/api/tokens/").json()
    assert listed["count"] == 1
    assert "key" not in listed["results"][0]
    assert listed["results"][0]["name"] == "export script"


def test_a_token_cannot_create_tokens(make_user):
    _, key = api_token_create(user=make_user("robot"), name="robot")
    response = with_token(key).post("/api/tokens/", {"name": "another"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert ApiToken.objects.count() == 1


def test_anonymous_requests_get_nothing(db):
    assert APIClient().get("/api/tokens/").status_code == 401
    assert APIClient().post("/api/tokens/", {"name": "x"}, format="json").status_code == 401


def test_revoke_own_token_and_it_stops_working(session):
    client, user = session
    token, key = api_token_create(user=user, name="laptop")
    assert with_token(key).get("/api/studies/").status_code == 200
    response = with_token(key).delete(f"/api/tokens/{token.pk}/")  # a token may revoke itself
    assert response.status_code == 204
    assert with_token(key).get("/api/studies/").status_code == 401
    # Revoking again changes nothing, and the list shows it revoked.
    first = ApiToken.objects.get(pk=token.pk).revoked_at
    assert client.delete(f"/api/tokens/{token.pk}/").status_code == 204
    assert ApiToken.objects.get(pk=token.pk).revoked_at == first
    listed = client.get("/api/tokens/").json()["results"]
    assert listed[0]["active"] is False and listed[0]["revoked_at"] is not None


def test_another_users_token_is_a_404_even_for_a_superuser(session, make_user):
    client, _ = session
    bob_token, bob_key = api_token_create(user=make_user("bob"), name="bob's")
    assert client.delete(f"/api/tokens/{bob_token.pk}/").status_code == 404
    root = APIClient()
    root.force_login(make_user("root", is_superuser=True, is_staff=True))
    assert root.delete(f"/api/tokens/{bob_token.pk}/").status_code == 404
    assert root.get("/api/tokens/").json()["count"] == 0
    assert with_token(bob_key).get("/api/studies/").status_code == 200


@pytest.mark.parametrize("token_id", ["0", "-1", "abc", str(2**63), "9" * 40])
def test_ids_no_token_has_are_a_404(session, token_id):
    client, _ = session
    response = client.delete(f"/api/tokens/{token_id}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_list_filters_active_tokens_and_refuses_unknown_values(session):
    client, user = session
    api_token_create(user=user, name="kept")
    gone, _ = api_token_create(user=user, name="gone")
    api_token_revoke(token=gone, by=user)
    names = lambda query: [t["name"] for t in client.get(f"/api/tokens/{query}").json()["results"]]  # noqa: E731
    assert names("") == ["gone", "kept"]
    assert names("?active=true") == ["kept"]
    assert names("?active=false") == ["gone"]
    response = client.get("/api/tokens/?active=perhaps")
    assert response.status_code == 400
    assert "active" in response.json()["error"]["details"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "nul\x00byte"}, "name"),
        ({"name": "ok", "expires_at": "not a date"}, "expires_at"),
    ],
)
def test_bad_token_requests_are_a_400_naming_the_field(session, body, field):
    client, _ = session
    response = client.post("/api/tokens/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]
    assert ApiToken.objects.count() == 0


def test_an_expiry_in_the_past_is_refused(session):
    client, _ = session
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    response = client.post("/api/tokens/", {"name": "old", "expires_at": past}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"field": "expires_at"}


def test_a_token_expires(session):
    client, _ = session
    soon = timezone.now() + timedelta(hours=1)
    body = client.post(
        "/api/tokens/", {"name": "short", "expires_at": soon.isoformat()}, format="json"
    ).json()
    assert with_token(body["key"]).get("/api/studies/").status_code == 200
    ApiToken.objects.filter(pk=body["id"]).update(expires_at=timezone.now())
    assert with_token(body["key"]).get("/api/studies/").status_code == 401


def test_active_tokens_are_limited_per_user(make_user):
    user = make_user("busy")
    tokens = [api_token_create(user=user, name=f"t{n}")[0] for n in range(MAX_ACTIVE_TOKENS)]
    with pytest.raises(ApplicationError, match="revoke"):
        api_token_create(user=user, name="one too many")
    # A revoked token frees its place.
    api_token_revoke(token=tokens[0], by=user)
    api_token_create(user=user, name="one more")
    assert ApiToken.objects.filter(user=user).active().count() == MAX_ACTIVE_TOKENS


def test_the_limit_is_a_400_over_the_api(session):
    client, user = session
    for n in range(MAX_ACTIVE_TOKENS):
        api_token_create(user=user, name=f"t{n}")
    response = client.post("/api/tokens/", {"name": "extra"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"limit": MAX_ACTIVE_TOKENS}


def test_names_are_trimmed_and_bounded(make_user):
    user = make_user("alice")
    token, _ = api_token_create(user=user, name="  lab   server ")
    assert token.name == "lab server"
    for bad in ("", "   ", "x" * 101):
        with pytest.raises(ApplicationError):
            api_token_create(user=user, name=bad)


def test_only_the_owner_or_a_superuser_revokes(make_user):
    owner, other = make_user("owner"), make_user("other")
    root = make_user("root", is_superuser=True)
    token, key = api_token_create(user=owner, name="t")
    with pytest.raises(PermissionDeniedError):
        api_token_revoke(token=token, by=other)
    assert api_token_for_key(key=key) is not None
    api_token_revoke(token=token, by=root)
    assert api_token_for_key(key=key) is None


def test_last_used_is_noted_at_most_once_a_minute(make_user):
    user = make_user("robot")
    token, key = api_token_create(user=user, name="t")
    assert token.last_used_at is None
    assert with_token(key).get("/api/studies/").status_code == 200
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    assert with_token(key).get("/api/studies/").status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    # A minute later it is noted again.
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    stale = ApiToken.objects.get(pk=token.pk)
    api_token_touch(token=stale)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first


def test_drf_tokens_are_copied_hashed_and_their_plaintext_deleted(make_user, transactional_db):
    """The data migration, run against a table shaped as DRF's authtoken_token was."""
    migration = importlib.import_module("accounts.migrations.0002_copy_drf_tokens")
    user = make_user("old-client")
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id bigint NOT NULL)"
            if connection.vendor == "postgresql"
            else "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created datetime NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token (key, created, user_id) VALUES (%s, %s, %s)",
            [old_key, timezone.now(), user.pk],
        )
    try:
        from django.apps import apps

        editor = SimpleNamespace(connection=connection)  # all the step reads of its editor
        migration.copy_drf_tokens(apps, editor)
        migration.copy_drf_tokens(apps, editor)  # twice: nothing doubles
        token = ApiToken.objects.get()
        assert (token.user, token.name, token.key_prefix) == (user, "migrated", old_key[:8])
        assert api_token_for_key(key=old_key) == token
        assert with_token(old_key).get("/api/studies/").status_code == 200
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM authtoken_token")
            assert cursor.fetchone()[0] == 0
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE authtoken_token")


def test_without_drf_table_the_migration_does_nothing(db):
    from django.apps import apps

    migration = importlib.import_module("accounts.migrations.0002_copy_drf_tokens")
    migration.copy_drf_tokens(apps, SimpleNamespace(connection=connection))
    assert ApiToken.objects.count() == 0
