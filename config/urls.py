from django.contrib import admin
from django.urls import include, path

from web.views import sso
from web.views.docs import docs, docs_served
from web.views.favicon import favicon
from web.views.health import health
from web.views.passwords import LoginView, PasswordResetView

urlpatterns = [
    # Unauthenticated, no session; exempt from the HTTPS redirect (SECURE_REDIRECT_EXEMPT) so
    # that a probe on plain HTTP reaches it.
    path("health/", health, name="health"),
    # Before Django's own: the login page links the reset only where mail can be sent, and the
    # reset is throttled (web/views/passwords.py).
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/password_reset/", PasswordResetView.as_view(), name="password_reset"),
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/", include("django.contrib.auth.urls")),
    # Single sign-on: allauth's login and callback views, a 404 unless configured
    # (web/views/sso.py); none of allauth's account pages.
    path("accounts/", include(sso.urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("", include("web.urls")),
]

# Under /api/ these answer the API's JSON error shape; elsewhere Django's own pages.
handler400 = "api.exception_handler.bad_request"
handler403 = "api.exception_handler.permission_denied"
handler404 = "api.exception_handler.page_not_found"
handler500 = "api.exception_handler.server_error"

if docs_served():
    # The built documentation site, public and read-only (web/views/docs.py); without the
    # setting the route does not exist at all, as with Django's static() helper.
    urlpatterns[:0] = [
        path("docs/", docs, name="docs"),
        path("docs/<path:path>", docs, name="docs-page"),
    ]
