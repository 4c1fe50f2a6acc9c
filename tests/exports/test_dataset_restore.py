"""The dataset as a backup: export a resolved study in each format, restore it (under a new slug,
or into an instance emptied of the study, its corpus, its annotators and its codebook) and find
the same gold labels, raw labels and agreement figures. Bad files are refused whole."""

import io
from pathlib import Path

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from corpus.models import Issue, LinkedFix, Repository
from exports.dataset import dataset_rows, dataset_shape
from exports.formats import FORMATS, NOT_APPLICABLE, jsonl_read
from exports.restore import DatasetRestoreError, dataset_restore
from labeling.agreement_report import study_agreement_report
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Resolution,
    ResolutionRevision,
    Study,
    StudyEvent,
    StudyItem,
)
from taxonomy.models import Codebook
from tests.conftest import CODEBOOK_FILE
from tests.exports.dataset_study import resolved_study_make


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


def dataset(study: Study, *, raw: bool = True, pseudonymise: bool = False) -> list[dict]:
    """The study's rows, without the slug (a restore may rename it)."""
    shape = dataset_shape(study=study, raw=raw, pseudonymise=pseudonymise)
    return [{**row, "study": None} for row in dataset_rows(shape=shape)]


def agreement(study: Study) -> dict:
    report = study_agreement_report(study=study)
    return {**report, "study": None}


def export(study: Study, path: Path, *extra: str) -> Path:
    call_command("export_dataset", "--study", study.slug, "--output", str(path), *extra)
    return path


def stored_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Study, StudyItem, Assignment, Annotation, Resolution, ResolutionRevision, Issue,
            Repository, LinkedFix, Codebook, get_user_model(),
        )
    }  # fmt: skip


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_restore_under_a_new_slug_gives_the_same_dataset_and_agreement(
    resolved_study, file_format, tmp_path
):
    path = export(resolved_study, tmp_path / f"dataset.{file_format}", "--raw")
    issues_before = Issue.objects.count()

    call_command("import_dataset", str(path), "--study", "restored")

    restored = Study.objects.get(slug="restored")
    assert dataset(restored) == dataset(resolved_study)
    assert agreement(restored) == agreement(resolved_study)
    assert Issue.objects.count() == issues_before  # the instance's issues are used as they are
    rounds = [
        [(r.name, r.kind, r.position, r.target_kappa, r.dimension_targets) for r in s.rounds.all()]
        for s in (restored, resolved_study)
    ]
    assert rounds[0] == rounds[1]
    assert rounds[0][0][4] == {"screening": 0.8}
    # The restore is the restored study's first act in its activity log, by the operator.
    event = StudyEvent.objects.get(study=restored)
    assert (event.action, event.actor, event.details["file"]) == ("restored", None, path.name)
    assert event.details["study_items"] == restored.items.count()
    assert (restored.k, restored.resolution_rule, restored.required_dimensions) == (
        resolved_study.k,
        resolved_study.resolution_rule,
        resolved_study.required_dimensions,
    )
    assert restored.sampling == resolved_study.sampling
    # Every restored gold label and annotation has its history, which names the restore.
    assert ResolutionRevision.objects.filter(resolution__item__study=restored).count() == (
        Resolution.objects.filter(item__study=restored).count()
    )
    assert not AnnotationRevision.objects.filter(
        annotation__assignment__item__study=restored
    ).exclude(reason="imported")


def test_a_fresh_instance_restored_from_the_dataset_reports_the_same_numbers(
    resolved_study, tmp_path
):
    path = export(resolved_study, tmp_path / "dataset.jsonl", "--raw")
    rows_before, agreement_before = dataset(resolved_study), agreement(resolved_study)
    annotators = sorted(
        {name for row in rows_before for answers in row["raw"].values() for name in answers}
    )
    # Empty the instance of everything the dataset holds.
    StudyItem.objects.filter(study=resolved_study).delete()  # items protect their rounds
    resolved_study.delete()
    Issue.objects.all().delete()
    Repository.objects.all().delete()
    Codebook.objects.all().delete()
    get_user_model().objects.filter(username__in=annotators).delete()

    with pytest.raises(CommandError, match="give its file with --codebook"):
        call_command("import_dataset", str(path))
    call_command(
        "import_dataset", str(path), "--codebook", str(CODEBOOK_FILE), "--manager", "manager"
    )

    restored = Study.objects.get(slug="export-me")
    assert dataset(restored) == rows_before
    assert agreement(restored) == agreement_before
    restored_users = get_user_model().objects.filter(username__in=annotators)
    assert len(restored_users) == len(annotators)
    assert not any(user.is_active or user.has_usable_password() for user in restored_users)
    assert restored.memberships.filter(role="manager", user__username="manager").exists()


