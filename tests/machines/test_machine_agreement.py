"""Machine annotators measured like people, in the agreement report: kappa against gold and
against each annotator, precision and recall, the delegation table, machine-machine kappa; the
human figures stay what they were."""

import pytest

from labeling.agreement_report import study_agreement_report
from labeling.models import Assignment, Resolution
from labeling.services.annotations import DimensionAnswer, assignment_save
from machines.agreement import (
    MachineRating,
    delegation_table,
    machine_figures,
    pair_kappa,
    precision_recall,
)
from machines.runs import machine_run_execute
from machines.services import machine_annotator_get_or_create, machine_run_request
from tests.conftest import SCREENED_IN

# Root causes people agree on for the first eight items: gold by consensus.
GOLD = ["api_misuse"] * 4 + ["configuration_error"] * 4


def test_pair_kappa_single_and_multi_label():
    a = {1: {"x"}, 2: {"y"}, 3: {"x"}, 4: {"y"}}
    assert pair_kappa(a, a, categories=["x", "y"], multi_label=False) == (4, 1.0)
    flipped = {1: {"y"}, 2: {"x"}, 3: {"y"}, 4: {"x"}}
    assert pair_kappa(a, flipped, categories=["x", "y"], multi_label=False) == (4, -1.0)
    assert pair_kappa(a, {9: {"x"}}, categories=["x"], multi_label=False) == (0, None)
    # Multi-label: the mean of the per-category binary kappas that are defined.
    first = {1: {"x", "y"}, 2: set(), 3: {"x"}, 4: {"y"}}
    second = {1: {"x"}, 2: set(), 3: {"x"}, 4: {"y"}}
    n, kappa = pair_kappa(first, second, categories=["x", "y", "z"], multi_label=True)
    assert n == 4 and kappa == pytest.approx((1.0 + 0.5) / 2)


def test_precision_recall_and_delegation():
    gold = {1: {"x"}, 2: {"x"}, 3: {"y"}, 4: {"y"}}
    machine = {1: {"x"}, 2: {"x"}, 3: {"x"}, 4: {"x"}}
    figures = precision_recall(machine, gold)
    assert figures["per_category"]["x"] == {"precision": 0.5, "recall": 1.0, "support": 2}
    assert figures["per_category"]["y"] == {"precision": None, "recall": 0.0, "support": 2}
    assert (figures["precision"], figures["recall"]) == (0.5, 0.5)

    rated = {
        1: MachineRating(frozenset({"x"}), 1.0),
        2: MachineRating(frozenset({"x"}), 2 / 3),
        3: MachineRating(frozenset({"x"}), 1 / 3),
        4: MachineRating(frozenset({"y"}), 1.0),
        5: MachineRating(frozenset({"y"}), 1.0),  # no gold: not counted
    }
    rows = {row["threshold"]: row for row in delegation_table(rated, gold, (0.3, 0.6, 1.0))}
    assert rows[0.3] == {"threshold": 0.3, "n": 4, "share": 1.0, "agreement_with_gold": 0.75}
    assert rows[0.6] == {"threshold": 0.6, "n": 3, "share": 0.75, "agreement_with_gold": 1.0}
    assert rows[1.0] == {"threshold": 1.0, "n": 2, "share": 0.5, "agreement_with_gold": 1.0}


def test_machine_figures_pairs_machines():
    gold = {1: {"x"}, 2: {"y"}}
    machines = {
        "b": {1: MachineRating(frozenset({"x"}), 1.0), 2: MachineRating(frozenset({"y"}), 1.0)},
        "a": {1: MachineRating(frozenset({"y"}), 1.0), 2: MachineRating(frozenset({"x"}), 1.0)},
    }
    figures, pairs = machine_figures(
        machines=machines, humans={"ann": gold}, gold=gold, categories=["x", "y"], multi_label=False
    )
    assert figures["b"]["kappa_vs_gold"] == 1.0 and figures["a"]["kappa_vs_gold"] == -1.0
    assert figures["b"]["kappa_vs_humans"] == {"ann": 1.0}
    assert pairs == [{"a": "a", "b": "b", "n": 2, "kappa": -1.0}]


