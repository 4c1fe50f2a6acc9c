"""Writes of annotators: saving drafts, submitting, skipping. Every change is a revision."""

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.services import user_create
from common.bulk import bulk_create_with_rows, collector_paused
from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from common.names import InvalidName, NameKind, name_check_as_written
from common.text import strip_nul
from corpus.models import Issue
from labeling.annotation_import import AnnotationRow
from labeling.models import Annotation, AnnotationRevision, Assignment, Membership, Study, StudyItem
from labeling.selectors import assignment_annotations, study_dimensions
from labeling.services.holders import items_holders_recount
from labeling.services.lifecycle import study_check_open
from labeling.services.resolutions import item_resolution_update, items_resolution_update
from labeling.services.studies import study_items_add, study_member_add
from labeling.services.upstream_changes import item_upstream_resubmitted
from taxonomy.models import Category, Dimension
from taxonomy.selectors import categories_by_key

MAX_TEXT = 20_000
MAX_SKIP_REASON = 2_000
MAX_PROPOSAL = 200
# Time spent on one item: a day is far beyond any labeling session; a larger count is a
# stopwatch left running (the page keeps at most this) or a client's mistake (the API refuses).
MAX_SECONDS_SPENT = 24 * 3600


class MissingLabelsError(ApplicationError):
    """A submit without a category on a required dimension; `extra["missing"]` names them."""


@dataclass
class DimensionAnswer:
    category_keys: list[str] = field(default_factory=list)
    unsure: bool = False
    rationale: str = ""
    evidence: str = ""
    proposal: str = ""


def _check_can_edit(
    *, assignment: Assignment, user: AbstractBaseUser, rechecking: bool = False
) -> None:
    if assignment.annotator_id != user.pk:
        raise PermissionDeniedError("This item is assigned to someone else.")
    # Labels change while the item is being labeled; once it is in resolution only an assignment
    # not yet submitted (a tie-breaker's) may still be written, and labels that a new codebook
    # version flagged for re-checking (`rechecking`; only those dimensions, see below).
    if _is_final(assignment) and not rechecking:
        raise ApplicationError("This item is under resolution; its labels can no longer change.")


def _is_final(assignment: Assignment) -> bool:
    return (
        assignment.item.status != StudyItem.Status.OPEN
        and assignment.status == Assignment.Status.SUBMITTED
    )


def assignment_save(
    *,
    assignment: Assignment,
    user: AbstractBaseUser,
    answers: Mapping[str, DimensionAnswer],
    submit: bool,
    expected_version: int | None = None,
    seconds_spent: int | None = None,
    locked: bool = False,
) -> Assignment:
    """Save an annotator's labels on an item, as a draft or submitted.

    `answers` maps dimension keys to answers; dimensions not named keep what they had. A stale
    `expected_version` (another tab saved in between) is a ConflictError and nothing is written.
    Text longer than its limit is refused, never cut. Submitting checks that every required
    single-label dimension has its one category; when one lacks it, the answers are kept as a
    draft and MissingLabelsError names what is missing (`extra`: "missing" and the new
    "version"), so that the page and the API lose nothing the annotator chose. After
    submitting, the annotator may still revise until the item enters resolution.

    `locked`: the caller read `assignment` with its row lock in the current transaction, with
    its item and the item's study (`labeling.access.assignment_get_for_annotator` with `lock`),
    so it is not read again.
    """
    saving = {
        "assignment": assignment,
        "locked": locked,
        "user": user,
        "answers": answers,
        "expected_version": expected_version,
        "seconds_spent": seconds_spent,
    }
    try:
        return _assignment_write(**saving, submit=submit)
    except MissingLabelsError as error:
        # The failed submit was refused before its first write, so the version still matches.
        # The draft is written first and the error raised after it: raising inside the draft's
        # transaction would roll it back too.
        draft = _assignment_write(**saving, submit=False)
        error.extra["version"] = draft.version
        raise


