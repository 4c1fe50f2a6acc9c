"""From submitted labels to gold labels: consensus, adjudication, majority, tie-breakers, the
conflict between two adjudicators, and who may do what. Data is made through the services."""

import threading

import pytest
from django.db import connection

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from labeling.agreement_report import study_agreement_report
from labeling.disagreements import (
    DisagreementFilter,
    disagreement_counts,
    disagreement_list,
    item_assignment_rows,
    item_gold,
    item_labels_read,
    item_resolution_view,
    tiebreaker_candidates,
)
from labeling.models import Assignment, Resolution, ResolutionRevision, Study, StudyItem
from labeling.resolution_rules import DimensionState
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.holders import items_holders_recount
from labeling.services.resolutions import (
    discussion_comment_add,
    item_tiebreaker_request,
    resolution_decide,
)
from labeling.services.setup import annotator_remove, study_workload_rebalance
from labeling.services.studies import study_create, study_member_add
from tests.conftest import SCREENED_IN, require_postgres


def submit(item, user, labels=None, **changes):
    """Submit `user`'s labels on `item`: SCREENED_IN with `changes` applied."""
    answers = {**(labels or SCREENED_IN), **changes}
    assignment = Assignment.objects.get(item=item, annotator=user)
    return assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
        submit=True,
    )


def gold(item) -> dict[str, tuple[str, list[str]]]:
    return {
        r.dimension.key: (r.method, sorted(c.key for c in r.categories.all()))
        for r in Resolution.objects.filter(item=item).select_related("dimension")
    }


@pytest.fixture
def item(study):
    return study.items.order_by("id").first()


@pytest.fixture
def annotators(people):
    return people["annotator1"], people["annotator2"]


def test_identical_labels_become_consensus_and_resolve_the_item(item, annotators):
    first, second = annotators
    submit(item, first)
    item.refresh_from_db()
    assert item.status == StudyItem.Status.OPEN  # one of two: still being labeled
    assert not Resolution.objects.exists()
    submit(item, second)
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    resolved = gold(item)
    assert resolved["root_cause"] == ("consensus", ["api_misuse"])
    # Empty optional dimensions are consensus too: both said "none applies".
    assert resolved["parallel_feature"] == ("consensus", [])
    dimension_keys = set(item.study.codebook_version.dimensions.values_list("key", flat=True))
    assert set(resolved) == dimension_keys  # screened in: every dimension has its gold label
    assert all(r.decided_by is None for r in Resolution.objects.all())
    assert ResolutionRevision.objects.count() == len(resolved)


def test_an_items_assignments_labels_and_gold_labels_are_read_apart_in_one_statement(
    item, annotators, people, django_assert_num_queries
):
    first, second = annotators
    submit(item, first)
    submit(item, second, root_cause=["configuration_error"])
    resolution_decide(
        item=item,
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["tensor_management_error"],
        method="adjudicated",
    )
    # A tie-breaker asked one dimension: its row's list and flag keep their types in the union.
    Assignment.objects.create(
        item=item,
        annotator=people["adjudicator"],
        is_tiebreaker=True,
        dimension_keys=["root_cause"],
    )
    items_holders_recount(item_ids=[item.id])
    with django_assert_num_queries(1):  # the assignments, the labels and the gold labels
        read = item_labels_read(item_ids=[item.id])
    assert sorted(read.assignments) == sorted(item_assignment_rows(item_ids=[item.id]))
    assert (item.id, "adjudicator", "todo", ["root_cause"], True) in read.assignments
    assert {row[1] for row in read.assignments} == {"annotator1", "annotator2", "adjudicator"}
    labels = read.labels[item.id]
    assert set(labels) == {"annotator1", "annotator2"}  # a gold label is nobody's label
    assert labels["annotator1"]["root_cause"] == {"api_misuse"}
    assert labels["annotator2"]["root_cause"] == {"configuration_error"}
    assert read.gold == item_gold(item_ids=[item.id])
    assert read.gold[item.id]["root_cause"] == {"tensor_management_error"}
    assert read.gold[item.id]["parallel_feature"] == frozenset()  # consensus on none


