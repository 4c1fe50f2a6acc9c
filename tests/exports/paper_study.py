"""A study with known gold labels across two repositories and two rounds, made through the
services (two annotators submit; an adjudicator settles the one disagreement), for the tests of
the paper's tables, their page and their API.

    item  system     round  gold labels
    D1    DeepSpeed  Pilot  crash_exception, external_api_misuse, fix_api_usage, model_init,
                            parallel {data_parallel, tensor_parallel}
    M1    Megatron   Pilot  out_of_memory, external_api_misuse, memory_fix, forward_backward,
                            parallel {tensor_parallel, pipeline_parallel}
    D2    DeepSpeed  Main   crash_native, internal_api_misuse, parameter_handling, checkpointing,
                            parallel {data_parallel}
    D3    DeepSpeed  Main   hang, race_condition, sync_communication_fix, gradient_sync_optimizer,
                            parallel {} (none applies)
    D4    DeepSpeed  Main   screened out (not_a_bug): no other gold label
    M2    Megatron   Main   crash_exception, wrong_default (annotators said wrong_default and
                            config_propagation; the adjudicator chose wrong_default),
                            parameter_handling, model_init, parallel {pipeline_parallel}
"""

from labeling.models import Assignment, Round
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.resolutions import resolution_decide
from labeling.services.studies import round_save, study_create, study_items_add

DEEPSPEED = "microsoft/DeepSpeed"
MEGATRON = "NVIDIA/Megatron-LM"


def labels(symptom, root_cause, fix, stage, parallel) -> dict[str, list[str]]:
    return {
        "screening": ["include"],
        "symptom": [symptom],
        "root_cause": [root_cause],
        "fix_pattern": [fix],
        "debugging_practice": ["error_message_analysis"],
        "testing_practice": ["no_test_change"],
        "training_stage": [stage],
        "parallel_feature": parallel,
    }


GOLD = {
    "D1": labels(
        "crash_exception", "external_api_misuse", "fix_api_usage", "model_initialization",
        ["data_parallel", "tensor_parallel"],
    ),
    "M1": labels(
        "out_of_memory", "external_api_misuse", "memory_fix", "forward_backward",
        ["tensor_parallel", "pipeline_parallel"],
    ),
    "D2": labels(
        "crash_native", "internal_api_misuse", "parameter_handling", "checkpointing",
        ["data_parallel"],
    ),
    "D3": labels("hang", "race_condition", "sync_communication_fix", "gradient_sync_optimizer", []),
    "D4": {"screening": ["not_a_bug"]},
    "M2": labels(
        "crash_exception", "wrong_default", "parameter_handling", "model_initialization",
        ["pipeline_parallel"],
    ),
}  # fmt: skip


def submit(item, user, answers: dict[str, list[str]]) -> None:
    assignment = Assignment.objects.get(item=item, annotator=user)
    assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
        submit=True,
    )


def paper_study(*, codebook_version, sample_issues, people, slug: str = "paper"):
    """The study of the table above; returns (study, items by name)."""
    by_repository: dict[str, list] = {}
    for issue in sample_issues:
        by_repository.setdefault(issue.repository.full_name, []).append(issue)
    deepspeed, megatron = by_repository[DEEPSPEED], by_repository[MEGATRON]
    issues = {"D1": deepspeed[0], "M1": megatron[0], "D2": deepspeed[1], "D3": deepspeed[2]}
    issues |= {"D4": deepspeed[3], "M2": megatron[1]}
    first, second = people["annotator1"], people["annotator2"]
    study = study_create(
        slug=slug,
        name="Paper tables",
        codebook_version=codebook_version,
        k=2,
        annotators=[first, second],
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
        issues=[issues["D1"], issues["M1"]],
        round_name="Pilot",
        round_kind=Round.Kind.PILOT,
    )
    round_save(study=study, name="Main")
    study_items_add(study=study, issue_ids=[issues[name].id for name in ("D2", "D3", "D4", "M2")])
    items = {name: study.items.get(issue=issue) for name, issue in issues.items()}
    for name, item in items.items():
        submit(item, first, GOLD[name])
        if name == "M2":
            submit(item, second, GOLD[name] | {"root_cause": ["config_propagation"]})
        else:
            submit(item, second, GOLD[name])
    resolution_decide(
        item=items["M2"],
        dimension_key="root_cause",
        user=people["adjudicator"],
        category_keys=["wrong_default"],
        method="adjudicated",
    )
    for item in items.values():
        item.refresh_from_db()
    return study, items
