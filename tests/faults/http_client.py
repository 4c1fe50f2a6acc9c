"""HTTP to the gunicorn of tests/faults/servers.py's ProductionWeb: a browser with its cookies
and CSRF token, and token-authenticated API calls, each as a proxy that terminated HTTPS
forwards them (X-Forwarded-Proto), so that the production settings' HTTPS rules hold."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from urllib.parse import urlencode

from tests.conftest import PASSWORD

HTTPS = {"X-Forwarded-Proto": "https", "Host": "localhost"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


@dataclass
class Browser:
    """A browser's cookies and CSRF token against one gunicorn, over plain HTTP as a proxy
    that terminated HTTPS would forward it."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)

    def request(
        self, method: str, path: str, *, form: dict | None = None, headers: dict | None = None
    ) -> Answer:
        sent = {**HTTPS, **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode({**form, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")})
            sent.update(
                {"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://localhost"}
            )
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            answer = Answer(response.status, dict(response.getheaders()), response.read())
            for name, value in response.getheaders():
                if name.lower() == "set-cookie":
                    cookie, _, _ = value.partition(";")
                    key, _, content = cookie.partition("=")
                    self.cookies[key.strip()] = content.strip('"')
        finally:
            connection.close()
        return answer

    def login(self, username: str, password: str = PASSWORD) -> Answer:
        self.request("GET", "/accounts/login/")
        return self.request(
            "POST", "/accounts/login/", form={"username": username, "password": password}
        )


def api(port: int, method: str, path: str, key: str, body: dict | None = None) -> Answer:
    headers = {**HTTPS, "Authorization": f"Token {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=headers
        )
        response = connection.getresponse()
        return Answer(response.status, dict(response.getheaders()), response.read())
    finally:
        connection.close()
