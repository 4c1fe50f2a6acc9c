"""Every page and API route asks for a login; the API speaks one error shape."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

PUBLIC_PREFIXES = ("accounts/", "admin/", "static/")


def all_routes() -> list[str]:
    routes: list[str] = []

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                routes.append(prefix + str(pattern.pattern))

    walk(get_resolver().url_patterns)
    return routes


def concrete(route: str) -> str | None:
    if "(?P<format>" in route or "<drf_format_suffix" in route:
        return None
    for placeholder, value in (
        ("<slug:slug>", "demo"),
        ("<int:item_id>", "1"),
        ("(?P<slug>[^/.]+)", "demo"),
        ("(?P<pk>[^/.]+)", "1"),
    ):
        route = route.replace(placeholder, value)
    route = route.replace("^", "").replace("$", "").replace("\\.", ".")
    if "<" in route or "(?P" in route:
        return None
    return "/" + route


ROUTES = sorted(
    {
        url
        for route in all_routes()
        if not route.startswith(PUBLIC_PREFIXES)
        if (url := concrete(route))
    }
)


def test_routes_were_found():
    assert "/" in ROUTES and "/api/studies/" in ROUTES and "/studies/demo/next/" in ROUTES


@pytest.mark.parametrize("url", ROUTES)
def test_every_route_requires_login(client, study, url):
    response = client.get(url)
    if url.startswith("/api/"):
        assert response.status_code in (401, 403), url
        if response.headers.get("Content-Type", "").startswith("application/json"):
            assert set(response.json()["error"]) == {"code", "message", "details"}
    else:
        assert response.status_code == 302, url
        assert response.url.startswith("/accounts/login/")
