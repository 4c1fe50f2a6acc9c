"""Setting a study up (/studies/new/, with a live count of what the rule draws) and managing who
labels while it runs (/studies/{slug}/members/).

Each view checks who may do it, validates a form, calls one service, renders or redirects.
"""

import secrets

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from common.exceptions import ApplicationError
from labeling.access import user_can_create_study
from labeling.dashboard import study_annotator_progress
from labeling.models import Membership, Study
from labeling.services.setup import (
    SamplePreview,
    annotator_open_items_reassign,
    study_member_join,
    study_member_leave,
    study_sample_preview,
    study_setup,
)
from web.forms import DEFAULT_SEED, MemberAddForm, SampleRuleForm, StudySetupForm
from web.views.studies import study_for_manager

MEMBERS_REFUSAL = "Only the study's managers change its members."


def _check_creator(request: HttpRequest) -> None:
    if not user_can_create_study(user=request.user):
        raise PermissionDenied(
            "Superusers and people with the add-study permission set studies up."
        )


def _preview_of(form: SampleRuleForm) -> tuple[SamplePreview | None, str | None]:
    """What the form's rule draws now, or why it cannot say."""
    if not form.is_valid():
        fields = [form.fields[name].label or name for name in form.errors if name in form.fields]
        return None, "Complete the rule to see the count" + (
            f" (check {', '.join(str(field) for field in fields)})." if fields else "."
        )
    try:
        return study_sample_preview(rule=form.rule()), None
    except ApplicationError as error:
        return None, error.message


def _preview_rows(preview: SamplePreview | None, repositories: list[str]) -> list[dict]:
    """One row per repository of the corpus (ticked ones only when some are ticked)."""
    if preview is None:
        return []
    return [
        {
            "system": name,
            "owner": name.partition("/")[0],
            "name": name.partition("/")[2],
            "candidates": preview.candidates.get(name, 0),
            "sampled": preview.sampled.get(name, 0),
        }
        for name in sorted({*repositories, *preview.candidates})
    ]


def _preview_context(form: SampleRuleForm) -> dict:
    preview, problem = _preview_of(form)
    ticked = form.cleaned_data.get("repositories") if form.is_bound and form.is_valid() else None
    names = ticked or [value for value, _ in form.fields["repositories"].choices]
    return {"preview": preview, "problem": problem, "rows": _preview_rows(preview, names)}


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    _check_creator(request)
    status = 200
    if request.method == "POST":
        form = StudySetupForm(request.POST)
        if form.is_valid():
            try:
                study = study_setup(**form.setup_arguments(creator=request.user))
            except ApplicationError as error:
                form.add_error(None, error.message)
            else:
                messages.success(
                    request,
                    f"Study “{study.name}” set up: {study.items.count()} items drawn.",
                )
                return redirect("study_overview", slug=study.slug)
        status = 400
        rule_form = SampleRuleForm(request.POST)
    else:
        form = StudySetupForm()
        rule_form = SampleRuleForm(
            {"method": "all", "state": "any", "labels_match": "any", "seed": DEFAULT_SEED}
        )
    context = {
        "form": form,
        "random_seed": secrets.randbelow(10**9),
        **_preview_context(rule_form),
    }
    return render(request, "web/study_new.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def study_new_preview(request: HttpRequest) -> HttpResponse:
    """The live count of the setup form: candidates and sampled issues per repository."""
    _check_creator(request)
    form = SampleRuleForm(request.POST if request.method == "POST" else request.GET)
    return render(request, "web/_sample_preview.html", _preview_context(form))


# Members


@login_required
@require_http_methods(["GET", "POST"])
def study_members(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_for_manager(request, slug, MEMBERS_REFUSAL)
    add_form = MemberAddForm()
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "add":
                add_form = MemberAddForm(request.POST)
                if add_form.is_valid():
                    _member_add(request, study, add_form)
                    return redirect("study_members", slug=study.slug)
            elif action in ("remove", "reassign"):
                _annotator_change(request, study, action)
                return redirect("study_members", slug=study.slug)
            elif action == "remove_role":
                _role_remove(request, study)
                return redirect("study_members", slug=study.slug)
            else:
                messages.error(request, "Unknown action.")
        except ApplicationError as error:
            messages.error(request, error.message)
    memberships = list(
        Membership.objects.filter(study=study).select_related("user").order_by("user__username")
    )
    by_role = {
        role: [m.user for m in memberships if m.role == role] for role in Membership.Role.values
    }
    progress = {row.annotator: row for row in study_annotator_progress(study=study)}
    context = {
        "study": study,
        "oversees": True,
        "manages": True,
        "is_annotator": "annotator" in roles,
        "managers": by_role[Membership.Role.MANAGER],
        "adjudicators": by_role[Membership.Role.ADJUDICATOR],
        "annotators": [
            {"user": user, "progress": progress.get(user.username)}
            for user in by_role[Membership.Role.ANNOTATOR]
        ],
        "add_form": add_form,
    }
    status = 400 if add_form.is_bound and add_form.errors else 200
    return render(request, "web/study_members.html", context, status=status)


def _member_add(request: HttpRequest, study: Study, form: MemberAddForm) -> None:
    user, role = form.cleaned_data["username"], form.cleaned_data["role"]
    got = study_member_join(study=study, user=user, role=role, by=request.user)
    if got is not None:
        if study.preassign:
            share = f"got {got} assignment{'s' if got != 1 else ''}"
        else:
            share = "will claim items as they ask for the next one"
        messages.success(request, f"{user.get_username()} joined as annotator and {share}.")
    else:
        messages.success(request, f"{user.get_username()} joined as {role}.")


def _role_remove(request: HttpRequest, study: Study) -> None:
    role = request.POST.get("role", "")
    if role not in (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR):
        raise ApplicationError("Choose a manager or an adjudicator of this study.")
    membership = (
        Membership.objects.filter(
            study=study,
            role=role,
            user_id=int(member) if (member := request.POST.get("member", "")).isdigit() else None,
        )
        .select_related("user")
        .first()
    )
    if membership is None:
        raise ApplicationError("Choose a manager or an adjudicator of this study.")
    study_member_leave(study=study, user=membership.user, role=role, by=request.user)
    messages.success(request, f"{membership.user.get_username()} is no longer {role}.")


def _annotator_change(request: HttpRequest, study: Study, action: str) -> None:
    annotators = {
        str(m.user_id): m.user
        for m in Membership.objects.filter(
            study=study, role=Membership.Role.ANNOTATOR
        ).select_related("user")
    }
    annotator = annotators.get(request.POST.get("annotator", ""))
    if annotator is None:
        raise ApplicationError("Choose an annotator of this study.")
    name = annotator.get_username()
    if action == "remove":
        moved = study_member_leave(
            study=study, user=annotator, role=Membership.Role.ANNOTATOR, by=request.user
        )
        messages.success(
            request,
            f"{name} no longer annotates this study: {moved} unfinished "
            f"item{'s' if moved != 1 else ''} handed on to the others; "
            "their submitted labels stay.",
        )
        return
    to_id = request.POST.get("to", "")
    to = None
    if to_id:
        to = annotators.get(to_id) or get_user_model().objects.filter(pk=to_id).first()
        if to is None:
            raise ApplicationError("Choose another annotator of this study.")
    moved = annotator_open_items_reassign(study=study, annotator=annotator, to=to, by=request.user)
    target = to.get_username() if to else "the least loaded annotators"
    messages.success(
        request, f"{moved} unfinished item{'s' if moved != 1 else ''} of {name} went to {target}."
    )
