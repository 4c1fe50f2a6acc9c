from rest_framework.permissions import BasePermission

from labeling.models import Membership
from labeling.selectors import study_roles


class IsStudyMember(BasePermission):
    """The object's study (or the object, when it is a study) counts the user as a member."""

    def has_object_permission(self, request, view, obj) -> bool:
        study = getattr(obj, "study", obj)
        return bool(study_roles(study=study, user=request.user))


class IsStudyManager(BasePermission):
    def has_object_permission(self, request, view, obj) -> bool:
        study = getattr(obj, "study", obj)
        return Membership.Role.MANAGER in study_roles(study=study, user=request.user)
