"""One rule for the names people give each other and their studies: usernames, display names
(a user's first and last name) and study names.

A name is shown on every page, in exports and in backups, and a username is also how a file or
a restore finds its person again; so a name holds only what reads the same everywhere:

* it is normalised: NFC for names that are read (a composed "é" and "e" + accent are one
  name), NFKC for usernames, as Django's own login form and `AbstractUser.clean` normalise them
  (a username stored otherwise could never sign in);
* no control character (Unicode Cc: NUL, tab, line breaks, ...), no format character (Cf: the
  bidirectional overrides and isolates that make "rotanimda" read as "adminator", zero-width
  spaces and joiners that make two names look alike), no surrogate, private-use or unassigned
  code point, no line or paragraph separator;
* no space at either end, at least one character, and at most as many as its column holds;
* a username only of Django's username characters (letters, digits and @ . + - _).

The check refuses rather than repairs (except the normalisation): a NUL dropped from
"annot\\0ator1" would quietly make it annotator1. `name_check` is for services and commands;
`NameValidator` is the same check as a Django validator, for forms, the admin and serializers.
"""

import re
import unicodedata
from enum import StrEnum

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible


class NameKind(StrEnum):
    USERNAME = "username"
    DISPLAY_NAME = "display name"
    STUDY_NAME = "study name"


# The columns: auth.User.username, first_name and last_name, labeling.Study.name.
NAME_MAX_LENGTH = {NameKind.USERNAME: 150, NameKind.DISPLAY_NAME: 150, NameKind.STUDY_NAME: 200}
# Cc, Cf, Cs, Co, Cn; Zl and Zp break a line as a control character would.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_USERNAME_CHARACTERS = re.compile(UnicodeUsernameValidator.regex)
_SHOWN_LENGTH = 60


class InvalidName(ValueError):
    """A name the rule refuses; str() says which name and why ("username 'a\\u202eb' holds ...")."""

    def __init__(self, kind: NameKind, value: object, problem: str) -> None:
        self.kind = NameKind(kind)
        self.value = value
        self.problem = problem
        super().__init__(f"{self.kind} {name_shown(value)} {problem}")


def name_shown(value: object) -> str:
    """A name as an error message may quote it: its repr (which escapes invisible and control
    characters, so that a message cannot be reordered by the name it quotes), cut short."""
    shown = repr(value)
    return shown if len(shown) <= _SHOWN_LENGTH else shown[: _SHOWN_LENGTH - 1] + "…"


def name_check(value: object, kind: NameKind | str) -> str:
    """The name, normalised, or InvalidName saying what is wrong with it."""
    kind = NameKind(kind)
    if not isinstance(value, str):
        raise InvalidName(kind, value, "is not text")
    for character in value:
        category = unicodedata.category(character)
        if category in _REFUSED_CATEGORIES:
            raise InvalidName(kind, value, f"holds {_character_described(character, category)}")
    value = unicodedata.normalize("NFKC" if kind is NameKind.USERNAME else "NFC", value)
    if not value:
        raise InvalidName(kind, value, "is empty")
    if value != value.strip():
        raise InvalidName(kind, value, "begins or ends with a space")
    limit = NAME_MAX_LENGTH[kind]
    if len(value) > limit:
        raise InvalidName(kind, value, f"is longer than {limit} characters ({len(value)})")
    if kind is NameKind.USERNAME and not _USERNAME_CHARACTERS.search(value):
        raise InvalidName(kind, value, "may hold only letters, digits and @ . + - _")
    return value


def name_check_as_written(value: object, kind: NameKind | str) -> str:
    """The name, or InvalidName: `name_check`'s, and also when normalising would change it. For
    names that find a person or a row again (an import file, a restore): matching the normal
    form would make two spellings one person without a word."""
    checked = name_check(value, kind)
    if checked != value:
        raise InvalidName(kind, value, f"is not in its normal form ({checked!r})")
    return checked


def _character_described(character: str, category: str) -> str:
    code = f"U+{ord(character):04X}"
    if character == "\x00":
        return f"a NUL character ({code})"
    if category == "Cc":
        return f"a control character ({code})"
    if category == "Cf":
        name = unicodedata.name(character, "")
        return f"an invisible formatting character ({code}{' ' + name if name else ''})"
    if category in ("Zl", "Zp"):
        return f"a line break ({code})"
    return f"a character that is not printable text ({code})"


@deconstructible
class NameValidator:
    """`name_check` as a Django validator (forms, the admin, DRF serializers). Called, it only
    checks; `clean` also returns the normalised name, for a form's clean_<field>."""

    code = "invalid_name"

    def __init__(self, kind: NameKind | str) -> None:
        self.kind = NameKind(kind)

    def __call__(self, value: object) -> None:
        self.clean(value)

    def clean(self, value: object) -> str:
        try:
            return name_check(value, self.kind)
        except InvalidName as error:
            raise ValidationError(f"This {self.kind} {error.problem}.", code=self.code) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NameValidator) and other.kind == self.kind
