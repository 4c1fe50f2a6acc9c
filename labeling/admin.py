"""Admin: reading and light corrections. Every save goes through a service: studies are created
by `create_study` (or the API) and only their descriptive fields change here; members are added
with `study_member_add`; labels change only through the labeling services, so the annotation
models are read-only here (their history must stay complete). Nothing that holds labels or their
history is deleted here, neither directly nor by a cascade: a study, an item, an assignment, a
gold label, a comment, and a user who labeled (deactivate them instead)."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts.forms import UserAddForm, UserEditForm
from common.admin import ReadOnlyAdmin
from common.names import NameKind, NameValidator
from common.services import model_update
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    DiscussionComment,
    Membership,
    Resolution,
    ResolutionRevision,
    Round,
    Study,
    StudyItem,
)
from labeling.services.studies import round_save, study_member_add


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    raw_id_fields = ["user"]


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0
    fields = ["name", "kind", "target_kappa", "position"]
    can_delete = False
    readonly_fields = ["position"]


class StudyAdminForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = [
            "name", "description", "blind", "status", "screen_in_override", "show_similar_gold",
        ]  # fmt: skip

    def clean_name(self) -> str:
        return NameValidator(NameKind.STUDY_NAME).clean(self.cleaned_data.get("name"))


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    form = StudyAdminForm
    list_display = ["slug", "name", "codebook_version", "k", "blind", "status"]
    inlines = [RoundInline, MembershipInline]
    # Who labels what a screen-in opens may change while the study runs (say, when no annotator
    # who has not seen an item is left): items already sent to new annotators keep them.
    editable_fields = [
        "name", "description", "blind", "status", "screen_in_override", "show_similar_gold",
    ]  # fmt: skip
    # The codebook version and k are fixed when the study is made; changing them would orphan
    # labels or break the assignment plan.
    readonly_fields = [
        "slug",
        "codebook_version",
        "k",
        "overlap",
        "preassign",
        "resolution_rule",
        "required_dimensions",
        "sampling",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # studies are created with create_study or the API (study_create)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # it would take its items, assignments and labels with it

    def save_model(self, request, obj, form, change) -> None:
        stored = Study.objects.get(pk=obj.pk)
        model_update(
            instance=stored,
            fields=self.editable_fields,
            data={field: form.cleaned_data[field] for field in self.editable_fields},
        )

    def save_formset(self, request, form, formset, change) -> None:
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if formset.model is Round:
            for round_form in formset.forms:
                data = round_form.cleaned_data
                if not data or data.get("DELETE") or not round_form.has_changed():
                    continue  # rounds hold items; they are not deleted here
                saved = round_save(
                    study=form.instance,
                    name=data["name"],
                    kind=data["kind"],
                    target_kappa=data.get("target_kappa"),
                    round=round_form.instance if round_form.instance.pk else None,
                )
                formset.changed_objects.append((saved, round_form.changed_data))
            return
        for membership_form in formset.forms:
            data = membership_form.cleaned_data
            if not data:
                continue
            if data.get("DELETE"):
                if membership_form.instance.pk:
                    membership_form.instance.delete()
                    formset.deleted_objects.append(membership_form.instance)
                continue
            if membership_form.has_changed():
                formset.new_objects.append(
                    study_member_add(study=form.instance, user=data["user"], role=data["role"])
                )


@admin.register(StudyItem)
class StudyItemAdmin(ReadOnlyAdmin):
    list_display = ["study", "issue", "round", "status", "changed_upstream_at"]
    list_filter = ["study", "status"]
    list_select_related = ["study", "issue__repository", "round"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["item", "annotator", "status", "submitted_at", "seconds_spent"]
    list_filter = ["status", "item__study"]


@admin.register(Annotation)
class AnnotationAdmin(ReadOnlyAdmin):
    list_display = ["assignment", "dimension", "unsure", "version"]


@admin.register(AnnotationRevision)
class AnnotationRevisionAdmin(ReadOnlyAdmin):
    list_display = ["annotation", "category_keys", "changed_by", "changed_at", "reason"]


@admin.register(Resolution)
class ResolutionAdmin(ReadOnlyAdmin):
    list_display = ["item", "dimension", "method", "decided_by", "version"]
    list_filter = ["method", "item__study"]


@admin.register(ResolutionRevision)
class ResolutionRevisionAdmin(ReadOnlyAdmin):
    list_display = ["resolution", "changed_by", "changed_at"]


@admin.register(DiscussionComment)
class DiscussionCommentAdmin(ReadOnlyAdmin):
    list_display = ["item", "author", "created_at"]


User = get_user_model()


def user_has_label_history(user) -> bool:
    """Whether deleting the user would delete labels (their assignments cascade) or blank who
    changed a label, decided a gold label or wrote a comment."""
    return (
        Assignment.objects.filter(annotator=user).exists()
        or AnnotationRevision.objects.filter(changed_by=user).exists()
        or Resolution.objects.filter(decided_by=user).exists()
        or ResolutionRevision.objects.filter(changed_by=user).exists()
        or DiscussionComment.objects.filter(author=user).exists()
    )


class LabelKeepingUserAdmin(UserAdmin):
    """Django's user admin, except that users with label history are never deleted (unticking
    "active" locks them out and keeps their work). The "delete selected" action is gone, since
    it cannot tell such users apart. Names pass the rule of `common.names`."""

    add_form = UserAddForm
    form = UserEditForm

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and user_has_label_history(obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, LabelKeepingUserAdmin)