def test_a_disagreement_waits_in_the_queue_for_the_adjudicator(item, annotators, people):
    first, second = annotators
    submit(item, first)
    submit(item, second, root_cause=["configuration_error"])
    item.refresh_from_db()
    assert item.status == StudyItem.Status.IN_RESOLUTION
    assert "root_cause" not in gold(item)
    assert gold(item)["symptom"] == ("consensus", ["crash"])

    rows = disagreement_list(study=item.study)
    assert [(row.item.id, row.dimension.key) for row in rows] == [(item.id, "root_cause")]
    assert rows[0].answers == {
        "annotator1": frozenset({"api_misuse"}),
        "annotator2": frozenset({"configuration_error"}),
    }
    assert rows[0].conflict == "api_misuse vs configuration_error"
    counts = disagreement_counts(study=item.study)
    assert counts["dimension"] == {"root_cause": 1}
    assert counts["conflict"] == {"api_misuse vs configuration_error": 1}
    assert (
        disagreement_list(study=item.study, filters=DisagreementFilter(dimension="symptom")) == []
    )

    # Labels are frozen once the item is in resolution.
    with pytest.raises(ApplicationError, match="under resolution"):
        submit(item, first, root_cause=["configuration_error"])

    resolution = resolution_decide(
        item=item,
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["tensor_management_error"],  # neither annotator's: allowed
        method="adjudicated",
        note="the fix changes tensor handling",
    )
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    assert gold(item)["root_cause"] == ("adjudicated", ["tensor_management_error"])
    assert resolution.decided_by == people["adjudicator"]
    assert disagreement_list(study=item.study) == []


def test_a_screening_disagreement_settles_first_then_what_depends_on_it(item, annotators, people):
    # The adjudicator decides what the screening opens (the study's choice; by default new
    # annotators label it, see the tests at the end).
    Study.objects.filter(pk=item.study_id).update(screen_in_override="adjudicator")
    item.study.refresh_from_db()
    first, second = annotators
    submit(item, first)
    submit(item, second, labels={"screening": ["not_a_bug"]})
    view = item_resolution_view(item=item)
    states = {row.dimension.key: row.state for row in view.rows}
    assert states["screening"] == DimensionState.OPEN
    assert states["root_cause"] == DimensionState.WAITING
    assert [row.dimension.key for row in disagreement_list(study=item.study)] == ["screening"]

    resolution_decide(
        item=item,
        dimension_key="screening",
        user=people["adjudicator"],
        category_keys=["include"],
        method="discussion",
    )
    item.refresh_from_db()
    # Screened in: annotator2 gave no root cause, so nothing is agreed on the rest.
    open_now = {row.dimension.key for row in disagreement_list(study=item.study)}
    assert {"symptom", "root_cause", "fix_pattern"} <= open_now
    assert item.status == StudyItem.Status.IN_RESOLUTION

    # Screened out instead: nothing else applies and the item is resolved.
    current = Resolution.objects.get(item=item, dimension__key="screening")
    resolution_decide(
        item=item,
        dimension_key="screening",
        user=people["manager"],
        category_keys=["not_a_bug"],
        method="adjudicated",
        expected_version=current.version,
    )
    item.refresh_from_db()
    assert disagreement_list(study=item.study) == []
    assert item.status == StudyItem.Status.RESOLVED
    assert set(gold(item)) == {"screening"}


