"""A stand-in OpenID Connect identity provider, served over real HTTP on 127.0.0.1 for tests, as
tests/github_server.py is for GitHub::

    with FakeIdentityProvider() as idp:
        idp.person = {"sub": "u-1", "email": "ada@lab.example", "email_verified": True}
        ... settings point SSO at idp.base_url, client "issuecoder", secret idp.client_secret ...
        code = idp.authorize(authorize_url_from_the_302)  # the browser at the provider
        ... GET our callback with ?code=...&state=... ...

Endpoints:

* ``GET /.well-known/openid-configuration``: the discovery document (issuer = base URL).
* ``GET /authorize``: checks ``response_type=code``, the client id, the redirect URI and the
  ``openid`` scope; answers 302 to ``redirect_uri`` with a fresh one-time ``code`` and the
  ``state`` it was given (``error=access_denied`` when :attr:`deny` is set).
* ``POST /token``: exchanges a code once (client credentials by ``client_secret_post`` or
  Basic, the same redirect URI, the PKCE ``code_verifier`` when a challenge was sent), answers
  an access token and an ``id_token`` signed RS256 with a key generated per server (``iss``,
  ``aud``, ``sub``, ``nonce`` when one was sent, ``iat``, ``exp``); a wrong or reused code is
  ``400 invalid_grant``.
* ``GET /userinfo``: the person's claims for a valid ``Bearer`` access token, else 401.
* ``GET /jwks``: the public key as a JWK set.

:attr:`person` is whoever signs in next (its claims go into the id_token and userinfo);
:attr:`audience` overrides the id_token's ``aud`` (a token minted for another client). Every
request is logged in :attr:`requests` as ``(method, path, status)``.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Self
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

KEY_ID = "stand-in-key-1"


class FakeIdentityProvider:
    def __init__(self, *, client_id: str = "issuecoder") -> None:
        self.client_id = client_id
        self.client_secret = secrets.token_urlsafe(24)
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.person: dict[str, Any] = {
            "sub": "person-1",
            "email": "person@lab.example",
            "email_verified": True,
            "preferred_username": "person",
            "given_name": "Pat",
            "family_name": "Doe",
            "name": "Pat Doe",
        }
        self.audience: str | None = None
        self.deny = False
        self.requests: list[tuple[str, str, int]] = []
        self._codes: dict[str, dict[str, Any]] = {}
        self._access_tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def paths(self) -> list[str]:
        return [path.split("?")[0] for _, path, _ in self.requests]

    def follow(self, url: str) -> str:
        """What the browser does at the authorize URL our 302 named (the person signs in and
        consents), over HTTP: the Location it is sent back to."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        try:
            urllib.request.build_opener(NoRedirect).open(url)
        except urllib.error.HTTPError as error:
            if error.code == 302:
                return error.headers["Location"]
            raise
        raise AssertionError("the authorize endpoint did not redirect")

    def authorize(self, url: str) -> str:
        """The code the browser is sent back with from the authorize URL `url`."""
        return parse_qs(urlsplit(self.follow(url)).query)["code"][0]

    # The endpoints.

    def _discovery(self) -> dict[str, Any]:
        base = self.base_url
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "userinfo_endpoint": f"{base}/userinfo",
            "jwks_uri": f"{base}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "profile", "email"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
        }

    def _jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        return {"keys": [{**jwk, "kid": KEY_ID, "use": "sig", "alg": "RS256"}]}

    def _authorize(self, query: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if query.get("response_type") != "code" or query.get("client_id") != self.client_id:
            return 400, {"error": "invalid_request"}, {}
        redirect_uri = query.get("redirect_uri", "")
        if not redirect_uri or "openid" not in query.get("scope", "").split():
            return 400, {"error": "invalid_request"}, {}
        if self.deny:
            params = {"error": "access_denied", "state": query.get("state", "")}
            return 302, {}, {"Location": f"{redirect_uri}?{urlencode(params)}"}
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {
                "redirect_uri": redirect_uri,
                "nonce": query.get("nonce"),
                "challenge": query.get("code_challenge"),
                "person": dict(self.person),
            }
        params = {"code": code, "state": query.get("state", "")}
        return 302, {}, {"Location": f"{redirect_uri}?{urlencode(params)}"}

    def _token(
        self, form: dict[str, str], authorization: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if client_id != self.client_id or secret != self.client_secret:
            return 401, {"error": "invalid_client"}, {}
        with self._lock:
            grant = self._codes.pop(form.get("code", ""), None)
        if (
            form.get("grant_type") != "authorization_code"
            or grant is None
            or grant["redirect_uri"] != form.get("redirect_uri")
        ):
            return 400, {"error": "invalid_grant"}, {}
        if grant["challenge"]:
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant["challenge"]:
                return 400, {"error": "invalid_grant"}, {}
        now = int(time.time())
        claims = {
            **grant["person"],
            "iss": self.base_url,
            "aud": self.audience or self.client_id,
            "iat": now,
            "exp": now + 300,
        }
        if grant["nonce"]:
            claims["nonce"] = grant["nonce"]
        id_token = jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KEY_ID})
        access_token = secrets.token_urlsafe(24)
        with self._lock:
            self._access_tokens[access_token] = grant["person"]
        body = {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
        }
        return 200, body, {"Cache-Control": "no-store"}

    def _userinfo(self, authorization: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
        token = (authorization or "").removeprefix("Bearer ")
        with self._lock:
            person = self._access_tokens.get(token)
        if person is None:
            return 401, {"error": "invalid_token"}, {"WWW-Authenticate": "Bearer"}
        return 200, person, {}

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                if parts.path == "/.well-known/openid-configuration":
                    self._send(200, provider._discovery(), {})
                elif parts.path == "/jwks":
                    self._send(200, provider._jwks(), {})
                elif parts.path == "/authorize":
                    self._send(*provider._authorize(query))
                elif parts.path == "/userinfo":
                    self._send(*provider._userinfo(self.headers.get("Authorization")))
                else:
                    self._send(404, {"error": "not_found"}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                form = {key: values[0] for key, values in parse_qs(body).items()}
                if urlsplit(self.path).path == "/token":
                    self._send(*provider._token(form, self.headers.get("Authorization")))
                else:
                    self._send(404, {"error": "not_found"}, {})

            def _send(self, status: int, payload: dict, headers: dict[str, str]) -> None:
                provider.requests.append((self.command, self.path, status))
                data = json.dumps(payload).encode() if payload else b""
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if data:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
