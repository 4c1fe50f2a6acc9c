"""Every page and API route asks for a login; the API speaks one error shape."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

# The sign-in pages, the admin (its own login), static files, the favicon browsers ask for before
# anyone signs in, and the health probe that a load balancer calls without a session
# (tests/deploy/test_health.py), and an invitation's link and its API, whose token is the
# credential (tests/labeling/test_invitations.py).
PUBLIC_PREFIXES = (
    "accounts/",
    "admin/",
    "static/",
    "health/",
    "favicon.ico",
    "invitations/",
    "api/invitations/accept/",
)


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
        ("<int:version_id>", "1"),
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


def test_admin_edits_a_study_through_the_service(client, study, people, make_user):
    admin = make_user("root", is_staff=True, is_superuser=True)
    newcomer = make_user("annotator9")
    client.force_login(admin)
    page = client.get(f"/admin/labeling/study/{study.pk}/change/")
    assert page.status_code == 200
    form = page.context["adminform"].form
    inline_data = {}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        for field in management:
            inline_data[field.html_name] = field.value()
        for inline_form in formset.formset.forms:
            for field in inline_form:
                value = field.value()
                if value is not None and value is not False:
                    inline_data[field.html_name] = value
    prefix = next(
        f.formset.prefix
        for f in page.context["inline_admin_formsets"]
        if "membership" in f.formset.prefix
    )
    total = int(inline_data[f"{prefix}-TOTAL_FORMS"])
    inline_data[f"{prefix}-{total - 1}-user"] = newcomer.pk
    inline_data[f"{prefix}-{total - 1}-role"] = "annotator"
    response = client.post(
        f"/admin/labeling/study/{study.pk}/change/",
        {
            **{name: form[name].value() for name in ("name", "description", "status")},
            "blind": "on",
            "name": "Renamed",
            # Who labels what a screen-in opens may change while the study runs.
            "screen_in_override": "adjudicator",
            **inline_data,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    study.refresh_from_db()
    assert study.name == "Renamed"
    assert study.screen_in_override == "adjudicator"
    assert study.memberships.filter(user=newcomer, role="annotator").exists()
    assert client.get("/admin/labeling/study/add/").status_code == 403
