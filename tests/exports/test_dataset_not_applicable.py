"""A dimension that does not apply (root cause of an issue screened out) is exported as such in
every format, apart from "none applies"; every raw label carries the codebook version it was
submitted under; the restore reads both back, and still reads files of the shape before."""

import csv
import io

import orjson
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from exports.formats import FORMATS, NONE_APPLIES, NOT_APPLICABLE
from labeling.models import Assignment, Resolution, Study
from labeling.services.codebook_migration import study_codebook_migrate
from labeling.services.studies import study_create
from taxonomy.drafts import codebook_draft_create, codebook_draft_publish
from tests.conftest import SCREENED_IN
from tests.exports.test_dataset_export import by_issue, exported, read_back
from tests.exports.test_dataset_restore import dataset, export
from tests.labeling.test_resolution import submit

SCREENED_OUT = {**SCREENED_IN, "screening": ["not_a_bug"]}
# The dimensions that apply only to an item screened in, in the starter codebook.
LATER = [
    "symptom", "root_cause", "fix_pattern", "debugging_practice", "testing_practice",
    "test_escape_reason", "training_stage", "parallel_feature",
]  # fmt: skip
NOT_APPLICABLE_GOLD = {"gold": NOT_APPLICABLE, "gold_parent": NOT_APPLICABLE, "method": None}


@pytest.fixture
def screened(codebook_version, sample_issues, people):
    """Four items of two annotators: screened out by both (resolved), screened in by both
    (resolved), screened out by one only (in resolution), all under the first codebook version;
    then the study moves to version 2.0 and both label a fourth item under it."""
    first, second = people["annotator1"], people["annotator2"]
    study = study_create(
        slug="screened",
        name="Screened",
        codebook_version=codebook_version,
        k=2,
        annotators=[first, second],
        managers=[people["manager"]],
        issues=sample_issues[:4],
    )
    out, screened_in, split, late = study.items.order_by("id")
    for user in (first, second):
        submit(out, user, SCREENED_OUT)
        submit(screened_in, user)
    submit(split, first, SCREENED_OUT)
    submit(split, second)
    second_version = codebook_draft_publish(
        version=codebook_draft_create(version=codebook_version, label="2.0")
    )
    study_codebook_migrate(study=study, to_version=second_version, by=people["manager"])
    study.refresh_from_db()
    for user in (first, second):
        submit(late, user)
    return study


def issues_of(study: Study) -> list[str]:
    return [str(item.issue) for item in study.items.select_related("issue__repository")]


@pytest.mark.parametrize("file_format", FORMATS)
def test_dimensions_of_an_item_screened_out_are_not_applicable_not_empty(screened, file_format):
    out, screened_in, split, _ = issues_of(screened)

    rows = by_issue(read_back(exported(screened, file_format, raw=True), file_format))

    assert rows[out]["labels"]["screening"]["gold"] == ["not_a_bug"]
    assert rows[out]["labels"]["screening"]["method"] == "consensus"
    for key in LATER:
        assert rows[out]["labels"][key] == NOT_APPLICABLE_GOLD, key
        assert rows[out]["raw"][key] == {"annotator1": NOT_APPLICABLE, "annotator2": NOT_APPLICABLE}
    # Screened in: the dimensions apply, and an empty gold label still means "none applies".
    assert rows[screened_in]["labels"]["root_cause"]["gold"] == ["api_misuse"]
    assert rows[screened_in]["labels"]["parallel_feature"] == {
        "gold": [], "gold_parent": [], "method": "consensus",
    }  # fmt: skip
    # Screening undecided: root cause may yet apply (no gold label), but not to annotator1.
    assert rows[split]["labels"]["root_cause"] == {"gold": [], "gold_parent": [], "method": None}
    assert rows[split]["raw"]["root_cause"] == {
        "annotator1": NOT_APPLICABLE, "annotator2": ["api_misuse"],
    }  # fmt: skip


def test_each_format_writes_its_own_marker(screened):
    out_place, in_place = 0, 1

    records = list(csv.DictReader(io.StringIO(exported(screened, "csv", raw=True).decode())))
    assert records[out_place]["root_cause.gold"] == NOT_APPLICABLE
    assert records[out_place]["root_cause.gold_parent"] == NOT_APPLICABLE
    assert records[out_place]["root_cause.raw.annotator1"] == NOT_APPLICABLE
    assert records[in_place]["parallel_feature.gold"] == NONE_APPLIES

    table = pq.ParquetFile(io.BytesIO(exported(screened, "parquet", raw=True))).read()
    assert table.column("root_cause.applies").to_pylist()[:2] == [False, True]
    assert table.column("root_cause.gold").to_pylist()[out_place] is None
    assert table.column("root_cause.applies.annotator1").to_pylist()[:3] == [False, True, False]
    assert table.column("root_cause.applies.annotator2").to_pylist()[:3] == [False, True, True]
    assert table.column("root_cause.raw.annotator1").to_pylist()[out_place] is None

    first = orjson.loads(exported(screened, "jsonl", raw=True).splitlines()[out_place])
    assert first["labels"]["root_cause"]["gold"] == NOT_APPLICABLE
    assert first["raw"]["root_cause"]["annotator1"] == NOT_APPLICABLE


