"""The dataset as a backup: a study restored from its dataset file (`import_dataset`).

Every row is checked (types, the study and codebook it names, dimension and category keys, no
NUL character) and the whole restore runs in one transaction: any bad row and nothing is stored,
and each problem is reported with its line (JSONL, CSV) or row (Parquet) and field.

What a row restores, through the services that write these rows elsewhere:

* the issue, when the instance does not hold it, from the row's metadata through
  `corpus.services.issues_store` (the parser of `corpus.records` checks it as it checks an
  import file); an issue the instance holds is used as it is;
* the study (from the first row's `study_settings`, under `--study` when given), its rounds and
  its items with their round, status and number of annotators;
* the gold labels, with their method (a revision notes the restore; nobody is named as the
  decider, since the file does not say who was);
* with raw labels, every annotator's submitted labels through `annotations_import`, which
  creates missing annotators as inactive accounts and makes them annotators of the study, and
  the codebook version each submitted under (`raw_codebook_version`; a version of the
  codebook that the instance lacks is refused, a file without versions leaves them unknown).

A dimension marked "not_applicable" (`exports.formats.NOT_APPLICABLE`) gets no gold label, and
an annotator's answer on it is stored empty, as the labeling page clears it on submit; the
marker is refused where the row's own labels make the dimension apply, since it would come
back as "none applies". Files written before the marker say [] (and no method) there, and are
read as they always were.

The codebook version the rows name must be in the instance with the same content hash, or come
from the codebook file given with the rows (its hash must match).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from common.bulk import collector_paused
from common.exceptions import ApplicationError
from common.names import InvalidName, NameKind, name_check, name_check_as_written
from common.services import model_update
from corpus.models import Issue
from corpus.records import IssueRecord, RecordError, issue_record_parse
from corpus.services import issues_store
from exports.dataset import dimensions_not_applicable
from exports.formats import NOT_APPLICABLE, RAW_VERSION
from labeling.annotation_import import AnnotationRow
from labeling.models import (
    Assignment,
    Membership,
    Resolution,
    Round,
    Study,
    StudyEvent,
    StudyItem,
)
from labeling.selectors import study_dimensions
from labeling.services.annotations import annotations_import
from labeling.services.lifecycle import study_event_record
from labeling.services.resolutions import resolutions_create
from labeling.services.studies import round_save, study_create, study_member_add
from taxonomy.codebook_file import CodebookFileError, codebook_parse
from taxonomy.models import Category, CodebookVersion, Dimension
from taxonomy.services import codebook_load

BATCH_ROWS = 1_000
MAX_ERRORS = 50
RESTORED_NOTE = "restored from a dataset export"
SLUG_MAX_LENGTH = 100
ROUND_NAME_MAX_LENGTH = 100
SMALLINT_MAX = 32_767


class DatasetRestoreError(ApplicationError):
    """Rows that cannot be restored; `errors` lists (line or row, message naming the field)."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        shown = errors[:MAX_ERRORS]
        more = f" (the first {MAX_ERRORS} shown)" if len(errors) > MAX_ERRORS else ""
        super().__init__(f"{len(errors)} problems{more}; nothing was restored.", {"errors": shown})
        self.errors = shown


class _RowError(ValueError):
    """A problem of one row; the message starts with the field."""


@dataclass
class RestoreReport:
    study: str = ""
    rows: int = 0
    issues_created: int = 0
    resolutions: int = 0
    annotations: int = 0
    users_created: int = 0

    def summary(self) -> str:
        return (
            f"Restored the study {self.study}: {self.rows} items ({self.issues_created} issues "
            f"created), {self.resolutions} gold labels, {self.annotations} annotations; "
            f"{self.users_created} inactive accounts created."
        )


@dataclass
class _Row:
    place: int
    record: IssueRecord
    round_name: str
    round_kind: str
    status: str | None
    annotators_needed: int | None
    gold: dict[str, tuple[str, list[str]]]  # dimension key -> (method, category keys)
    raw: dict[str, dict[str, list[str]]]  # dimension key -> annotator -> category keys
    versions: dict[str, int]  # annotator -> id of the codebook version they submitted under

    @property
    def reference(self) -> tuple[str, str, int]:
        return (self.record.owner, self.record.name, self.record.number)


