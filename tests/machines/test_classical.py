"""The scikit-learn annotator: trained on the study's gold labels, cross-validated so that no
item with gold is labeled by a model that saw it, stored and reported like any machine, started
from the command and the API."""

from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from corpus.models import Issue, IssueComment
from labeling.agreement_report import study_agreement_report
from labeling.models import Assignment, Resolution
from labeling.services.annotations import DimensionAnswer, assignment_save
from machines.classical import _Model, count_matrix, study_item_texts
from machines.models import MachineAnnotator, MachineLabel, MachineRun
from machines.runs import machine_run_execute
from machines.services import classical_run_request
from tests.conftest import SCREENED_IN

# Words that give each kind of issue away, and the gold each kind gets.
SIGNALS = {
    "api": "wrong argument signature passed to the api call",
    "config": "yaml config setting flag misconfigured launcher",
    "not_a_bug": "question about usage documentation works as intended",
}
GOLD_OF = {
    "api": {**SCREENED_IN, "root_cause": ["api_misuse"]},
    "config": {**SCREENED_IN, "root_cause": ["configuration_error"]},
    "not_a_bug": {"screening": ["not_a_bug"]},
}
KINDS = ["api", "config", "not_a_bug"]


def _texts(items, text_of) -> None:
    """Give each item's issue the text `text_of(index)` and no comments."""
    IssueComment.objects.filter(issue__study_items__in=items).delete()
    for index, item in enumerate(items):
        Issue.objects.filter(pk=item.issue_id).update(title=text_of(index), body="")


def _gold(items, answers_of) -> None:
    """Both annotators submit the same answers: the items' gold by consensus."""
    for index, item in enumerate(items):
        for assignment in Assignment.objects.filter(item=item).select_related("annotator"):
            assignment_save(
                assignment=assignment,
                user=assignment.annotator,
                answers={
                    key: DimensionAnswer(category_keys=keys)
                    for key, keys in answers_of(index).items()
                },
                submit=True,
            )


def _run(study) -> MachineRun:
    return machine_run_execute(run_id=classical_run_request(study=study, enqueue=False).pk)


def _noise(index: int) -> str:
    """A word of its own per item (letters only: the tokenizer keeps it whole)."""
    return "uniq" + "".join(chr(ord("a") + int(digit)) for digit in f"{index:03d}")


@pytest.fixture
def signal_study(study):
    """30 items with gold (10 of each kind), 15 without; every text is its kind's words and a
    word of its own."""
    items = list(study.items.order_by("id"))
    assert len(items) == 45
    _texts(items, lambda i: f"{SIGNALS[KINDS[i % 3]]} {_noise(i)}")
    _gold(items[:30], lambda i: GOLD_OF[KINDS[i % 3]])
    return study, items


def test_it_learns_from_gold_and_labels_every_item_under_the_screening_rule(signal_study):
    study, items = signal_study
    run = _run(study)
    assert run.status == MachineRun.Status.FINISHED, run.error
    assert run.annotator.kind == MachineAnnotator.Kind.CLASSICAL
    assert run.annotator.name == "scikit-learn"
    assert (run.items_total, run.items_done) == (45, 45)

    # The record: vectoriser, model, version, folds, and per dimension its training.
    parameters = run.parameters
    assert parameters["vectoriser"]["ngram_range"] == [1, 1]
    assert parameters["classifier"]["kind"] == "LogisticRegression"
    assert parameters["sklearn_version"] and parameters["n_folds"] == 5
    dimensions = parameters["dimensions"]
    assert dimensions["screening"] == {
        "n_training_items": 30,
        "n_folds": 5,
        "classes": ["include", "not_a_bug"],
    }
    assert dimensions["root_cause"]["n_training_items"] == 20
    # Every screened-in item has the same symptom: nothing to learn, said so.
    assert dimensions["symptom"]["skipped"] == "every gold label is 'crash': one class only"
    assert "skipped" in dimensions["debugging_practice"]  # multi-label, one category
    # Left unanswered by everyone: gold says none applies, on every item.
    assert dimensions["test_escape_reason"]["skipped"] == (
        "every gold label is 'none applies': one class only"
    )

    labels = {
        (label.item_id, label.dimension.key): label
        for label in MachineLabel.objects.filter(run=run).select_related("dimension")
    }
    for index, item in enumerate(items):
        kind = KINDS[index % 3]
        screening = labels[(item.pk, "screening")]
        assert screening.categories == (["not_a_bug"] if kind == "not_a_bug" else ["include"])
        assert 0.5 < screening.confidence <= 1.0
        if kind == "not_a_bug":
            # Its own screening said the other dimensions do not apply: none stored.
            assert (item.pk, "root_cause") not in labels
        else:
            root_cause = labels[(item.pk, "root_cause")]
            assert root_cause.categories == GOLD_OF[kind]["root_cause"]
        # Items with gold were labeled by a fold's model, the others by the full model.
        if index < 30:
            assert screening.raw_response["fold"] in range(1, 6)
            assert "cross-validation fold" in screening.rationale
        else:
            assert screening.raw_response["fold"] is None
            assert "trained on all 30 gold items" in screening.rationale
        assert (item.pk, "symptom") not in labels  # skipped dimension


