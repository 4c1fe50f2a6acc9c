"""A study's stored sampling rule (`Study.sampling`) in the words a paper would use: "stratified,
100 per repository, seed 7, of closed issues with a linked fix, from …"."""

from datetime import datetime


def _quoted(words: list[str]) -> str:
    return ", ".join(f"“{word}”" for word in words)


def _names(names: list[str]) -> str:
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _day(value: str | None) -> str | None:
    return datetime.fromisoformat(value).date().isoformat() if value else None


def sampling_method_in_words(sampling: dict) -> str:
    method, size, per_repository = (
        sampling.get("method"),
        sampling.get("size"),
        sampling.get("per_repository"),
    )
    if method == "random":
        return f"random, {size} in all"
    if method == "stratified" and per_repository is not None:
        return f"stratified, {per_repository} per repository"
    if method == "stratified":
        return f"stratified, {size} in all in proportion to the repositories"
    return "every matching issue"


def selection_in_words(selection: dict) -> str:
    state = selection.get("state", "any")
    words = [f"{state} issues" if state in ("open", "closed") else "issues"]
    labels = selection.get("labels") or []
    if len(labels) == 1:
        words.append(f"labeled {_quoted(labels)}")
    elif labels:
        match = "all" if selection.get("labels_match") == "all" else "any"
        words.append(f"labeled {match} of {_quoted(labels)}")
    has_fix = selection.get("has_fix")
    if has_fix is not None:
        words.append("with a linked fix" if has_fix else "without a linked fix")
    after, before = _day(selection.get("created_after")), _day(selection.get("created_before"))
    if after and before:
        words.append(f"created from {after} to before {before}")
    elif after:
        words.append(f"created on or after {after}")
    elif before:
        words.append(f"created before {before}")
    if selection.get("query"):
        words.append(f"mentioning {_quoted(selection['query'].split())}")
    repositories = selection.get("repositories") or []
    words.append(f"from {_names(repositories)}" if repositories else "from every repository")
    return " ".join(words)


def rounds_in_words(rounds: list[dict]) -> str:
    parts = []
    for plan in rounds:
        taken = "the rest" if plan.get("size") is None else f"the next {plan['size']}"
        if not parts and plan.get("size") is not None:
            taken = f"the first {plan['size']}"
        kind = plan.get("kind", "main")
        name = plan["name"] if plan["name"].lower() == kind else f"{plan['name']} ({kind})"
        parts.append(f"{name} takes {taken}")
    return "; ".join(parts)


def sampling_in_words(sampling: dict | None) -> str | None:
    """One sentence, or None for a study made from a list of issues (no rule stored)."""
    if not sampling or "method" not in sampling:
        return None
    sentence = (
        f"{sampling_method_in_words(sampling).capitalize()}, seed {sampling.get('seed')}, "
        f"of {selection_in_words(sampling.get('selection') or {})}"
    )
    if len(sampling.get("rounds") or []) > 1:
        sentence += f". Rounds: {rounds_in_words(sampling['rounds'])}"
    return sentence + "."
