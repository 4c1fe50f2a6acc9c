"""The providers of single sign-on (django-allauth's SOCIALACCOUNT_PROVIDERS) from the SSO_*
settings. Read by the settings module, so Django itself is not set up here yet."""

from django.core.exceptions import ImproperlyConfigured

# The provider_id of the lab's OpenID Connect provider: its callback is
# /accounts/oidc/lab/login/callback/, and its accounts are stored under this name.
OIDC_PROVIDER_ID = "lab"


def sso_providers_config(
    *,
    oidc_server_url: str,
    oidc_client_id: str,
    oidc_client_secret: str,
    oidc_name: str,
    github_client_id: str,
    github_client_secret: str,
    github_url: str = "",
) -> dict:
    """SOCIALACCOUNT_PROVIDERS for the SSO_* settings: a provider for each one configured whole,
    none without any; a provider configured in part is an error, not silently off."""
    providers: dict = {}
    oidc = {
        "SSO_OIDC_SERVER_URL": oidc_server_url,
        "SSO_OIDC_CLIENT_ID": oidc_client_id,
        "SSO_OIDC_CLIENT_SECRET": oidc_client_secret,
    }
    github = {
        "SSO_GITHUB_CLIENT_ID": github_client_id,
        "SSO_GITHUB_CLIENT_SECRET": github_client_secret,
    }
    for group in (oidc, github):
        if any(group.values()) and not all(group.values()):
            missing = ", ".join(name for name, value in group.items() if not value)
            raise ImproperlyConfigured(f"Single sign-on is configured in part: set {missing}.")
    if all(oidc.values()):
        providers["openid_connect"] = {
            "OAUTH_PKCE_ENABLED": True,
            "APPS": [
                {
                    "provider_id": OIDC_PROVIDER_ID,
                    "name": oidc_name,
                    "client_id": oidc_client_id,
                    "secret": oidc_client_secret,
                    "settings": {"server_url": oidc_server_url},
                }
            ],
        }
    if all(github.values()):
        providers["github"] = {
            "SCOPE": ["read:user", "user:email"],
            "APPS": [{"client_id": github_client_id, "secret": github_client_secret}],
            **({"GITHUB_URL": github_url} if github_url else {}),
        }
    return providers
