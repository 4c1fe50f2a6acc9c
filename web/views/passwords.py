"""Django's sign-in and password reset views, with what IssueCoder adds: the reset is throttled
(accounts.password_reset), and off, with its link hidden, where no mail can be sent
(PASSWORD_RESET_ENABLED: EMAIL_URL is unset in production); the login page has a button for each
provider of single sign-on configured (web/views/sso.py)."""

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from accounts.password_reset import password_reset_allowed
from accounts.sso import sso_providers
from common.middleware import client_address
from web.views.sso import sso_form_targets


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {
            **super().get_context_data(**kwargs),
            "password_reset_enabled": settings.PASSWORD_RESET_ENABLED,
            # A button for each provider of single sign-on configured; none by default.
            "sso_providers": sso_providers(),
        }

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        return sso_form_targets(super().render_to_response(context, **kwargs))


class PasswordResetView(auth_views.PasswordResetView):
    template_name = "web/password_reset_form.html"
    email_template_name = "web/password_reset_email.txt"
    subject_template_name = "web/password_reset_subject.txt"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "enabled": settings.PASSWORD_RESET_ENABLED}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PASSWORD_RESET_ENABLED:
            # Nothing could be sent: the page that says so, rather than "check your inbox".
            return self.get(request, *args, **kwargs)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        allowed = password_reset_allowed(
            email=form.cleaned_data["email"], client_address=client_address(self.request)
        )
        if not allowed:
            return HttpResponseRedirect(self.get_success_url())  # the page everyone gets
        return super().form_valid(form)