def test_a_pseudonymised_dataset_restores_the_same_agreement_under_the_pseudonyms(
    resolved_study, tmp_path
):
    path = export(resolved_study, tmp_path / "dataset.parquet", "--raw", "--pseudonymise")

    call_command("import_dataset", str(path), "--study", "pseudonymous")

    restored = Study.objects.get(slug="pseudonymous")
    assert dataset(restored) == dataset(resolved_study, pseudonymise=True)
    before, after = agreement(resolved_study), agreement(restored)
    for key, dimension in before["dimensions"].items():
        figures = ("n_items", "percent_agreement", "fleiss_kappa", "krippendorff_alpha")
        assert {f: dimension[f] for f in figures} == {
            f: after["dimensions"][key][f] for f in figures
        }
        assert dimension["cohen_kappa"]["mean"] == after["dimensions"][key]["cohen_kappa"]["mean"]
        assert dimension["per_category"] == after["dimensions"][key]["per_category"]


def test_a_dataset_without_raw_labels_restores_the_gold_labels(resolved_study, tmp_path):
    path = export(resolved_study, tmp_path / "dataset.csv")

    call_command("import_dataset", str(path), "--study", "gold-only")

    restored = Study.objects.get(slug="gold-only")
    assert dataset(restored, raw=False) == dataset(resolved_study, raw=False)
    assert not Assignment.objects.filter(item__study=restored).exists()


# --------------------------------------------------------------------------- refused files


def jsonl_rows(study: Study) -> list[dict]:
    buffer = io.BytesIO()
    shape = dataset_shape(study=study, raw=True)
    for row in dataset_rows(shape=shape):
        buffer.write(orjson.dumps(row, option=orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE))
    return [row for _, row in jsonl_read(io.BytesIO(buffer.getvalue()))]


def write_jsonl(path: Path, rows: list, *, raw_lines: dict[int, bytes] | None = None) -> Path:
    lines = [orjson.dumps(row) + b"\n" for row in rows]
    for index, line in (raw_lines or {}).items():
        lines[index] = line
    path.write_bytes(b"".join(lines))
    return path


def breaking(change):
    """A change to the third row of the file."""

    def apply(rows: list[dict]) -> list[dict]:
        rows = [orjson.loads(orjson.dumps(row)) for row in rows]
        change(rows[2])
        return rows

    return apply


BAD_ROWS = {
    "unknown dimension": (
        breaking(lambda row: row["labels"].update(no_such_dimension={"gold": [], "method": None})),
        "line 3: labels.no_such_dimension: not a dimension",
    ),
    "unknown gold category": (
        breaking(lambda row: row["labels"]["root_cause"].update(gold=["no_such_cause"])),
        "line 3: labels.root_cause.gold: no_such_cause is not a category of root_cause",
    ),
    "unknown raw category": (
        breaking(lambda row: row["raw"]["symptom"].update(annotator1=["sneezing"])),
        "line 3: raw.symptom.annotator1: sneezing is not a category of symptom",
    ),
    "unknown method": (
        breaking(lambda row: row["labels"]["symptom"].update(method="coin_toss")),
        "line 3: labels.symptom.method: one of",
    ),
    "a number of the wrong type": (
        breaking(lambda row: row.update(number="eighty")),
        "line 3: number: 'eighty' is not the number of",
    ),
    "a title of the wrong type": (
        breaking(lambda row: row.update(title=42)),
        "line 3: title must be a string",
    ),
    "a time without a zone": (
        breaking(lambda row: row.update(created_at="2024-01-01T00:00:00")),
        "line 3: created_at has no time zone",
    ),
    "a NUL character": (
        breaking(lambda row: row.update(title="a\x00b")),
        "line 3: title: holds a NUL character",
    ),
    "a second study in one file": (
        breaking(lambda row: row.update(study="another")),
        "line 3: study: 'another', while the file's first row is of 'export-me'",
    ),
    "the same issue twice": (
        breaking(lambda row: row.update(issue="NVIDIA/Megatron-LM#80", number=80)),
        "line 3: issue: NVIDIA/Megatron-LM#80 is the issue of line 1 too",
    ),
    "two categories on a single-label dimension": (
        breaking(lambda row: row["labels"]["root_cause"].update(gold=["api_misuse", "type_error"])),
        "line 3: labels.root_cause.gold: root_cause takes one category, not 2",
    ),
    "not applicable where the gold labels make it apply": (
        breaking(
            lambda row: row["labels"]["root_cause"].update(
                gold=NOT_APPLICABLE, gold_parent=NOT_APPLICABLE, method=None
            )
        ),
        "line 3: labels.root_cause.gold: not_applicable, yet root_cause applies given screening",
    ),
    "not applicable where the annotator's answers make it apply": (
        breaking(lambda row: row["raw"]["root_cause"].update(annotator1=NOT_APPLICABLE)),
        "line 3: raw.root_cause.annotator1: not_applicable, yet root_cause applies given screening",
    ),
    "a codebook version the instance lacks": (
        breaking(lambda row: row["raw_codebook_version"].update(annotator1="9.9")),
        "line 3: raw_codebook_version.annotator1: 9.9 is not a version of",
    ),
    "a fix URL that is not http": (
        breaking(
            lambda row: row.update(linked_fixes=[{"kind": "pr", "ref": "1", "url": "javascript:x"}])
        ),
        "line 3: linked_fixes[0].url must be an http or https URL",
    ),
}


