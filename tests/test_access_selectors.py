"""The access rules of labeling.access, one by one, and the API permission classes over them."""

from itertools import combinations
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from api.permissions import IsStudyAdjudicator, IsStudyManager, IsStudyMember
from labeling.access import (
    assignment_get_for_annotator,
    assignment_get_in_study,
    assignment_list_editable_by,
    assignment_list_visible_to,
    codebook_list_visible_to,
    codebook_version_get_visible_to,
    issue_list_visible_to,
    study_can_label,
    study_can_see_agreement,
    study_get_visible_to,
    study_list_visible_to,
    study_names_visible_to,
    study_roles,
    user_can_manage_sources,
)
from labeling.models import Assignment, Membership
from labeling.services.studies import item_next_for_annotator, study_create, study_member_add

ANONYMOUS = AnonymousUser()


@pytest.fixture
def root(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


def test_roles_are_the_memberships_and_a_superuser_manages_everything(study, people, root):
    assert study_roles(study=study, user=people["manager"]) == {"manager"}
    assert study_roles(study=study, user=people["annotator1"]) == {"annotator"}
    assert study_roles(study=study, user=people["outsider"]) == set()
    assert study_roles(study=study, user=root) == {"manager"}
    assert study_roles(study=study, user=ANONYMOUS) == set()
    study_member_add(study=study, user=people["annotator1"], role="adjudicator")
    assert study_roles(study=study, user=people["annotator1"]) == {"annotator", "adjudicator"}


def test_a_study_loaded_for_a_user_carries_their_roles(study, people, django_assert_num_queries):
    with django_assert_num_queries(1):
        loaded, roles = study_get_visible_to(slug="demo", user=people["adjudicator"])
        assert loaded.codebook_version.codebook.name  # fetched with it
    assert roles == {"adjudicator"}
    with django_assert_num_queries(0):
        assert study_roles(study=loaded, user=people["adjudicator"]) == {"adjudicator"}
    # The roles carried are one user's: asking for another's reads the database.
    with django_assert_num_queries(1):
        assert study_roles(study=loaded, user=people["manager"]) == {"manager"}


def test_a_study_is_visible_to_its_members_only(study, people, root):
    for name in ("manager", "annotator1", "adjudicator"):
        assert study_get_visible_to(slug="demo", user=people[name])[0] == study
        assert list(study_list_visible_to(user=people[name])) == [study]
        assert study_names_visible_to(user=people[name], limit=5) == [study]
    assert study_get_visible_to(slug="demo", user=people["outsider"]) is None
    assert study_get_visible_to(slug="demo", user=ANONYMOUS) is None
    assert study_get_visible_to(slug="nope", user=root) is None
    assert study_get_visible_to(slug="demo", user=root) == (study, {"manager"})
    assert list(study_list_visible_to(user=people["outsider"])) == []
    assert list(study_list_visible_to(user=ANONYMOUS)) == []
    assert list(study_list_visible_to(user=root)) == [study]
    for user in (people["outsider"], ANONYMOUS):
        assert study_names_visible_to(user=user, limit=5) == []
    assert study_names_visible_to(user=root, limit=5) == [study]
    assert study_names_visible_to(user=root, limit=0) == []


def test_study_list_is_one_query_with_the_roles(study, people, django_assert_num_queries):
    with django_assert_num_queries(1):
        studies = list(study_list_visible_to(user=people["manager"]))
        assert study_roles(study=studies[0], user=people["manager"]) == {"manager"}


@pytest.mark.parametrize(
    "roles, agreement, label",
    [
        (set(), False, False),
        ({"annotator"}, False, True),
        ({"adjudicator"}, True, False),
        ({"manager"}, True, False),
        ({"manager", "annotator"}, True, True),
    ],
)
def test_what_each_role_may_do(roles, agreement, label):
    assert study_can_see_agreement(roles=roles) is agreement
    assert study_can_label(roles=roles) is label


def test_the_agreement_permission_is_the_agreement_rule(study, people, root):
    """The API composes `IsStudyMember & (IsStudyManager | IsStudyAdjudicator)`; it must say what
    `study_can_see_agreement` says, for every combination of roles."""
    permission = (IsStudyMember & (IsStudyManager | IsStudyAdjudicator))()
    user = people["outsider"]
    role_sets = [set(combo) for n in range(4) for combo in combinations(Membership.Role.values, n)]
    for roles in role_sets:
        Membership.objects.filter(study=study, user=user).delete()
        for role in roles:
            study_member_add(study=study, user=user, role=role)
        request = SimpleNamespace(user=user)
        assert permission.has_object_permission(request, None, study) is study_can_see_agreement(
            roles=roles
        ), roles
    assert permission.has_object_permission(SimpleNamespace(user=root), None, study)


def test_permissions_find_the_study_of_an_assignment(study, people):
    assignment = Assignment.objects.filter(annotator=people["annotator1"]).first()
    for name, expected in (("manager", True), ("annotator2", False)):
        request = SimpleNamespace(user=people[name])
        assert IsStudyManager().has_object_permission(request, None, assignment) is expected
    assert IsStudyMember().has_object_permission(
        SimpleNamespace(user=people["annotator2"]), None, assignment
    )


def test_issues_visible_to_each_role(study, people, root, codebook_version, sample_issues):
    # A study without annotators at creation: they claim items as they ask for their next one.
    claimed = study_create(
        slug="claimed", name="Claimed", codebook_version=codebook_version, issues=sample_issues[:3]
    )
    study_member_add(study=claimed, user=people["outsider"], role="annotator")
    assert item_next_for_annotator(study=claimed, user=people["outsider"]) is not None
    assert issue_list_visible_to(user=people["manager"]).count() == 45
    assert issue_list_visible_to(user=people["adjudicator"]).count() == 45
    assert issue_list_visible_to(user=people["annotator1"]).count() == 45  # k = n = 2
    assert issue_list_visible_to(user=root).count() == 45
    # An annotator sees the issues given to them, not every issue of the study.
    assert issue_list_visible_to(user=people["outsider"]).count() == 1
    assert issue_list_visible_to(user=ANONYMOUS).count() == 0


def test_assignments_visible_to_each_role(study, people, root):
    own = Assignment.objects.filter(annotator=people["annotator1"])
    assert set(assignment_list_visible_to(user=people["annotator1"])) == set(own)
    assert assignment_list_visible_to(user=people["manager"]).count() == 90
    assert assignment_list_visible_to(user=root).count() == 90
    assert assignment_list_visible_to(user=people["adjudicator"]).count() == 0
    assert assignment_list_visible_to(user=people["outsider"]).count() == 0
    assert assignment_list_visible_to(user=ANONYMOUS).count() == 0


def test_only_the_annotator_writes_their_assignment(study, people, root):
    assert set(assignment_list_editable_by(user=people["annotator1"])) == set(
        Assignment.objects.filter(annotator=people["annotator1"])
    )
    for user in (people["manager"], root, ANONYMOUS):
        assert assignment_list_editable_by(user=user).count() == 0


def test_an_item_is_opened_by_its_annotator_only(study, people):
    item_id = Assignment.objects.filter(annotator=people["annotator1"]).first().item_id
    found = assignment_get_for_annotator(study=study, item_id=item_id, user=people["annotator1"])
    assert found is not None and found.annotator == people["annotator1"]
    assert (
        assignment_get_for_annotator(study=study, item_id=item_id, user=people["manager"]) is None
    )
    assert (
        assignment_get_for_annotator(study=study, item_id=999_999, user=people["annotator1"])
        is None
    )


def test_an_item_and_its_study_are_read_with_the_users_roles_in_one_query(
    study, people, root, django_assert_num_queries
):
    annotator = people["annotator1"]
    item_id = Assignment.objects.filter(annotator=annotator).first().item_id
    study_member_add(study=study, user=annotator, role="adjudicator")
    with transaction.atomic(), django_assert_num_queries(1):
        found = assignment_get_in_study(slug="demo", item_id=item_id, user=annotator, lock=True)
        assert found.item.study.codebook_version.codebook.name  # fetched with it
        assert found.item.issue.repository.full_name
    assert found.annotator_id == annotator.pk and found.item_id == item_id
    assert found.item.study == study
    with django_assert_num_queries(0):
        assert study_roles(study=found.item.study, user=annotator) == {"annotator", "adjudicator"}
    # Not theirs, not in this study, not a user: nothing, as `assignment_get_for_annotator`.
    for user, slug, wanted in (
        (people["manager"], "demo", item_id),
        (root, "demo", item_id),
        (annotator, "nope", item_id),
        (annotator, "demo", 999_999),
        (ANONYMOUS, "demo", item_id),
    ):
        assert assignment_get_in_study(slug=slug, item_id=wanted, user=user) is None
    # An assignment kept by someone who left the study: the study is no longer theirs to see.
    Membership.objects.filter(study=study, user=annotator).delete()
    assert study_get_visible_to(slug="demo", user=annotator) is None
    assert assignment_get_in_study(slug="demo", item_id=item_id, user=annotator) is None


def test_codebooks_are_for_every_signed_in_user(study, people, codebook_version):
    assert codebook_list_visible_to(user=people["outsider"]).count() == 1
    assert codebook_list_visible_to(user=ANONYMOUS).count() == 0
    found = codebook_version_get_visible_to(version_id=codebook_version.id, user=people["outsider"])
    assert found == codebook_version
    assert codebook_version_get_visible_to(version_id=codebook_version.id, user=ANONYMOUS) is None
    assert codebook_version_get_visible_to(version_id=999_999, user=people["outsider"]) is None


def test_sources_are_for_superusers_and_managers_of_a_study(study, people, root):
    assert user_can_manage_sources(user=root)
    assert user_can_manage_sources(user=people["manager"])
    for name in ("annotator1", "adjudicator", "outsider"):
        assert not user_can_manage_sources(user=people[name])
    assert not user_can_manage_sources(user=ANONYMOUS)
