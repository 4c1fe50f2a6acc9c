"""Single sign-on through django-allauth against a stand-in OpenID Connect provider over real
HTTP (tests/oidc_server.py): off unless configured; a full sign-in makes an account with no
study role; the rules of docs/operations/sso.md for linking, deactivated accounts and
failures."""

from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from accounts.sso_settings import sso_providers_config
from labeling.models import Membership
from tests.conftest import PASSWORD
from tests.oidc_server import FakeIdentityProvider

pytestmark = pytest.mark.django_db

START = "/accounts/oidc/lab/login/"
CALLBACK = "/accounts/oidc/lab/login/callback/"
GITHUB_START = "/accounts/github/login/"
GITHUB_CALLBACK = "/accounts/github/login/callback/"
User = get_user_model()


@pytest.fixture(autouse=True)
def fresh_counts():
    cache.clear()  # the SSO_PER_HOUR counts
    yield
    cache.clear()


@pytest.fixture
def idp():
    with FakeIdentityProvider() as provider:
        yield provider


@pytest.fixture
def sso(settings, idp):
    """SSO configured as the environment would: the lab's provider is the stand-in."""
    settings.SOCIALACCOUNT_PROVIDERS = sso_providers_config(
        oidc_server_url=idp.base_url,
        oidc_client_id=idp.client_id,
        oidc_client_secret=idp.client_secret,
        oidc_name="Lab Login",
        github_client_id="",
        github_client_secret="",
    )
    return idp


def _start(client: Client, **data: str) -> str:
    """POST the login page's button; the provider's authorize URL we are sent to."""
    response = client.post(START, data)
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


def _sign_in(client: Client, idp: FakeIdentityProvider, **data: str):
    """The whole chain as a browser walks it: our start, the provider, our callback."""
    authorize_url = _start(client, **data)
    code = idp.authorize(authorize_url)
    state = parse_qs(urlsplit(authorize_url).query)["state"][0]
    return client.get(CALLBACK, {"code": code, "state": state})


def _signed_in_user(client: Client):
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


# Not configured: the product as before.


