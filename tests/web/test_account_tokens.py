"""The account's API tokens page (/account/tokens/): create (the key shown once), list, revoke;
CSRF on its forms; another user's token is a 404; the admin revokes for superusers."""

import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services import MAX_ACTIVE_TOKENS, api_token_create
from tests.conftest import PASSWORD

URL = "/account/tokens/"


def login(user, **client_options) -> Client:
    client = Client(**client_options)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def key_on(page: str) -> str:
    match = re.search(r'readonly value="(ic_[^"]+)"', page)
    assert match, "no key shown"
    return match.group(1)


def api_status(key: str) -> int:
    return APIClient().get("/api/studies/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_the_page_is_for_signed_in_users_and_linked_in_the_nav(make_user, client):
    assert reverse("account_tokens") == URL
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    page = login(make_user("alice")).get("/").content.decode()
    assert f'href="{URL}">API tokens</a>' in page


def test_create_shows_the_key_once_and_it_works(make_user):
    client = login(make_user("alice"))
    response = client.post(URL, {"action": "create", "name": "lab server", "expires_in": "90"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    key = key_on(page)
    assert "shown this once" in page
    assert api_status(key) == 200
    token = ApiToken.objects.get()
    assert token.name == "lab server" and token.expires_at is not None
    # The next visit lists it by its first characters, never the key.
    listing = client.get(URL).content.decode()
    assert key not in listing
    assert f"{key[:8]}…" in listing
    assert "lab server" in listing


def test_revoke_from_the_page(make_user):
    alice = make_user("alice")
    token, key = api_token_create(user=alice, name="old laptop")
    client = login(alice)
    response = client.post(URL, {"action": "revoke", "token": token.pk}, follow=True)
    assert response.status_code == 200
    assert "Revoked the token “old laptop”" in response.content.decode()
    assert api_status(key) == 401
    assert 'aria-label="Revoke the token old laptop"' not in response.content.decode()


def test_another_users_token_is_a_404_on_the_page(make_user):
    token, key = api_token_create(user=make_user("bob"), name="bob's")
    client = login(make_user("alice"))
    for value in (token.pk, "abc", ""):
        assert client.post(URL, {"action": "revoke", "token": value}).status_code == 404
    assert api_status(key) == 200


@pytest.mark.parametrize(
    "data",
    [
        {"action": "create", "name": ""},
        {"action": "create", "name": "x" * 101},
        {"action": "create", "name": "ok", "expires_in": "7"},
        {"action": "create", "name": "nul\x00"},
    ],
)
def test_bad_forms_are_a_400_with_a_message_and_store_nothing(make_user, data):
    response = login(make_user("alice")).post(URL, data)
    assert response.status_code == 400
    assert "field-error" in response.content.decode() or 'role="alert"' in response.content.decode()
    assert ApiToken.objects.count() == 0


def test_the_limit_is_a_message(make_user):
    alice = make_user("alice")
    for number in range(MAX_ACTIVE_TOKENS):
        api_token_create(user=alice, name=f"t{number}")
    response = login(alice).post(URL, {"action": "create", "name": "extra"})
    assert response.status_code == 400
    assert "revoke one you no longer use" in response.content.decode()


def test_unknown_actions_are_a_400(make_user):
    assert login(make_user("alice")).post(URL, {"action": "steal"}).status_code == 400


def test_forms_need_the_csrf_token(make_user):
    client = login(make_user("alice"), enforce_csrf_checks=True)
    assert client.post(URL, {"action": "create", "name": "x"}).status_code == 403
    page = client.get(URL).content.decode()
    assert page.count("csrfmiddlewaretoken") >= 1
    assert ApiToken.objects.count() == 0


def test_the_admin_lists_without_keys_and_superusers_revoke(make_user):
    token, key = api_token_create(user=make_user("bob"), name="bob's")
    root = make_user("root", is_superuser=True, is_staff=True)
    client = login(root)
    listing = client.get("/admin/accounts/apitoken/").content.decode()
    assert "bob&#x27;s" in listing and key not in listing
    response = client.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
        follow=True,
    )
    assert "Revoked 1 token." in response.content.decode()
    assert api_status(key) == 401
    # The admin makes no tokens and deletes none.
    assert client.get("/admin/accounts/apitoken/add/").status_code == 403


def test_the_new_key_has_a_copy_button_run_by_a_static_script(make_user):
    client = login(make_user("alice"))

    created = client.post(URL, {"action": "create", "name": "lab server"}).content.decode()
    listing = client.get(URL).content.decode()

    key = key_on(created)
    assert f'id="new-key" readonly value="{key}"' in created
    assert re.search(
        r'<button type="button" data-copy="new-key"[^>]*hidden>Copy key</button>', created
    )
    # The script is a static file (the policy refuses inline scripts), only where a key is shown.
    assert '<script src="/static/web/copy.js" defer></script>' in created
    assert "<script>" not in created and "onclick" not in created
    assert "copy.js" not in listing and "Copy key" not in listing
    assert client.get("/static/web/copy.js").status_code == 200