@pytest.mark.parametrize("problem", BAD_ROWS)
def test_a_bad_row_is_refused_with_its_line_and_field_and_nothing_is_stored(
    resolved_study, tmp_path, problem
):
    change, message = BAD_ROWS[problem]
    path = write_jsonl(tmp_path / "bad.jsonl", change(jsonl_rows(resolved_study)))
    before = stored_counts()

    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", str(path), "--study", "restored")

    assert message in str(refused.value)
    assert stored_counts() == before


def test_a_line_that_is_not_json_is_refused_with_its_number(resolved_study, tmp_path):
    path = write_jsonl(
        tmp_path / "bad.jsonl", jsonl_rows(resolved_study), raw_lines={4: b'{"issue": \n'}
    )
    before = stored_counts()

    with pytest.raises(CommandError, match=r"line 5: not valid JSON"):
        call_command("import_dataset", str(path), "--study", "restored")

    assert stored_counts() == before


def test_a_study_slug_that_exists_is_refused_unless_renamed(resolved_study, tmp_path):
    path = export(resolved_study, tmp_path / "dataset.jsonl", "--raw")
    before = stored_counts()

    with pytest.raises(CommandError, match="line 1: study: a study 'export-me' exists already"):
        call_command("import_dataset", str(path))

    assert stored_counts() == before


def test_a_codebook_file_with_another_hash_is_refused(resolved_study, tmp_path):
    path = export(resolved_study, tmp_path / "dataset.jsonl", "--raw")
    changed = orjson.loads(CODEBOOK_FILE.read_bytes())
    changed["dimensions"][0]["name"] = "Screening, renamed"
    codebook = tmp_path / "codebook.json"
    codebook.write_bytes(orjson.dumps(changed))
    before = stored_counts()

    with pytest.raises(CommandError, match=r"the codebook file is .* with content hash"):
        call_command(
            "import_dataset", str(path), "--study", "restored", "--codebook", str(codebook)
        )

    assert stored_counts() == before


def test_a_bad_row_after_stored_batches_rolls_everything_back(resolved_study):
    rows = jsonl_rows(resolved_study)
    rows[-1]["labels"]["root_cause"]["gold"] = ["no_such_cause"]
    before = stored_counts()

    with pytest.raises(DatasetRestoreError) as refused:
        dataset_restore(rows=enumerate(rows, start=1), study_slug="restored", batch_rows=4)

    assert refused.value.errors == [
        (len(rows), "labels.root_cause.gold: no_such_cause is not a category of root_cause")
    ]
    assert stored_counts() == before


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ({"symptom_x": 0.5}, "Pilot has targets for symptom_x, which are not required dimensions"),
        (
            {"screening": 2},
            "dimension_targets: must map dimension keys to numbers between -1 and 1",
        ),
        (["screening"], "dimension_targets: must map dimension keys to numbers between -1 and 1"),
    ],
)
def test_a_rounds_targets_of_its_own_are_checked(resolved_study, targets, message):
    rows = jsonl_rows(resolved_study)
    rows[0]["study_settings"]["rounds"][0]["dimension_targets"] = targets
    before = stored_counts()

    with pytest.raises(DatasetRestoreError) as refused:
        dataset_restore(rows=enumerate(rows, start=1), study_slug="restored")

    assert message in refused.value.errors[0][1]
    assert stored_counts() == before


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.csv", b'issue,title\n"unterminated', "line 2"),
        ("bad.parquet", b"PAR1 not really", "row 0: not a Parquet file"),
        ("empty.jsonl", b"\n\n", "line 0: the file holds no rows"),
        ("notes.txt", b"", "Cannot tell the format of notes.txt"),
    ],
)
def test_files_that_are_no_dataset_are_refused(db, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    before = stored_counts()

    with pytest.raises(CommandError, match=message):
        call_command("import_dataset", str(path))

    assert stored_counts() == before