def test_two_adjudicators_deciding_at_once_the_second_sees_the_first(item, annotators, people):
    first, second = annotators
    submit(item, first)
    submit(item, second, symptom=["hang"])
    resolution_decide(
        item=item,
        dimension_key="symptom",
        user=people["adjudicator"],
        category_keys=["hang"],
        method="adjudicated",
        expected_version=0,
    )
    with pytest.raises(ConflictError) as conflict:
        resolution_decide(
            item=item,
            dimension_key="symptom",
            user=people["manager"],
            category_keys=["crash"],
            method="adjudicated",
            expected_version=0,
        )
    decided = conflict.value.extra["resolution"]
    assert decided["categories"] == ["hang"]
    assert decided["decided_by"] == "adjudicator"
    assert gold(item)["symptom"] == ("adjudicated", ["hang"])  # nothing lost

    resolution_decide(
        item=item,
        dimension_key="symptom",
        user=people["manager"],
        category_keys=["crash"],
        method="discussion",
        note="agreed on a call",
        expected_version=decided["version"],
    )
    history = list(
        ResolutionRevision.objects.filter(
            resolution__item=item, resolution__dimension__key="symptom"
        ).order_by("id")
    )
    assert [
        (r.previous_category_keys, r.category_keys, r.changed_by.username) for r in history
    ] == [
        (None, ["hang"], "adjudicator"),
        (["hang"], ["crash"], "manager"),
    ]
    assert history[-1].note == "agreed on a call"
    assert history[-1].previous_method == "adjudicated"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (["no_such_category"], "not a category"),
        (["crash", "hang"], "takes one category"),
        ([], "needs a category"),
    ],
)
def test_a_bad_decision_is_refused_and_changes_nothing(item, annotators, people, keys, message):
    first, second = annotators
    submit(item, first)
    submit(item, second, symptom=["hang"])
    with pytest.raises(ApplicationError, match=message):
        resolution_decide(
            item=item,
            dimension_key="symptom",
            user=people["adjudicator"],
            category_keys=keys,
            method="adjudicated",
        )
    assert "symptom" not in gold(item)


def test_who_may_decide_discuss_and_break_ties(item, annotators, people):
    first, second = annotators
    submit(item, first)
    with pytest.raises(ApplicationError, match="still being labeled"):
        resolution_decide(
            item=item,
            dimension_key="symptom",
            user=people["adjudicator"],
            category_keys=["crash"],
            method="adjudicated",
        )
    # Before their own submission an annotator may not join the discussion.
    with pytest.raises(PermissionDeniedError):
        discussion_comment_add(item=item, user=second, body="what did you pick?")
    submit(item, second, symptom=["hang"])
    for outsider in (first, people["outsider"]):
        with pytest.raises(PermissionDeniedError):
            resolution_decide(
                item=item,
                dimension_key="symptom",
                user=outsider,
                category_keys=["crash"],
                method="adjudicated",
            )
        with pytest.raises(PermissionDeniedError):
            item_tiebreaker_request(item=item, user=outsider)
    with pytest.raises(PermissionDeniedError):
        discussion_comment_add(item=item, user=people["outsider"], body="hello")
    comment = discussion_comment_add(item=item, user=second, body="  it hangs, not crashes  ")
    assert comment.body == "it hangs, not crashes"
    discussion_comment_add(item=item, user=people["adjudicator"], body="agreed")
    with pytest.raises(ApplicationError):
        discussion_comment_add(item=item, user=first, body="   ")


def test_a_tiebreaker_is_someone_new_and_their_label_lets_the_majority_decide(
    item, annotators, people, make_user
):
    first, second = annotators
    third = make_user("annotator3")
    study_member_add(study=item.study, user=third, role="annotator")
    submit(item, first)
    submit(item, second, symptom=["hang"])
    assert [u.username for u in tiebreaker_candidates(item=item)] == ["annotator3"]
    with pytest.raises(ApplicationError, match="cannot break this tie"):
        item_tiebreaker_request(item=item, user=people["adjudicator"], annotator=first)
    assignment = item_tiebreaker_request(item=item, user=people["adjudicator"])
    assert assignment.annotator == third and assignment.is_tiebreaker
    assert tiebreaker_candidates(item=item) == []
    with pytest.raises(ApplicationError, match="has seen this item"):
        item_tiebreaker_request(item=item, user=people["adjudicator"])

    # The tie-breaker labels although the item is in resolution; the majority then decides.
    submit(item, third, symptom=["hang"])
    item.refresh_from_db()
    assert gold(item)["symptom"] == ("majority", ["hang"])
    assert item.status == StudyItem.Status.RESOLVED


