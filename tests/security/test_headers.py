"""Every page carries the Content-Security-Policy and the Permissions-Policy."""

import pytest

from config.settings import base

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def production_policy(settings):
    settings.CONTENT_SECURITY_POLICY = base.CONTENT_SECURITY_POLICY


def directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return {
        part.split()[0]: " ".join(part.split()[1:])
        for part in (p.strip() for p in policy.split(";"))
        if part
    }


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_pages_have_a_strict_policy(client, url):
    response = client.get(url)
    assert response.status_code == 200
    policy = directives(response)
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["img-src"] == "'self' data:"
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'self'"


def test_the_logged_in_pages_too(client, study, people):
    client.force_login(people["manager"])
    for url in ("/", "/studies/demo/agreement/", "/api/studies/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert directives(response)["script-src"] == "'self'", url


def test_only_the_api_docs_allow_their_inline_script(client, people):
    client.force_login(people["manager"])
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert directives(response)["script-src"] == "'self' 'unsafe-inline'"
    assert directives(response)["frame-ancestors"] == "'none'"


def test_permissions_policy_denies_powerful_features(client):
    response = client.get("/accounts/login/")
    features = dict(
        part.strip().split("=", 1) for part in response["Permissions-Policy"].split(",")
    )
    for feature in ("camera", "microphone", "geolocation", "payment", "usb"):
        assert features[feature] == "()"
