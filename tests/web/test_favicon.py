"""The app's icon: every page links it, and /favicon.ico (asked for by browsers whatever a page
says) leads to it instead of a 404."""

from django.test import Client


def test_favicon_ico_leads_to_the_icon(db):
    client = Client()

    response = client.get("/favicon.ico")

    assert response.status_code == 302
    assert response.url.endswith(".svg") and "/static/" in response.url
    assert "max-age=86400" in response["Cache-Control"]
    icon = client.get(response.url)
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/svg+xml")
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert body.startswith(b"<svg") and b"<script" not in body


def test_pages_link_the_icon(db):
    page = Client().get("/accounts/login/").content.decode()
    assert '<link rel="icon" href="/static/web/favicon.svg" type="image/svg+xml">' in page


def test_the_icon_is_for_reading_only(db):
    assert Client().post("/favicon.ico").status_code == 405