@dataclass
class _Target:
    """The study being restored and what the rows are checked against."""

    study: Study
    slug_in_file: str
    codebook: dict[str, str]
    dimensions: dict[str, Dimension]
    categories: dict[tuple[int, str], Category]
    rounds: dict[str, Round]
    versions: dict[str, int]  # label -> id of the codebook's versions in this instance
    status: str  # the study's status in the file, set once every row is stored
    seen: dict[tuple[str, str, int], int] = field(default_factory=dict)  # issue -> its place


def dataset_restore(
    *,
    rows: Iterable[tuple[int, dict[str, Any] | Exception]],
    study_slug: str | None = None,
    codebook_data: dict[str, Any] | None = None,
    managers: Sequence[AbstractBaseUser] = (),
    batch_rows: int = BATCH_ROWS,
    by: AbstractBaseUser | None = None,
    source: str = "",
) -> RestoreReport:
    """Restore the study of a dataset file: `rows` are (line or row number, row or the error
    that reading it gave), as `exports.formats` readers yield them. `study_slug` renames the
    study; `codebook_data` is a codebook file's content for a version the instance lacks;
    `managers` become the study's managers. Raises DatasetRestoreError, and stores nothing,
    when any row is wrong. The restore is the first act of the study's activity log, by `by`
    (None: the operator) from `source` (the file's name)."""
    with collector_paused(), transaction.atomic():
        report = _restore(rows, study_slug, codebook_data, managers, batch_rows)
        study_event_record(
            study=Study.objects.get(slug=report.study),
            actor=by,
            action=StudyEvent.Action.RESTORED,
            details={
                "file": source,
                "study_items": report.rows,
                "issues_created": report.issues_created,
                "gold_labels": report.resolutions,
                "annotations": report.annotations,
                "accounts_created": report.users_created,
            },
        )
        return report


def _restore(
    rows: Iterable[tuple[int, dict[str, Any] | Exception]],
    study_slug: str | None,
    codebook_data: dict[str, Any] | None,
    managers: Sequence[AbstractBaseUser],
    batch_rows: int,
) -> RestoreReport:
    report = RestoreReport()
    errors: list[tuple[int, str]] = []
    target: _Target | None = None
    batch: list[_Row] = []
    for place, obj in rows:
        if isinstance(obj, Exception):
            errors.append((place, str(obj)))
        else:
            try:
                _check_no_nul(obj)
                if target is None:
                    target = _target_open(obj, study_slug, codebook_data, managers)
                    report.study = target.study.slug
                batch.append(_row_parse(obj, place, target))
            except _RowError as error:
                errors.append((place, str(error)))
            if target is None and errors:
                break  # without the study nothing else can be checked
        if len(errors) > MAX_ERRORS:
            break
        if errors:
            batch = []  # nothing more is stored; the rest is only checked
        elif len(batch) >= batch_rows:
            _batch_store(batch, target, report, errors)
            batch = []
    if batch and not errors:
        _batch_store(batch, target, report, errors)
    if not errors and target is None:
        errors.append((0, "the file holds no rows"))
    if errors:
        raise DatasetRestoreError(errors)
    if target.status != Study.Status.ACTIVE:
        model_update(instance=target.study, fields=["status"], data={"status": target.status})
    return report


# --------------------------------------------------------------------------- the study


