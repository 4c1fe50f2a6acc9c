"""The machine annotators' part of a study's dataset, apart from people's labels: one row per
machine label (the latest run of each machine on each item, as the agreement report counts
them) naming the annotator's kind, and each run's record (model, endpoint host, parameters,
prompt hash, dates, requests and tokens), so that a paper can report how the labels were made.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import orjson

from labeling.models import Study
from machines.models import MachineAnnotator, MachineLabel, MachineRun
from machines.selectors import machine_labels_current

LABEL_COLUMNS = (
    "issue", "machine", "kind", "counts_as_rater", "run", "dimension", "categories",
    "confidence", "confidence_source", "rationale",
)  # fmt: skip


def machine_label_rows(*, study: Study) -> list[dict[str, Any]]:
    """Each machine's standing label of each item and dimension (machines.selectors.
    machine_labels_current: a later run's replaces an earlier one's), ordered by issue, machine
    and dimension. One query."""
    labels = (
        machine_labels_current(study_id=study.pk)
        .select_related("run__annotator", "dimension", "item__issue__repository")
        .order_by("run_id", "id")
    )
    latest: dict[tuple[int, int, int], MachineLabel] = {}
    for label in labels:
        latest[(label.run.annotator_id, label.item_id, label.dimension_id)] = label
    rows = []
    for label in latest.values():
        issue = label.item.issue
        annotator = label.run.annotator
        rows.append(
            {
                "issue": f"{issue.repository.owner}/{issue.repository.name}#{issue.number}",
                "machine": annotator.name,
                "kind": annotator.kind,
                "counts_as_rater": annotator.counts_toward_k,
                "run": label.run_id,
                "dimension": label.dimension.key,
                "position": label.dimension.position,
                "categories": list(label.categories),
                "confidence": label.confidence,
                "confidence_source": (label.raw_response or {}).get("confidence_from", "samples"),
                "rationale": label.rationale,
            }
        )
    rows.sort(key=lambda row: (row["issue"], row["machine"], row.pop("position")))
    return rows


def machine_runs_record(*, study: Study) -> list[dict[str, Any]]:
    """Every machine run of the study, oldest first, as a paper's methods section reports it."""
    runs = (
        MachineRun.objects.filter(annotator__study=study)
        .select_related("annotator", "codebook_version__codebook")
        .order_by("created_at", "id")
    )
    return [
        {
            "run": run.pk,
            "machine": run.annotator.name,
            "kind": run.annotator.kind,
            "counts_as_rater": run.annotator.counts_toward_k,
            "status": run.status,
            "model": (run.parameters or {}).get("model") or run.annotator.model,
            "models_answering": (run.parameters or {}).get("models_answering", []),
            "endpoint_host": run.endpoint_host,
            "parameters": run.parameters,
            "prompt_hash": run.prompt_hash,
            "settings_hash": run.settings_hash,
            "codebook": {
                "name": run.codebook_version.codebook.name,
                "version": run.codebook_version.label,
            },
            "created_at": run.created_at.isoformat(),
            "started_at": run.started_at.isoformat() if run.started_at else None,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "items_total": run.items_total,
            "items_done": run.items_done,
            "items_skipped": run.items_skipped,
            "items_failed": run.items_failed,
            "requests": run.requests,
            "tokens_in": run.tokens_in,
            "tokens_out": run.tokens_out,
        }
        for run in runs
    ]


def machine_labels_csv(*, study: Study) -> str:
    """The machine labels as CSV: categories joined by ";" (empty: none applies)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=LABEL_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in machine_label_rows(study=study):
        writer.writerow(row | {"categories": ";".join(row["categories"])})
    return buffer.getvalue()


def machine_runs_json(*, study: Study) -> bytes:
    """The runs' records, with the study's design: whether a machine counts as one of its k
    raters ("one human replaced") and which."""
    rater = MachineAnnotator.objects.filter(study=study, counts_toward_k=True).first()
    return orjson.dumps(
        {
            "study": study.slug,
            "design": "one_human_replaced" if rater else "machines_apart",
            "machine_rater": rater.name if rater else None,
            "runs": machine_runs_record(study=study),
        },
        option=orjson.OPT_INDENT_2,
    )
