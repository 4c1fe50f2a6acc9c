"""/docs/: the built documentation site (`make docs`), read-only, when the app is to serve it.

Off unless DOCS_SERVE (default: DEBUG) is on; then config/urls.py routes /docs/ here. Elsewhere
the site is published on its own and settings.DOCS_URL points there.
"""

from pathlib import Path

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponseBase, HttpResponseRedirect
from django.utils._os import safe_join
from django.views.decorators.http import require_safe
from django.views.static import serve


def docs_served() -> bool:
    """Whether the app serves the documentation site under /docs/."""
    if settings.DOCS_SERVE is None:
        return settings.DEBUG
    return settings.DOCS_SERVE


# No database: a page of the documentation needs none, and stays up when the database is not.
@transaction.non_atomic_requests
@require_safe
# The theme's pages carry three small inline scripts of their own (the page's base URL, the
# colour palette, the open tab); the files are ours, built from docs/, never user content.
@csp_update({"script-src": [UNSAFE_INLINE]})
def docs(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.DOCS_ROOT)
    if not root.is_dir():
        raise Http404("The documentation is not built: run `make docs`.")
    try:
        # Refuses a path that leaves the site's folder before anything is looked at on disk.
        full_path = Path(safe_join(root, path))
    except SuspiciousFileOperation as error:
        raise Http404("No such page.") from error
    if full_path.is_dir():
        if path and not path.endswith("/"):
            # The site's relative links only work from the folder's own URL.
            return HttpResponseRedirect(request.path + "/")
        path = f"{path}index.html"
    # serve() checks the path against document_root again and answers 404 for what is missing.
    return serve(request, path, document_root=root)
