"""Who may see or change what: every access rule of the project, as plain selectors.

The pages (web/) and the API's permission classes (api/permissions.py) ask these functions and
nothing else. A selector that looks one thing up returns None when the user may not see it; the
interface turns that into a 404 (Http404 on a page, NotFound in the API), so that a slug or an
id of someone else's study reads exactly like one that does not exist.

The roles (DESIGN.md, "Words"): a *manager* sees everything of a study; an *annotator* sees only
their own assignments and labels; an *adjudicator* sees the study's labels to resolve them. A
Django superuser is a manager of every study. An anonymous user has no role anywhere.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Exists, F, FilteredRelation, OuterRef, Q, QuerySet, Value
from django.db.models.fields import IntegerField

from common.prepared import PreparedQuery
from corpus.models import Issue
from labeling.models import (
    Assignment,
    DiscussionComment,
    Membership,
    ResolutionRevision,
    Study,
    StudyItem,
)
from taxonomy.models import Codebook, CodebookVersion
from taxonomy.selectors import codebook_list

User = AbstractBaseUser | AnonymousUser

MANAGER = Membership.Role.MANAGER
ANNOTATOR = Membership.Role.ANNOTATOR
ADJUDICATOR = Membership.Role.ADJUDICATOR
OVERSEEING_ROLES = frozenset({MANAGER, ADJUDICATOR})

# A study loaded by the selectors below carries the user's roles in these annotations, so that
# a page or a permission check that asks for them again costs no query.
_ROLE_FLAG = "has_role_{}"
_ROLES_USER = "roles_user_id"


def _with_roles(studies: QuerySet[Study], user: User) -> QuerySet[Study]:
    memberships = Membership.objects.filter(study=OuterRef("pk"), user_id=user.pk)
    return studies.annotate(
        **{
            _ROLE_FLAG.format(role): Exists(memberships.filter(role=role))
            for role in Membership.Role.values
        },
        **{_ROLES_USER: Value(user.pk, output_field=IntegerField())},
    )


def _roles_carried(study: Study, user: User) -> set[str] | None:
    """The roles annotated on a study by `_with_roles` for this user; None if it has none."""
    if getattr(study, _ROLES_USER, None) != user.pk:
        return None
    roles = {role for role in Membership.Role.values if getattr(study, _ROLE_FLAG.format(role))}
    if user.is_superuser:
        roles.add(MANAGER)
    return roles


# Studies


def study_roles(*, study: Study, user: User) -> set[str]:
    """The user's roles in a study: their memberships, plus manager for a superuser; none for an
    anonymous user. Free for a study that `study_list_visible_to` or `study_get_visible_to` loaded
    for this user; one query otherwise."""
    if not user.is_authenticated:
        return set()
    carried = _roles_carried(study, user)
    if carried is not None:
        return carried
    roles = set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))
    if user.is_superuser:
        roles.add(MANAGER)
    return roles


def study_list_visible_to(*, user: User) -> QuerySet[Study]:
    """The studies a user may see: those they are a member of (any role); every study for a
    superuser; none for an anonymous user. Each carries the user's roles (see `study_roles`)."""
    studies = _studies_visible_to(user).select_related("codebook_version__codebook")
    return _with_roles(studies, user) if user.is_authenticated else studies


def study_names_visible_to(*, user: User, limit: int) -> list[Study]:
    """The slug and name of the newest `limit` studies the user may see (the same rule as
    `study_list_visible_to`), without their roles: the switcher in every page's top bar shows
    only these, and the roles' subqueries cost more to build than the rest of its query."""
    if user.is_authenticated and not user.is_superuser:
        return _STUDY_NAMES_OF_MEMBER(user_id=user.pk, limit=limit)
    return list(_newest_names(_studies_visible_to(user), limit))


def _newest_names(studies: QuerySet[Study], limit: int) -> QuerySet[Study]:
    return studies.only("slug", "name").order_by("-created_at", "-id")[:limit]


# Every page's top bar reads them: built and compiled once (common.prepared).
_STUDY_NAMES_OF_MEMBER = PreparedQuery(
    lambda *, user_id, limit: _newest_names(_studies_of_member(user_id), limit),
    values=("user_id",),
)


def _studies_visible_to(user: User) -> QuerySet[Study]:
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return _studies_of_member(user.pk)


def _studies_of_member(user_id: int) -> QuerySet[Study]:
    return Study.objects.filter(
        Exists(Membership.objects.filter(study=OuterRef("pk"), user_id=user_id))
    )