def test_the_majority_rule_decides_two_against_one(codebook_version, sample_issues, make_user):
    users = [make_user(f"coder{n}") for n in range(3)]
    study = study_create(
        slug="majority",
        name="majority",
        codebook_version=codebook_version,
        k=3,
        resolution_rule="majority",
        annotators=users,
        issues=sample_issues[:1],
    )
    item = study.items.get()
    submit(item, users[0])
    submit(item, users[1], root_cause=["configuration_error"])
    submit(item, users[2], root_cause=["configuration_error"], symptom=["hang"])
    resolved = gold(item)
    assert resolved["root_cause"] == ("majority", ["configuration_error"])
    assert resolved["symptom"] == ("majority", ["crash"])
    assert resolved["fix_pattern"] == ("consensus", ["fix_api_usage"])


def test_the_majority_rule_needs_three_annotators(codebook_version, make_user):
    with pytest.raises(ApplicationError, match="k = 3"):
        study_create(
            slug="pair", name="pair", codebook_version=codebook_version, k=2,
            resolution_rule="majority",
        )  # fmt: skip


def test_agreement_keeps_using_the_raw_labels(item, annotators, people):
    first, second = annotators
    submit(item, first)
    submit(item, second, root_cause=["configuration_error"])
    before = study_agreement_report(study=item.study)["dimensions"]["root_cause"]
    resolution_decide(
        item=item,
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["api_misuse"],
        method="adjudicated",
    )
    after = study_agreement_report(study=item.study)["dimensions"]["root_cause"]
    assert after["percent_agreement"] == before["percent_agreement"] == 0.0


@pytest.mark.django_db(transaction=True)
def test_two_last_submissions_at_once_still_resolve_the_item(study, annotators):
    """Each submit evaluates the item under its row lock, so whichever commits second sees the
    other's submission: the item never stays open with every label in."""
    require_postgres()
    item = study.items.order_by("id").first()
    barrier = threading.Barrier(2)
    errors = []

    def label(user):
        try:
            barrier.wait(timeout=30)
            submit(item, user)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=label, args=(user,)) for user in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    assert gold(item)["root_cause"] == ("consensus", ["api_misuse"])


# An adjudicator screens in an item its annotators screened out: the dimensions that now apply
# go to annotators who have not seen the item, never to the adjudicator.

SCREENED_OUT = {"screening": ["not_a_bug"]}
# What an annotator who relabels an item screened in by an adjudicator answers: every dimension
# but the screening, which is settled.
OPENED = {key: keys for key, keys in SCREENED_IN.items() if key != "screening"}
DEPENDENT = [
    "symptom",
    "root_cause",
    "fix_pattern",
    "debugging_practice",
    "testing_practice",
    "test_escape_reason",
    "training_stage",
    "parallel_feature",
]


@pytest.fixture
def newcomers(item, people, make_user):
    """Two more annotators of the study, and the adjudicator made an annotator too: the one
    person who must never be picked to label the item blind."""
    users = [make_user("annotator3"), make_user("annotator4")]
    for user in (*users, people["adjudicator"]):
        study_member_add(study=item.study, user=user, role="annotator")
    return users


def screen_in(item, user, note="the traceback shows a DeepSpeed bug"):
    current = Resolution.objects.filter(item=item, dimension__key="screening").first()
    return resolution_decide(
        item=item,
        dimension_key="screening",
        user=user,
        category_keys=["include"],
        method="adjudicated",
        note=note,
        expected_version=current.version if current else 0,
    )


