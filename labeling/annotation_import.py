"""The annotation import file (CSV with a header row): `issue,annotator,dimension,labels`.

issue is `owner/name#number`, annotator a username, dimension a dimension key, labels category
keys joined by `;` (empty: none applies). Optional columns: `unsure` (true/false/1/0/yes/no),
`rationale`. Parsing only; no database here.

A NUL character anywhere is an error of its line, not dropped: "annot\\0ator1" is not
annotator1, and a file that says something else than it shows is not imported.
"""

import csv
import io
from dataclasses import dataclass

from common.text import issue_reference_parse

REQUIRED_COLUMNS = ("issue", "annotator", "dimension", "labels")
MAX_FILE_BYTES = 50 * 1024 * 1024
TRUE_WORDS = {"1", "true", "yes", "y", "t"}
FALSE_WORDS = {"", "0", "false", "no", "n", "f"}


@dataclass(frozen=True)
class AnnotationRow:
    line: int
    owner: str
    name: str
    number: int
    annotator: str
    dimension: str
    labels: tuple[str, ...]
    unsure: bool = False
    rationale: str = ""

    @property
    def issue_reference(self) -> str:
        return f"{self.owner}/{self.name}#{self.number}"


class AnnotationFileError(ValueError):
    def __init__(self, errors: list[tuple[int, str]]) -> None:
        super().__init__("; ".join(f"line {line}: {message}" for line, message in errors))
        self.errors = errors


def annotation_rows_parse(content: bytes | str) -> list[AnnotationRow]:
    """All rows of the file, or AnnotationFileError listing every bad record by the line it
    starts on, as an editor shows it (the header is line 1)."""
    if isinstance(content, bytes):
        if len(content) > MAX_FILE_BYTES:
            raise AnnotationFileError([(0, f"file is larger than {MAX_FILE_BYTES} bytes")])
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise AnnotationFileError([(0, f"file is not UTF-8 ({error})")]) from error
    reader = csv.reader(io.StringIO(content, newline=""))
    try:
        header_fields = next(reader, [])
    except csv.Error as error:
        raise AnnotationFileError([(1, f"not a CSV header: {error}")]) from error
    if any("\x00" in column for column in header_fields):
        raise AnnotationFileError([(1, "the header holds a NUL character")])
    header = [column.strip().lower() for column in header_fields]
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        raise AnnotationFileError([(1, f"missing columns: {', '.join(missing)}")])
    rows: list[AnnotationRow] = []
    errors: list[tuple[int, str]] = []
    while True:
        # A record starts on the line after the previous record's last one: a quoted field may
        # span lines (a rationale with line breaks), so records are not lines.
        index = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            errors.append((index, f"not valid CSV: {error}"))
            break  # the reader cannot find where the next record starts
        if len(fields) > len(header):
            errors.append((index, "more fields than columns in the header"))
            continue
        # A short record's missing trailing fields are empty.
        padded = fields + [""] * (len(header) - len(fields))
        values = {key: value.strip() for key, value in zip(header, padded, strict=True)}
        with_nul = [key for key, value in values.items() if "\x00" in value]
        if with_nul:
            errors.append((index, f"{', '.join(with_nul)} holds a NUL character"))
            continue
        if not any(values.values()):
            continue
        try:
            owner, name, number = issue_reference_parse(values["issue"])
        except ValueError:
            errors.append((index, f"issue must be owner/name#number, got {values['issue']!r}"))
            continue
        if not values["annotator"]:
            errors.append((index, "annotator is empty"))
            continue
        if not values["dimension"]:
            errors.append((index, "dimension is empty"))
            continue
        unsure_word = values.get("unsure", "").lower()
        if unsure_word not in TRUE_WORDS | FALSE_WORDS:
            errors.append((index, f"unsure must be true or false, got {values['unsure']!r}"))
            continue
        rows.append(
            AnnotationRow(
                line=index,
                owner=owner,
                name=name,
                number=number,
                annotator=values["annotator"],
                dimension=values["dimension"],
                labels=tuple(
                    dict.fromkeys(
                        label.strip() for label in values["labels"].split(";") if label.strip()
                    )
                ),
                unsure=unsure_word in TRUE_WORDS,
                rationale=values.get("rationale", ""),
            )
        )
    if errors:
        raise AnnotationFileError(errors)
    return rows