def study_get_visible_to(*, slug: str, user: User) -> tuple[Study, set[str]] | None:
    """The study with this slug and the user's roles in it, in one query; None when there is no
    such study or the user may not see it (the same rule as `study_list_visible_to`)."""
    if not user.is_authenticated:
        return None
    rows = _STUDY_WITH_MY_ROLE(slug=slug, user_id=user.pk)
    if not rows:
        return None
    roles = _roles_carry(rows[0], user, rows)
    return (rows[0], roles) if roles else None


def _study_with_my_role(*, slug: str, user_id: int) -> QuerySet[Study]:
    return (
        _with_my_role(
            Study.objects.select_related("codebook_version__codebook"), user_id, "memberships"
        )
        .filter(slug=slug)
        .order_by()
    )


# Every page of a study reads it so: built and compiled once (common.prepared).
_STUDY_WITH_MY_ROLE = PreparedQuery(_study_with_my_role, values=("slug", "user_id"))


def _with_my_role(rows: QuerySet, user_id: int, memberships: str) -> QuerySet:
    """The rows with the user's role in the study their `memberships` path leads to, as
    `_my_role`: one row per role of the user (a LEFT JOIN on their memberships), one with no
    role when they have none. Every page of a study asks for the roles, and the join costs about
    half of what `_with_roles`' subqueries cost to build."""
    return rows.annotate(
        _mine=FilteredRelation(memberships, condition=Q(**{f"{memberships}__user_id": user_id})),
        _my_role=F("_mine__role"),
    )


def _roles_carry(study: Study, user: User, rows: list) -> set[str]:
    """The user's roles in the study, out of `_with_my_role`'s rows, carried on the study as
    `_with_roles` would carry them, so that `study_roles` costs no query later."""
    held = {row._my_role for row in rows}
    for role in Membership.Role.values:
        setattr(study, _ROLE_FLAG.format(role), role in held)
    setattr(study, _ROLES_USER, user.pk)
    return study_roles(study=study, user=user)


def user_can_create_study(*, user: User) -> bool:
    """Superusers, and people given Django's "add study" permission (in the admin: a user's or
    a group's permissions), set studies up; whoever creates one becomes its manager."""
    return bool(user.is_authenticated and user.has_perm("labeling.add_study"))


def study_can_see_agreement(*, roles: set[str]) -> bool:
    """Agreement figures (and the round statuses built on them) are for managers and
    adjudicators; annotators would learn how their labels compare, which breaks blindness."""
    return bool(roles & OVERSEEING_ROLES)


def study_can_export(*, roles: set[str]) -> bool:
    """The dataset export (gold labels and, on request, every annotator's labels by name) is for
    the study's managers: they see everything of it already."""
    return MANAGER in roles


def study_can_label(*, roles: set[str]) -> bool:
    """Only annotators of a study are given items to label."""
    return ANNOTATOR in roles


# Issues


def issue_list_visible_to(*, user: User) -> QuerySet[Issue]:
    """Every issue for a superuser; else the issues of the studies the user manages or
    adjudicates, and the issues assigned to them as an annotator (an annotator of a study that
    assigns as people go does not browse the items nobody gave them); none when anonymous."""
    if not user.is_authenticated:
        return Issue.objects.none()
    if user.is_superuser:
        return Issue.objects.all()
    overseen = StudyItem.objects.filter(
        issue=OuterRef("pk"),
        study__memberships__user=user,
        study__memberships__role__in=OVERSEEING_ROLES,
    )
    assigned = StudyItem.objects.filter(issue=OuterRef("pk"), assignments__annotator=user)
    return Issue.objects.filter(Exists(overseen) | Exists(assigned))


# Assignments


def assignment_list_visible_to(*, user: User) -> QuerySet[Assignment]:
    """The user's own assignments and every assignment of the studies they manage; all of them
    for a superuser; none when anonymous. Adjudicators see labels through resolution, not here,
    and an annotator never sees another annotator's assignment (blind labeling)."""
    if not user.is_authenticated:
        return Assignment.objects.none()
    if user.is_superuser:
        return Assignment.objects.all()
    managed = Membership.objects.filter(user=user, role=MANAGER).values("study_id")
    return Assignment.objects.filter(Q(annotator=user) | Q(item__study_id__in=managed))


def assignment_list_editable_by(*, user: User) -> QuerySet[Assignment]:
    """The assignments whose labels the user may write (draft, submit, skip): their own only.
    Nobody, not a manager nor a superuser, writes labels in someone else's name."""
    if not user.is_authenticated:
        return Assignment.objects.none()
    return _editable_by(user.pk)


