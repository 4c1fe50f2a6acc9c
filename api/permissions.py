"""DRF permission classes over labeling.access, composable with `&`, `|` and `~`:

    permission_classes = [IsAuthenticated, IsStudyMember & (IsStudyManager | IsStudyAdjudicator)]

The study roles are object permissions: they run after `get_object()`, whose queryset comes from
an access selector (`study_list_visible_to`, `assignment_list_visible_to`, ...), so an object the
user may not see is a 404 before any of these runs, and a 403 only ever tells a member that their
role does not allow the action.
"""

from django.http import Http404
from rest_framework.permissions import BasePermission

from labeling.access import (
    ADJUDICATOR,
    MANAGER,
    study_get_visible_to,
    study_list_visible_to,
    study_roles,
    user_can_manage_sources,
)
from labeling.models import Assignment, Study, StudyItem
from labeling.selectors import study_list_for_user


class StudyLookup:
    """The lookup of every viewset under `studies/{slug}/`: a study among the user's (all for a
    superuser), so that one the user may not see is a 404 before any role is checked."""

    lookup_field = "slug"
    queryset = Study.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Study.objects.none()
        if getattr(self, "action", None) in ("list", "retrieve"):
            return study_list_for_user(user=self.request.user).prefetch_related("rounds")
        # The routes under a study do without its count of items, which grows with it.
        return study_list_visible_to(user=self.request.user)

    def get_object(self) -> Study:
        """The study of a route under it: looked up as the pages look it up, with the user's
        roles in one join (`study_get_visible_to`), which costs about half of building the
        list's subqueries; the same rule, and the same 404."""
        if getattr(self, "action", None) in ("list", "retrieve"):
            return super().get_object()
        found = study_get_visible_to(slug=self.kwargs[self.lookup_field], user=self.request.user)
        if found is None:
            raise Http404("No Study matches the given query.")
        study = found[0]
        self.check_object_permissions(self.request, study)
        return study


def study_of(obj: Study | StudyItem | Assignment) -> Study:
    """The study an object belongs to."""
    if isinstance(obj, Study):
        return obj
    if isinstance(obj, StudyItem):
        return obj.study
    if isinstance(obj, Assignment):
        return obj.item.study
    raise TypeError(f"{type(obj).__name__} does not belong to a study.")


class _StudyRole(BasePermission):
    """Grants when the user's roles in the object's study satisfy `allows`. Free of queries for a
    study loaded by an access selector (it carries the user's roles)."""

    def allows(self, roles: set[str]) -> bool:
        raise NotImplementedError

    def has_object_permission(self, request, view, obj) -> bool:
        return self.allows(study_roles(study=study_of(obj), user=request.user))


class IsStudyMember(_StudyRole):
    message = "This is for the study's members."

    def allows(self, roles: set[str]) -> bool:
        return bool(roles)


class IsStudyManager(_StudyRole):
    """A manager of the study (a superuser is one everywhere)."""

    message = "This is for the study's managers."

    def allows(self, roles: set[str]) -> bool:
        return MANAGER in roles


class IsStudyAdjudicator(_StudyRole):
    message = "This is for the study's adjudicators."

    def allows(self, roles: set[str]) -> bool:
        return ADJUDICATOR in roles


class CanManageSources(BasePermission):
    """Superusers and the managers of at least one study (labeling.access)."""

    message = "Sources are for superusers and the managers of a study."

    def has_permission(self, request, view) -> bool:
        return user_can_manage_sources(user=request.user)
