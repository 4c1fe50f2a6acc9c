"""Pages are answered compressed to a browser that accepts gzip, and plain to one that does not."""

import gzip

from tests.conftest import PASSWORD


def test_a_page_is_gzipped_when_the_browser_accepts_it(client, people):
    assert client.login(username="manager", password=PASSWORD)
    response = client.get("/", headers={"accept-encoding": "gzip, deflate, br"})
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response["Vary"]
    html = gzip.decompress(response.content).decode()
    assert "My studies" in html and len(response.content) < len(html)


def test_a_page_is_plain_without_accept_encoding(client, people):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert not response.has_header("Content-Encoding")
    assert b"Log in" in response.content