def _editable_by(user_id: int) -> QuerySet[Assignment]:
    """`assignment_list_editable_by` of a signed-in user, by their key."""
    return Assignment.objects.filter(annotator_id=user_id)


def assignment_get_for_annotator(
    *, study: Study, item_id: int, user: User, with_issue: bool = True, lock: bool = False
) -> Assignment | None:
    """The user's own assignment of an item of the study, with what the labeling page shows of
    it (without the issue when `with_issue` is false: a background save needs none of its
    text); None when the item is not in their queue (blind: no peeking at other people's).
    The item's study is the `study` given. `lock` takes the assignment's row lock (inside a
    transaction), so that a save can write it without reading it again."""
    if not user.is_authenticated:
        return None
    found = _ASSIGNMENT_OF_ITEM(
        study_id=study.pk, item_id=item_id, user_id=user.pk, with_issue=with_issue, lock=lock
    )
    assignment = found[0] if found else None
    if assignment is not None:
        assignment.item.study = study
    return assignment


def assignment_get_in_study(
    *, slug: str, item_id: int, user: User, with_issue: bool = True, lock: bool = False
) -> Assignment | None:
    """`assignment_get_for_annotator` for a study known by its slug, in one query with the
    study and the user's roles in it (the labeling page's every request, and its saves, ask
    both): the item's study carries the roles as `study_get_visible_to`'s does. None when the
    item is not in the user's queue or the user may not see the study; the caller tells the
    two apart with `study_get_visible_to` (a refusal is rare, a request is not)."""
    if not user.is_authenticated:
        return None
    rows = _ASSIGNMENT_IN_STUDY(
        slug=slug, item_id=item_id, user_id=user.pk, with_issue=with_issue, lock=lock
    )
    if not rows:
        return None
    return rows[0] if _roles_carry(rows[0].item.study, user, rows) else None


def _assignment_of_item(
    *, study_id: int, item_id: int, user_id: int, with_issue: bool, lock: bool
) -> QuerySet[Assignment]:
    assignments = _assignments_for_labeling(user_id, with_issue=with_issue, lock=lock)
    # One row at most (an annotator holds an item once): no ORDER BY, which the models' default
    # orderings would make a join to the study and a sort.
    return assignments.filter(item__study_id=study_id, item_id=item_id).order_by()[:1]


# The labeling item of the API reads it: built and compiled once (common.prepared).
_ASSIGNMENT_OF_ITEM = PreparedQuery(_assignment_of_item, values=("study_id", "item_id", "user_id"))


def _assignment_in_study(
    *, slug: str, item_id: int, user_id: int, with_issue: bool, lock: bool
) -> QuerySet[Assignment]:
    return (
        _with_my_role(
            _assignments_for_labeling(user_id, with_issue=with_issue, lock=lock).select_related(
                "item__study__codebook_version__codebook"
            ),
            user_id,
            "item__study__memberships",
        )
        .filter(item__study__slug=slug, item_id=item_id)
        .order_by()
    )


# The labeling page's every request and every save read it: built and compiled once (about
# a fifth of the page's time when built at each request; common.prepared).
_ASSIGNMENT_IN_STUDY = PreparedQuery(_assignment_in_study, values=("slug", "item_id", "user_id"))


def _assignments_for_labeling(
    user_id: int, *, with_issue: bool, lock: bool
) -> QuerySet[Assignment]:
    related = ("item__issue__repository", "item__round") if with_issue else ("item",)
    assignments = _editable_by(user_id).select_related(*related)
    if with_issue:
        # Not shown: the Markdown source (the page shows its HTML) and GitHub's whole JSON.
        assignments = assignments.defer("item__issue__body", "item__issue__raw")
    if lock:
        # Only the assignment row: the joined rows are read, not locked.
        assignments = assignments.select_for_update(of=("self",))
    return assignments


# Resolution


def item_can_resolve(*, roles: set[str]) -> bool:
    """Adjudicators record gold labels, managers too (they may do anything in their study)."""
    return bool(roles & OVERSEEING_ROLES)


def item_list_for_resolution(*, study: Study, roles: set[str]) -> QuerySet[StudyItem]:
    """The items whose labels the user may see side by side: for a manager every item of the
    study, for an adjudicator those in resolution or resolved (an item still being labeled stays
    blind); none for anyone else."""
    items = StudyItem.objects.filter(study=study)
    if MANAGER in roles:
        return items
    if ADJUDICATOR in roles:
        return items.exclude(status=StudyItem.Status.OPEN)
    return items.none()