def _locked(assignment: Assignment) -> Assignment:
    """The assignment read again with its row lock, its item and the item's study, as a write
    of it needs them. Only the assignment row is locked: without `of`, PostgreSQL would also
    lock the joined study and codebook version rows, and every save of a study would wait on
    one lock."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item__study__codebook_version")
        .get(pk=assignment.pk)
    )


def _assignment_write(
    *,
    assignment: Assignment,
    user: AbstractBaseUser,
    answers: Mapping[str, DimensionAnswer],
    submit: bool,
    expected_version: int | None,
    seconds_spent: int | None,
    locked: bool,
) -> Assignment:
    """Every check, then every write. A refusal is raised before the first write, so a caller
    that holds the lock in its transaction (a page's request) goes on after it without a
    savepoint around the save; the writes join that transaction."""
    saving = {
        "user": user,
        "answers": answers,
        "submit": submit,
        "expected_version": expected_version,
        "seconds_spent": seconds_spent,
    }
    if not locked:
        with transaction.atomic():
            return _assignment_write(assignment=_locked(assignment), **saving, locked=True)
    study = assignment.item.study  # read with the assignment, in this transaction
    study_check_open(study_id=study.pk, status_read=study.status)
    existing = assignment_annotations(assignment=assignment, version=study.codebook_version)
    flagged = {dimension_id for dimension_id, a in existing.items() if a.needs_review_since}
    _check_can_edit(assignment=assignment, user=user, rechecking=bool(flagged))
    if expected_version is not None and expected_version != assignment.version:
        raise ConflictError(
            "These labels were changed in another tab or window; reload to see them.",
            extra={"version": assignment.version},
        )
    dimensions = {d.key: d for d in study_dimensions(study=study)}
    unknown = sorted(set(answers) - dimensions.keys())
    if unknown:
        raise ApplicationError(
            f"Unknown dimension {', '.join(unknown)} for this study's codebook.",
            extra={"dimensions": unknown},
        )
    if assignment.dimension_keys is not None:
        dimensions, answers = _in_scope(assignment.dimension_keys, dimensions, answers)
    answers = _answers_to_recheck(answers, dimensions, flagged, final=_is_final(assignment))
    _check_lengths(answers, dimensions)
    categories = _categories_by_dimension(
        answers,
        dimensions,
        categories_by_key(version=study.codebook_version),
        existing,
    )
    if submit:
        answers = _answers_for_submit(dimensions, answers, existing)
        # Dimensions cleared for submitting have no categories; the others keep theirs.
        categories = {
            key: categories.get(key, []) if answer.category_keys else []
            for key, answer in answers.items()
        }

    status = (
        Assignment.Status.SUBMITTED
        if submit
        else (
            Assignment.Status.SUBMITTED
            if assignment.status == Assignment.Status.SUBMITTED
            else Assignment.Status.DRAFT
        )
    )
    with transaction.atomic(savepoint=False):
        _assignment_apply(
            assignment=assignment,
            study=study,
            user=user,
            changes=[
                _Change(
                    dimension=dimensions[key],
                    annotation=existing.get(dimensions[key].id),
                    chosen=categories[key],
                    answer=answer,
                )
                for key, answer in answers.items()
            ],
            status=status,
            submit=submit,
            seconds_spent=seconds_spent,
        )
    return assignment


def _assignment_apply(
    *,
    assignment: Assignment,
    study: Study,
    user: AbstractBaseUser,
    changes: list["_Change"],
    status: str,
    submit: bool,
    seconds_spent: int | None,
) -> None:
    _annotations_write(
        assignment=assignment,
        changes=changes,
        user=user,
        assignment_status=status,
        reason="submitted" if submit else "draft",
    )

    now = timezone.now()
    fields = ["status", "version"]
    if assignment.started_at is None:
        assignment.started_at = now
        fields.append("started_at")
    if submit and assignment.status != Assignment.Status.SUBMITTED:
        assignment.submitted_at = now
        fields.append("submitted_at")
    if submit:
        # Agreement can be reported per codebook version: the version these labels were given in.
        assignment.codebook_version_id = study.codebook_version_id
        fields.append("codebook_version")
    if seconds_spent is not None and seconds_spent > assignment.seconds_spent:
        assignment.seconds_spent = min(seconds_spent, MAX_SECONDS_SPENT)
        fields.append("seconds_spent")
    assignment.status = status
    assignment.skip_reason = ""
    fields.append("skip_reason")
    assignment.version += 1
    assignment.save(update_fields=fields)
    if not submit:
        return
    resubmitted = assignment.item.changed_upstream_at is not None
    if resubmitted:
        item_upstream_resubmitted(assignment=assignment)
    # The item was read with the assignment, in this transaction, and changed since only if
    # it was resubmitted after an upstream change.
    item_resolution_update(item=assignment.item, read_in_transaction=not resubmitted)


def _in_scope(
    scope: list[str],
    dimensions: Mapping[str, Dimension],
    answers: Mapping[str, DimensionAnswer],
) -> tuple[dict[str, Dimension], dict[str, DimensionAnswer]]:
    """The dimensions an assignment that labels only some of them asks (`dimension_keys`), and
    its answers on them. The others were settled before the annotator got the item (an
    adjudicator screened it in): an empty answer on one is what a form showing only the asked
    ones sends and is left out; a real one is refused. Leaving them out of the dimensions also
    makes a condition on them rule nothing out when the submit is checked."""
    asked = set(scope)
    given = sorted(
        key for key, answer in answers.items() if key not in asked and answer != DimensionAnswer()
    )
    if given:
        names = ", ".join(dimensions[key].name for key in given)
        raise ApplicationError(
            f"{names} of this item {'was' if len(given) == 1 else 'were'} settled before you "
            "got it: you are asked only "
            f"{', '.join(d.name for key, d in dimensions.items() if key in asked)}.",
            extra={"dimensions": given},
        )
    return (
        {key: d for key, d in dimensions.items() if key in asked},
        {key: answer for key, answer in answers.items() if key in asked},
    )


def _answers_to_recheck(
    answers: Mapping[str, DimensionAnswer],
    dimensions: Mapping[str, Dimension],
    flagged: set[int],
    *,
    final: bool,
) -> Mapping[str, DimensionAnswer]:
    """The answers to write when some labels wait to be re-checked after a codebook change.

    Under resolution only the flagged dimensions may change (the others are final), so the
    rest of the answers is left out. A flagged label answered with no category keeps its old
    category: the page cannot show a category of the earlier version, and re-checking means
    choosing one of the current version (a submit then asks for it as usual)."""
    if not flagged:
        return answers
    return {
        key: answer
        for key, answer in answers.items()
        if (dimensions[key].id in flagged and answer.category_keys)
        or (dimensions[key].id not in flagged and not final)
    }


@dataclass
class _Change:
    dimension: Dimension
    annotation: Annotation | None  # with its categories prefetched; None when there is none yet
    chosen: list[Category]
    answer: DimensionAnswer


def _annotations_write(
    *,
    assignment: Assignment,
    changes: list[_Change],
    user: AbstractBaseUser | None,
    assignment_status: str,
    reason: str,
) -> int:
    """Create or change annotations of one assignment and record a revision of each; unchanged
    answers write nothing. A constant number of queries however many dimensions change. Runs
    inside the caller's transaction. Returns the number of annotations changed."""
    return _annotations_write_many(
        changes=[(assignment, change) for change in changes],
        user=user,
        assignment_status=assignment_status,
        reason=reason,
    )


def _annotations_write_many(
    *,
    changes: list[tuple[Assignment, _Change]],
    user: AbstractBaseUser | None,
    assignment_status: str,
    reason: str,
) -> int:
    """`_annotations_write` for the changes of any number of assignments, in the same constant
    number of queries (an import writes thousands at once)."""
    changed: list[tuple[Annotation, list[Category], tuple]] = []
    to_create: list[Annotation] = []
    # Existing annotations whose categories change: only theirs are deleted and written again
    # (a save that changes a rationale keeps the categories' rows).
    recategorised: set[int] = set()
    for assignment, change in changes:
        answer = change.answer
        new_state = (
            sorted(c.key for c in change.chosen), answer.unsure, _text(answer.rationale, MAX_TEXT),
            _text(answer.evidence, MAX_TEXT), _text(answer.proposal, MAX_PROPOSAL),
        )  # fmt: skip
        annotation = change.annotation
        if annotation is not None:
            old_state = (
                sorted(c.key for c in annotation.categories.all()), annotation.unsure,
                annotation.rationale, annotation.evidence, annotation.proposal,
            )  # fmt: skip
            # A flagged label re-saved as it was is re-checked all the same: write it.
            if new_state == old_state and annotation.needs_review_since is None:
                continue
            # By id, not key: a label re-checked after a codebook change may keep its keys
            # and move to the categories of the new version.
            if {c.id for c in change.chosen} != {c.id for c in annotation.categories.all()}:
                recategorised.add(annotation.id)
        else:
            annotation = Annotation(assignment=assignment, dimension=change.dimension)
            to_create.append(annotation)
        annotation.unsure, annotation.rationale = new_state[1], new_state[2]
        annotation.evidence, annotation.proposal = new_state[3], new_state[4]
        annotation.version += 1
        # Writing the dimension again is the re-check that a codebook change asked for.
        annotation.needs_review_since, annotation.review_note = None, ""
        changed.append((annotation, change.chosen, new_state))
    if not changed:
        return 0
    created = {id(annotation) for annotation in to_create}
    to_update = [annotation for annotation, _, _ in changed if id(annotation) not in created]
    written = [
        "unsure",
        "rationale",
        "evidence",
        "proposal",
        "version",
        "updated_at",
        "needs_review_since",
        "review_note",
    ]
    for annotation in to_update:
        annotation.updated_at = timezone.now()
    _annotations_update(to_update, written)
    through = Annotation.categories.through
    if recategorised:
        through.objects.filter(annotation_id__in=recategorised).delete()
    # The new annotations, their categories and every changed one's revision: one statement on
    # PostgreSQL.
    bulk_create_with_rows(
        Annotation,
        to_create,
        [
            (
                through,
                "annotation",
                [
                    {"annotation": annotation, "category_id": category.id}
                    for annotation, chosen, _ in changed
                    if id(annotation) in created or annotation.id in recategorised
                    for category in chosen
                ],
            ),
            (
                AnnotationRevision,
                "annotation",
                [
                    {
                        "annotation": annotation,
                        "category_keys": state[0],
                        "unsure": annotation.unsure,
                        "rationale": annotation.rationale,
                        "evidence": annotation.evidence,
                        "proposal": annotation.proposal,
                        "assignment_status": assignment_status,
                        "changed_by_id": None if user is None else user.pk,
                        "reason": reason,
                    }
                    for annotation, _, state in changed
                ],
            ),
        ],
    )
    return len(changed)


def _annotations_update(annotations: list[Annotation], field_names: list[str]) -> None:
    """Write these fields of each annotation: one UPDATE statement, run once per row.

    `bulk_update` builds a CASE expression per field and row, which cost more than the rest of a
    draft save; this statement's text is the same at every save, so PostgreSQL keeps it
    prepared. Values go through each field's own conversion, as the ORM's would."""
    if not annotations:
        return
    fields = [Annotation._meta.get_field(name) for name in field_names]
    quote = connection.ops.quote_name
    columns = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    table, key = quote(Annotation._meta.db_table), quote(Annotation._meta.pk.column)
    statement = f"UPDATE {table} SET {columns} WHERE {key} = %s"  # noqa: S608 (names from the model)
    rows = [
        [field.get_db_prep_save(getattr(annotation, field.attname), connection) for field in fields]
        + [annotation.pk]
        for annotation in annotations
    ]
    with connection.cursor() as cursor:
        cursor.executemany(statement, rows)


def _text(value: str, limit: int) -> str:
    # NUL is the one character PostgreSQL cannot store; a pasted log may carry it. Lengths are
    # checked before (_check_lengths); the limit here never cuts what was checked.
    return value.replace("\x00", "")[:limit]


TEXT_LIMITS = {"rationale": MAX_TEXT, "evidence": MAX_TEXT, "proposal": MAX_PROPOSAL}


def _text_too_long(field_name: str, value: str) -> int | None:
    """The length of the text when it is over its limit (as stored: without NUL), else None."""
    length = len(value) - value.count("\x00")
    return length if length > TEXT_LIMITS[field_name] else None


def _check_lengths(
    answers: Mapping[str, DimensionAnswer], dimensions: Mapping[str, Dimension]
) -> None:
    # Refused rather than cut: a cut rationale would be stored without anyone knowing.
    for key, answer in answers.items():
        for field_name in TEXT_LIMITS:
            length = _text_too_long(field_name, getattr(answer, field_name))
            if length is not None:
                raise ApplicationError(
                    f"The {field_name} of {dimensions[key].name} is {length:,} characters "
                    f"long; the limit is {TEXT_LIMITS[field_name]:,}.",
                    extra={
                        "dimension": key,
                        "field": field_name,
                        "max_length": TEXT_LIMITS[field_name],
                    },
                )


def _categories_by_dimension(
    answers: Mapping[str, DimensionAnswer],
    dimensions: Mapping[str, Dimension],
    known: Mapping[tuple[int, str], Category],
    existing: Mapping[int, Annotation] | None = None,
) -> dict[str, list[Category]]:
    """The chosen categories of each answer, checked. `known`: the version's categories by
    (dimension id, key); a key found in no dimension is reported."""
    chosen: dict[str, list[Category]] = {}
    for key, answer in answers.items():
        dimension = dimensions[key]
        keys = list(dict.fromkeys(answer.category_keys))
        foreign = [k for k in keys if (dimension.id, k) not in known]
        if foreign:
            raise ApplicationError(
                f"{', '.join(foreign)} is not a category of {dimension.name}.",
                extra={"dimension": key, "categories": foreign},
            )
        if not dimension.multi_label and len(keys) > 1:
            raise ApplicationError(
                f"{dimension.name} takes one category; {len(keys)} were given.",
                extra={"dimension": key},
            )
        # A deprecated category takes no new labels; a label that already has it may keep it
        # (re-saving an item must not force a change that nobody asked for).
        annotation = (existing or {}).get(dimension.id)
        held = {c.id for c in annotation.categories.all()} if annotation else set()
        # Copies: `known` may be shared by every request of the process.
        categories = [copy.copy(known[(dimension.id, k)]) for k in keys]
        deprecated = [c.key for c in categories if c.deprecated and c.id not in held]
        if deprecated:
            raise ApplicationError(
                f"{', '.join(deprecated)} is deprecated in this codebook version and takes no "
                f"new labels; choose another category of {dimension.name}.",
                extra={"dimension": key, "categories": deprecated},
            )
        chosen[key] = categories
    return chosen


def _chosen_keys(
    dimensions: Mapping[str, Dimension],
    answers: Mapping[str, DimensionAnswer],
    existing: Mapping[int, Annotation],
) -> dict[str, set[str]]:
    """The categories each dimension will have after this save."""
    chosen: dict[str, set[str]] = {}
    for key, dimension in dimensions.items():
        if key in answers:
            chosen[key] = set(answers[key].category_keys)
        else:
            annotation = existing.get(dimension.id)
            chosen[key] = {c.key for c in annotation.categories.all()} if annotation else set()
    return chosen


def _answers_for_submit(
    dimensions: Mapping[str, Dimension],
    answers: Mapping[str, DimensionAnswer],
    existing: Mapping[int, Annotation],
) -> dict[str, DimensionAnswer]:
    """Check that every applicable required single-label dimension has its category, and clear
    the dimensions that do not apply (an item screened out has no root cause). What they held
    stays in the revision history."""
    chosen = _chosen_keys(dimensions, answers, existing)
    answers = dict(answers)
    missing = []
    for key, dimension in dimensions.items():
        if not dimension.applies_given(chosen):
            if chosen[key] or key in answers or dimension.id in existing:
                answers[key] = DimensionAnswer()
            continue
        if dimension.required and not dimension.multi_label and not chosen[key]:
            missing.append(dimension.name)  # an empty multi-label answer means "none applies"
    if missing:
        raise MissingLabelsError(
            f"Choose a category for: {', '.join(missing)}.", extra={"missing": missing}
        )
    return answers


def assignment_skip(
    *, assignment: Assignment, user: AbstractBaseUser, reason: str, locked: bool = False
) -> Assignment:
    """Set an unsubmitted assignment aside with the annotator's reason. `locked` as in
    `assignment_save`: the caller read it with its row lock and its item in this transaction,
    so it is not read again; a refusal is raised before the one write, so no savepoint either."""
    if not locked:
        with transaction.atomic():
            return assignment_skip(
                assignment=_locked(assignment), user=user, reason=reason, locked=True
            )
    _check_can_edit(assignment=assignment, user=user)
    study_check_open(study_id=assignment.item.study_id)
    reason = strip_nul(reason or "").strip()
    if not reason:
        raise ApplicationError("Say why you skip this item.")
    if len(reason) > MAX_SKIP_REASON:
        # Refused, not cut: the page and the API answer alike, and nobody loses words silently.
        raise ApplicationError(
            f"A reason for skipping has at most {MAX_SKIP_REASON} characters ({len(reason)}).",
            extra={"field": "skip_reason", "max_length": MAX_SKIP_REASON},
        )
    if assignment.status == Assignment.Status.SUBMITTED:
        raise ApplicationError("A submitted item cannot be skipped; revise its labels instead.")
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.version += 1
    assignment.save(update_fields=["status", "skip_reason", "version"])
    return assignment


@dataclass
class AnnotationImportReport:
    rows: int = 0
    items_added: int = 0
    users_created: int = 0
    annotations_written: int = 0


@collector_paused()
@transaction.atomic
def annotations_import(
    *, study: Study, rows: list[AnnotationRow], create_users: bool = False
) -> AnnotationImportReport:
    """Record labels made elsewhere as submitted annotations of a study.

    Everything is checked first; when any row is wrong, ApplicationError lists each problem with
    its line numbers and nothing is written. The rules are the labeling page's: a required
    single-label dimension (as the study requires it) needs its category unless it does not
    apply given the same annotator's other answers on the issue in the file (a screened-out
    issue needs no root cause), and text longer than its limit is refused. Issues not yet in
    the study become items of its current round, assigned to exactly the annotators who labeled
    them in the file. Unknown annotators are an error unless `create_users`, which creates them
    as inactive accounts (they cannot log in until a manager activates them). An annotator's
    name must pass the username rule (`common.names`) as written: a name with a NUL, a control
    or an invisible formatting character, or one not in its normal form, is an error, never
    matched to a user whose name looks the same.
    """
    study_check_open(study_id=study.pk)
    User = get_user_model()
    errors: list[tuple[int, str]] = []
    dimensions = {d.key: d for d in study_dimensions(study=study)}
    categories = categories_by_key(version=study.codebook_version)
    issues = _issues_by_reference({(row.owner, row.name, row.number) for row in rows})
    name_problems = {name: _username_problem(name) for name in {row.annotator for row in rows}}
    # Only names that pass are looked up (PostgreSQL cannot even be sent one with a NUL).
    users = {
        user.username: user
        for user in User.objects.filter(
            username__in=[name for name, problem in name_problems.items() if problem is None]
        )
    }
    seen: dict[tuple[str, str, str], int] = {}
    # What each annotator chose per dimension of each issue in the file: whether a dimension
    # applies depends on the others (`Dimension.applies_given`), as when submitting.
    chosen_in_file: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for row in rows:
        chosen_in_file.setdefault((row.issue_reference, row.annotator), {})[row.dimension] = (
            row.labels
        )
    for row in rows:
        problem = name_problems[row.annotator]
        if problem:
            errors.append((row.line, f"annotator: {problem}"))
        issue = issues.get((row.owner, row.name, row.number))
        if issue is None:
            errors.append((row.line, f"unknown issue {row.issue_reference}"))
        elif issue.is_pull_request:
            errors.append((row.line, f"{row.issue_reference} is a pull request, not an issue"))
        if not problem and row.annotator not in users and not create_users:
            errors.append((row.line, f"unknown annotator {row.annotator!r}"))
        dimension = dimensions.get(row.dimension)
        if dimension is None:
            errors.append((row.line, f"unknown dimension {row.dimension!r}"))
        else:
            unknown = [k for k in row.labels if (dimension.id, k) not in categories]
            if unknown:
                errors.append(
                    (row.line, f"unknown category {', '.join(unknown)} of {row.dimension}")
                )
            if not dimension.multi_label and len(row.labels) > 1:
                errors.append((row.line, f"{row.dimension} takes one category"))
            if (
                dimension.required
                and not dimension.multi_label
                and not row.labels
                and dimension.applies_given(chosen_in_file[(row.issue_reference, row.annotator)])
            ):
                errors.append((row.line, f"{row.dimension} is required and needs a category"))
        length = _text_too_long("rationale", row.rationale)
        if length is not None:
            errors.append(
                (row.line, f"rationale is {length:,} characters; the limit is {MAX_TEXT:,}")
            )
        key = (row.issue_reference, row.annotator, row.dimension)
        if key in seen:
            errors.append((row.line, f"same issue, annotator and dimension as line {seen[key]}"))
        else:
            seen[key] = row.line
    if errors:
        raise ApplicationError(
            f"{len(errors)} problems; nothing was imported.", extra={"errors": errors}
        )

    report = AnnotationImportReport(rows=len(rows))
    for username in sorted({row.annotator for row in rows} - users.keys()):
        users[username] = user_create(username=username, is_active=False)
        report.users_created += 1
    for user in {users[row.annotator] for row in rows}:
        study_member_add(study=study, user=user, role=Membership.Role.ANNOTATOR)
    report.items_added = study_items_add(
        study=study, issue_ids=[issue.id for issue in issues.values()], assign=False
    )
    items = {item.issue_id: item for item in StudyItem.objects.filter(study=study)}
    item_of = {row.line: items[issues[(row.owner, row.name, row.number)].id] for row in rows}
    assignments = _assignments_submit({(item_of[row.line], users[row.annotator]) for row in rows})
    # Every (assignment, dimension) is once in the file (checked above): one read of what
    # exists, one write of all the rows, instead of a few queries per row.
    existing = {
        (annotation.assignment_id, annotation.dimension_id): annotation
        for annotation in Annotation.objects.filter(
            assignment__in=assignments.values()
        ).prefetch_related("categories")
    }
    changes: list[tuple[Assignment, _Change]] = []
    for row in rows:
        assignment = assignments[(item_of[row.line].id, users[row.annotator].pk)]
        dimension = dimensions[row.dimension]
        changes.append(
            (
                assignment,
                _Change(
                    dimension=dimension,
                    annotation=existing.get((assignment.id, dimension.id)),
                    chosen=[categories[(dimension.id, key)] for key in row.labels],
                    answer=DimensionAnswer(
                        category_keys=list(row.labels), unsure=row.unsure, rationale=row.rationale
                    ),
                ),
            )
        )
    _annotations_write_many(
        changes=changes, user=None, assignment_status=Assignment.Status.SUBMITTED, reason="imported"
    )
    report.annotations_written += len(rows)
    items_resolution_update(study=study, item_ids=sorted({item_id for item_id, _ in assignments}))
    return report


def _assignments_submit(
    pairs: set[tuple[StudyItem, AbstractBaseUser]],
) -> dict[tuple[int, int], Assignment]:
    """The assignments of these (item, annotator) pairs, created where missing (selected as
    "imported") and marked submitted, their version raised: (item id, user id) -> assignment,
    in four queries however many pairs."""
    item_ids = {item.id for item, _ in pairs}
    study_of = {item.id: item.study_id for item, _ in pairs}
    user_ids = {user.pk for _, user in pairs}
    wanted = {(item.id, user.pk) for item, user in pairs}

    def found() -> dict[tuple[int, int], Assignment]:
        return {
            (assignment.item_id, assignment.annotator_id): assignment
            for assignment in Assignment.objects.filter(
                item_id__in=item_ids, annotator_id__in=user_ids
            )
            if (assignment.item_id, assignment.annotator_id) in wanted
        }

    created = Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=item_id,
                study_id=study_of[item_id],
                annotator_id=user_id,
                selection_reason="imported",
            )
            for item_id, user_id in sorted(wanted - found().keys())
        ]
    )
    items_holders_recount(item_ids=[assignment.item_id for assignment in created])
    assignments = found()
    Assignment.objects.filter(id__in=[a.id for a in assignments.values()]).update(
        status=Assignment.Status.SUBMITTED,
        submitted_at=Coalesce("submitted_at", Value(timezone.now())),
        version=F("version") + 1,
    )
    return assignments


def _username_problem(name: str) -> str | None:
    """What is wrong with an annotator's name in an import, None when nothing is."""
    try:
        name_check_as_written(name, NameKind.USERNAME)
    except InvalidName as error:
        return str(error)
    return None


def _issues_by_reference(
    references: set[tuple[str, str, int]],
) -> dict[tuple[str, str, int], Issue]:
    if not references:
        return {}
    issues = Issue.objects.select_related("repository").filter(
        repository__owner__in={owner for owner, _, _ in references},
        repository__name__in={name for _, name, _ in references},
        number__in={number for _, _, number in references},
    )
    found = {(i.repository.owner, i.repository.name, i.number): i for i in issues}
    return {key: issue for key, issue in found.items() if key in references}
