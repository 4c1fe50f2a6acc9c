"""/favicon.ico: browsers and tools ask for it whatever the page says, so it answers with the
app's icon (a redirect to the static SVG, whose URL carries a hash in production) instead of a
404 in every log."""

from django.db import transaction
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_safe

ICON = "web/favicon.svg"


# No database: an icon needs none.
@transaction.non_atomic_requests
@require_safe
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    response = HttpResponseRedirect(static(ICON))
    # Not permanent: the static URL changes with the file's hash.
    patch_cache_control(response, public=True, max_age=24 * 60 * 60)
    return response
