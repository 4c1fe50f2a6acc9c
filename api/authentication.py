"""Token authentication over personal API tokens (accounts.ApiToken), throttling guessing:
failed tokens are counted per client address.

`Authorization: Token <key>` and `Authorization: Bearer <key>` are both read. The key is looked
up by its SHA-256 (accounts.selectors.api_token_for_key): a revoked or expired token, or one of
an inactive user, is refused like an unknown one.

DRF authenticates before it checks permissions and throttles, so a throttle class never sees a
request with a wrong token (it is answered 401 first). The count is kept here instead, in the
cache, at the rate of DEFAULT_THROTTLE_RATES["failed_token"]; once it is reached every token
from that address, right or wrong, is answered 429 until the window has passed.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, status, throttling

from accounts.selectors import api_token_for_key
from accounts.services import api_token_touch

KEYWORDS = (b"token", b"bearer")


class FailedTokenThrottle(throttling.SimpleRateThrottle):
    scope = "failed_token"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def over_limit(self, request) -> bool:
        """True when the address has failed too often; records nothing."""
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def record_failure(self) -> None:
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


class InvalidToken(exceptions.APIException):
    """A wrong token: 401 with "WWW-Authenticate: Token".

    Not an AuthenticationFailed: DRF answers those 403 whenever the first authentication class
    (session authentication here, which keeps anonymous requests a 403) has no header to offer.
    """

    status_code = status.HTTP_401_UNAUTHORIZED
    default_detail = "Invalid token: unknown, revoked or expired."
    default_code = "authentication_failed"
    auth_header = "Token"


def _key_of(parts: list[bytes]) -> str | None:
    """The key of an `Authorization: <keyword> <key>` header split on whitespace, or None for a
    header of another shape."""
    if len(parts) != 2:
        return None
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None  # no token: nothing to count
        throttle = FailedTokenThrottle()
        if throttle.over_limit(request):
            raise exceptions.Throttled(wait=throttle.wait())
        key = _key_of(parts)
        token = api_token_for_key(key=key) if key else None
        if token is None:
            throttle.record_failure()
            if key is None:
                raise InvalidToken("Invalid token header: give `Token <key>` or `Bearer <key>`.")
            raise InvalidToken()
        api_token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword


class TokenScheme(OpenApiAuthenticationExtension):
    """The schema's description of the token header (drf-spectacular)."""

    target_class = TokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                'A personal API token: "Token <key>" (or "Bearer <key>"). Create one on the '
                "page /account/tokens/ or with POST /api/tokens/ in a signed-in session."
            ),
        }