def test_without_configuration_no_button_and_no_route(client, make_user):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Sign in with" not in page.content
    assert b"single sign-on" not in page.content
    assert "form-action 'self';" in page["Content-Security-Policy"] + ";"
    for url in (START, CALLBACK, GITHUB_START, GITHUB_CALLBACK):
        assert client.get(url).status_code == 404
        assert client.post(url).status_code == 404
    make_user("ada")
    response = client.post("/accounts/login/", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert _signed_in_user(client).username == "ada"


def test_a_provider_configured_in_part_is_an_error():
    with pytest.raises(ImproperlyConfigured, match="SSO_OIDC_CLIENT_SECRET"):
        sso_providers_config(
            oidc_server_url="https://id.lab.example",
            oidc_client_id="issuecoder",
            oidc_client_secret="",
            oidc_name="Lab",
            github_client_id="",
            github_client_secret="",
        )
    with pytest.raises(ImproperlyConfigured, match="SSO_GITHUB_CLIENT_ID"):
        sso_providers_config(
            oidc_server_url="",
            oidc_client_id="",
            oidc_client_secret="",
            oidc_name="Lab",
            github_client_id="",
            github_client_secret="secret",
        )


# Configured.


def test_the_login_page_has_a_post_button_per_provider(client, sso):
    page = client.get("/accounts/login/?next=/codebooks/")
    text = page.content.decode()
    assert f'<form method="post" action="{START}">' in text
    assert "Sign in with Lab Login" in text
    assert 'name="csrfmiddlewaretoken"' in text
    assert '<input type="hidden" name="next" value="/codebooks/">' in text
    # The form may lead on to the provider, and only on this page.
    policy = page["Content-Security-Policy"]
    assert f"form-action 'self' {sso.base_url}" in policy
    assert sso.base_url not in client.get("/accounts/password_reset/")["Content-Security-Policy"]


def test_the_login_page_reads_no_table_for_its_buttons(client, sso):
    """The providers come from the settings, and allauth's middleware reads nothing: the page's
    only statements are its request's transaction (ATOMIC_REQUESTS)."""
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/accounts/login/")
    assert b"Sign in with Lab Login" in page.content
    statements = [query["sql"].split()[0].upper() for query in queries.captured_queries]
    assert set(statements) <= {"SAVEPOINT", "RELEASE", "BEGIN", "COMMIT"}, statements


def test_a_socialapp_row_enables_nothing(client):
    from allauth.socialaccount.models import SocialApp

    SocialApp.objects.create(provider="github", name="GitHub", client_id="x", secret="y")
    assert b"Sign in with" not in client.get("/accounts/login/").content
    assert client.post(GITHUB_START).status_code == 404


def test_starting_needs_a_post_with_the_csrf_token(sso):
    client = Client(enforce_csrf_checks=True)
    assert client.post(START).status_code == 403
    page = client.get(START)  # a GET only shows the button (SOCIALACCOUNT_LOGIN_ON_GET off)
    assert page.status_code == 200
    assert b"Sign in with Lab Login" in page.content
    assert 'method="post"' in page.content.decode()
    assert sso.paths().count("/authorize") == 0
    token = client.cookies["csrftoken"].value
    response = client.post(START, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response["Location"].startswith(f"{sso.base_url}/authorize?")


def test_a_first_sign_in_makes_an_account_with_no_study_role(client, sso, study):
    authorize_url = _start(client)
    query = parse_qs(urlsplit(authorize_url).query)
    assert query["client_id"] == [sso.client_id]
    assert query["redirect_uri"] == [f"http://testserver{CALLBACK}"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["state"][0]
    code = sso.authorize(authorize_url)
    response = client.get(CALLBACK, {"code": code, "state": query["state"][0]})
    assert response.status_code == 302 and response["Location"] == "/"
    # The code was exchanged server-side, over HTTP, and the claims read.
    assert ("POST", "/token", 200) in sso.requests
    assert ("GET", "/userinfo", 200) in [(m, p.split("?")[0], s) for m, p, s in sso.requests]

    user = _signed_in_user(client)
    assert user.username == "person"
    assert (user.first_name, user.last_name, user.email) == ("Pat", "Doe", "person@lab.example")
    assert not user.has_usable_password()
    assert not user.is_staff and not user.is_superuser
    assert not Membership.objects.filter(user=user).exists()
    assert SocialAccount.objects.get(user=user).uid == "person-1"
    home = client.get("/")
    assert home.status_code == 200
    assert b"person" in home.content
    assert b"Demo" not in home.content  # no study of theirs


def test_a_second_sign_in_reuses_the_account(client, sso):
    _sign_in(client, sso)
    first = _signed_in_user(client)
    client.post("/accounts/logout/")
    assert _signed_in_user(client) is None
    sso.person = {**sso.person, "given_name": "Patricia"}
    response = _sign_in(client, sso)
    assert response.status_code == 302
    assert _signed_in_user(client) == first
    assert User.objects.count() == 1


def test_next_is_followed_on_this_site_only(client, sso):
    response = _sign_in(client, sso, next="/codebooks/")
    assert response["Location"] == "/codebooks/"
    client.post("/accounts/logout/")
    response = _sign_in(client, sso, next="https://elsewhere.example/")
    assert response["Location"] == "/"


def _assert_refused(response, client, status=400):
    assert response.status_code == status
    assert b"Sign-in did not work" in response.content or status != 400
    assert b"Back to the login page" in response.content
    assert _signed_in_user(client) is None


def test_a_tampered_state_is_refused(client, sso):
    authorize_url = _start(client)
    code = sso.authorize(authorize_url)
    response = client.get(CALLBACK, {"code": code, "state": "forged-state"})
    _assert_refused(response, client)
    assert "/token" not in sso.paths()
    assert User.objects.count() == 0


def test_a_state_from_another_browser_is_refused(client, sso):
    authorize_url = _start(Client())  # someone else's sign-in, delivered to this browser
    code = sso.authorize(authorize_url)
    state = parse_qs(urlsplit(authorize_url).query)["state"][0]
    _assert_refused(client.get(CALLBACK, {"code": code, "state": state}), client)
    assert User.objects.count() == 0


def test_a_wrong_code_is_refused(client, sso):
    authorize_url = _start(client)
    sso.authorize(authorize_url)
    state = parse_qs(urlsplit(authorize_url).query)["state"][0]
    response = client.get(CALLBACK, {"code": "not-the-code", "state": state})
    _assert_refused(response, client)
    assert ("POST", "/token", 400) in sso.requests
    assert User.objects.count() == 0


def test_a_code_is_used_once(client, sso):
    authorize_url = _start(client)
    code = sso.authorize(authorize_url)
    state = parse_qs(urlsplit(authorize_url).query)["state"][0]
    assert client.get(CALLBACK, {"code": code, "state": state}).status_code == 302
    client.post("/accounts/logout/")
    _assert_refused(client.get(CALLBACK, {"code": code, "state": state}), client)


def test_an_id_token_for_another_client_is_refused(client, sso):
    sso.audience = "another-client"
    _assert_refused(_sign_in(client, sso), client)
    assert User.objects.count() == 0


def test_a_refusal_at_the_provider_is_a_page(client, sso):
    sso.deny = True
    authorize_url = _start(client)
    location = sso.follow(authorize_url)
    response = client.get(CALLBACK + "?" + urlsplit(location).query)
    _assert_refused(response, client)


def test_an_unreachable_provider_is_a_page(client, settings, idp):
    settings.SOCIALACCOUNT_PROVIDERS = sso_providers_config(
        oidc_server_url="http://127.0.0.1:9",  # nothing listens there
        oidc_client_id=idp.client_id,
        oidc_client_secret=idp.client_secret,
        oidc_name="Lab Login",
        github_client_id="",
        github_client_secret="",
    )
    response = client.post(START)
    assert response.status_code == 502
    assert b"could not be reached" in response.content
    assert _signed_in_user(client) is None


def test_a_taken_username_is_not_reused(client, sso, make_user):
    manager = make_user("person", is_superuser=True, is_staff=True)
    sso.person = {**sso.person, "email": "someone-else@lab.example"}
    _sign_in(client, sso)
    user = _signed_in_user(client)
    assert user != manager
    assert user.username != "person"
    assert not user.is_superuser


# Linking by e-mail (docs/operations/sso.md).


def test_a_verified_email_signs_in_to_its_existing_account(client, sso, make_user):
    existing = make_user("ada", email="Person@Lab.example")
    _sign_in(client, sso)
    assert _signed_in_user(client) == existing
    existing.refresh_from_db()
    assert existing.check_password(PASSWORD)  # the password still works
    assert SocialAccount.objects.get(user=existing).uid == "person-1"
    assert User.objects.count() == 1
    # And the next time through the link, whatever the e-mail says then.
    client.post("/accounts/logout/")
    sso.person = {**sso.person, "email": "new@lab.example"}
    _sign_in(client, sso)
    assert _signed_in_user(client) == existing


def test_an_unverified_email_makes_a_new_account_without_it(client, sso, make_user):
    existing = make_user("ada", email="person@lab.example")
    sso.person = {**sso.person, "email_verified": False}
    _sign_in(client, sso)
    user = _signed_in_user(client)
    assert user != existing
    assert user.email == ""
    assert not SocialAccount.objects.filter(user=existing).exists()
    existing.refresh_from_db()
    assert existing.check_password(PASSWORD)


def test_an_email_of_two_accounts_links_neither(client, sso, make_user):
    first = make_user("ada", email="person@lab.example")
    second = make_user("bob", email="person@lab.example")
    _sign_in(client, sso)
    assert _signed_in_user(client) not in (first, second)


def test_an_account_linked_to_someone_else_there_is_not_linked_again(client, sso, make_user):
    _sign_in(client, sso)
    first = _signed_in_user(client)
    client.post("/accounts/logout/")
    sso.person = {**sso.person, "sub": "person-2", "preferred_username": "twin"}
    _sign_in(client, sso)
    assert _signed_in_user(client) != first
    assert SocialAccount.objects.filter(user=first).count() == 1


# Deactivated accounts.


def test_a_deactivated_account_cannot_sign_in(client, sso):
    _sign_in(client, sso)
    user = _signed_in_user(client)
    client.post("/accounts/logout/")
    User.objects.filter(pk=user.pk).update(is_active=False)
    response = _sign_in(client, sso)
    assert response.status_code == 403
    assert b"This account is deactivated" in response.content
    assert _signed_in_user(client) is None


def test_a_deactivated_account_is_not_entered_by_its_email(client, sso, make_user):
    make_user("ada", email="person@lab.example", is_active=False)
    response = _sign_in(client, sso)
    assert response.status_code == 403
    assert _signed_in_user(client) is None


# Limits, axes, GitHub.


def test_sign_in_attempts_are_limited_per_address(client, sso, settings):
    settings.SSO_PER_HOUR = 2
    _start(client)
    _start(client)
    response = client.post(START)
    assert response.status_code == 429
    assert b"Too many sign-in attempts" in response.content


def test_axes_lets_sso_through_and_still_locks_password_logins(client, sso, make_user, settings):
    with override_settings(AXES_ENABLED=True):
        assert _sign_in(client, sso).status_code == 302
        assert _signed_in_user(client) is not None
        client.post("/accounts/logout/")
        make_user("target")
        for _ in range(settings.AXES_FAILURE_LIMIT):
            client.post("/accounts/login/", {"username": "target", "password": "wrong"})
        response = client.post("/accounts/login/", {"username": "target", "password": PASSWORD})
        assert response.status_code == 429


def test_github_has_its_button_and_sends_to_github(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = sso_providers_config(
        oidc_server_url="",
        oidc_client_id="",
        oidc_client_secret="",
        oidc_name="",
        github_client_id="gh-client",
        github_client_secret="gh-secret",
    )
    page = client.get("/accounts/login/")
    assert b"Sign in with GitHub" in page.content
    assert f'action="{GITHUB_START}"' in page.content.decode()
    assert "form-action 'self' https://github.com" in page["Content-Security-Policy"]
    assert client.post(START).status_code == 404  # the lab's provider is not configured
    response = client.post(GITHUB_START)
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert (location.scheme, location.netloc, location.path) == (
        "https",
        "github.com",
        "/login/oauth/authorize",
    )
    query = parse_qs(location.query)
    assert query["client_id"] == ["gh-client"]
    assert query["redirect_uri"] == [f"http://testserver{GITHUB_CALLBACK}"]
    assert query["state"][0]
    # A return with a state this browser never had is refused before any request to GitHub.
    response = client.get(GITHUB_CALLBACK, {"code": "x", "state": "forged"})
    assert response.status_code == 400