def test_the_report_measures_it_like_any_machine(signal_study):
    study, _ = signal_study
    _run(study)
    report = study_agreement_report(study=study)
    root_cause = report["dimensions"]["root_cause"]["machines"]["scikit-learn"]
    assert root_cause["n_gold"] == 20 and root_cause["kappa_vs_gold"] == 1.0
    assert root_cause["kappa_vs_humans"] == {"annotator1": 1.0, "annotator2": 1.0}
    assert root_cause["delegation"][0]["threshold"] == 0.5
    screening = report["dimensions"]["screening"]["machines"]["scikit-learn"]
    assert screening["n_gold"] == 30 and screening["kappa_vs_gold"] == 1.0


def test_cross_validation_holds_each_gold_item_out_of_its_model(study):
    """Every text is one word of its own: only a model that saw an item can tell its label
    (the word), and one that did not sees nothing it knows. The held-out items of a fold then
    all get the same answer with the same confidence, so their labels cannot all be right; the
    model fitted on all the gold, asked about the same items, gets every one right."""
    items = list(study.items.order_by("id"))[:20]
    _texts(items, _noise)
    causes = ["api_misuse", "configuration_error"]
    _gold(items, lambda i: {**SCREENED_IN, "root_cause": [causes[i % 2]]})
    run = _run(study)
    assert run.status == MachineRun.Status.FINISHED, run.error
    labels = list(MachineLabel.objects.filter(run=run, dimension__key="root_cause", item__in=items))
    assert len(labels) == 20
    by_fold: dict[int, set] = {}
    for label in labels:
        by_fold.setdefault(label.raw_response["fold"], set()).add(
            (tuple(label.categories), round(label.confidence, 4))
        )
    assert sorted(by_fold) == [1, 2, 3, 4, 5]
    assert all(len(answers) == 1 for answers in by_fold.values()), by_fold
    gold = {item.pk: [causes[i % 2]] for i, item in enumerate(items)}
    assert sum(label.categories == gold[label.item_id] for label in labels) < 20
    kappa = study_agreement_report(study=study)["dimensions"]["root_cause"]["machines"]
    assert kappa["scikit-learn"]["kappa_vs_gold"] < 0.5

    # The counterfactual: a model that saw the items labels every one of them right.
    item_ids, texts = study_item_texts(study=study)
    counts = count_matrix(texts)
    rows = [item_ids.index(item.pk) for item in items]
    targets = np.asarray([causes[i % 2] for i in range(20)])
    seen_all = _Model(
        counts, np.arange(len(item_ids)), rows, targets, multi_label=False, keys=causes
    )
    predicted = [p.categories for p in seen_all.predict(counts, np.asarray(rows), None)]
    assert predicted == [[cause] for cause in targets]