def _target_open(
    obj: dict[str, Any],
    study_slug: str | None,
    codebook_data: dict[str, Any] | None,
    managers: Sequence[AbstractBaseUser],
) -> _Target:
    """The codebook version and the new study, from the first row."""
    codebook = obj.get("codebook")
    if not isinstance(codebook, dict) or not all(
        isinstance(codebook.get(key), str) for key in ("name", "version", "hash")
    ):
        raise _RowError("codebook: must be an object with name, version and hash")
    version = _codebook_version(codebook, codebook_data)
    slug_in_file = obj.get("study")
    if not isinstance(slug_in_file, str) or not slug_in_file:
        raise _RowError("study: must be the study's slug")
    slug = study_slug or slug_in_file
    try:
        validate_slug(slug)
    except ValidationError:
        raise _RowError(f"study: {slug!r} is not a slug (letters, digits, - and _)") from None
    if len(slug) > SLUG_MAX_LENGTH:
        raise _RowError(f"study: a slug has at most {SLUG_MAX_LENGTH} characters")
    if Study.objects.filter(slug=slug).exists():
        raise _RowError(
            f"study: a study {slug!r} exists already; restore it under another slug (--study)"
        )
    settings = _study_settings(obj.get("study_settings"), slug)
    rounds = settings["rounds"] or [_round_of(obj)]
    sampling = obj.get("sampling")
    if sampling is not None and not isinstance(sampling, dict):
        raise _RowError("sampling: must be an object")
    try:
        study = study_create(
            slug=slug,
            name=settings["name"],
            codebook_version=version,
            k=settings["k"],
            blind=settings["blind"],
            resolution_rule=settings["resolution_rule"],
            required_dimensions=settings["required_dimensions"],
            sampling=sampling or {},
            round_name=rounds[0]["name"],
            round_kind=rounds[0]["kind"],
        )
        restored_rounds = [study.rounds.get()]
        for spec in rounds[1:]:
            restored_rounds.append(round_save(study=study, name=spec["name"], kind=spec["kind"]))
        required = {d.key for d in study_dimensions(study=study) if d.required}
        for round_, spec in zip(restored_rounds, rounds, strict=True):
            if spec["target_kappa"] is not None:
                round_save(
                    study=study,
                    name=round_.name,
                    kind=round_.kind,
                    target_kappa=spec["target_kappa"],
                    round=round_,
                )
            unknown = sorted(set(spec["dimension_targets"]) - required)
            if unknown:
                raise _RowError(
                    f"study_settings.rounds: {round_.name} has targets for {', '.join(unknown)}, "
                    "which are not required dimensions of the study"
                )
            if spec["dimension_targets"]:
                round_.dimension_targets = spec["dimension_targets"]
                round_.save(update_fields=["dimension_targets"])
        # The study stays open while its rows are stored (a closed study takes no labels);
        # `_restore` closes it at the end when the file says it was closed.
        model_update(
            instance=study,
            fields=["description", "overlap", "preassign"],
            data={key: settings[key] for key in ("description", "overlap", "preassign")},
        )
    except (ApplicationError, ValidationError) as error:
        message = (
            error.message if isinstance(error, ApplicationError) else "; ".join(error.messages)
        )
        raise _RowError(f"study_settings: {message}") from None
    for user in managers:
        study_member_add(study=study, user=user, role=Membership.Role.MANAGER)
    dimensions = {dimension.key: dimension for dimension in study_dimensions(study=study)}
    return _Target(
        study=study,
        status=settings["status"],
        slug_in_file=slug_in_file,
        codebook=codebook,
        dimensions=dimensions,
        categories={
            (category.dimension_id, category.key): category
            for category in Category.objects.filter(dimension__version=version)
        },
        rounds={round_.name: round_ for round_ in restored_rounds},
        versions=dict(
            CodebookVersion.objects.filter(codebook_id=version.codebook_id).values_list(
                "label", "id"
            )
        ),
    )


