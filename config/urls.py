from django.contrib import admin
from django.urls import include, path

from web.views.docs import docs, docs_served
from web.views.favicon import favicon
from web.views.health import health

urlpatterns = [
    # Unauthenticated, no session; exempt from the HTTPS redirect (SECURE_REDIRECT_EXEMPT) so
    # that a probe on plain HTTP reaches it.
    path("health/", health, name="health"),
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("", include("web.urls")),
]

if docs_served():
    # The built documentation site, public and read-only (web/views/docs.py); without the
    # setting the route does not exist at all, as with Django's static() helper.
    urlpatterns[:0] = [
        path("docs/", docs, name="docs"),
        path("docs/<path:path>", docs, name="docs-page"),
    ]
