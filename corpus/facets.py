"""Facts pulled out of an issue's text to show annotators beside the issue.

:func:`issue_facets` reads the title, the body and the comment bodies as GitHub stores them
(Markdown, usually with pasted logs, tracebacks and environment reports) and returns a
JSON-serialisable dict with exactly the keys in :data:`FACET_KEYS`:

* ``exceptions``: exception types from tracebacks and error lines (``torch.cuda.OutOfMemoryError``)
  and error kinds from CUDA/NCCL messages (``CUDA error``, ``NCCL timeout``).
* ``features``: parallelism and training features under the labels in :data:`FEATURE_LABELS`.
* ``versions``: ``{"name": ..., "version": ...}`` for the software in :data:`VERSION_NAMES`.
* ``gpus``: ``{"count": int | None, "model": str | None}``, e.g. 8 x A100.
* ``systems_mentioned``: which of :data:`SYSTEM_NAMES` the text names.

Each list is in order of first appearance (title, then body, then comments), holds no
duplicates and stops at :data:`MAX_ITEMS_PER_FACET` entries.

Annotators read facets as hints, so a wrong fact costs more than a missing one. Hence:

* Exception names count only where Python prints them (line start, after ``raise``) or where
  the writer quotes them, never in running prose.
* A setting that switches a feature off (``"fp16": {"enabled": false}``,
  ``--tensor-model-parallel-size 1``, ``sequence_parallel ...... False`` in an argument dump)
  does not count as the feature, and neither does a longer setting that merely contains the
  feature's name (``fp8_margin ...... 0``, ``fsdp_config={...}``, ``ddp_timeout=1800``).
* Two-letter acronyms (TP, PP, DP, ...) need context, and are ignored inside URLs.
* The examples in issue templates (``[e.g. two machines with x8 A100s each]``) are ignored.

The module is pure (no Django, no I/O) and its regular expressions are linear in the input:
quantifiers that could run over a long line are bounded, so a pasted 1 MB log line cannot make a
pattern backtrack quadratically. Case-insensitive patterns run over a lower-cased copy of the
text, where Python's regex engine can skip ahead on a pattern's first letters; that makes them
several times faster than ``(?i)`` patterns.
"""

from __future__ import annotations

import bisect
import re
import string
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

FACET_KEYS = ("exceptions", "features", "versions", "gpus", "systems_mentioned")
MAX_ITEMS_PER_FACET = 20

# Issues with a pasted 1 MB log and hundreds of comments exist, and facets are computed for every
# issue at import time. Of each text only the first HEAD_CHARS and the last TAIL_CHARS are
# scanned: environment reports and launch commands sit at the top, while a long log ends with the
# exception that stopped it. All texts of one issue together are scanned up to ISSUE_CHARS.
HEAD_CHARS = 150_000
TAIL_CHARS = 50_000
ISSUE_CHARS = 1_000_000
# Exception names sit at the start of a line; the rest of a very long line is message or noise.
LINE_CHARS = 2_000

FEATURE_LABELS = (
    "ZeRO",  # only when no stage is named
    "ZeRO-1",
    "ZeRO-2",
    "ZeRO-3",
    "ZeRO++",
    "ZeRO-Infinity",
    "tensor parallel",
    "pipeline parallel",
    "sequence parallel",
    "context parallel",
    "expert parallel",
    "MoE",
    "data parallel",
    "model parallel",  # Megatron-LM v1 and DeepSpeed examples: --model-parallel-size
    "3D parallel",
    "FSDP",
    "offload",
    "fp16",
    "bf16",
    "fp8",
    "mixed precision",
    "activation checkpointing",
    "gradient accumulation",
    "LoRA",
    "quantization",
    "flash attention",
    "DeepSpeed-Inference",
    "torch.compile",
)
VERSION_NAMES = (
    "torch",
    "deepspeed",
    "transformers",
    "megatron-core",
    "accelerate",
    "cuda",
    "cudnn",
    "nccl",
    "python",
    "apex",
    "flash-attn",
    "peft",
    "triton",
)
SYSTEM_NAMES = ("deepspeed", "megatron", "transformers", "accelerate", "pytorch")

_ASCII = re.ASCII
_VERBOSE = re.ASCII | re.VERBOSE
_ALNUM = frozenset(string.ascii_letters + string.digits)


# --- Reading the text -----------------------------------------------------------------------


def _scannable_texts(title: str, body: str, comments: Sequence[str]) -> Iterator[tuple[bool, str]]:
    """(is_title, text) for the texts of one issue, each cut to its head and tail, until the
    issue budget runs out."""
    budget = ISSUE_CHARS
    texts = ((True, title), (False, body), *((False, comment) for comment in comments))
    for is_title, text in texts:
        if budget <= 0:
            return
        if not isinstance(text, str) or not text:
            continue
        if len(text) > HEAD_CHARS + TAIL_CHARS:
            tail = text[-TAIL_CHARS:]
            # Start the tail on a line boundary, so that its first line is not a fragment that
            # looks like a line start ("MemoryError: ..." cut from "OutOfMemoryError: ...").
            tail = tail[tail.find("\n") + 1 :] if "\n" in tail else ""
            text = text[:HEAD_CHARS] + "\n" + tail
        text = text[:budget].replace("\x00", "").replace("\r\n", "\n")
        budget -= len(text)
        yield is_title, text


def _lower_same_length(text: str) -> str:
    """text.lower(), keeping every character at its index so that match positions carry over."""
    lowered = text.lower()
    if len(lowered) != len(text):
        # U+0130 (I with dot above) is the one character whose lower case is two characters.
        lowered = text.replace("\u0130", "i").lower()
    return lowered