def _codebook_version(
    codebook: dict[str, str], codebook_data: dict[str, Any] | None
) -> CodebookVersion:
    named = f"{codebook['name']} {codebook['version']}"
    if codebook_data is not None:
        try:
            spec = codebook_parse(codebook_data)
        except CodebookFileError as error:
            raise _RowError(f"codebook: the codebook file is not valid: {error}") from None
        if (spec.name, spec.version, spec.content_hash) != (
            codebook["name"], codebook["version"], codebook["hash"],
        ):  # fmt: skip
            raise _RowError(
                f"codebook: the codebook file is {spec.name} {spec.version} with content hash "
                f"{spec.content_hash}; the dataset was labeled with {named}, hash "
                f"{codebook['hash']}"
            )
    version = (
        CodebookVersion.objects.select_related("codebook")
        .filter(codebook__name=codebook["name"], label=codebook["version"])
        .first()
    )
    if version is not None:
        if version.content_hash != codebook["hash"]:
            raise _RowError(
                f"codebook: this instance's {named} has content hash {version.content_hash}, "
                f"not the dataset's {codebook['hash']}: it is another codebook under that name"
            )
        return version
    if codebook_data is None:
        raise _RowError(
            f"codebook: {named} is not in this instance; give its file with --codebook "
            "(export_codebook writes it)"
        )
    try:
        version, _ = codebook_load(data=codebook_data, publish=True)
    except ApplicationError as error:
        raise _RowError(f"codebook: {error.message}") from None
    return version


def _study_settings(settings: Any, slug: str) -> dict[str, Any]:
    """The study's settings of the first row, checked, with defaults for a file without them."""
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise _RowError("study_settings: must be an object")
    checked = {
        "name": _typed(settings, "name", str, slug),
        "description": _typed(settings, "description", str, ""),
        "k": _typed(settings, "k", int, 2),
        "blind": _typed(settings, "blind", bool, True),
        "overlap": _typed(settings, "overlap", float, 1.0),
        "preassign": _typed(settings, "preassign", bool, False),
        "resolution_rule": _typed(
            settings, "resolution_rule", str, Study.ResolutionRule.ADJUDICATION
        ),
        "status": _typed(settings, "status", str, Study.Status.ACTIVE),
        "required_dimensions": settings.get("required_dimensions"),
    }
    try:
        checked["name"] = name_check(checked["name"], NameKind.STUDY_NAME)
    except InvalidName as error:
        raise _RowError(f"study_settings.name: {error}") from None
    if not 1 <= checked["k"] <= SMALLINT_MAX:
        raise _RowError("study_settings.k: must be at least 1")
    if checked["status"] not in Study.Status.values:
        raise _RowError(f"study_settings.status: one of {', '.join(Study.Status.values)}")
    required = checked["required_dimensions"]
    if required is not None and not _strings(required):
        raise _RowError("study_settings.required_dimensions: must be a list of dimension keys")
    rounds = settings.get("rounds") or []
    if not isinstance(rounds, list):
        raise _RowError("study_settings.rounds: must be a list")
    checked["rounds"] = [
        _round_spec(spec, f"study_settings.rounds[{index}]") for index, spec in enumerate(rounds)
    ]
    names = [spec["name"] for spec in checked["rounds"]]
    if len(set(names)) != len(names):
        raise _RowError("study_settings.rounds: two rounds have one name")
    return checked


_KIND_NAMES = {str: "string", int: "whole number", float: "number", bool: "true or false"}


def _typed(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    """obj[key] when it is of the kind (an int is a float too), the default when absent."""
    value = obj.get(key)
    if value is None:
        return default
    kinds = (int, float) if kind is float else kind
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kinds):
        raise _RowError(f"study_settings.{key}: must be a {_KIND_NAMES[kind]}")
    return float(value) if kind is float else value


def _round_spec(spec: Any, place: str) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise _RowError(f"{place}: must be an object")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > ROUND_NAME_MAX_LENGTH:
        raise _RowError(f"{place}.name: a name of 1 to {ROUND_NAME_MAX_LENGTH} characters")
    kind = spec.get("kind") or Round.Kind.MAIN
    if kind not in Round.Kind.values:
        raise _RowError(f"{place}.kind: one of {', '.join(Round.Kind.values)}")
    target = spec.get("target_kappa")
    if target is not None and (isinstance(target, bool) or not isinstance(target, int | float)):
        raise _RowError(f"{place}.target_kappa: must be a number or null")
    # Absent from files written before rounds carried them.
    own = spec.get("dimension_targets") or {}
    if not isinstance(own, dict) or not all(
        isinstance(key, str) and _is_kappa(value) for key, value in own.items()
    ):
        raise _RowError(
            f"{place}.dimension_targets: must map dimension keys to numbers between -1 and 1"
        )
    return {"name": name.strip(), "kind": kind, "target_kappa": target, "dimension_targets": own}


