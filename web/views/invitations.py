"""Inviting people into a study (/studies/{slug}/invitations/), accepting an invitation
(/invitations/{token}/) and one's own name (/account/). Thin: the rules are in
labeling.services.invitations and accounts.services."""

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.services import user_names_change
from common.exceptions import ApplicationError
from common.middleware import client_address
from labeling.models import Invitation, Membership
from labeling.services.invitations import (
    InvitationState,
    invitation_accept,
    invitation_attempt_allowed,
    invitation_create,
    invitation_get_by_token,
    invitation_guess_record,
    invitation_join,
    invitation_revoke,
    invitation_state,
)
from web.forms import int_or_none
from web.views.studies import study_for_manager


class InviteForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR)
    email = forms.EmailField(
        required=False, help_text="The link is mailed there when mail is configured"
    )


class AcceptForm(forms.Form):
    username = forms.CharField(max_length=150)
    first_name = forms.CharField(max_length=150, required=False, label="First name")
    last_name = forms.CharField(max_length=150, required=False, label="Last name")
    password1 = forms.CharField(widget=forms.PasswordInput, label="Password")
    password2 = forms.CharField(widget=forms.PasswordInput, label="Password again")

    def clean(self):
        data = super().clean()
        if data.get("password1") != data.get("password2"):
            raise forms.ValidationError("The two passwords differ.")
        return data


class NameForm(forms.Form):
    first_name = forms.CharField(max_length=150, required=False, label="First name")
    last_name = forms.CharField(max_length=150, required=False, label="Last name")


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def study_invitations(request: HttpRequest, slug: str) -> HttpResponse:
    """Managers invite (the new link is shown once, on this answer) and revoke; they see every
    invitation with its state and the study's active members."""
    study, _ = study_for_manager(request, slug, "Invitations are for the study's managers.")
    form = InviteForm(request.POST if request.POST.get("action") == "invite" else None)
    new = None
    status = 200
    if request.method == "POST":
        try:
            if request.POST.get("action") == "revoke":
                invitation = Invitation.objects.filter(
                    study=study, pk=int_or_none(request.POST.get("invitation"))
                ).first()
                if invitation is None:
                    raise ApplicationError("No such invitation in this study.")
                invitation_revoke(invitation=invitation, by=request.user)
                messages.success(request, "The invitation is withdrawn.")
                return redirect("study_invitations", slug=study.slug)
            if form.is_valid():
                new = invitation_create(
                    study=study,
                    by=request.user,
                    role=form.cleaned_data["role"],
                    email=form.cleaned_data["email"],
                    base_url=request.build_absolute_uri("/").rstrip("/"),
                )
                form = InviteForm()
            else:
                status = 400
        except ApplicationError as error:
            messages.error(request, error.message)
            status = 400
    invitations = list(
        Invitation.objects.filter(study=study).select_related("created_by", "accepted_by")[:200]
    )
    context = {
        "study": study,
        "oversees": True,
        "manages": True,
        "form": form,
        "new": new,
        "new_link": request.build_absolute_uri(f"/invitations/{new.token}/") if new else "",
        "invitations": [(i, invitation_state(i)) for i in invitations],
        "members": Membership.objects.filter(study=study)
        .select_related("user")
        .order_by("role", "user__username"),
    }
    return render(request, "web/study_invitations.html", context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_open(request: HttpRequest, token: str) -> HttpResponse:
    """Whoever has the link sets a username, a name and a password, and lands in the study; a
    person signed in already (by password or single sign-on) joins with that account."""
    if not invitation_attempt_allowed(client_address=client_address(request)):
        return render(request, "web/invitation.html", {"state": "throttled"}, status=429)
    invitation = invitation_get_by_token(token=token)
    if invitation is None:
        invitation_guess_record(client_address=client_address(request))
    state = invitation_state(invitation) if invitation else "unknown"
    if state != InvitationState.PENDING:
        return render(request, "web/invitation.html", {"state": state}, status=410)
    if request.user.is_authenticated:
        return _join_signed_in(request, token, invitation)
    form = AcceptForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                user, study = invitation_accept(
                    token=token,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                    first_name=form.cleaned_data["first_name"],
                    last_name=form.cleaned_data["last_name"],
                )
            except ApplicationError as error:
                form.add_error(None, error.message)
            else:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                messages.success(request, f"Welcome to {study.name}.")
                return redirect("study_overview", slug=study.slug)
        status = 400
    context = {"state": state, "invitation": invitation, "form": form}
    return render(request, "web/invitation.html", context, status=status)


def _join_signed_in(request: HttpRequest, token: str, invitation) -> HttpResponse:
    error = ""
    if request.method == "POST":
        try:
            study = invitation_join(token=token, user=request.user).study
        except ApplicationError as refused:
            error = refused.message
        else:
            messages.success(request, f"Welcome to {study.name}.")
            return redirect("study_overview", slug=study.slug)
    context = {"state": InvitationState.PENDING, "invitation": invitation, "join_error": error}
    return render(request, "web/invitation.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """One's name; the password changes on Django's own page (linked)."""
    user = request.user
    form = NameForm(
        request.POST or None, initial={"first_name": user.first_name, "last_name": user.last_name}
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                user_names_change(user=user, **form.cleaned_data)
            except ApplicationError as error:
                form.add_error(None, error.message)
            else:
                messages.success(request, "Your name is saved.")
                return redirect("account")
        status = 400
    return render(request, "web/account.html", {"form": form}, status=status)
