"""The prompt of a machine annotator and the shape of its answer, both derived from the study's
pinned codebook version: the codebook text (definitions, include/exclude notes, examples,
single/multi-label, the screening rule), the JSON schema the answer must match, a small
validator for that schema, and the issue cut to a stated character budget.

The validator covers the keywords `answer_schema` uses (type, properties, required,
additionalProperties, items, enum, maxItems, uniqueItems), which is all it has to check; a
general JSON-schema library would be one more dependency for the same answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Changing the wording below changes every prompt hash: earlier runs' items are labeled again.
TEMPLATE_VERSION = "issuecoder-machine-prompt/1"
SCHEMA_NAME = "issue_labels"
MAX_COMMENT_CHARS = 2000
# Share of the issue budget the body may take before the comments have their turn.
BODY_SHARE = 0.6

INSTRUCTIONS = """\
You label GitHub issues for an empirical software-engineering study, against the codebook below.
Read the issue and, for every dimension, choose the categories whose definition fits, following
their include and exclude notes. A single-label dimension takes at most one category; a
multi-label one takes every category that applies. An empty list means that no category applies.
A dimension with a screening rule is answered only when the rule holds; otherwise answer it with
an empty list. Give for every dimension a one-sentence rationale that cites the issue.
Answer with one JSON object matching the schema between BEGIN SCHEMA and END SCHEMA, nothing else.
"""

USER_TEMPLATE = """\
Issue {repository}#{number} ({state}; labels: {labels})
Title: {title}

Body:
{body}

Comments ({comments_shown} of {comments_count} shown):
{comments}

Linked fixes:
{linked_fixes}

(The issue text is cut to {budget} characters.)
"""


@dataclass(frozen=True)
class CategoryText:
    key: str
    name: str
    definition: str
    include: str
    exclude: str
    examples: list[str]
    parent: str | None


@dataclass(frozen=True)
class DimensionText:
    key: str
    name: str
    description: str
    multi_label: bool
    applies_when: dict[str, list[str]]
    categories: list[CategoryText]


@dataclass(frozen=True)
class IssueText:
    repository: str
    number: int
    state: str
    labels: list[str]
    title: str
    body: str
    comments: list[tuple[str, str]]  # (author, body), oldest first
    linked_fixes: list[str]  # one line each


def answer_schema(dimensions: Sequence[DimensionText]) -> dict:
    """The JSON schema of an answer: one property per dimension, each {categories, rationale},
    every property required and nothing else allowed (as structured-output endpoints want)."""
    properties = {}
    for dimension in dimensions:
        categories: dict = {
            "type": "array",
            "items": {"type": "string", "enum": [c.key for c in dimension.categories]},
            "uniqueItems": True,
        }
        if not dimension.multi_label:
            categories["maxItems"] = 1
        properties[dimension.key] = {
            "type": "object",
            "properties": {"categories": categories, "rationale": {"type": "string"}},
            "required": ["categories", "rationale"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def response_format_of(schema: dict) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True},
    }


def system_prompt(*, codebook: str, dimensions: Sequence[DimensionText], schema: dict) -> str:
    parts = [INSTRUCTIONS, f"Codebook: {codebook}", ""]
    for dimension in dimensions:
        kind = "multi-label" if dimension.multi_label else "single-label"
        parts.append(f"## {dimension.name} (key {dimension.key}; {kind})")
        if dimension.description:
            parts.append(dimension.description.strip())
        for other, keys in dimension.applies_when.items():
            parts.append(f"Screening rule: answer only when {other} is one of: {', '.join(keys)}.")
        for category in dimension.categories:
            indent = "  " if category.parent else ""
            under = f" (a kind of {category.parent})" if category.parent else ""
            parts.append(f"{indent}- {category.key}: {category.name}{under}")
            for label, text in (
                ("Definition", category.definition),
                ("Include", category.include),
                ("Exclude", category.exclude),
                ("Examples", ", ".join(category.examples)),
            ):
                if text and text.strip():
                    parts.append(f"{indent}  {label}: {' '.join(text.split())}")
        parts.append("")
    parts += ["BEGIN SCHEMA", json.dumps(schema, sort_keys=True), "END SCHEMA"]
    return "\n".join(parts)


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    if limit <= 0:
        return "[cut]" if text else ""
    return text if len(text) <= limit else text[: max(0, limit - 6)].rstrip() + " [cut]"


def user_prompt(issue: IssueText, *, budget: int) -> str:
    """The issue as the model reads it: title, body, comments and linked fixes, the text cut to
    `budget` characters (the body to BODY_SHARE of it; the comments, oldest first, share the
    rest, each to MAX_COMMENT_CHARS)."""
    title = _cut(issue.title, 500)
    body = _cut(issue.body, int(budget * BODY_SHARE))
    left = budget - len(title) - len(body)
    shown = []
    for author, text in issue.comments:
        if left <= 0:
            break
        piece = f"[{author}]: {_cut(text, min(MAX_COMMENT_CHARS, left))}"
        shown.append(piece)
        left -= len(piece)
    return USER_TEMPLATE.format(
        repository=issue.repository,
        number=issue.number,
        state=issue.state,
        labels=", ".join(issue.labels) or "none",
        title=title,
        body=body or "(empty)",
        comments_shown=len(shown),
        comments_count=len(issue.comments),
        comments="\n\n".join(shown) or "(none)",
        linked_fixes="\n".join(issue.linked_fixes) or "(none)",
        budget=budget,
    )


def prompt_template(system: str) -> str:
    """What a run records as its prompt: the system message and the user message's template."""
    return f"{TEMPLATE_VERSION}\n\n[system]\n{system}\n\n[user]\n{USER_TEMPLATE}"