def relabelers(item):
    return list(
        Assignment.objects.filter(item=item, dimension_keys__isnull=False)
        .select_related("annotator")
        .order_by("annotator__username")
    )


def test_screening_in_what_both_screened_out_sends_the_rest_to_new_blind_annotators(
    item, annotators, people, newcomers
):
    first, second = annotators
    submit(item, first, labels=SCREENED_OUT)
    submit(item, second, labels={"screening": ["duplicate"]})
    item.refresh_from_db()
    assert item.status == StudyItem.Status.IN_RESOLUTION
    resolution_decide(
        item=item,
        dimension_key="screening",
        user=people["manager"],
        category_keys=["not_a_bug"],
        method="adjudicated",
    )
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED  # screened out: nothing else applies

    screen_in(item, people["adjudicator"])

    item.refresh_from_db()
    assert gold(item) == {"screening": ("adjudicated", ["include"])}
    # Back to labeling for what now applies: the item waits, as for a tie-breaker.
    assert item.status == StudyItem.Status.IN_RESOLUTION
    new = relabelers(item)
    assert [a.annotator.username for a in new] == ["annotator3", "annotator4"]
    assert all(a.dimension_keys == DEPENDENT for a in new)
    assert all(a.status == Assignment.Status.TODO and not a.is_tiebreaker for a in new)
    assert all("adjudicator" in a.selection_reason for a in new)
    states = {row.dimension.key: row.state for row in item_resolution_view(item=item).rows}
    assert states["screening"] == DimensionState.RESOLVED
    assert {states[key] for key in DEPENDENT} == {"relabeling"}
    # Nothing to decide while they label: not in the queue, refused by the service.
    assert disagreement_list(study=item.study) == []
    with pytest.raises(ApplicationError, match="annotators who have not seen"):
        resolution_decide(
            item=item,
            dimension_key="root_cause",
            user=people["adjudicator"],
            category_keys=["api_misuse"],
            method="adjudicated",
        )
    # The adjudicator who overrode is never a blind annotator nor a tie-breaker of the item.
    assert tiebreaker_candidates(item=item) == []

    third, fourth = newcomers
    submit(item, third, labels=OPENED)
    item.refresh_from_db()
    assert item.status == StudyItem.Status.IN_RESOLUTION  # annotator4 has still to label
    submit(item, fourth, labels=OPENED, root_cause=["configuration_error"])

    # The usual resolution, among the annotators who labeled those dimensions.
    resolved = gold(item)
    assert resolved["symptom"] == ("consensus", ["crash"])
    assert resolved["training_stage"] == ("consensus", ["model_initialization"])
    assert "root_cause" not in resolved
    rows = disagreement_list(study=item.study)
    assert [(row.dimension.key, row.answers) for row in rows] == [
        (
            "root_cause",
            {
                "annotator3": frozenset({"api_misuse"}),
                "annotator4": frozenset({"configuration_error"}),
            },
        )
    ]
    # The relabelers answered no screening: none is stored for them.
    assert not Assignment.objects.get(item=item, annotator=third).annotations.filter(
        dimension__key="screening"
    )
    with pytest.raises(ApplicationError, match="cannot break this tie"):
        item_tiebreaker_request(item=item, user=people["manager"], annotator=people["adjudicator"])
    resolution_decide(
        item=item,
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["api_misuse"],
        method="adjudicated",
    )
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    # Agreement on the opened dimensions is that of the annotators who labeled them.
    report = study_agreement_report(study=item.study)["dimensions"]["root_cause"]
    assert report["n_annotators"] == 2 and report["percent_agreement"] == 0.0


