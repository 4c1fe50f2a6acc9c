"""Open coding: the new categories annotators propose while labeling ("propose a new category"),
collected per dimension for the study's managers, and what the managers make of them.

Proposals of one dimension are grouped by their text with case and spaces folded, so "Silent
NaN" and "silent  nan" count together. A manager either maps a group to an existing category
(the proposal meant it) or creates it as a category of a draft of the next codebook version.
Either way the decision is recorded (ProposalDecision) and the annotators' labels stay as they
are: they chose what they chose, and a new category reaches them with the next version.
"""

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.access import codebook_can_edit, study_can_change_codebook
from labeling.models import Annotation, ProposalDecision, Study
from taxonomy.drafts import (
    codebook_draft_create,
    codebook_draft_for_study_version,
    draft_category_add,
)
from taxonomy.models import Category, CodebookVersion

MAX_EXAMPLES = 5


def proposal_normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class ProposalExample:
    item_id: int
    reference: str  # owner/name#number
    url: str  # the issue on GitHub


@dataclass
class ProposalGroup:
    dimension_key: str
    text: str  # normalised
    spellings: list[str]  # as written, most frequent first
    count: int = 0
    annotators: int = 0
    examples: list[ProposalExample] = field(default_factory=list)
    decision: ProposalDecision | None = None

    @property
    def label(self) -> str:
        return self.spellings[0] if self.spellings else self.text


def study_proposals(*, study: Study) -> list[tuple[str, str, list[ProposalGroup]]]:
    """Per dimension of the study (in codebook order): (key, name, groups), the groups most
    proposed first. Two queries whatever the number of proposals."""
    rows = (
        Annotation.objects.filter(assignment__item__study=study)
        .exclude(proposal="")
        .values_list(
            "dimension__key",
            "proposal",
            "assignment__annotator_id",
            "assignment__item_id",
            "assignment__item__issue__repository__owner",
            "assignment__item__issue__repository__name",
            "assignment__item__issue__number",
        )
        .order_by("assignment__item_id")
    )
    groups: dict[tuple[str, str], ProposalGroup] = {}
    spellings: dict[tuple[str, str], Counter] = defaultdict(Counter)
    annotators: dict[tuple[str, str], set[int]] = defaultdict(set)
    for dimension_key, proposal, annotator_id, item_id, owner, name, number in rows:
        text = proposal_normalise(proposal)
        if not text:
            continue
        key = (dimension_key, text)
        group = groups.setdefault(key, ProposalGroup(dimension_key, text, []))
        group.count += 1
        spellings[key][" ".join(proposal.split())] += 1
        annotators[key].add(annotator_id)
        if len(group.examples) < MAX_EXAMPLES and all(
            example.item_id != item_id for example in group.examples
        ):
            group.examples.append(
                ProposalExample(
                    item_id,
                    f"{owner}/{name}#{number}",
                    f"https://github.com/{owner}/{name}/issues/{number}",
                )
            )
    for key, group in groups.items():
        group.spellings = [spelling for spelling, _ in spellings[key].most_common()]
        group.annotators = len(annotators[key])
    for decision in ProposalDecision.objects.filter(study=study).select_related(
        "category", "version", "decided_by"
    ):
        group = groups.get((decision.dimension_key, decision.text))
        if group is not None:
            group.decision = decision
    by_dimension: dict[str, list[ProposalGroup]] = defaultdict(list)
    for group in groups.values():
        by_dimension[group.dimension_key].append(group)
    dimensions = study.codebook_version.dimensions.order_by("position")
    return [
        (
            dimension.key,
            dimension.name,
            sorted(by_dimension[dimension.key], key=lambda g: (-g.count, g.text)),
        )
        for dimension in dimensions
        if by_dimension.get(dimension.key)
    ]


def _check(study: Study, user: AbstractBaseUser) -> None:
    if not study_can_change_codebook(study=study, user=user):
        raise PermissionDeniedError("Only the study's managers decide on proposed categories.")


def _group(study: Study, dimension_key: str, text: str) -> ProposalGroup:
    text = proposal_normalise(text)
    for key, _, groups in study_proposals(study=study):
        if key == dimension_key:
            for group in groups:
                if group.text == text:
                    return group
    raise ApplicationError(
        f"Nobody proposed {text!r} on {dimension_key} in this study.",
        {"text": ["no such proposal"]},
    )


def _decide(
    *,
    study: Study,
    group: ProposalGroup,
    kind: str,
    category: Category,
    version: CodebookVersion,
    by: AbstractBaseUser,
) -> ProposalDecision:
    decision, _ = ProposalDecision.objects.update_or_create(
        study=study,
        dimension_key=group.dimension_key,
        text=group.text,
        defaults={
            "kind": kind,
            "category": category,
            "category_key": category.key,
            "version": version,
            "decided_by": by,
        },
    )
    return decision


@transaction.atomic
def proposal_map(
    *, study: Study, dimension_key: str, text: str, category_key: str, by: AbstractBaseUser
) -> ProposalDecision:
    """Record that a proposal means an existing category of the study's codebook version."""
    _check(study, by)
    group = _group(study, dimension_key, text)
    version = study.codebook_version
    category = Category.objects.filter(
        dimension__version=version, dimension__key=dimension_key, key=category_key
    ).first()
    if category is None:
        raise ApplicationError(
            f"{category_key!r} is not a category of {dimension_key} in version {version.label}.",
            {"category": [f"unknown category {category_key}"]},
        )
    return _decide(
        study=study,
        group=group,
        kind=ProposalDecision.Kind.MAPPED,
        category=category,
        version=version,
        by=by,
    )


def _next_label(version: CodebookVersion) -> str:
    """1.0 -> 1.1, 0.1.0 -> 0.1.1, v2 -> v3; the first label not taken yet."""
    taken = set(version.codebook.versions.values_list("label", flat=True))
    match = re.match(r"^(.*?)(\d+)$", version.label)
    stem, number = (match.group(1), int(match.group(2))) if match else (f"{version.label}.", 0)
    while f"{stem}{number + 1}" in taken:
        number += 1
    return f"{stem}{number + 1}"


@transaction.atomic
def proposal_create_category(
    *,
    study: Study,
    dimension_key: str,
    text: str,
    key: str,
    name: str,
    by: AbstractBaseUser,
    parent_key: str | None = None,
    definition: str = "",
) -> ProposalDecision:
    """Create a proposal as a category of the draft of the study's next codebook version (the
    newest draft based on the study's version, else a new one), with the proposal's example
    issues as its examples."""
    _check(study, by)
    if not codebook_can_edit(codebook=study.codebook_version.codebook, user=by):
        raise PermissionDeniedError("You may not edit this codebook.")
    group = _group(study, dimension_key, text)
    draft = codebook_draft_for_study_version(version=study.codebook_version)
    if draft is None:
        draft = codebook_draft_create(
            version=study.codebook_version,
            label=_next_label(study.codebook_version),
            notes=f"Started from the proposals of {study.name}.",
        )
    dimension = draft.dimensions.filter(key=dimension_key).first()
    if dimension is None:
        raise ApplicationError(f"Version {draft.label} has no dimension {dimension_key}.")
    category = draft_category_add(
        dimension=dimension,
        key=key,
        name=name,
        parent_key=parent_key or None,
        definition=definition or f"Proposed by annotators: {group.label}",
        examples=[example.reference for example in group.examples],
    )
    return _decide(
        study=study,
        group=group,
        kind=ProposalDecision.Kind.CREATED,
        category=category,
        version=draft,
        by=by,
    )
