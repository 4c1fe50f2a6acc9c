"""The scikit-learn annotator: a linear model per dimension, trained on the study's gold labels
over the TF-IDF of each item's title, body and comments, that labels the study's items beside
people and is measured like any machine annotator.

Cross-validated so that no item is labeled by a model that saw it: the gold items of a dimension
are split into folds, and each fold is labeled by a model fitted on the other folds, whose IDF
weights are counted without the fold's texts too (a hashed vocabulary needs no fitting, so
nothing of a held-out item reaches its model). Items without gold on a dimension are labeled by
the model fitted on all of its gold. A dimension with too little gold to learn from is skipped,
with the reason, in the run's parameters.

scikit-learn is imported inside the functions: loading it costs a second that URL routing and
the pages have no need to pay.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from corpus.models import IssueComment
from labeling.disagreements import item_gold
from labeling.models import Study, StudyItem
from labeling.selectors import study_dimensions
from machines.models import MachineLabel, MachineRun
from machines.prompts import sha256_of

N_FOLDS = 5
MIN_GOLD_ITEMS = 5  # fewer items than folds leaves a fold's model nothing to learn from
SEED = 0
TEXT_CHAR_BUDGET = 20_000  # of one item's title, body and comments
# A hashed vocabulary: nothing to fit, so a held-out item's words never shape its model. Words,
# not word pairs: pairs cost three times the training time for no gain on the bench's data.
VECTORISER = {
    "kind": "HashingVectorizer + TfidfTransformer",
    "n_features": 2**16,
    "ngram_range": [1, 1],
    "lowercase": True,
    "sublinear_tf": True,
    "text": "title, body and comments",
    "text_char_budget": TEXT_CHAR_BUDGET,
}
# saga: an order of magnitude faster than lbfgs on sparse text of this shape.
CLASSIFIER = {
    "kind": "LogisticRegression",
    "C": 1.0,
    "solver": "saga",
    "max_iter": 100,
    "tol": 1e-3,
}
MODEL_NAME = "TF-IDF + logistic regression"
NONE_APPLIES = ""  # a single-label "none applies", as a class of its own
BATCH = 2000


class TooLittleGold(Exception):
    """No dimension had enough gold labels to learn from: the run stops with the reasons."""


@dataclass(frozen=True)
class Prediction:
    categories: list[str]
    confidence: float
    fold: int | None  # None: the model fitted on all gold (the item has none)
    probabilities: dict[str, float]  # the few most likely categories, for the record


@dataclass(frozen=True)
class DimensionResult:
    predictions: dict[int, Prediction]  # row -> prediction
    record: dict  # what the run's parameters say of this dimension


# ---------------------------------------------------------------------------------------------
# Texts and the count matrix
# ---------------------------------------------------------------------------------------------


def study_item_texts(*, study: Study) -> tuple[list[int], list[str]]:
    """(item ids in id order, each item's title, body and comments as one text). Two
    queries, whatever the number of items."""
    rows = list(
        StudyItem.objects.filter(study=study)
        .order_by("id")
        .values_list("id", "issue_id", "issue__title", "issue__body")
    )
    comments: dict[int, list[str]] = {}
    for issue_id, body in (
        IssueComment.objects.filter(issue__study_items__study=study)
        .order_by("issue_id", "created_at", "id")
        .values_list("issue_id", "body")
    ):
        comments.setdefault(issue_id, []).append(body)
    texts = [
        "\n".join([title, body or "", *comments.get(issue_id, [])])[:TEXT_CHAR_BUDGET]
        for _, issue_id, title, body in rows
    ]
    return [row[0] for row in rows], texts


def count_matrix(texts: Sequence[str]):
    """The hashed term counts of the texts (a scipy CSR matrix, one row a text)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vectoriser = HashingVectorizer(
        n_features=VECTORISER["n_features"],
        ngram_range=tuple(VECTORISER["ngram_range"]),
        lowercase=VECTORISER["lowercase"],
        alternate_sign=False,
        norm=None,
        dtype=np.float32,
    )
    return vectoriser.transform(texts)


# ---------------------------------------------------------------------------------------------
# One dimension: cross-validated predictions of the gold items, a full model for the rest
# ---------------------------------------------------------------------------------------------


def _classifier():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(
        C=CLASSIFIER["C"],
        solver=CLASSIFIER["solver"],
        max_iter=CLASSIFIER["max_iter"],
        tol=CLASSIFIER["tol"],
        random_state=SEED,
    )


class _Model:
    """A fitted model of one dimension: the IDF weights of its training texts and the
    classifier (single-label: one multinomial model; multi-label: one binary model per
    category, one-vs-rest, a constant where the training items all agree on the category)."""

    def __init__(self, counts, idf_rows, train_rows, targets, *, multi_label: bool, keys):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.feature_extraction.text import TfidfTransformer

        self.multi_label = multi_label
        self.keys = list(keys)
        self.tfidf = TfidfTransformer(sublinear_tf=VECTORISER["sublinear_tf"]).fit(counts[idf_rows])
        features = self.tfidf.transform(counts[train_rows])
        self.constant: str | None = None
        self.classifiers: list = []  # multi-label: per category, a model or a constant
        with warnings.catch_warnings():
            # saga may stop at max_iter before its tolerance; the labels are still usable.
            warnings.simplefilter("ignore", ConvergenceWarning)
            if multi_label:
                for column in np.asarray(targets).T:
                    if column.min() == column.max():
                        self.classifiers.append(float(column[0]))
                    else:
                        self.classifiers.append(_classifier().fit(features, column))
            elif len(set(targets.tolist())) == 1:
                self.constant = str(targets[0])  # a fold whose training items share one answer
            else:
                self.classifier = _classifier().fit(features, targets)
                self.keys = [str(key) for key in self.classifier.classes_]

    def predict(self, counts, rows, fold: int | None) -> list[Prediction]:
        if self.constant is not None:
            return [
                Prediction(_as_categories(self.constant), 1.0, fold, {self.constant: 1.0})
                for _ in rows
            ]
        features = self.tfidf.transform(counts[rows])
        if self.multi_label:
            columns = [
                np.full(len(rows), model)
                if isinstance(model, float)
                else model.predict_proba(features)[:, 1]
                for model in self.classifiers
            ]
            probabilities = np.column_stack(columns)
            return [_multi_label_prediction(row, self.keys, fold) for row in probabilities]
        probabilities = self.classifier.predict_proba(features)
        predictions = []
        for row in probabilities:
            best = int(np.argmax(row))
            predictions.append(
                Prediction(
                    _as_categories(self.keys[best]),
                    float(row[best]),
                    fold,
                    _top(self.keys, row),
                )
            )
        return predictions


def _as_categories(key: str) -> list[str]:
    return [] if key == NONE_APPLIES else [key]


def _top(keys: Sequence[str], probabilities, n: int = 3) -> dict[str, float]:
    order = np.argsort(-np.asarray(probabilities))[:n]
    return {keys[i]: round(float(probabilities[i]), 4) for i in order}


def _multi_label_prediction(probabilities, keys: Sequence[str], fold: int | None) -> Prediction:
    """Each category chosen at a probability of one half or more; the confidence is the
    probability of the chosen set as a whole (the categories' models taken as independent),
    since the delegation table counts an item as agreeing only when the whole set matches."""
    chosen = [key for key, p in zip(keys, probabilities, strict=True) if p >= 0.5]
    confidence = math.prod(max(float(p), 1.0 - float(p)) for p in probabilities)
    return Prediction(chosen, confidence, fold, _top(keys, probabilities))


def dimension_predict(
    counts,
    *,
    gold_rows: Sequence[int],
    gold_labels: Sequence[frozenset[str]],
    multi_label: bool,
    n_folds: int = N_FOLDS,
    seed: int = SEED,
) -> DimensionResult:
    """Every row of `counts` labeled on one dimension: each gold row by the model of the
    fold that held it out, every other row by the model fitted on all gold rows. Raises
    TooLittleGold (with the reason) when the gold rows cannot teach anything."""
    from sklearn.model_selection import KFold, StratifiedKFold
    from sklearn.preprocessing import MultiLabelBinarizer

    n = len(gold_rows)
    if n < MIN_GOLD_ITEMS:
        raise TooLittleGold(f"{n} items with a gold label; at least {MIN_GOLD_ITEMS} needed")
    gold_rows_array = np.asarray(gold_rows)
    if multi_label:
        binarizer = MultiLabelBinarizer()
        targets = binarizer.fit_transform([sorted(labels) for labels in gold_labels])
        keys = [str(key) for key in binarizer.classes_]
        counts_per_key = targets.sum(axis=0) if keys else np.zeros(0)
        if not any(0 < count < n for count in counts_per_key):
            raise TooLittleGold(
                "no category is chosen on some gold items and not on others: one class only"
            )
        classes = keys
    else:
        targets = np.asarray([min(labels) if labels else NONE_APPLIES for labels in gold_labels])
        keys = classes = sorted(set(targets.tolist()))
        if len(classes) < 2:
            only = classes[0] or "none applies"
            raise TooLittleGold(f"every gold label is {only!r}: one class only")
    n_folds = min(n_folds, n)
    if multi_label:
        splitter = KFold(n_splits=n_folds, shuffle=True, random_state=seed)
    else:
        splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    all_rows = np.arange(counts.shape[0])
    predictions: dict[int, Prediction] = {}
    constant_folds = []
    with warnings.catch_warnings():
        # "The least populated class has fewer members than n_splits": a rare class is then
        # missing from some training folds, and its items are labeled without it.
        warnings.simplefilter("ignore", UserWarning)
        folds = list(splitter.split(np.zeros(n), targets))
    for fold, (train, test) in enumerate(folds, start=1):
        held_out = gold_rows_array[test]
        model = _Model(
            counts,
            np.setdiff1d(all_rows, held_out),
            gold_rows_array[train],
            targets[train],
            multi_label=multi_label,
            keys=keys,
        )
        if model.constant is not None:
            constant_folds.append(fold)
        for row, prediction in zip(
            held_out.tolist(), model.predict(counts, held_out, fold), strict=True
        ):
            predictions[row] = prediction
    rest = np.setdiff1d(all_rows, gold_rows_array)
    if rest.size:
        model = _Model(
            counts, all_rows, gold_rows_array, targets, multi_label=multi_label, keys=keys
        )
        for row, prediction in zip(rest.tolist(), model.predict(counts, rest, None), strict=True):
            predictions[row] = prediction
    record = {
        "n_training_items": n,
        "n_folds": n_folds,
        "classes": [key or "(none applies)" for key in classes],
    }
    if constant_folds:
        record["folds_with_one_class"] = constant_folds
    return DimensionResult(predictions, record)


# ---------------------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------------------


def classical_parameters() -> dict:
    import sklearn

    return {
        "model": MODEL_NAME,
        "vectoriser": dict(VECTORISER),
        "classifier": dict(CLASSIFIER),
        "sklearn_version": sklearn.__version__,
        "n_folds": N_FOLDS,
        "min_gold_items": MIN_GOLD_ITEMS,
        "seed": SEED,
    }


def _rationale(prediction: Prediction, record: dict) -> str:
    if prediction.fold is None:
        return (
            f"{MODEL_NAME} trained on all {record['n_training_items']} gold items "
            "(this item has no gold label on this dimension)."
        )
    return (
        f"{MODEL_NAME}, cross-validation fold {prediction.fold} of {record['n_folds']}: "
        "trained on the gold items of the other folds, not on this one."
    )


def classical_run_execute(run: MachineRun) -> None:
    """Train and label for a run that machines.runs.machine_run_execute started (it records
    the status, the dates and any failure). Labels each item on the dimensions that its own
    screening answer leaves applying, as the language-model runs do."""
    study = run.annotator.study
    dimensions = study_dimensions(study=study)
    item_ids, texts = study_item_texts(study=study)
    parameters = classical_parameters()
    gold = item_gold(item_ids=item_ids)
    run.items_total = len(item_ids)
    run.parameters = parameters
    run.settings_hash = sha256_of(parameters)
    run.save(update_fields=["items_total", "parameters", "settings_hash"])

    counts = count_matrix(texts)
    row_of = {item_id: row for row, item_id in enumerate(item_ids)}
    results: dict[str, DimensionResult] = {}
    records: dict[str, dict] = {}
    for dimension in dimensions:
        labeled = sorted(
            (row_of[item_id], by_dimension[dimension.key])
            for item_id, by_dimension in gold.items()
            if dimension.key in by_dimension and item_id in row_of
        )
        try:
            result = dimension_predict(
                counts,
                gold_rows=[row for row, _ in labeled],
                gold_labels=[labels for _, labels in labeled],
                multi_label=dimension.multi_label,
            )
        except TooLittleGold as reason:
            records[dimension.key] = {"n_training_items": len(labeled), "skipped": str(reason)}
            continue
        results[dimension.key] = result
        records[dimension.key] = result.record
    parameters["dimensions"] = records
    MachineRun.objects.filter(pk=run.pk).update(parameters=parameters)
    if not results:
        raise TooLittleGold(
            "No dimension has enough gold labels to learn from: "
            + "; ".join(f"{key}: {record['skipped']}" for key, record in records.items())
        )

    labels: list[MachineLabel] = []
    items_done = 0
    for row, item_id in enumerate(item_ids):
        chosen = {
            key: result.predictions[row].categories
            for key, result in results.items()
            if row in result.predictions
        }
        stored = 0
        for dimension in dimensions:
            result = results.get(dimension.key)
            if result is None or not dimension.applies_given(chosen):
                continue
            prediction = result.predictions[row]
            labels.append(
                MachineLabel(
                    run=run,
                    item_id=item_id,
                    dimension=dimension,
                    categories=prediction.categories,
                    confidence=round(prediction.confidence, 6),
                    rationale=_rationale(prediction, result.record),
                    raw_response={
                        "fold": prediction.fold,
                        "probabilities": prediction.probabilities,
                    },
                )
            )
            stored += 1
        items_done += stored > 0
    with transaction.atomic():
        MachineLabel.objects.bulk_create(labels, batch_size=BATCH)
        MachineRun.objects.filter(pk=run.pk).update(items_done=items_done)
