"""The account's API tokens (/account/tokens/): create one (its key is shown once), list them,
revoke one. The rules are the API's, in accounts.services."""

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.models import MAX_TOKEN_NAME
from accounts.selectors import api_token_get_for_user, api_token_list_for_user
from accounts.services import MAX_ACTIVE_TOKENS, api_token_create, api_token_revoke
from common.exceptions import ApplicationError

EXPIRY_CHOICES = [("", "never"), ("30", "in 30 days"), ("90", "in 90 days"), ("365", "in a year")]


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=MAX_TOKEN_NAME,
        help_text="What it is for, e.g. “export script on the lab server”",
    )
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, label="Expires")

    def expires_at(self):
        days = self.cleaned_data["expires_in"]
        return timezone.now() + timedelta(days=int(days)) if days else None


def _page(request: HttpRequest, form: TokenForm, *, key: str = "", status: int = 200):
    context = {
        "form": form,
        "tokens": api_token_list_for_user(user=request.user),
        "new_key": key,
        "limit": MAX_ACTIVE_TOKENS,
    }
    return render(request, "web/account_tokens.html", context, status=status)


@never_cache  # the answer to a create holds a key: no cache may keep it
@login_required
@require_http_methods(["GET", "POST"])
def account_tokens(request: HttpRequest) -> HttpResponse:
    """GET: the page. POST: create a token (`action=create`: the answer shows its key once) or
    revoke one (`action=revoke`, `token=ID`)."""
    if request.method == "GET":
        return _page(request, TokenForm())
    action = request.POST.get("action")
    if action == "create":
        form = TokenForm(request.POST)
        if not form.is_valid():
            return _page(request, form, status=400)
        try:
            token, key = api_token_create(
                user=request.user, name=form.cleaned_data["name"], expires_at=form.expires_at()
            )
        except ApplicationError as error:
            form.add_error(None, error.message)
            return _page(request, form, status=400)
        messages.success(request, f"Created the token “{token.name}”.")
        return _page(request, TokenForm(), key=key)
    if action == "revoke":
        token_id = request.POST.get("token", "")
        token = (
            api_token_get_for_user(user=request.user, token_id=int(token_id))
            if token_id.isdigit()
            else None
        )
        if token is None:
            raise Http404("No such token.")
        api_token_revoke(token=token, by=request.user)
        messages.success(request, f"Revoked the token “{token.name}”: it no longer works.")
        return redirect("account_tokens")
    return HttpResponse("Unknown action.", status=400)
