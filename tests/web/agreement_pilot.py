"""A pilot of the starter codebook (its 9 dimensions): 6 items labeled by 3 annotators, so that
no pair of annotators reaches the minimum of 10 shared items. Used by the agreement page's tests
(Django test client and browser)."""

from django.contrib.auth import get_user_model
from django.core.management import call_command

from labeling.models import Study
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
from tests.conftest import CODEBOOK_FILE

PILOT_ANNOTATORS = ("annotator1", "annotator2", "annotator3")
PILOT_ITEMS = 6
# Leaves with long names, so that the confusion matrix of the symptom has long labels to show.
SYMPTOM_LEAVES = ["crash_communication", "excessive_memory_usage", "numerical_anomaly"]


def pilot_rows(issues, codebook: dict) -> list[tuple[str, str, str, str]]:
    """Every dimension of `codebook` on the first six issues, by three annotators agreeing on
    about two thirds of the ratings. annotator3 screens the last item out (and so does not
    answer the dimensions that apply to included items only); the optional dimensions are
    answered by two annotators."""
    rows = []
    references = [f"{issue.repository.full_name}#{issue.number}" for issue in issues]
    for item, reference in enumerate(references[:PILOT_ITEMS]):
        for position, dimension in enumerate(codebook["dimensions"]):
            keys = [category["key"] for category in dimension["categories"]]
            if dimension["key"] == "symptom":
                keys = SYMPTOM_LEAVES
            for number, annotator in enumerate(PILOT_ANNOTATORS):
                screened_out = annotator == "annotator3" and item == PILOT_ITEMS - 1
                if dimension.get("applies_when") and screened_out:
                    continue
                if not dimension.get("required", True) and number == 2:
                    continue
                if not dimension.get("applies_when"):  # screening: include
                    chosen = [keys[1] if screened_out else keys[0]]
                else:
                    shift = (number == 1 and item % 3 == 2) + 2 * (number == 2 and item % 2)
                    chosen = [keys[(item + position + shift) % len(keys)]]
                    if dimension.get("multi_label") and item % 2 == 0:
                        chosen.append(keys[(item + position + 1) % len(keys)])
                rows.append((reference, annotator, dimension["key"], ";".join(chosen)))
    return rows


def pilot_study_create(*, codebook_version, issues, manager, make_user, tmp_path) -> Study:
    for username in PILOT_ANNOTATORS:
        if not get_user_model().objects.filter(username=username).exists():
            make_user(username)
    study = study_create(
        slug="pilot", name="Pilot", codebook_version=codebook_version, k=3, managers=[manager]
    )
    codebook = codebook_file_read(CODEBOOK_FILE.read_bytes())
    path = tmp_path / "pilot.csv"
    path.write_text(
        "issue,annotator,dimension,labels\n"
        + "".join(",".join(row) + "\n" for row in pilot_rows(issues, codebook))
    )
    call_command("import_annotations", "--study", "pilot", str(path))
    return study
