"""How often a password reset mail may be sent: PASSWORD_RESET_PER_HOUR per address asked for
(so that nobody fills someone's mailbox) and per client address (so that nobody sends mails to
a list of addresses), counted in the cache, which every web process shares in production.

The page answers the same whether a mail went out, the address is unknown or a limit was
reached: it must not tell whether an address has an account.
"""

import hashlib
import logging

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60 * 60


def _count(kind: str, value: str) -> int:
    """This request's number within the current hour for `value` (an hour from the first)."""
    # Hashed: a cache key holds no address, and any text makes a valid key.
    key = f"password-reset:{kind}:{hashlib.sha256(value.encode()).hexdigest()}"
    cache.add(key, 0, timeout=WINDOW_SECONDS)
    try:
        return cache.incr(key)
    except ValueError:
        # The count expired in between, or the cache cannot be reached (it logs that): a reset
        # is let through rather than refused to everyone.
        return 1


def password_reset_allowed(*, email: str, client_address: str | None) -> bool:
    """Count a reset request for `email` from `client_address`; False once either made more
    than PASSWORD_RESET_PER_HOUR requests within the hour. Both are counted every time, so
    a client over its limit cannot reset the count of the address it asks for."""
    limit = settings.PASSWORD_RESET_PER_HOUR
    over = []
    if _count("address", email.strip().lower()) > limit:
        over.append("address")
    if client_address and _count("client", client_address) > limit:
        over.append("client address")
    if over:
        logger.warning(
            "password reset mail not sent: more than %s an hour for this %s",
            limit,
            " and this ".join(over),
        )
    return not over