def test_too_little_gold_fails_the_run_with_the_reasons(study):
    run = _run(study)
    assert run.status == MachineRun.Status.FAILED
    assert run.error.startswith("No dimension has enough gold labels to learn from")
    assert "screening: 0 items with a gold label; at least 5 needed" in run.error
    assert not MachineLabel.objects.exists()


def test_a_rerun_is_a_new_run_and_the_report_reads_the_latest(signal_study):
    study, _ = signal_study
    first, second = _run(study), _run(study)
    assert first.annotator_id == second.annotator_id
    assert MachineAnnotator.objects.filter(study=study).count() == 1
    assert (
        MachineLabel.objects.filter(run=second).count()
        == MachineLabel.objects.filter(run=first).count()
    )
    assert Resolution.objects.filter(item__study=study).count() > 0  # gold untouched


@pytest.mark.usefixtures("signal_study")
def test_the_command_runs_it_and_prints_the_run():
    out = StringIO()
    call_command("annotate_with_model", "--study", "demo", "--classical", "--now", stdout=out)
    run = MachineRun.objects.get()
    printed = out.getvalue()
    assert f"Machine run {run.pk} of scikit-learn on demo: finished" in printed
    assert "Items done 45 of 45" in printed
    assert "symptom skipped: every gold label is 'crash'" in printed


def test_the_command_refuses_a_models_settings_with_classical(study):
    with pytest.raises(CommandError, match="--model: a language model's settings"):
        call_command("annotate_with_model", "--study", "demo", "--classical", "--model", "m")
    with pytest.raises(CommandError, match="--base-url and --model needed"):
        call_command("annotate_with_model", "--study", "demo")
    assert not MachineRun.objects.exists()


@pytest.mark.usefixtures("signal_study")
def test_a_manager_starts_it_over_the_api(people, django_capture_on_commit_callbacks):
    client = APIClient()
    client.force_login(people["manager"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/api/studies/demo/machines/classical/", format="json")
    assert response.status_code == 202, response.content
    run = MachineRun.objects.get()
    assert response.json()["annotator"] == "scikit-learn" and run.status == "queued"
    assert len(callbacks) == 1  # the task is sent after commit
    machine_run_execute(run_id=run.pk)
    record = client.get(f"/api/studies/demo/machines/runs/{run.pk}/").json()
    assert record["parameters"]["dimensions"]["root_cause"]["n_training_items"] == 20
    assert record["parameters"]["sklearn_version"]


def test_only_managers_start_it(study, people):
    for name, expected in (("annotator1", 403), ("adjudicator", 403), ("outsider", 404)):
        client = APIClient()
        client.force_login(people[name])
        response = client.post("/api/studies/demo/machines/classical/", format="json")
        assert response.status_code == expected, name
    assert not MachineRun.objects.exists()


def test_a_dimension_the_latest_run_skipped_has_no_label_left(signal_study, people):
    """Each run learns from the gold of its moment: a dimension with too little gold at the
    latest run keeps no label of an earlier run, in the report, an item's labels or the export."""
    from exports.machine_labels import machine_label_rows
    from machines.selectors import item_machine_labels, study_machine_ratings

    study, items = signal_study
    first = _run(study)
    assert MachineLabel.objects.filter(run=first, dimension__key="root_cause").exists()
    Resolution.objects.filter(item__study=study, dimension__key="root_cause").delete()
    second = _run(study)
    assert "skipped" in second.parameters["dimensions"]["root_cause"]

    dimension_ids = list(study.codebook_version.dimensions.values_list("id", flat=True))
    ratings = study_machine_ratings(study=study, dimension_ids=dimension_ids)
    assert "root_cause" not in ratings and "screening" in ratings
    labels = item_machine_labels(item=items[0])
    assert labels and {label.run_id for label in labels} == {second.pk}
    assert "root_cause" not in {label.dimension.key for label in labels}
    rows = machine_label_rows(study=study)
    assert rows and {row["run"] for row in rows} == {second.pk}
    assert "root_cause" not in {row["dimension"] for row in rows}
