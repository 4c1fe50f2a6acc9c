"""The prompt and the answer's schema, derived from the codebook (no database)."""

import pytest

from machines.prompts import (
    AnswerInvalid,
    CategoryText,
    DimensionText,
    IssueText,
    answer_parse,
    answer_schema,
    samples_consensus,
    system_prompt,
    user_prompt,
)

DIMENSIONS = [
    DimensionText(
        key="screening",
        name="Screening",
        description="",
        multi_label=False,
        applies_when={},
        categories=[
            CategoryText("include", "Include", "A bug.", "", "", [], None),
            CategoryText("not_a_bug", "Not a bug", "", "", "Questions.", [], None),
        ],
    ),
    DimensionText(
        key="practice",
        name="Practice",
        description="What they did.",
        multi_label=True,
        applies_when={"screening": ["include"]},
        categories=[
            CategoryText("logs", "Logs", "Read logs.", "Stack traces.", "", ["o/r#1"], None),
            CategoryText("bisect", "Bisect", "", "", "", [], "logs"),
        ],
    ),
]
SCHEMA = answer_schema(DIMENSIONS)


def test_the_system_prompt_carries_the_codebook():
    text = system_prompt(codebook="Book 1.0", dimensions=DIMENSIONS, schema=SCHEMA)
    for expected in (
        "Codebook: Book 1.0",
        "## Practice (key practice; multi-label)",
        "Screening rule: answer only when screening is one of: include.",
        "- logs: Logs",
        "Include: Stack traces.",
        "Exclude: Questions.",
        "Examples: o/r#1",
        "  - bisect: Bisect (a kind of logs)",
        "BEGIN SCHEMA",
    ):
        assert expected in text


def test_the_issue_is_cut_to_its_budget():
    issue = IssueText(
        repository="o/r",
        number=7,
        state="closed",
        labels=["bug"],
        title="Crash",
        body="b" * 50_000,
        comments=[("alice", "c" * 5000)] * 20,
        linked_fixes=["pr 8: 2 files, +3 -1"],
    )
    text = user_prompt(issue, budget=4000)
    assert "Issue o/r#7 (closed; labels: bug)" in text and "pr 8: 2 files, +3 -1" in text
    assert text.count("b") >= 2000 and "[cut]" in text
    assert len(text) < 4000 + 600  # the budget plus the template's own words
    assert "(The issue text is cut to 4000 characters.)" in text


@pytest.mark.parametrize(
    "content, error",
    [
        (None, "empty"),
        ("{not json", "not JSON"),
        ('{"screening": {"categories": ["include"], "rationale": "r"}}', "'practice' is missing"),
        (
            '{"screening": {"categories": ["include", "not_a_bug"], "rationale": "r"},'
            ' "practice": {"categories": [], "rationale": "r"}}',
            "more than 1",
        ),
        (
            '{"screening": {"categories": ["maybe"], "rationale": "r"},'
            ' "practice": {"categories": [], "rationale": "r"}}',
            "not one of the allowed values",
        ),
        (
            '{"screening": {"categories": [], "rationale": 3},'
            ' "practice": {"categories": ["logs", "logs"], "rationale": "r", "x": 1}}',
            "expected string",
        ),
    ],
)
def test_answers_that_break_the_schema_are_refused(content, error):
    with pytest.raises(AnswerInvalid, match=error):
        answer_parse(content, SCHEMA)


def test_a_valid_answer_in_a_fence_is_read():
    answer = answer_parse(
        '```json\n{"screening": {"categories": ["include"], "rationale": "r"},'
        ' "practice": {"categories": ["logs", "bisect"], "rationale": "r"}}\n```',
        SCHEMA,
    )
    assert answer["practice"]["categories"] == ["logs", "bisect"]


def test_the_majority_of_the_samples_and_its_share():
    answers = [
        {"d": {"categories": ["b", "a"], "rationale": "first"}},
        {"d": {"categories": ["c"], "rationale": "second"}},
        {"d": {"categories": ["a", "b"], "rationale": "third"}},
    ]
    consensus = samples_consensus(answers, "d")
    assert consensus.categories == ["a", "b"]
    assert consensus.confidence == pytest.approx(2 / 3)
    assert consensus.rationale == "first"
