"""The demo's finished pilot: a second demo study whose pilot round the two demo annotators have
labeled, with some disagreements resolved and some left open, so that the agreement,
disagreement, report and export pages show something on a first run.

Its labels, discussions and decisions come from a file bundled with the code
(`labeling/data/demo-pilot.json`), written for the demo: they are illustrative, never research
data, and the study says so in its slug (the `study` column of every exported row and the name
of every exported file), its name and its description (the `study_settings` of an export).
They are written through the services the pages use (the labeling page's save, the discussion,
the adjudicator's decision), so that revisions, the items' states and the consensus gold labels
are those a real pilot would have. Not the annotation import: it records labels made outside
the tool, without time spent or the codebook version they were given under.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.exceptions import ApplicationError
from common.text import issue_reference_parse
from corpus.models import Issue
from corpus.selectors import repository_by_name
from labeling.models import Assignment, Round, Study, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.resolutions import discussion_comment_add, resolution_decide
from labeling.services.studies import round_save, study_create
from taxonomy.models import CodebookVersion

DEMO_PILOT_FILE = Path(__file__).resolve().parent.parent / "data" / "demo-pilot.json"


@dataclass(frozen=True)
class DemoPilot:
    """The bundled file, read: what the study is called and what happened to each item."""

    slug: str
    name: str
    description: str
    round_name: str
    target_kappa: float | None
    items: list[dict]


def demo_pilot_read(path: Path = DEMO_PILOT_FILE) -> DemoPilot:
    data = json.loads(path.read_text(encoding="utf-8"))
    study = data["study"]
    return DemoPilot(
        slug=study["slug"],
        name=study["name"],
        description=study["description"],
        round_name=study["round"],
        target_kappa=study.get("target_kappa"),
        items=data["items"],
    )


@transaction.atomic
def study_demo_pilot_create(
    *,
    codebook_version: CodebookVersion,
    users: dict[str, AbstractBaseUser],
    manager: AbstractBaseUser,
    adjudicator: AbstractBaseUser,
    pilot: DemoPilot | None = None,
) -> Study:
    """Create the demo's pilot study, labeled, discussed and partly resolved as the file says.

    `users` maps the file's usernames (annotators, and whoever writes in a discussion) to
    accounts. All or nothing: a problem (an issue of the file missing from the corpus, a label
    the codebook version does not know) is an ApplicationError and nothing is written.
    """
    pilot = pilot or demo_pilot_read()
    annotator_names = sorted({name for item in pilot.items for name in item["labels"]})
    issues = [_issue(item["issue"]) for item in pilot.items]
    study = study_create(
        slug=pilot.slug,
        name=pilot.name,
        codebook_version=codebook_version,
        k=len(annotator_names),
        blind=True,
        annotators=[users[name] for name in annotator_names],
        managers=[manager],
        adjudicators=[adjudicator],
        issues=issues,
        round_name=pilot.round_name,
        round_kind=Round.Kind.PILOT,
    )
    study.description = pilot.description
    study.save(update_fields=["description"])
    round_save(
        study=study,
        name=pilot.round_name,
        kind=Round.Kind.PILOT,
        target_kappa=pilot.target_kappa,
        round=study.rounds.get(),
    )
    items = {item.issue_id: item for item in StudyItem.objects.filter(study=study)}
    for issue, entry in zip(issues, pilot.items, strict=True):
        item = items[issue.pk]
        for name, labels in entry["labels"].items():
            rationales = labels.get("rationale", {})
            assignment_save(
                assignment=Assignment.objects.get(item=item, annotator=users[name]),
                user=users[name],
                answers={
                    key: DimensionAnswer(category_keys=keys, rationale=rationales.get(key, ""))
                    for key, keys in labels["answers"].items()
                },
                submit=True,
                seconds_spent=labels.get("seconds"),
            )
        for name, body in entry.get("discussion", []):
            discussion_comment_add(item=item, user=users[name], body=body)
        for key, decision in entry.get("decisions", {}).items():
            resolution_decide(
                item=item,
                dimension_key=key,
                user=adjudicator,
                category_keys=decision["labels"],
                method=decision["method"],
                note=decision.get("note", ""),
            )
    return study


def _issue(reference: str) -> Issue:
    owner, name, number = issue_reference_parse(reference)
    repository = repository_by_name(owner=owner, name=name)
    issue = (
        Issue.objects.filter(repository=repository, number=number).first() if repository else None
    )
    if issue is None:
        raise ApplicationError(f"The demo pilot needs {reference}, which is not in the corpus.")
    return issue
