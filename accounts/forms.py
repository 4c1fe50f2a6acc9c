"""Django's user forms (the admin's add and change pages) with the one name rule of
`common.names` on the username and the display names."""

from django import forms
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm

from common.names import NameKind, NameValidator

_USERNAME = NameValidator(NameKind.USERNAME)
_DISPLAY_NAME = NameValidator(NameKind.DISPLAY_NAME)


class _NameChecked(forms.ModelForm):
    """Checks and normalises whichever of username, first_name and last_name the form has;
    an empty first or last name stays allowed, as Django's model has it."""

    def clean_username(self) -> str:
        inherited = getattr(super(), "clean_username", None)
        username = inherited() if inherited else self.cleaned_data.get("username")
        return _USERNAME.clean(username)

    def clean_first_name(self) -> str:
        return self._display_name("first_name")

    def clean_last_name(self) -> str:
        return self._display_name("last_name")

    def _display_name(self, field: str) -> str:
        value = self.cleaned_data.get(field) or ""
        return _DISPLAY_NAME.clean(value) if value else ""


class UserAddForm(_NameChecked, AdminUserCreationForm):
    pass


class UserEditForm(_NameChecked, UserChangeForm):
    pass