def sha256_of(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Validation and the samples' majority
# ---------------------------------------------------------------------------------------------


class AnswerInvalid(ValueError):
    """An answer that is not JSON or does not match the schema; nothing of it is stored."""


def schema_errors(value: object, schema: dict, path: str = "$") -> list[str]:
    """Where `value` breaks `schema` (the keywords of `answer_schema`), at most a few."""
    errors: list[str] = []
    expected = schema.get("type")
    types = {"object": dict, "array": list, "string": str}
    if expected in types and not isinstance(value, types[expected]):
        return [f"{path}: expected {expected}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of the allowed values"]
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [
            f"{path}: {name!r} is missing"
            for name in schema.get("required", [])
            if name not in value
        ]
        if schema.get("additionalProperties") is False:
            errors += [
                f"{path}: {name!r} is not allowed" for name in value if name not in properties
            ]
        for name, part in properties.items():
            if name in value:
                errors += schema_errors(value[name], part, f"{path}.{name}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} item(s)")
        if schema.get("uniqueItems") and len({json.dumps(v) for v in value}) != len(value):
            errors.append(f"{path}: repeated items")
        if "items" in schema:
            for index, element in enumerate(value):
                errors += schema_errors(element, schema["items"], f"{path}[{index}]")
    return errors[:5]


def answer_parse(content: str | None, schema: dict) -> dict:
    """The answer of one sample, checked against the schema; AnswerInvalid otherwise."""
    if not content:
        raise AnswerInvalid("empty answer")
    text = content.strip()
    # Some servers wrap JSON in a Markdown fence even when told not to.
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        answer = json.loads(text)
    except ValueError as error:
        raise AnswerInvalid(f"not JSON: {error}") from None
    errors = schema_errors(answer, schema)
    if errors:
        raise AnswerInvalid("does not match the schema: " + "; ".join(errors))
    return answer


@dataclass(frozen=True)
class Consensus:
    categories: list[str]
    confidence: float  # see samples_consensus
    rationale: str
    samples: list[dict]
    confidence_from: str = "samples"  # or "logprobs"


def samples_consensus(
    answers: Sequence[dict],
    dimension_key: str,
    probabilities: Sequence[float | None] | None = None,
) -> Consensus:
    """The majority answer of the samples on one dimension (ties: the earliest sample's), and
    the rationale of its first sample. Its confidence: the share of the samples that gave it,
    times, when every sample of the majority has one, the mean of the `probabilities` the model
    gave their categories (`categories_probability`, from log-probabilities)."""
    parts = [answer[dimension_key] for answer in answers]
    sets = [tuple(sorted(part["categories"])) for part in parts]
    majority, count = Counter(sets).most_common(1)[0]
    first = parts[sets.index(majority)]
    confidence = count / len(parts)
    chosen = [
        probabilities[index]
        for index, answer_set in enumerate(sets)
        if answer_set == majority and probabilities
    ]
    from_logprobs = bool(chosen) and all(p is not None for p in chosen)
    if from_logprobs:
        confidence *= sum(chosen) / len(chosen)
    return Consensus(
        categories=list(majority),
        confidence=round(confidence, 6),
        rationale=first["rationale"],
        samples=parts,
        confidence_from="logprobs" if from_logprobs else "samples",
    )


def categories_probability(response: dict, dimension_key: str) -> float | None:
    """The probability the model gave the categories it wrote for one dimension: exp of the
    summed log-probabilities of the tokens of that dimension's "categories" array, from a raw
    chat completion that carries them; None when it does not (or its tokens do not spell its
    content, or the array is not found)."""
    try:
        choice = response["choices"][0]
        content = choice["message"]["content"]
        tokens = choice["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not content or not tokens:
        return None
    try:
        spelled = [(token["token"], float(token["logprob"])) for token in tokens]
    except (KeyError, TypeError, ValueError):
        return None
    if "".join(text for text, _ in spelled) != content:
        return None
    key = re.search(r'"' + re.escape(dimension_key) + r'"\s*:\s*\{', content)
    if key is None:
        return None
    array = re.compile(r'"categories"\s*:\s*\[').search(content, key.end())
    if array is None:
        return None
    start = array.end()
    end = content.find("]", start)
    if end < 0:
        return None
    total, position = 0.0, 0
    for text, logprob in spelled:
        token_start, position = position, position + len(text)
        if position > start and token_start < end + 1:
            total += logprob
    return math.exp(total)