def test_a_relabeler_answers_only_the_opened_dimensions(item, annotators, people, newcomers):
    for user in annotators:
        submit(item, user, labels=SCREENED_OUT)
    screen_in(item, people["adjudicator"])
    third = newcomers[0]
    with pytest.raises(ApplicationError, match="Screening"):
        submit(item, third, labels=SCREENED_IN)  # the screening is not theirs to answer
    assert not Assignment.objects.get(item=item, annotator=third).annotations.exists()
    # The labeling form sends every dimension; an empty screening is no answer and is ignored.
    assignment = submit(item, third, labels=OPENED, screening=[])
    assert assignment.status == Assignment.Status.SUBMITTED
    assert sorted(a.dimension.key for a in assignment.annotations.all()) == sorted(
        key for key in DEPENDENT if key in OPENED
    )


def test_screening_in_is_refused_when_too_few_annotators_have_not_seen_the_item(
    item, annotators, people
):
    study_member_add(study=item.study, user=people["adjudicator"], role="annotator")
    for user in annotators:
        submit(item, user, labels=SCREENED_OUT)
    before = gold(item)
    with pytest.raises(ApplicationError, match="have not seen") as refused:
        screen_in(item, people["adjudicator"])
    assert "adjudicator" in refused.value.message  # names the study's other choice
    assert gold(item) == before  # nothing was stored
    assert Assignment.objects.filter(item=item).count() == 2
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED


def test_one_annotator_screened_in_one_more_blind_annotator_joins_them(
    item, annotators, people, newcomers
):
    first, second = annotators
    submit(item, first)
    submit(item, second, labels=SCREENED_OUT)
    assert [row.dimension.key for row in disagreement_list(study=item.study)] == ["screening"]
    screen_in(item, people["adjudicator"])
    (new,) = relabelers(item)  # annotator1 answered them already: one more is enough
    assert new.annotator.username == "annotator3"
    submit(item, new.annotator, labels=OPENED)
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    assert gold(item)["root_cause"] == ("consensus", ["api_misuse"])


def test_screening_out_again_withdraws_the_unfinished_relabeling(
    item, annotators, people, newcomers
):
    for user in annotators:
        submit(item, user, labels=SCREENED_OUT)
    screen_in(item, people["adjudicator"])
    current = Resolution.objects.get(item=item, dimension__key="screening")
    resolution_decide(
        item=item,
        dimension_key="screening",
        user=people["manager"],
        category_keys=["out_of_scope"],
        method="discussion",
        expected_version=current.version,
    )
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    assert {a.status for a in relabelers(item)} == {Assignment.Status.SKIPPED}
    assert all("no longer apply" in a.skip_reason for a in relabelers(item))


def test_the_study_may_leave_the_opened_dimensions_to_the_adjudicator(
    item, annotators, people, newcomers
):
    Study.objects.filter(pk=item.study_id).update(screen_in_override="adjudicator")
    item.study.refresh_from_db()
    for user in annotators:
        submit(item, user, labels=SCREENED_OUT)
    screen_in(item, people["adjudicator"])
    assert relabelers(item) == []
    assert {row.dimension.key for row in disagreement_list(study=item.study)} >= {
        "symptom",
        "root_cause",
    }
    # Even so, the adjudicator who decided is no tie-breaker of the item.
    assert [u.username for u in tiebreaker_candidates(item=item)] == ["annotator3", "annotator4"]


def test_a_relabeling_assignment_is_never_handed_to_someone_who_saw_the_item(
    item, annotators, people, newcomers
):
    for user in annotators:
        submit(item, user, labels=SCREENED_OUT)
    screen_in(item, people["adjudicator"])
    third = newcomers[0]
    # annotator3 leaves: annotator4 holds the item already, the adjudicator decided it.
    annotator_remove(study=item.study, user=third)
    assert people["adjudicator"].pk not in set(
        Assignment.objects.filter(item=item).values_list("annotator_id", flat=True)
    )
    study_workload_rebalance(study=item.study)
    assert people["adjudicator"].pk not in set(
        Assignment.objects.filter(item=item).values_list("annotator_id", flat=True)
    )