def _is_kappa(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and -1 <= value <= 1


def _round_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {**_round_spec(obj.get("round"), "round"), "target_kappa": None, "dimension_targets": {}}


# --------------------------------------------------------------------------- rows


def _row_parse(obj: dict[str, Any], place: int, target: _Target) -> _Row:
    if obj.get("study") != target.slug_in_file:
        raise _RowError(
            f"study: {obj.get('study')!r}, while the file's first row is of {target.slug_in_file!r}"
        )
    if obj.get("codebook") != target.codebook:
        raise _RowError("codebook: differs from the file's first row")
    record = _issue_record(obj)
    reference = (record.owner, record.name, record.number)
    if reference in target.seen:
        raise _RowError(
            f"issue: {_reference(reference)} is the issue of line {target.seen[reference]} too"
        )
    target.seen[reference] = place
    round_ = _round_of(obj)
    status = obj.get("item_status")
    if status is not None and status not in StudyItem.Status.values:
        raise _RowError(f"item_status: one of {', '.join(StudyItem.Status.values)}")
    needed = obj.get("annotators_needed")
    if needed is not None and (
        isinstance(needed, bool) or not isinstance(needed, int) or not 1 <= needed <= SMALLINT_MAX
    ):
        raise _RowError("annotators_needed: must be a whole number from 1")
    return _Row(
        place=place,
        record=record,
        round_name=round_["name"],
        round_kind=round_["kind"],
        status=status,
        annotators_needed=needed,
        gold=_gold(obj.get("labels"), target),
        raw=_raw(obj.get("raw"), target),
        versions=_versions(obj.get(RAW_VERSION), target),
    )


def _issue_record(obj: dict[str, Any]) -> IssueRecord:
    """The row's issue as the corpus parser reads a GitHub issue object, so that a restored
    issue passes the checks an imported one does."""
    reference = obj.get("issue")
    if not isinstance(reference, str):
        raise _RowError("issue: must be 'owner/name#number'")
    full_name, _, number_text = reference.rpartition("#")
    if not number_text.isascii() or not number_text.isdigit():
        raise _RowError(f"issue: must be 'owner/name#number', not {reference[:120]!r}")
    number = int(number_text)
    if obj.get("number", number) != number:
        raise _RowError(f"number: {obj.get('number')!r} is not the number of {reference}")
    if obj.get("repository", full_name) != full_name:
        raise _RowError(f"repository: {obj.get('repository')!r} is not that of {reference}")
    author = obj.get("author")
    if author is not None and not isinstance(author, str):
        raise _RowError("author: must be a string")
    try:
        return issue_record_parse(
            {
                "repository": full_name,
                "number": number,
                "title": obj.get("title"),
                "state": obj.get("state"),
                "user": {"login": author} if author else None,
                "labels": obj.get("github_labels"),
                "created_at": obj.get("created_at"),
                "updated_at": obj.get("updated_at"),
                "closed_at": obj.get("closed_at"),
                "linked_fixes": obj.get("linked_fixes"),
            }
        )
    except RecordError as error:
        # The parser names GitHub's fields; the dataset's differ for the user and the labels.
        message = str(error).replace("user.login", "author")
        raise _RowError(message.replace("labels", "github_labels", 1)) from None


def _category_keys(value: Any, place: str, dimension: Dimension, target: _Target) -> list[str]:
    if not _strings(value):
        raise _RowError(f"{place}: must be a list of category keys")
    unknown = [key for key in value if (dimension.id, key) not in target.categories]
    if unknown:
        raise _RowError(f"{place}: {', '.join(unknown)} is not a category of {dimension.key}")
    keys = list(dict.fromkeys(value))
    if not dimension.multi_label and len(keys) > 1:
        raise _RowError(f"{place}: {dimension.key} takes one category, not {len(keys)}")
    return keys


def _dimension(key: Any, place: str, target: _Target) -> Dimension:
    dimension = target.dimensions.get(key) if isinstance(key, str) else None
    if dimension is None:
        raise _RowError(
            f"{place}.{key}: not a dimension of {target.codebook['name']} "
            f"{target.codebook['version']}"
        )
    return dimension


def _gold(labels: Any, target: _Target) -> dict[str, tuple[str, list[str]]]:
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        raise _RowError("labels: must be an object of dimensions")
    gold: dict[str, tuple[str, list[str]]] = {}
    marked: list[str] = []
    for key, entry in labels.items():
        dimension = _dimension(key, "labels", target)
        if not isinstance(entry, dict):
            raise _RowError(f"labels.{key}: must be an object with gold and method")
        method = entry.get("method")
        if entry.get("gold") == NOT_APPLICABLE:
            if method is not None:
                raise _RowError(f"labels.{key}.method: must be null where gold is {NOT_APPLICABLE}")
            marked.append(key)
            continue
        keys = _category_keys(entry.get("gold") or [], f"labels.{key}.gold", dimension, target)
        if method is None:
            if keys:
                raise _RowError(f"labels.{key}.method: is null, yet gold names categories")
            continue
        if method not in Resolution.Method.values:
            raise _RowError(
                f"labels.{key}.method: one of {', '.join(Resolution.Method.values)} or null, "
                f"not {method!r}"
            )
        gold[key] = (method, keys)
    _check_ruled_out(
        marked, {key: keys for key, (_, keys) in gold.items()}, "labels.{key}.gold", target
    )
    return gold


def _raw(raw: Any, target: _Target) -> dict[str, dict[str, list[str]]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _RowError("raw: must be an object of dimensions")
    answers: dict[str, dict[str, list[str]]] = {}
    marked: dict[str, list[str]] = {}  # annotator -> the dimensions marked for them
    for key, by_annotator in raw.items():
        dimension = _dimension(key, "raw", target)
        if not isinstance(by_annotator, dict):
            raise _RowError(f"raw.{key}: must be an object of annotators")
        for annotator, keys in by_annotator.items():
            _check_username(annotator, f"raw.{key}")
            if keys == NOT_APPLICABLE:
                marked.setdefault(annotator, []).append(key)
                answers.setdefault(key, {})[annotator] = []
                continue
            answers.setdefault(key, {})[annotator] = _category_keys(
                keys, f"raw.{key}.{annotator}", dimension, target
            )
    for annotator, keys in marked.items():
        own = {
            key: by_annotator[annotator]
            for key, by_annotator in answers.items()
            if annotator in by_annotator and key not in keys
        }
        _check_ruled_out(keys, own, f"raw.{{key}}.{annotator}", target)
    return answers


def _check_ruled_out(
    marked: list[str], chosen: dict[str, list[str]], place: str, target: _Target
) -> None:
    """The dimensions marked NOT_APPLICABLE must be ruled out by the labels `chosen` on the
    others (as the export decides it): a marker on a dimension that applies would be stored as
    an empty answer and come back as "none applies". `place` has a {key} to fill in."""
    if not marked:
        return
    ruled_out = dimensions_not_applicable(list(target.dimensions.values()), chosen)
    for key in marked:
        if key in ruled_out:
            continue
        conditions = target.dimensions[key].applies_when
        given = "; ".join(
            f"{other} {', '.join(chosen[other]) or 'none'}"
            if other in chosen
            else f"{other} unlabeled"
            for other in conditions
        )
        reason = f"applies given {given}" if conditions else "applies to every item"
        raise _RowError(f"{place.format(key=key)}: {NOT_APPLICABLE}, yet {key} {reason}")


def _versions(versions: Any, target: _Target) -> dict[str, int]:
    """annotator -> the id of the codebook version they submitted under; null: not known."""
    if versions is None:
        return {}
    if not isinstance(versions, dict):
        raise _RowError(f"{RAW_VERSION}: must be an object of annotators")
    found: dict[str, int] = {}
    for annotator, label in versions.items():
        _check_username(annotator, RAW_VERSION)
        if label is None:
            continue
        place = f"{RAW_VERSION}.{annotator}"
        if not isinstance(label, str):
            raise _RowError(f"{place}: must be the label of a codebook version, or null")
        version_id = target.versions.get(label)
        if version_id is None:
            raise _RowError(
                f"{place}: {label[:100]} is not a version of {target.codebook['name']} in this "
                "instance; load that version first (load_codebook)"
            )
        found[annotator] = version_id
    return found


def _check_username(name: str, place: str) -> None:
    """An annotator's name passes the username rule (`common.names`) exactly as written: a
    name that is refused when people are created is refused here, with its row, rather than
    failing later, and one that is not in its normal form would restore another name."""
    try:
        name_check_as_written(name, NameKind.USERNAME)
    except InvalidName as error:
        raise _RowError(f"{place}: {error}") from None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _check_no_nul(value: Any, place: str = "") -> None:
    """No NUL anywhere: PostgreSQL cannot store it, and a backup must not change silently."""
    if isinstance(value, str):
        if "\x00" in value:
            raise _RowError(f"{place or 'row'}: holds a NUL character")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_no_nul(key, place)
            _check_no_nul(item, f"{place}.{key}" if place else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_no_nul(item, f"{place}[{index}]")


def _reference(reference: tuple[str, str, int]) -> str:
    return f"{reference[0]}/{reference[1]}#{reference[2]}"


# --------------------------------------------------------------------------- storing


def _batch_store(
    batch: list[_Row], target: _Target, report: RestoreReport, errors: list[tuple[int, str]]
) -> None:
    """Store a batch of checked rows: issues, items, gold labels, raw labels. Problems the
    database or the annotation import find are added to `errors` (the caller rolls back)."""
    issue_ids = _issue_ids(batch, report, errors)
    if errors:
        return
    study = target.study
    for row in batch:
        if row.round_name not in target.rounds:
            target.rounds[row.round_name] = round_save(
                study=study, name=row.round_name, kind=row.round_kind
            )
    items = StudyItem.objects.bulk_create(
        [
            StudyItem(
                study=study,
                issue_id=issue_ids[row.reference],
                round=target.rounds[row.round_name],
                status=row.status or StudyItem.Status.OPEN,
                annotators_needed=row.annotators_needed or study.k,
            )
            for row in batch
        ]
    )
    item_ids = {row.reference: item.pk for row, item in zip(batch, items, strict=True)}
    report.rows += len(batch)
    report.resolutions += _resolutions_store(batch, item_ids, target)
    annotation_rows = [
        AnnotationRow(
            line=row.place,
            owner=row.record.owner,
            name=row.record.name,
            number=row.record.number,
            annotator=annotator,
            dimension=key,
            labels=tuple(keys),
        )
        for row in batch
        for key, by_annotator in row.raw.items()
        for annotator, keys in by_annotator.items()
    ]
    if annotation_rows:
        try:
            imported = annotations_import(study=study, rows=annotation_rows, create_users=True)
        except ApplicationError as error:
            errors.extend(error.extra.get("errors") or [(batch[0].place, error.message)])
            return
        report.annotations += imported.annotations_written
        report.users_created += imported.users_created
        _versions_store(batch, item_ids)
    # The import brings each item's status up to date with its labels; the file says what it
    # was, which is what a backup keeps (an item resolved by hand stays so).
    by_status: dict[str, list[int]] = {}
    for row in batch:
        if row.status is not None:
            by_status.setdefault(row.status, []).append(item_ids[row.reference])
    for status, ids in by_status.items():
        StudyItem.objects.filter(id__in=ids).exclude(status=status).update(status=status)


def _versions_store(batch: list[_Row], item_ids: dict[tuple[str, str, int], int]) -> None:
    """Set on the restored assignments the codebook version each annotator submitted under,
    which the annotation import does not know: two queries and one UPDATE a version."""
    wanted = {
        (item_ids[row.reference], annotator): version_id
        for row in batch
        for annotator, version_id in row.versions.items()
    }
    if not wanted:
        return
    user_ids = dict(
        get_user_model()
        .objects.filter(username__in={annotator for _, annotator in wanted})
        .values_list("username", "id")
    )
    by_assignment = {
        (item_id, user_ids[annotator]): version_id
        for (item_id, annotator), version_id in wanted.items()
        if annotator in user_ids  # no labels of theirs in the file: no assignment either
    }
    by_version: dict[int, list[int]] = {}
    for assignment_id, item_id, annotator_id in Assignment.objects.filter(
        item_id__in={item_id for item_id, _ in by_assignment},
        annotator_id__in={annotator_id for _, annotator_id in by_assignment},
    ).values_list("id", "item_id", "annotator_id"):
        version_id = by_assignment.get((item_id, annotator_id))
        if version_id is not None:
            by_version.setdefault(version_id, []).append(assignment_id)
    for version_id, assignment_ids in by_version.items():
        Assignment.objects.filter(id__in=assignment_ids).update(codebook_version_id=version_id)


def _issue_ids(
    batch: list[_Row], report: RestoreReport, errors: list[tuple[int, str]]
) -> dict[tuple[str, str, int], int]:
    """The ids of the rows' issues, creating those the instance lacks."""
    wanted = {row.reference for row in batch}
    found = _issues_stored(wanted)
    missing = [(row.place, row.record) for row in batch if row.reference not in found]
    if missing:
        stored = issues_store(records=missing)
        errors.extend(stored.errors)
        report.issues_created += stored.created
        found.update(_issues_stored({(r.owner, r.name, r.number) for _, r in missing}))
    for row in batch:
        entry = found.get(row.reference)
        if entry is None:
            if not any(place == row.place for place, _ in errors):
                errors.append((row.place, f"issue: {_reference(row.reference)} was not stored"))
        elif entry[1]:
            errors.append((row.place, f"issue: {_reference(row.reference)} is a pull request"))
    return {reference: issue_id for reference, (issue_id, _) in found.items()}


def _issues_stored(
    references: set[tuple[str, str, int]],
) -> dict[tuple[str, str, int], tuple[int, bool]]:
    """(owner, name, number) -> (issue id, is a pull request) of those the corpus holds."""
    if not references:
        return {}
    rows = Issue.objects.filter(
        repository__owner__in={owner for owner, _, _ in references},
        repository__name__in={name for _, name, _ in references},
        number__in={number for _, _, number in references},
    ).values_list("id", "repository__owner", "repository__name", "number", "is_pull_request")
    return {
        (owner, name, number): (issue_id, is_pull_request)
        for issue_id, owner, name, number, is_pull_request in rows
        if (owner, name, number) in references
    }


def _resolutions_store(
    batch: list[_Row], item_ids: dict[tuple[str, str, int], int], target: _Target
) -> int:
    """The rows' gold labels, each with its first revision, in four queries."""
    created = [
        (
            Resolution(
                item_id=item_ids[row.reference],
                dimension=target.dimensions[key],
                method=method,
                note=RESTORED_NOTE,
                version=1,
            ),
            keys,
            [target.categories[(target.dimensions[key].id, category)].pk for category in keys],
        )
        for row in batch
        for key, (method, keys) in row.gold.items()
    ]
    resolutions_create(created)
    return len(created)


def restore_managers(usernames: Sequence[str]) -> list[AbstractBaseUser]:
    """The users named to manage the restored study; ApplicationError for an unknown one."""
    users = {
        user.get_username(): user
        for user in get_user_model().objects.filter(username__in=set(usernames))
    }
    unknown = [name for name in usernames if name not in users]
    if unknown:
        raise ApplicationError(f"No user {', '.join(unknown)}: create them first.")
    return [users[name] for name in usernames]
