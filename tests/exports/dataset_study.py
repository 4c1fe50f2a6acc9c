"""A study with every kind of gold label (consensus, majority, adjudicated, discussion), raw
labels and unfinished items, made through the services, for the dataset export's tests. Test
modules take it with `resolved_study_make` in a fixture of their own."""

from labeling.models import Study
from labeling.services.resolutions import resolution_decide
from labeling.services.studies import round_save, study_create, study_items_add
from tests.labeling.test_resolution import submit  # SCREENED_IN with changes, submitted

SAMPLING = {"method": "random", "size": 12, "seed": 7, "selection": {"state": "closed"}}


def resolved_study_make(codebook_version, sample_issues, people, make_user) -> Study:
    """12 items of 3 annotators each under the majority rule, in a pilot and a main round:
    consensus (items 0-2, with a multi-label answer), majority (3, 4 and 8, where one annotator
    screened out), an adjudicator's decision of a child category (5), a decision in discussion
    (6), all screened out (7), one annotator of three submitted (9), nothing yet (10, 11)."""
    annotators = [people["annotator1"], people["annotator2"], make_user("annotator3")]
    study = study_create(
        slug="export-me",
        name="Export me",
        codebook_version=codebook_version,
        k=3,
        resolution_rule="majority",
        required_dimensions=["screening", "symptom", "root_cause", "fix_pattern"],
        annotators=annotators,
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
        issues=sample_issues[:6],
        sampling=SAMPLING,
        round_name="Pilot",
        round_kind="pilot",
    )
    pilot = round_save(
        study=study, name="Pilot", kind="pilot", target_kappa=0.6, round=study.rounds.get()
    )
    pilot.dimension_targets = {"screening": 0.8}  # a target of its own for one dimension
    pilot.save(update_fields=["dimension_targets"])
    main = round_save(study=study, name="Main")
    study_items_add(study=study, issue_ids=[issue.id for issue in sample_issues[6:12]], round=main)
    items = list(study.items.order_by("id"))
    first, second, third = annotators
    for item in items[:3]:
        for user in annotators:
            submit(item, user, parallel_feature=["data_parallel", "offloading"])
    for item in items[3:5]:
        submit(item, first)
        submit(item, second)
        submit(
            item,
            third,
            root_cause=["configuration_error"],
            debugging_practice=["error_message_analysis", "code_inspection"],
        )
    for item in items[5:7]:
        submit(item, first)
        submit(item, second, root_cause=["configuration_error"])
        submit(item, third, root_cause=["general_code_error"])
    adjudicator = people["adjudicator"]
    resolution_decide(
        item=items[5],
        dimension_key="root_cause",
        user=adjudicator,
        category_keys=["internal_api_misuse"],
        method="adjudicated",
        note="the traceback shows it",
    )
    resolution_decide(
        item=items[6],
        dimension_key="root_cause",
        user=people["manager"],
        category_keys=["type_error"],
        method="discussion",
    )
    for user in annotators:
        submit(items[7], user, screening=["not_a_bug"])
    submit(items[8], first, screening=["duplicate"])
    submit(items[8], second)
    submit(items[8], third)
    submit(items[9], first)
    return study
