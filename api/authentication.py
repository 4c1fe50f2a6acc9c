"""Token authentication that throttles guessing: failed tokens are counted per client address.

DRF authenticates before it checks permissions and throttles, so a throttle class never sees a
request with a wrong token (it is answered 401 first). The count is kept here instead, in the
cache, at the rate of DEFAULT_THROTTLE_RATES["failed_token"]; once it is reached every token
from that address, right or wrong, is answered 429 until the window has passed.
"""

from rest_framework import authentication, exceptions, status, throttling


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
    default_detail = "Invalid token."
    default_code = "authentication_failed"
    auth_header = "Token"


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request):
        auth = authentication.get_authorization_header(request).split()
        if not auth or auth[0].lower() != self.keyword.lower().encode():
            return None  # no token: nothing to count
        throttle = FailedTokenThrottle()
        if throttle.over_limit(request):
            raise exceptions.Throttled(wait=throttle.wait())
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed as failure:
            throttle.record_failure()
            raise InvalidToken(failure.detail) from failure