class _FirstSeen:
    """Values in order of first appearance, one per key, stopping at the facet cap."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    @property
    def full(self) -> bool:
        return len(self._values) >= MAX_ITEMS_PER_FACET

    def add(self, key: Hashable, value: Any = None) -> None:
        if key not in self._values and not self.full:
            self._values[key] = key if value is None else value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def values(self) -> list[Any]:
        return list(self._values.values())


class _Spans:
    """Sorted, non-overlapping character spans of one text, to ask whether a match is inside."""

    def __init__(self, matches: Iterable[re.Match[str]] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for match in matches:
            self._starts.append(match.start())
            self._ends.append(match.end())

    def __contains__(self, position: int) -> bool:
        index = bisect.bisect_right(self._starts, position) - 1
        return index >= 0 and position < self._ends[index]


_NO_SPANS = _Spans()


def _spans(pattern: re.Pattern[str], text: str, needle: str) -> _Spans:
    """`needle` is a substring that every match of `pattern` holds: most texts lack it, and a
    substring search is far cheaper than running the pattern."""
    return _Spans(pattern.finditer(text)) if needle in text else _NO_SPANS


# Run over the lower-cased text.
_URL = re.compile(r"(?:https?|ftp)://[^\s<>()\[\]`\"']{1,2000}", _ASCII)
# The example text of issue templates, e.g. DeepSpeed's "[e.g. two machines with x8 A100s each]".
_TEMPLATE_EXAMPLE = re.compile(r"\[e\.g\.[^\]\n]{0,300}\]", _ASCII)
# Half of all texts (short comments) hold no digit, and so no version and almost no GPU.
_DIGIT = re.compile(r"[0-9]", _ASCII)


def _follows(text: str, position: int, forbidden: frozenset[str]) -> bool:
    """Whether the character before position is one of forbidden (a word-boundary check)."""
    return position > 0 and text[position - 1] in forbidden


@dataclass(frozen=True)
class _Finder:
    """Where a pattern may match, found by a pattern that the regex engine can skip ahead on.

    A pattern that begins with a very common letter makes the engine try it at most positions of
    the text. A finder begins with a rarer character, which the engine looks for in a tight loop,
    and matches `offset` characters after every position where the pattern matches: it may match
    elsewhere too, but must not miss a match of the pattern.
    """

    pattern: re.Pattern[str]
    offset: int
    # Whether it runs over the lower-cased copy of the text rather than the text itself.
    reads_lowered: bool = True


def _located_matches(
    pattern: re.Pattern[str], text: str, lowered: str, finder: _Finder
) -> Iterable[re.Match[str]]:
    """The matches of pattern.finditer(text), none of which may be empty, read only where the
    finder matches. A match at one position is the match that finditer's search finds there: a
    look-behind sees the text before the position."""
    scanned = lowered if finder.reads_lowered else text
    found = finder.pattern.search(scanned, finder.offset)
    if found is None:
        return ()  # most texts: no generator to set up
    return _matches_from(pattern, text, scanned, finder, found)


def _matches_from(
    pattern: re.Pattern[str], text: str, scanned: str, finder: _Finder, found: re.Match[str]
) -> Iterator[re.Match[str]]:
    while True:
        start = found.start() - finder.offset
        match = pattern.match(text, start)
        if match is None:
            position = start + 1
        else:
            yield match
            position = match.end()
        found = finder.pattern.search(scanned, position + finder.offset)
        if found is None:
            return


def _matches_in_lines(
    pattern: re.Pattern[str], text: str, line_finder: re.Pattern[str]
) -> Iterator[re.Match[str]]:
    """The matches of pattern.finditer(text), for a pattern that never matches across a line
    break, read only in the lines where line_finder matches (within the line)."""
    position = 0  # always the start of a line
    while (found := line_finder.search(text, position)) is not None:
        start = text.rfind("\n", position, found.start()) + 1 or position
        end = text.find("\n", found.end()) + 1 or len(text)
        # The line break stays inside: the pattern's look-aheads see it as they would in text.
        yield from pattern.finditer(text, start, end)
        position = end


# --- Exceptions -----------------------------------------------------------------------------

_EXCEPTION_NAME = re.compile(
    r"""
    (?<![A-Za-z0-9_.])
    (?:[A-Za-z_][A-Za-z0-9_]{0,60}\.){0,8}              # module path: torch.cuda.
    (?:
        [A-Z][A-Za-z0-9_]{0,80}?(?:Error|Exception|Warning|Interrupt)
      | Exception | StopIteration | StopAsyncIteration | SystemExit | GeneratorExit
    )
    (?![A-Za-z0-9_])
    """,
    _VERBOSE,
)
# What may stand before an exception name for it to be at the start of a printed line: Markdown
# quoting, list bullets and table pipes, log tags ("[rank0]:", "[2024-01-01 10:00:00,123]"),
# HTML tags, pytest's "E   ", a pdsh host ("worker-1: ") or a warning's origin ("/x/y.py:12: ").
_LINE_PREFIX = re.compile(
    r"""
    (?:
        [ \t>*|#`+-]
      | \[[^\]\n]{0,80}\]:?
      | <[^<>\n]{0,40}>
      | E(?=[ \t])
      | [A-Za-z0-9_./~@][A-Za-z0-9_./~@-]{0,119}:(?:[0-9]{1,7}:)?(?=[ \t])
    )*
    """,
    _VERBOSE,
)
_RAISE_BEFORE = re.compile(r"(?<![A-Za-z0-9_])raise[ \t]+$", _ASCII)
_BLANK_TO_END = re.compile(r"\s*$", _ASCII)
_PREFIX_CHARS = 200
# Error kinds that are not Python class names but say as much: the CUDA and NCCL message families.
_ERROR_KIND = re.compile(
    r"""
      (?P<cuda>(?<![A-Za-z0-9])CUDA[ ]error(?:[ ]in)?:)
    | (?P<cudnn>(?<![A-Za-z0-9])(?:cuDNN|CUDNN|cudnn)[ ]error(?:[ ]in)?:)
    | (?P<nccl>(?<![A-Za-z0-9])NCCL[ ][Ee]rror(?![A-Za-z0-9]))
    | (?P<nccl_timeout>Watchdog[ ]caught[ ]collective[ ]operation[ ]timeout
        | NCCL[ ]operations[ ]have[ ]failed[ ]or[ ]timed[ ]out
        | (?<![A-Za-z0-9])NCCL[ ][Tt]imeout)
    | (?P<segfault>(?<![A-Za-z0-9])(?:Segmentation[ ]fault|SIGSEGV)(?![A-Za-z0-9]))
    | (?P<nccl_result>(?<![A-Za-z0-9])nccl(?:Unhandled[A-Za-z]{0,20}|Internal|System
        |Invalid[A-Za-z]{0,20}|Remote)Error(?![A-Za-z0-9]))
    """,
    _VERBOSE,
)
# Every kind above contains one of these. The kinds' pattern cannot skip ahead to where one
# may start, and was most of the time spent on a line with an exception in it.
_ERROR_KIND_HINT = re.compile(
    r"CUDA|cuDNN|CUDNN|cudnn|NCCL|nccl|Watchdog|Segmentation|SIGSEGV", _ASCII
)
_ERROR_KIND_LABELS = {
    "cuda": "CUDA error",
    "cudnn": "cuDNN error",
    "nccl": "NCCL error",
    "nccl_timeout": "NCCL timeout",
    "segfault": "Segmentation fault",
}
# Every name and kind above contains one of these; most lines of a log contain none.
_EXCEPTION_HINT = re.compile(
    r"rror|xception|Warning|nterrupt|StopIteration|SystemExit|GeneratorExit|NCCL|fault|SIGSEGV"
    r"|Watchdog",
    _ASCII,
)
_TRACEBACK_HEADER = "Traceback (most recent call last):"
# Beyond the suffix rule, a traceback's last line may name any class ("torch._dynamo.exc.
# BackendCompilerFailed: ..."); it is read after the frames, which are indented deeper.
_TRACEBACK_LAST_LINE = re.compile(
    r"(?P<name>(?:[A-Za-z_][A-Za-z0-9_]{0,60}\.){0,8}[A-Z][A-Za-z0-9_]{0,80})(?P<colon>:)?",
    _ASCII,
)
_LOG_TAGS = re.compile(r"(?:[ \t]*(?:\[[^\]\n]{0,80}\]:?|>|<[^<>\n]{0,40}>))*", _ASCII)
_INDENT = re.compile(r"[ \t]*", _ASCII)
# A traceback whose last line never comes (cut off, or pasted partially) stops being followed.
_TRACEBACK_MAX_LINES = 1_000


def _is_printed_exception(line: str, start: int, end: int) -> bool:
    """Whether the exception name at line[start:end] stands where Python prints one (line start,
    after raise) or is quoted as code, rather than being mentioned in prose."""
    after = line[end : end + 1]
    if start and line[start - 1] == "`" and after in (":", "`"):
        return True  # `KeyError: 'x'`
    if start > _PREFIX_CHARS:
        return False
    if _RAISE_BEFORE.search(line, 0, start):
        return True
    return (after == ":" or _BLANK_TO_END.match(line, end) is not None) and (
        _LINE_PREFIX.fullmatch(line, 0, start) is not None
    )


def _exception_names_in_line(line: str, *, anywhere: bool) -> Iterator[tuple[int, str]]:
    for match in _EXCEPTION_NAME.finditer(line):
        if anywhere or _is_printed_exception(line, *match.span()):
            yield match.start(), match.group()
    if not _ERROR_KIND_HINT.search(line):
        return
    for match in _ERROR_KIND.finditer(line):
        kind = match.lastgroup or ""
        yield match.start(), _ERROR_KIND_LABELS.get(kind, match.group())


def _collect_exceptions_outside_tracebacks(text: str, found: _FirstSeen, *, is_title: bool) -> None:
    for line in filter(_EXCEPTION_HINT.search, text.splitlines()):
        if found.full:
            return
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS]
            if not _EXCEPTION_HINT.search(line):
                continue
        for _, name in sorted(_exception_names_in_line(line, anywhere=is_title)):
            found.add(name)


def _collect_exceptions(text: str, found: _FirstSeen, *, is_title: bool) -> None:
    if _TRACEBACK_HEADER not in text:
        # Outside a traceback only a line with a hint can yield a name: most texts have none.
        if _EXCEPTION_HINT.search(text):
            _collect_exceptions_outside_tracebacks(text, found, is_title=is_title)
        return
    traceback_indent: int | None = None  # None: not inside a traceback
    lines_in_traceback = 0
    previous_was_frame = False
    for line in text.splitlines():
        if found.full:
            return
        line = line[:LINE_CHARS]
        names = []
        if _EXCEPTION_HINT.search(line):
            names = sorted(_exception_names_in_line(line, anywhere=is_title))
        for _, name in names:
            found.add(name)
        if _TRACEBACK_HEADER in line:
            content = _LOG_TAGS.match(line).end()
            traceback_indent = _INDENT.match(line, content).end() - content
            lines_in_traceback = 0
            previous_was_frame = False
            continue
        if traceback_indent is None:
            continue
        lines_in_traceback += 1
        content = _LOG_TAGS.match(line).end()
        text_start = _INDENT.match(line, content).end()
        if text_start == len(line):
            continue
        if text_start - content > traceback_indent:
            previous_was_frame = True
            continue
        if names:
            traceback_indent = None
            continue
        last_line = _TRACEBACK_LAST_LINE.match(line, text_start)
        if last_line is not None:
            name = last_line.group("name")
            ends_line = not line[last_line.end() :].strip()
            # A dotted name is a module-qualified class; a bare one only right after the frames.
            # Either way a colon or the line end must follow, which leaves out cut-off names.
            if ("." in name and (last_line.group("colon") or ends_line)) or (
                previous_was_frame and last_line.group("colon")
            ):
                found.add(name)
                traceback_indent = None
                continue
        previous_was_frame = False
        if lines_in_traceback > _TRACEBACK_MAX_LINES:
            traceback_indent = None


# --- Features -------------------------------------------------------------------------------

# "paralle" too: a frequent typo in titles.
_PARALLEL = r"paralle(?:l(?:ism|ized|ize)?)?(?:[-_ ](?:size|degree))?"


@dataclass(frozen=True)
class _FeatureRule:
    label: str | Callable[[re.Match[str]], str]
    # Lower-case substrings of which the text must contain one for the rule to be tried at all:
    # a substring search is far cheaper than running the pattern over text that cannot match.
    # A rule with a finder has none: its finder is as cheap as asking for hints.
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    # Case-sensitive patterns (MoE, TP) run over the text as written, the others lower-cased.
    case_sensitive: bool = False
    # Characters that must not come right before a match: a word boundary, checked in Python
    # because a look-behind at the start of a pattern stops the engine from skipping ahead.
    not_after: frozenset[str] = _ALNUM
    # Most feature words also name settings (fp16: false), whose values are read. Rules whose
    # match carries its own value (ZeRO stage 3, TP8) say so here.
    reads_setting: bool = True
    # Two-letter acronyms occur in URLs by chance.
    skip_in_urls: bool = False
    finder: _Finder | None = None
    # A pattern that the text as written must hold, searched once for the rules that share it.
    gate: re.Pattern[str] | None = None

    def matches(self, text: str, lowered: str) -> Iterator[re.Match[str]]:
        scanned = text if self.case_sensitive else lowered
        if self.finder is None:
            return self.pattern.finditer(scanned)
        return _located_matches(self.pattern, scanned, lowered, self.finder)

    def label_for(self, match: re.Match[str]) -> str:
        return self.label if isinstance(self.label, str) else self.label(match)


def _rule(
    label: str | Callable[[re.Match[str]], str],
    hints: tuple[str, ...],
    pattern: str,
    **options: Any,
) -> _FeatureRule:
    return _FeatureRule(label, hints, re.compile(pattern, _VERBOSE), **options)


def _zero_stage_label(match: re.Match[str]) -> str:
    # Three spellings, each with its own group: zero_stage=3, "stage": 3, stage3_* settings.
    groups = match.groupdict()
    stage = groups.get("stage") or groups.get("json_stage") or groups.get("module_stage")
    return f"ZeRO-{stage}"


_ACRONYM_LABELS = {
    "tp": "tensor parallel",
    "mp": "tensor parallel",  # DeepSpeed-Inference's mp_size is the tensor-parallel degree
    "pp": "pipeline parallel",
    "dp": "data parallel",
    "cp": "context parallel",
    "ep": "expert parallel",
    "sp": "sequence parallel",
}
# An acronym is two letters ending in p, which is rarer than the letters that start them: the
# finders look for the p. (With the acronyms as hints, nearly every text held one: http, import.)
_ACRONYM_SETTING_FINDER = _Finder(
    re.compile(
        r"""p(?<=[tpdcesm]p)
        (?:[-_ ]?(?:size|degree|rank|group|world[-_]size) | [ \t]*[=:][ \t]*[0-9])""",
        _VERBOSE,
    ),
    offset=1,
)
_UPPER_CASE_ACRONYM = re.compile(r"P(?<=[TPDCE]P)", _ASCII)
_ACRONYM_DEGREE_FINDER = _Finder(
    re.compile(r"P(?<=[TPDCE]P)[0-9]", _ASCII), offset=1, reads_lowered=False
)
_ACRONYM_ALONE_FINDER = _Finder(
    re.compile(r"P(?<=[TPDCE]P)(?![A-Za-z0-9_-])", _ASCII), offset=1, reads_lowered=False
)


def _acronym_label(match: re.Match[str]) -> str:
    return _ACRONYM_LABELS[match.group("acronym").lower()]


_FEATURE_RULES = (
    _rule(
        _zero_stage_label,
        ("zero", "stage"),
        r"""
        zero
        (?: [-_]?                                            # zero3, ZeRO-3, zero_2
          | [-_ ]?(?:optimization[-_ ])?stage
            (?:[ \t]*\.{2,}[ \t]* | [-_ =:"']{0,4})          # zero stage 3, "zero_stage": 3
        )
        (?P<stage>[1-3])(?![0-9])
      | ["']stage["'][ \t]*:[ \t]*["']?(?P<json_stage>[1-3])(?![0-9])  # DeepSpeed JSON config
      | stage(?P<module_stage>3)(?![0-9])                  # zero/stage3.py, stage3_* settings
        """,
        reads_setting=False,
    ),
    # With a space only in DeepSpeed's own spelling: "zero 3" is more often a number.
    _rule(
        _zero_stage_label,
        ("zero",),
        r"ZeRO[ ](?P<stage>[1-3])(?![0-9])",
        case_sensitive=True,
        reads_setting=False,
    ),
    _rule("ZeRO-Infinity", ("infinity",), r"zero[-_ ]?infinity", reads_setting=False),
    _rule(
        "ZeRO++",
        ("zero",),
        r"zero\+\+ | zero_hpz_partition_size | zero_quantized_(?:weights|gradients)",
    ),
    _rule(
        "ZeRO",
        ("zero",),
        # Every alternative begins with a letter, not a set: the engine can skip ahead to a z.
        r"""ZeRO(?![A-Za-z0-9+]|[-_ ]?(?:Infinity|infinity)) | zero_optimization | zero_to_fp32
        | ZeRO[-_ ]redundancy | Zero[-_ ][Rr]edundancy | zero[-_ ][Rr]edundancy""",
        case_sensitive=True,
    ),
    _rule("tensor parallel", ("paralle",), r"tensor[-_ ]?(?:model[-_ ]?)?" + _PARALLEL),
    _rule(
        "pipeline parallel",
        ("paralle", "pipeline"),
        r"pipe(?:line)?[-_ ]?(?:model[-_ ]?)?" + _PARALLEL + r" | pipeline(?:module|engine)",
    ),
    _rule("sequence parallel", ("paralle", "ulysses"), r"sequence[-_ ]?" + _PARALLEL + "| ulysses"),
    _rule("context parallel", ("paralle",), r"context[-_ ]?" + _PARALLEL),
    _rule("expert parallel", ("paralle",), r"expert[-_ ]?(?:model[-_ ]?)?" + _PARALLEL),
    _rule(
        "MoE",
        ("moe",),
        r"(?:MoE|MOE|moe)(?![A-Za-z0-9])",
        case_sensitive=True,
    ),
    _rule(
        "MoE",
        ("mixture", "experts"),
        r"mixture[-_ ]of[-_ ]experts? | num[-_](?:local[-_])?experts",
    ),
    _rule(
        "data parallel",
        ("paralle", "ddp"),
        r"data[-_ ]?" + _PARALLEL + r" | distributeddataparallel | ddp(?![a-z0-9])",
    ),
    _rule(
        "model parallel",
        ("paralle",),
        # Not the "model" of tensor-model-parallel and its kin.
        r"""model(?<!tensor[-_ ]model)(?<!pipeline[-_ ]model)(?<!pipe[-_ ]model)
        (?<!expert[-_ ]model)[-_ ]?"""
        + _PARALLEL,
    ),
    _rule(
        "3D parallel",
        ("paralle",),
        r"3d[-_ ]?" + _PARALLEL,
        not_after=frozenset(string.digits),  # Megatron3D-Parallelism
    ),
    _rule("FSDP", ("fsdp", "fullysharded"), r"fsdp[12]?(?![a-z0-9]) | fullyshardeddataparallel"),
    _rule("offload", ("offload",), r"offload"),
    _rule("fp16", ("fp16", "float16"), r"(?:fp16|float16)(?![a-z0-9])"),
    _rule("bf16", ("bf16", "bfloat16"), r"(?:bf16|bfloat16)(?![a-z0-9])"),
    _rule("fp8", ("fp8", "float8"), r"(?:fp8|float8)(?![a-z0-9])"),
    _rule(
        "mixed precision",
        ("mixed", "amp", "autocast", "gradscaler"),
        # "&amp;" is HTML; apex's "amp_C" module is a build artefact, not a precision setting.
        r"mixed[-_ ]precision | amp(?![a-z0-9;]|_c(?![a-z0-9_])) | autocast | gradscaler",
        not_after=_ALNUM | {"&"},
    ),
    _rule(
        "activation checkpointing",
        ("checkpoint", "recompute", "recomputation"),
        r"""gradients?[-_ ]?checkpoint(?:ing|s)? | activations?[-_ ]?checkpoint(?:ing|s)?
        | checkpoint[-_]activations | recompute[-_](?:activations|granularity|method)
        | activation[-_ ]recomputation | selective[-_ ]recompute""",
    ),
    _rule(
        "gradient accumulation",
        ("grad",),
        r"grad(?:ient)?[-_ ]?acc(?:umulation|um)?(?:[-_ ]steps)?(?![a-z0-9])",
    ),
    _rule("LoRA", ("lora",), r"(?:qlora|lora)(?:config)?(?![a-z0-9])"),  # not "Loran"
    _rule(
        "quantization",
        ("load_in_", "quantiz", "gptq", "awq", "int8", "int4", "nf4", "bitsandbytes"),
        r"""(?:load_in_[48]bit|quantization|quantized|quantize|gptq|awq|int8|int4|nf4)(?![a-z0-9])
        | bitsandbytes""",
    ),
    _rule(
        "flash attention",
        ("flash",),
        r"flash[-_ ]?(?:attn|attention)(?:[-_ ]?[23](?![0-9]))?",
    ),
    _rule(
        "DeepSpeed-Inference",
        ("inference", "kernel"),
        r"""deep[-_ ]?speed[-_ ]inference | init_inference | replace_with_kernel_inject
        | kernel[-_ ]injection""",
    ),
    _rule(
        "torch.compile",
        ("compile", "dynamo", "inductor"),
        r"""torch\.compile(?![a-z0-9]) | torch_compile | torch\._(?:dynamo|inductor)
        | torchdynamo | torchinductor""",
    ),
    # TP=2, tp_size, "PP size", dp_group
    _rule(
        _acronym_label,
        (),
        r"""(?P<acronym>tp|pp|dp|cp|ep|sp|mp|TP|PP|DP|CP|EP|SP|MP)
        (?:[-_ ]?(?:size|degree|rank|group|world[-_]size|SIZE|DEGREE)(?![A-Za-z0-9])
          | (?=[ \t]*[=:][ \t]*[0-9]))""",
        case_sensitive=True,
        not_after=_ALNUM | set("_.$/"),
        skip_in_urls=True,
        finder=_ACRONYM_SETTING_FINDER,
    ),
    # TP8, TP2PP4: the degree is written into the acronym.
    _rule(
        _acronym_label,
        (),
        r"(?P<acronym>TP|PP|DP|CP|EP)(?P<size>[0-9]{1,4})(?![0-9.])",
        case_sensitive=True,
        not_after=frozenset(string.ascii_letters) | set("_.$/-"),
        reads_setting=False,
        skip_in_urls=True,
        finder=_ACRONYM_DEGREE_FINDER,
        gate=_UPPER_CASE_ACRONYM,
    ),
    # TP, "TP/PP", "with EP and DP": upper case and standing alone.
    _rule(
        _acronym_label,
        (),
        r"(?P<acronym>TP|PP|DP|CP|EP)(?![A-Za-z0-9_-])",
        case_sensitive=True,
        not_after=_ALNUM | set("_.$=-"),
        skip_in_urls=True,
        finder=_ACRONYM_ALONE_FINDER,
        gate=_UPPER_CASE_ACRONYM,
    ),
)

# Hint -> the indexes of the rules it is a hint of; rules run in their order above.
_RULES_BY_HINT = {
    hint: tuple(index for index, rule in enumerate(_FEATURE_RULES) if hint in rule.hints)
    for rule in _FEATURE_RULES
    for hint in rule.hints
}
# Gate -> the indexes of the rules without hints behind it (None: tried on every text).
_RULES_BY_GATE = {
    gate: frozenset(
        index for index, rule in enumerate(_FEATURE_RULES) if not rule.hints and rule.gate is gate
    )
    for gate in {rule.gate for rule in _FEATURE_RULES if not rule.hints}
}

# A setting's value, read right after its key: "fp16 ...... False" (argument dumps), fp16=False,
# "fp16": {...}, fp16: 'no'.
_SETTING_VALUE = re.compile(
    r"""["'`]?
    (?:[ \t]*\.{2,}[ \t]* | [ \t]*[=:][ \t]*)
    (?P<value>\{ | \[\] | "" | '' | ["']?[^\s,;"'`(){}\[\]]{0,40})
    """,
    _VERBOSE,
)
# A command-line flag's value: --tensor-model-parallel-size 2
_FLAG_VALUE = re.compile(r"[ \t]+(?P<value>[^\s\\-][^\s]{0,40})", _ASCII)
# Inside a JSON object value: {"enabled": false} or {"device": "none"}.
_OBJECT_SWITCHED_OFF = re.compile(
    r"""\s{0,100}["']?(?:enabled|device)["']?[ \t]*:[ \t]*["']?(?:false|none|null)(?![a-z])""",
    _ASCII | re.IGNORECASE,
)
_OFF_VALUES = frozenset({"0", "false", "none", "null", "no", "off", "disabled", "[]"})
_IDENTIFIER_CHARS = _ALNUM | {"_", "-"}
_IDENTIFIER_TAIL = re.compile(r"[A-Za-z0-9_-]{0,80}", _ASCII)
_IDENTIFIER_REACH = 80
# Settings whose names contain a feature word and do switch that feature on or off. Any other
# setting that merely contains a feature word (fp16_backend, ddp_timeout, moe_router_topk,
# async_tensor_model_parallel_allreduce) says nothing either way when given a value.
_FEATURE_SWITCHES = frozenset(
    {
        "amp_enabled",
        "bf16_enabled",
        "bfloat16_enabled",
        "cpu_offload",
        "cpu_offloading",
        "fp16_enabled",
        "fp8_format",
        "gradient_checkpointing",
        "load_in_4bit",
        "load_in_8bit",
        "lora_r",
        "lora_rank",
        "moe_num_experts",
        "offload_optimizer",
        "offload_optimizer_device",
        "offload_param",
        "offload_param_device",
        "optimizer_cpu_offload",
        "use_flash_attention",
        "use_flash_attention_2",
        "use_flash_attn",
        "use_lora",
        "virtual_pipeline_model_parallel_size",
        "zero_offload",
    }
)
# For sizes and counts 1 means "not used": --tensor-model-parallel-size 1, tp=1.
_SIZE_SETTING = re.compile(r"(?:size|degree|steps|experts|^(?:tp|pp|dp|cp|ep|sp|mp))$", _ASCII)
# Containers of a feature's options (fsdp_config, gradient_checkpointing_kwargs) are present
# whether or not the feature is used.
_OPTIONS_CONTAINER = re.compile(r"_(?:config|cfg|kwargs|args|plugin)$", _ASCII)


def _enclosing_identifier(text: str, start: int, end: int) -> tuple[int, int]:
    """The snake_case, kebab-case or --flag identifier that the match at start:end is part of."""
    left = start
    lowest = max(0, start - _IDENTIFIER_REACH)
    while left > lowest and text[left - 1] in _IDENTIFIER_CHARS:
        left -= 1
    if end < len(text) and text[end] in _IDENTIFIER_CHARS:
        end = _IDENTIFIER_TAIL.match(text, end).end()
    return left, end


def _setting_key(written: str) -> str:
    return written.lstrip("-").replace("-", "_").replace(" ", "_").lower()


def _mention_counts(text: str, match: re.Match[str]) -> bool:
    """Whether a feature word names the feature as used, not switched off or in passing."""
    start, end = _enclosing_identifier(text, match.start(), match.end())
    written_key = text[start:end]
    key = _setting_key(written_key)
    extended = key != _setting_key(match.group())
    if extended and _OPTIONS_CONTAINER.search(key):
        return False
    setting = _SETTING_VALUE.match(text, end)
    if setting is None and written_key.startswith("-"):
        setting = _FLAG_VALUE.match(text, end)
    if setting is None:
        return True  # prose, a path, a class name, or a flag without a value (--fp16)
    if extended and key not in _FEATURE_SWITCHES:
        return False
    written_value = setting.group("value")
    if written_value == "{":
        return _OBJECT_SWITCHED_OFF.match(text, setting.end()) is None
    value = written_value.strip("\"'").lower()
    if written_value in ('""', "''") or value in _OFF_VALUES:
        return False
    return not (value == "1" and _SIZE_SETTING.search(key))


def _collect_features(
    text: str,
    lowered: str,
    hints: frozenset[str],
    found: _FirstSeen,
    urls: _Spans,
    examples: _Spans,
) -> None:
    first_positions: dict[str, int] = {}
    indexes = {index for hint in hints for index in _RULES_BY_HINT.get(hint, ())}
    for gate, behind in _RULES_BY_GATE.items():
        if gate is None or gate.search(text):
            indexes |= behind
    for index in sorted(indexes):
        rule = _FEATURE_RULES[index]
        scanned = text if rule.case_sensitive else lowered
        for match in rule.matches(text, lowered):
            position = match.start()
            if _follows(scanned, position, rule.not_after) or position in examples:
                continue
            if rule.skip_in_urls and position in urls:
                continue
            label = rule.label_for(match)
            if label in first_positions and first_positions[label] <= position:
                continue  # an earlier mention counted already
            size = match.groupdict().get("size")
            if size is not None and int(size) <= 1:
                continue
            if rule.reads_setting and not _mention_counts(scanned, match):
                continue
            first_positions[label] = position
            if isinstance(rule.label, str):
                break  # later matches of a one-label rule cannot come first
    if first_positions:
        for label, _ in sorted(first_positions.items(), key=lambda item: item[1]):
            found.add(label)


def _finish_features(labels: list[str]) -> list[str]:
    # A named stage says more than plain "ZeRO".
    if any(label[-1].isdigit() and label.startswith("ZeRO-") for label in labels):
        return [label for label in labels if label != "ZeRO"]
    return labels


# --- Versions -------------------------------------------------------------------------------

# Alternatives are tried left to right at each position, so the longer phrases come first:
# "CUDA used to build PyTorch: 12.1" is a CUDA version, not a PyTorch one.
_VERSION_NAME_PATTERNS = {
    "cuda": r"""cuda[ ]used[ ]to[ ]build[ ]pytorch | cuda[ ]compilation[ ]tools,?[ ]release
        | torch[ ]cuda | cuda[ ]runtime | cuda[-_ ]?toolkit | cudatoolkit
        | nvidia-cuda-runtime-cu1[0-9] | nvcc | cuda""",
    "cudnn": r"nvidia-cudnn-cu1[0-9] | cudnn",
    "nccl": r"nvidia-nccl-cu1[0-9] | nccl",
    # Megatron-LM and Megatron-Core are released together (core_r0.x tags) since 2023.
    "megatron_core": r"megatron[-_.]?core | mcore | megatron[-_]?lm | megatron",
    "flash_attn": r"flash[-_]?attn | flash[-_ ]?attention",
    "torch": r"(?:py)?torch",
    "deepspeed": r"deep[-_ ]?speed",
    "transformers": r"transformers",
    "accelerate": r"accelerate",
    "python": r"python",
    "apex": r"apex",
    "peft": r"peft",
    "triton": r"triton",
}
_VERSION_CANONICAL = {key: key.replace("_", "-") for key in _VERSION_NAME_PATTERNS}
# Every spelling above contains one of these (tests/corpus/test_facets.py checks it).
_VERSION_HINTS = frozenset(
    {"cuda", "nvcc", "cudnn", "nccl", "megatron", "mcore", "flash", "torch", "deep"}
    | {"transformers", "accelerate", "python", "apex", "peft", "triton"}
)
# Run over the lower-cased text. The separators cover pip (torch==2.1.0), conda and pip list
# (torch   2.1.0), environment reports (PyTorch version (GPU?): 2.1.0+cu121), ds_report
# (torch version .......... 2.0.1+cu117), prose (pytorch 2.0) and branch names (mcore_r0.8.0).
# Constraints such as torch>=2.0 are not versions and are left out.
_VERSION = re.compile(
    # sentence-transformers, lib/python3.8 and cuda12.1 in build strings are not versions
    r"""(?<![a-z0-9_.\-/])(?=["'`acdfmnpt])["'`]?(?:"""
    + " | ".join(f"(?P<{key}>{pattern})" for key, pattern in _VERSION_NAME_PATTERNS.items())
    + r""")
    (?![a-z0-9])["'`]?
    (?:[ \t]+(?:version|info|ver\.?)(?:[ \t]*\([^()\n]{0,20}\))?(?:[ \t]+is)?)?
    (?:[ \t]*\.{2,}[ \t]* | [ \t]*(?:===?|[:=@])[ \t]* | [ \t]+ | _)
    ["'(]?[vr]?
    (?P<version>[0-9]{1,4}
        (?:\.(?:[0-9]{1,8}(?:(?:a|b|rc|dev|post)[0-9]{1,8})? | (?:dev|post|rc)[0-9]{0,8})){1,5}
        (?:\+[0-9a-z][0-9a-z.]{0,40})?)                   # 2.1.0a0+32f93b1, 4.6.0.dev0
    (?![0-9a-z%\u00d7])                                 # not "accelerate 2.5x"
    """,
    _VERBOSE,
)
# No version crosses a line break, and each holds a number like this one: the pattern, which the
# engine tries at every position, need only be tried on the lines that hold one.
_VERSION_NUMBER = re.compile(r"[0-9]\.[0-9dpr]", _ASCII)


def _collect_versions(text: str, lowered: str, found: _FirstSeen, examples: _Spans) -> None:
    """Call only for an issue that holds a version hint (`issue_facets`)."""
    if not _DIGIT.search(lowered):
        return  # no version
    for match in _matches_in_lines(_VERSION, lowered, _VERSION_NUMBER):
        if found.full:
            return
        if match.start() in examples:
            continue
        key = next(key for key in _VERSION_NAME_PATTERNS if match.group(key) is not None)
        name = _VERSION_CANONICAL[key]
        if name not in found:
            version = text[match.start("version") : match.end("version")].rstrip(".")
            found.add(name, {"name": name, "version": version})


# --- GPUs -----------------------------------------------------------------------------------

# All run over the lower-cased text.
_GPU_MODEL = r"""(?:
    [rg]tx[ -]?(?:a[0-9]{4}|[0-9]{4}(?:[ ]?ti)?(?:[ ]ada)?)
  | titan[ ](?:rtx|v|xp|x)
  | mi[ -]?(?:50|60|100|210|250|300|325|355)[xa]?
  | ascend[ ]?910[a-c]?
  | gaudi[ ]?[23]?
  | a100 | a800 | h100 | h800 | h200 | v100 | p100 | a6000 | a5000 | a4000 | l40s | l40
  | gh200 | gb200 | b200 | b100 | h20 | a10g | a10 | a30 | a40 | t4 | l4 | p40 | k80
)"""
# These short names are also part numbers, paper sizes and layers: only in upper case.
_UPPER_CASE_GPU_MODELS = frozenset(
    {"GH200", "GB200", "B200", "B100", "H20", "A10G", "A10", "A30", "A40", "T4", "L4", "P40"}
    | {"K80"}
)
_GPU_MODEL_END = r"(?=s?(?![a-z0-9]))"  # "A100s" is plural; "A1000" is another card
_GPU_VENDOR = r"(?:(?:nvidia|tesla|geforce|amd|instinct|huawei)[ \t]){0,2}"
_GPU_VARIANT = r"(?:[-_ ]?(?:sxm[0-9]?|pcie|nvl|hbm[0-9]?e?|[0-9]{2,3}[ ]?g(?:i?b)?)){0,3}"
# One alternation, so that the longest reading at each position wins ("8x A100" over "8");
# the look-ahead lets the engine skip positions that cannot start any alternative.
_GPUS = re.compile(
    rf"""
    (?<![a-z0-9])(?=[0-9x\u00d7ncrgtmahvplbk-])
    (?:
        (?<![_.])(?P<count>[0-9]{{1,4}})[ \t]?
        (?:
            (?:[x*\u00d7][ \t]?)?{_GPU_VENDOR}(?P<model_after_count>{_GPU_MODEL}){_GPU_MODEL_END}
            # "2 RTX3090 machines" counts machines, not GPUs
            (?!s?[ \t]{{1,3}}(?:machines?|nodes?|servers?|hosts?|boxes|workstations?)(?![a-z]))
          | [x*\u00d7][ \t]?(?P<geforce_number>[2-5]0[5-9]0(?:[ ]?ti)?)(?![a-z0-9])  # 4x 3090
          | (?:[x*\u00d7][ \t]?|-)?gpus?(?![a-z0-9])                            # 8 GPUs, 8-GPU
        )
      | (?<![_.])[x\u00d7](?P<x_count>[0-9]{{1,4}})[ \t]?{_GPU_VENDOR}             # x8 A100s
        (?P<model_after_x>{_GPU_MODEL}){_GPU_MODEL_END}
      | (?P<model>{_GPU_MODEL})
        (?:{_GPU_VARIANT}[ \t]?[x*\u00d7][ \t]?(?P<count_after_model>[0-9]{{1,4}})(?![0-9.])
          | {_GPU_MODEL_END})                                               # A100-80GB x 8, A100
      | (?<!_)-{{0,2}}
        (?:num[-_ ]?gpus|number[ ]of[ ]gpus|n[-_]?gpus?|gpus[-_ ]per[-_ ]node|nproc[-_]per[-_]node
          |gpu[-_ ]?count|num[-_]processes)
        ["']?[ \t]*[=:]?[ \t]*["']?(?P<count_setting>[0-9]{{1,4}})(?![0-9.])
      | (?<!_)cuda_visible_devices[ \t]*=[ \t]*["']?
        (?P<visible_devices>[0-9]{{1,3}}(?:[ \t]*,[ \t]*[0-9]{{1,3}}){{0,63}})(?![0-9])
    )
    """,
    _VERBOSE,
)
# Every alternative above holds a digit but these two models, which can be written without one.
_GPU_MODELS_WITHOUT_DIGITS = frozenset({"titan", "gaudi"})
# No setup crosses a line break, and one that holds none of these words holds a digit that
# _GPU_NUMBER finds: in a model's name (A100, T4, MI250) or in a GeForce number after x (4x 3090).
# In a text without these words the pattern, which the engine tries at every position, need only
# be tried on the lines with such a digit.
_GPU_WORDS = _GPU_MODELS_WITHOUT_DIGITS | {
    "gpu",
    "nproc",
    "processes",
    "cuda_visible",
    "rtx",
    "gtx",
    "ascend",
}
_GPU_NUMBER = re.compile(
    # The first look-behind, one set, rules out at once the many digits after digits and dots.
    r"""[0-9](?<=[ahvpbktli \t*\u00d7x-][0-9])
    (?: (?<=[ahvpbk][0-9]) | (?<=[tl]4) | (?<=mi[0-9]) | (?<=mi[ -][0-9])
      | (?<=[x*\u00d7][2-5]) | (?<=[x*\u00d7][ \t][2-5]) )""",
    _VERBOSE,
)
_COUNT_GROUPS = ("count", "x_count", "count_after_model", "count_setting")
_MODEL_GROUPS = ("model_after_count", "model_after_x", "model")
_GPU_SPACING = re.compile(r"[ -]", _ASCII)
_CONSUMER_CARD = re.compile(r"(RTX|GTX)([0-9]{4})(TI)?(ADA)?", _ASCII)
_MAX_GPU_COUNT = 100_000


def _gpu_family(written: str) -> str:
    """The family name of a GPU as written: "RTX3090" -> "RTX 3090", "a100" -> "A100"."""
    compact = _GPU_SPACING.sub("", written).upper()
    consumer = _CONSUMER_CARD.fullmatch(compact)
    if consumer:
        kind, number, ti, ada = consumer.groups()
        return f"{kind} {number}" + (" Ti" if ti else "") + (" Ada" if ada else "")
    if compact.startswith("RTXA"):
        return compact[3:]  # RTX A6000 -> A6000
    if compact.startswith("TITAN"):
        return "TITAN " + compact[5:]
    if compact.startswith("MI"):
        return compact.rstrip("XA")  # MI250X -> MI250
    if compact.startswith("ASCEND"):
        return "Ascend " + compact[6:]
    if compact.startswith("GAUDI"):
        return "Gaudi" + compact[5:]
    return compact


def _gpu_setup(text: str, match: re.Match[str]) -> tuple[int | None, str | None] | None:
    """(count, model) of one match, or None if the match is not about GPUs after all."""
    groups = match.groupdict()
    count_text = next((groups[name] for name in _COUNT_GROUPS if groups[name] is not None), None)
    count = int(count_text) if count_text is not None else None
    if groups["visible_devices"] is not None:
        count = groups["visible_devices"].count(",") + 1
    if count is not None and not 1 <= count <= _MAX_GPU_COUNT:
        count = None
    model = None
    model_group = next((name for name in _MODEL_GROUPS if groups[name] is not None), None)
    if model_group is not None:
        model = _gpu_family(groups[model_group])
        written = text[match.start(model_group) : match.end(model_group)]
        if model in _UPPER_CASE_GPU_MODELS and written != written.upper():
            return None
    if groups["geforce_number"] is not None:
        model = _gpu_family("RTX" + groups["geforce_number"])
    if count is None and model is None:
        return None
    return count, model


def _collect_gpus(
    text: str, lowered: str, hints: frozenset[str], found: _FirstSeen, examples: _Spans
) -> None:
    if hints.isdisjoint(_GPU_MODELS_WITHOUT_DIGITS) and not _DIGIT.search(lowered):
        return
    if hints.isdisjoint(_GPU_WORDS):
        matches = _matches_in_lines(_GPUS, lowered, _GPU_NUMBER)
    else:
        matches = _GPUS.finditer(lowered)
    for match in matches:
        if found.full:
            return
        if match.start() in examples:
            continue
        setup = _gpu_setup(text, match)
        if setup is not None:
            count, model = setup
            found.add(setup, {"count": count, "model": model})


def _finish_gpus(setups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # "8x A100" makes a bare "A100" or "nproc_per_node=8" elsewhere redundant.
    complete = [setup for setup in setups if setup["count"] and setup["model"]]
    counts = {setup["count"] for setup in complete}
    models = {setup["model"] for setup in complete}
    return [
        setup
        for setup in setups
        if (setup["count"] and setup["model"])
        or (setup["model"] is None and setup["count"] not in counts)
        or (setup["count"] is None and setup["model"] not in models)
    ]


# --- Systems --------------------------------------------------------------------------------

# Only the first mention of each system matters: one search each, and only if a hint is there.
_SYSTEM_PATTERNS = {
    "deepspeed": (("deep", "ds_report"), re.compile(r"deep[-_ ]?speed | ds_report", _VERBOSE)),
    "megatron": (("megatron", "mcore"), re.compile(r"megatron | mcore(?![a-z0-9])", _VERBOSE)),
    # "sentence-transformers" is another library.
    "transformers": (("transformers",), re.compile(r"transformers(?![a-z0-9])", _ASCII)),
    # "accelerate" is also an English verb: it names the library only in context.
    "accelerate": (
        ("accelerat",),
        re.compile(
            r"""huggingface/accelerate | accelerate(?:==|>=|[ ]launch|[ ]config|[ ]version|\.[a-z])
            | (?:from|import|install|using|use|with)(?:[ ]-u)?[ ]+accelerate(?![a-z])
            | `accelerate` | accelerator(?:\(|\.[a-z])""",
            _VERBOSE,
        ),
    ),
    # Spelt out rather than (?:py)?torch, which the engine cannot skip ahead on.
    "pytorch": (("torch",), re.compile(r"pytorch(?![a-z])|torch(?![a-z])|torchrun", _ASCII)),
}
_SYSTEM_NOT_AFTER = {"transformers": _ALNUM | {"-"}}


_SYSTEM_HINTS = frozenset(hint for hints, _ in _SYSTEM_PATTERNS.values() for hint in hints)


def _collect_systems(lowered: str, hints: frozenset[str], found: _FirstSeen) -> None:
    if hints.isdisjoint(_SYSTEM_HINTS):
        return
    first_positions = {}
    for system, (system_hints, pattern) in _SYSTEM_PATTERNS.items():
        if system in found or hints.isdisjoint(system_hints):
            continue
        not_after = _SYSTEM_NOT_AFTER.get(system, _ALNUM)
        for match in pattern.finditer(lowered):
            if not _follows(lowered, match.start(), not_after):
                first_positions[system] = match.start()
                break
    for system, _ in sorted(first_positions.items(), key=lambda item: item[1]):
        found.add(system)


# --- Entry point ----------------------------------------------------------------------------

# Every substring that a collector asks about, looked for once (`issue_facets`): asking each
# rule's own hints of each text was a third of the time of extracting the facets.
_HINTS = tuple(
    sorted(
        {hint for rule in _FEATURE_RULES for hint in rule.hints}
        | {hint for hints, _ in _SYSTEM_PATTERNS.values() for hint in hints}
        | _GPU_WORDS
    )
)
# Versions need only know whether the issue names any: the version hints that other collectors
# ask about anyway come first, and the others are asked about only until one is there.
_VERSION_ONLY_HINTS = tuple(sorted(_VERSION_HINTS.difference(_HINTS)))


def _hints_in(lowered: str, among: Iterable[str] = _HINTS) -> frozenset[str]:
    return frozenset(filter(lowered.__contains__, among))


def issue_facets(title: str, body: str, comments: Sequence[str] = ()) -> dict[str, list]:
    """Facts about one issue for annotators: see the module docstring for the keys."""
    exceptions = _FirstSeen()
    features = _FirstSeen()
    versions = _FirstSeen()
    gpus = _FirstSeen()
    systems = _FirstSeen()
    texts = [
        (is_title, text, _lower_same_length(text))
        for is_title, text in _scannable_texts(title, body, comments)
    ]
    # Most texts are short comments, for which asking every hint cost more than reading them:
    # the whole issue is asked once, and each text only for the hints the issue holds.
    issue_lowered = "\n".join(lowered for _, _, lowered in texts)
    issue_hints = _hints_in(issue_lowered)
    names_versions = not issue_hints.isdisjoint(_VERSION_HINTS) or any(
        map(issue_lowered.__contains__, _VERSION_ONLY_HINTS)
    )
    has_examples = "[e.g." in issue_lowered
    has_urls = "://" in issue_lowered
    for is_title, text, lowered in texts:
        hints = _hints_in(lowered, issue_hints) if len(texts) > 1 else issue_hints
        examples = _spans(_TEMPLATE_EXAMPLE, lowered, "[e.g.") if has_examples else _NO_SPANS
        urls = _spans(_URL, lowered, "://") if has_urls else _NO_SPANS
        _collect_exceptions(text, exceptions, is_title=is_title)
        _collect_features(text, lowered, hints, features, urls, examples)
        _collect_gpus(text, lowered, hints, gpus, examples)
    # No version or system mention crosses a line break, and the texts are joined by one: read
    # the issue as one text, in one call rather than one per text.
    if names_versions:
        issue_examples = (
            _spans(_TEMPLATE_EXAMPLE, issue_lowered, "[e.g.") if has_examples else _NO_SPANS
        )
        issue_text = "\n".join(text for _, text, _ in texts)
        _collect_versions(issue_text, issue_lowered, versions, issue_examples)
    _collect_systems(issue_lowered, issue_hints, systems)
    return {
        "exceptions": exceptions.values(),
        "features": _finish_features(features.values()),
        "versions": versions.values(),
        "gpus": _finish_gpus(gpus.values()),
        "systems_mentioned": systems.values(),
    }