@pytest.fixture
def labeled_study(study, people):
    """Both annotators submit the first eight items alike: their root cause becomes gold."""
    items = list(study.items.select_related("issue__repository").order_by("id")[:8])
    for item, root_cause in zip(items, GOLD, strict=True):
        for name in ("annotator1", "annotator2"):
            answers = {**SCREENED_IN, "root_cause": [root_cause]}
            assignment_save(
                assignment=Assignment.objects.get(item=item, annotator=people[name]),
                user=people[name],
                answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
                submit=True,
            )
    assert Resolution.objects.filter(item__in=items, dimension__key="root_cause").count() == 8
    return study, items


def _marker(item) -> str:
    return f"{item.issue.repository.owner}/{item.issue.repository.name}#{item.issue.number} "


def _machine(study, endpoint, name: str, root_cause_of) -> None:
    def choose(prompt, dimension, categories, multi_label):
        if dimension == "root_cause":
            return [root_cause_of(prompt)]
        return SCREENED_IN.get(dimension, categories[:1])

    endpoint.choose = choose
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model=name
    )
    run = machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)
    assert run.items_failed == 0


def test_the_report_measures_machines_against_people_and_gold(labeled_study, endpoint):
    study, items = labeled_study
    before = study_agreement_report(study=study)
    gold_of = {_marker(item): cause for item, cause in zip(items, GOLD, strict=True)}

    def follows_gold(prompt: str) -> str:
        return next((c for marker, c in gold_of.items() if marker in prompt), "api_misuse")

    _machine(study, endpoint, "good", follows_gold)
    _machine(study, endpoint, "always-api-misuse", lambda prompt: "api_misuse")
    report = study_agreement_report(study=study)

    # Human figures stay human-only.
    def human(dimensions):
        return {
            key: {k: v for k, v in d.items() if k not in ("machines", "machine_pairs")}
            for key, d in dimensions.items()
        }

    assert human(report["dimensions"]) == human(before["dimensions"])
    assert before["dimensions"]["root_cause"]["machines"] == {}

    root_cause = report["dimensions"]["root_cause"]
    good, bad = root_cause["machines"]["good"], root_cause["machines"]["always-api-misuse"]
    assert good["n_items"] == 45 and good["n_gold"] == 8
    assert good["kappa_vs_gold"] == 1.0
    assert good["kappa_vs_humans"] == {"annotator1": 1.0, "annotator2": 1.0}
    assert (good["precision"], good["recall"]) == (1.0, 1.0)
    assert bad["kappa_vs_gold"] == 0.0
    assert bad["per_category"]["api_misuse"] == {"precision": 0.5, "recall": 1.0, "support": 4}
    assert (bad["precision"], bad["recall"]) == (0.5, 0.5)
    # One sample each: every answer is held with confidence 1, so a model takes all items.
    assert {(row["share"], row["agreement_with_gold"]) for row in good["delegation"]} == {
        (1.0, 1.0)
    }
    assert {row["agreement_with_gold"] for row in bad["delegation"]} == {0.5}
    assert root_cause["machine_pairs"] == [
        {"a": "always-api-misuse", "b": "good", "n": 45, "kappa": 0.0}
    ]
    # Screening: both machines said include everywhere, as gold did.
    screening = report["dimensions"]["screening"]["machines"]["good"]
    assert screening["per_category"]["include"]["precision"] == 1.0


def test_the_api_and_the_command_carry_the_machine_figures(labeled_study, endpoint, people):
    import json
    from io import StringIO

    from django.core.management import call_command
    from rest_framework.test import APIClient

    study, _ = labeled_study
    _machine(study, endpoint, "m", lambda prompt: "api_misuse")
    out = StringIO()
    call_command("agreement", "--study", "demo", "--json", stdout=out)
    from_command = json.loads(out.getvalue())["dimensions"]["root_cause"]
    assert from_command["machines"]["m"]["n_gold"] == 8
    client = APIClient()
    client.force_login(people["manager"])
    response = client.get("/api/studies/demo/agreement/")
    assert response.status_code == 200
    assert response.json()["dimensions"]["root_cause"]["machines"]["m"]["kappa_vs_gold"] == 0.0