@pytest.mark.parametrize("file_format", FORMATS)
def test_raw_labels_carry_the_codebook_version_they_were_submitted_under(
    screened, codebook_version, file_format
):
    out, screened_in, _, late = issues_of(screened)

    rows = by_issue(read_back(exported(screened, file_format, raw=True), file_format))

    assert rows[late]["codebook"]["version"] == "2.0"
    first = codebook_version.label
    assert rows[out]["raw_codebook_version"] == {"annotator1": first, "annotator2": first}
    assert rows[screened_in]["raw_codebook_version"] == {"annotator1": first, "annotator2": first}
    assert rows[late]["raw_codebook_version"] == {"annotator1": "2.0", "annotator2": "2.0"}
    assert all("raw_codebook_version" not in row for row in read_back(
        exported(screened, file_format), file_format
    ))  # fmt: skip


@pytest.mark.parametrize("file_format", FORMATS)
def test_pseudonymised_rows_mark_the_same_dimensions_under_the_pseudonyms(
    screened, codebook_version, file_format
):
    out, _, split, late = issues_of(screened)

    content = exported(screened, file_format, raw=True, pseudonymise=True)

    assert b"annotator1" not in content and b"annotator2" not in content
    rows = by_issue(read_back(content, file_format))
    assert rows[out]["raw"]["root_cause"] == {
        "annotator-01": NOT_APPLICABLE, "annotator-02": NOT_APPLICABLE,
    }  # fmt: skip
    assert rows[split]["raw"]["root_cause"] == {
        "annotator-01": NOT_APPLICABLE, "annotator-02": ["api_misuse"],
    }  # fmt: skip
    assert rows[out]["labels"]["root_cause"] == NOT_APPLICABLE_GOLD
    assert rows[late]["raw_codebook_version"] == {"annotator-01": "2.0", "annotator-02": "2.0"}
    assert rows[out]["raw_codebook_version"] == {
        "annotator-01": codebook_version.label, "annotator-02": codebook_version.label,
    }  # fmt: skip


def submitted_versions(study: Study) -> dict[tuple[str, str], str | None]:
    return {
        (str(assignment.item.issue), assignment.annotator.username): (
            assignment.codebook_version.label if assignment.codebook_version else None
        )
        for assignment in Assignment.objects.filter(
            item__study=study, status=Assignment.Status.SUBMITTED
        ).select_related("item__issue__repository", "annotator", "codebook_version")
    }


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_restore_reads_the_markers_and_the_versions_back(screened, file_format, tmp_path):
    path = export(screened, tmp_path / f"dataset.{file_format}", "--raw")

    call_command("import_dataset", str(path), "--study", "restored")

    restored = Study.objects.get(slug="restored")
    assert dataset(restored) == dataset(screened)
    assert submitted_versions(restored) == submitted_versions(screened)
    out = restored.items.order_by("id").first()
    # A dimension that does not apply has no gold label stored, as in the study exported.
    assert set(Resolution.objects.filter(item=out).values_list("dimension__key", flat=True)) == {
        "screening"
    }


def old_shape_jsonl(content: bytes) -> bytes:
    """The rows as exports wrote them before the marker: [] and no method for a dimension that
    does not apply, [] for an annotator it did not apply to, no codebook versions."""
    lines = []
    for line in content.splitlines():
        row = orjson.loads(line)
        for key, entry in row["labels"].items():
            if entry["gold"] == NOT_APPLICABLE:
                row["labels"][key] = {"gold": [], "gold_parent": [], "method": None}
        for answers in row["raw"].values():
            for annotator, keys in answers.items():
                if keys == NOT_APPLICABLE:
                    answers[annotator] = []
        del row["raw_codebook_version"]
        lines.append(orjson.dumps(row))
    return b"\n".join(lines) + b"\n"


def old_shape_csv(content: bytes) -> bytes:
    records = list(csv.DictReader(io.StringIO(content.decode())))
    columns = [name for name in records[0] if not name.startswith("raw_codebook_version.")]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for record in records:
        for name in columns:
            if record[name] == NOT_APPLICABLE:
                record[name] = NONE_APPLIES if ".raw." in name else ""
        writer.writerow(record)
    return buffer.getvalue().encode()


@pytest.mark.parametrize(
    ("file_format", "old_shape"), [("jsonl", old_shape_jsonl), ("csv", old_shape_csv)]
)
def test_a_file_of_the_shape_before_restores_the_same_labels(
    screened, file_format, old_shape, tmp_path
):
    path = tmp_path / f"old.{file_format}"
    path.write_bytes(old_shape(exported(screened, file_format, raw=True)))

    call_command("import_dataset", str(path), "--study", "restored")

    restored = Study.objects.get(slug="restored")
    before, after = dataset(screened), dataset(restored)
    # The old shape did not say under which version each label was submitted.
    assert all(set(row["raw_codebook_version"].values()) == {None} for row in after)
    for row in (*before, *after):
        del row["raw_codebook_version"]
    assert after == before