def item_get_for_resolution(*, study: Study, roles: set[str], item_id: int) -> StudyItem | None:
    """One item of `item_list_for_resolution`, with its issue; None otherwise."""
    return (
        item_list_for_resolution(study=study, roles=roles)
        .select_related("issue__repository", "round", "study__codebook_version")
        .filter(pk=item_id)
        .first()
    )


def item_blind_annotators(*, item: StudyItem) -> QuerySet[AbstractBaseUser]:
    """The annotators of the item's study who may still label it blind, once its labels exist
    (a tie-breaker, the annotators of what an adjudicator's decision opened): active ones who
    hold no assignment of it, never decided one of its gold labels nor wrote in its discussion,
    and oversee nothing of the study (a manager or a superuser sees every label, an adjudicator
    those of every item in resolution, whether or not they left a trace on this one)."""
    return (
        get_user_model()
        .objects.filter(
            memberships__study_id=item.study_id,
            memberships__role=ANNOTATOR,
            is_active=True,
            is_superuser=False,
        )
        .exclude(
            Exists(
                Membership.objects.filter(
                    study_id=item.study_id, user=OuterRef("pk"), role__in=OVERSEEING_ROLES
                )
            )
        )
        .exclude(Exists(Assignment.objects.filter(item=item, annotator=OuterRef("pk"))))
        .exclude(
            Exists(
                ResolutionRevision.objects.filter(resolution__item=item, changed_by=OuterRef("pk"))
            )
        )
        .exclude(Exists(DiscussionComment.objects.filter(item=item, author=OuterRef("pk"))))
    )


def item_can_discuss(*, item: StudyItem, user: User, assignment: Assignment | None = None) -> bool:
    """Who reads and writes an item's discussion and sees its gold labels: the study's
    adjudicators and managers, and the annotators of the item once they submitted their own
    labels (never before, so that nobody learns the answer before giving theirs).
    `assignment`: the user's assignment of the item, when the caller read it in this request;
    its status is not read again (a user holds at most one assignment of an item)."""
    if not user.is_authenticated:
        return False
    if item_can_resolve(roles=study_roles(study=item.study, user=user)):
        return True
    if assignment is not None and (assignment.item_id, assignment.annotator_id) == (
        item.pk,
        user.pk,
    ):
        return assignment.status == Assignment.Status.SUBMITTED
    return Assignment.objects.filter(
        item=item, annotator=user, status=Assignment.Status.SUBMITTED
    ).exists()


# Codebooks


def codebook_list_visible_to(*, user: User) -> QuerySet[Codebook]:
    """Every codebook with its versions, by name. Codebooks are not secret (they are published
    with a study's results): every signed-in user reads every codebook and version; an anonymous
    user none."""
    if not user.is_authenticated:
        return Codebook.objects.none()
    return codebook_list()


def codebook_version_list_visible_to(*, user: User) -> QuerySet[CodebookVersion]:
    """The versions of the codebooks in `codebook_list_visible_to`."""
    if not user.is_authenticated:
        return CodebookVersion.objects.none()
    return CodebookVersion.objects.select_related("codebook")


def codebook_version_get_visible_to(*, version_id: int, user: User) -> CodebookVersion | None:
    """One version, or None when there is none or the user may not read it."""
    return codebook_version_list_visible_to(user=user).filter(pk=version_id).first()


def codebook_can_edit(*, codebook: Codebook, user: User) -> bool:
    """Who edits a codebook (drafts, publishing, the mapping to a new version): superusers, and
    the managers of a study that labels with one of its versions. A codebook is shared by the
    studies that use it, so a manager of any of them may propose its next version; each study
    moves to it only when its own managers say so (`study_can_change_codebook`)."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return Membership.objects.filter(
        user=user, role=MANAGER, study__codebook_version__codebook=codebook
    ).exists()


def study_can_change_codebook(*, study: Study, user: User) -> bool:
    """Moving a study to another codebook version, and deciding its annotators' proposals of
    new categories, is for the study's managers (superusers included)."""
    return MANAGER in study_roles(study=study, user=user)


# Sources


def user_can_manage_sources(*, user: User) -> bool:
    """GitHub sources feed every study, so they are for superusers and for whoever manages at
    least one study."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return Membership.objects.filter(user=user, role=MANAGER).exists()
