"""A Ragas dataset, as `to_jsonl` or `to_csv` writes it, as records, one per sample."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from ..core.errors import quote
from ..lines import (
    MALFORMED_JSON,
    has_lone_surrogate,
    json_objects,
    strict_json_loads,
    undecodable,
)
from ..literals import read_repr_list
from .common import (
    InputFileError,
    LabelsRefused,
    check_labels_name_records,
    read_labels,
)

Format = Literal["jsonl", "csv"]
Rows = Iterator[tuple[int, dict[str, Any]]]

ID_COLUMNS = {"reference_context_ids": "required", "retrieved_context_ids": "context"}
TEXT_COLUMNS = dict(user_input="question", response="answer", reference="reference")
_INDEX = re.compile("0|[1-9][0-9]{0,18}")  # a sample id, "0", "1" ...
CSV_FIELD_LIMIT = 2**31 - 1  # the largest C long on every platform
_LIST_FORM = (
    "a list of IDs, as Ragas writes one (['D1', 'D2']): a JSON array, or a "
    "Python list of quoted strings with a comma between each two"
)


def _jsonl_rows(path: str) -> Rows:
    try:
        yield from json_objects(path, "sample", InputFileError)
    except InputFileError as error:
        if error.line != 1 or error.kind != MALFORMED_JSON:
            raise
        with open(path, encoding="utf-8-sig", errors="replace") as text:
            if not text.readline().lstrip().startswith("["):
                raise
        problem = f"{error.problem}; a Ragas dataset is JSON Lines "
        problem += "(to_jsonl), not a JSON array"
        raise InputFileError(path, 1, problem, kind=MALFORMED_JSON) from None


def _csv_lines(path: str) -> Iterator[str]:
    """The lines, ends kept; one that is not UTF-8 refused by line and column."""
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as text:
        for number, line in enumerate(text, start=1):
            if (problem := undecodable(line)) is not None:
                raise InputFileError(path, number, problem)
            yield line


def _csv_rows(path: str) -> Rows:
    """Each row as {column: cell}, empty cells left out, with its first line."""
    lines = _csv_lines(path)
    reader = csv.reader(lines, strict=True)
    header: list[str] = []
    try:
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                raise InputFileError(path, start, f"not a CSV row ({error})") from None
            if cells in ([], [""]):
                continue
            if not header:
                header, header_line = cells, start
                twice = [name for n, name in enumerate(header) if name in header[:n]]
                if twice:
                    problem = f"column {quote(twice[0])} is named twice in the header"
                    raise InputFileError(path, start, problem)
                if absent := [name for name in ID_COLUMNS if name not in header]:
                    problem = f"the header has no column {quote(absent[0])}; found "
                    problem += ", ".join(quote(name) for name in header)
                    raise InputFileError(path, start, problem, field=absent[0])
            elif len(cells) != len(header):
                problem = f"a row of {len(cells)} cells, where the header (line "
                problem += f"{header_line}) names {len(header)} columns"
                raise InputFileError(path, start, problem)
            else:
                row = zip(header, cells, strict=True)
                yield start, {name: cell for name, cell in row if cell != ""}
    except InputFileError:
        for _ in lines:  # bytes that are not UTF-8 anywhere are said first
            pass
        raise


def _field(path: str, line: int, name: str, value: Any, from_csv: bool) -> Any:
    """A sample's column: an ID list, as text, or a text; refused by field."""

    def refuse(problem: str) -> InputFileError:
        return InputFileError(path, line, name + problem, field=name)

    ids = name in ID_COLUMNS
    if ids and value is None:
        needs = " and ".join(ID_COLUMNS)
        raise refuse(f" is absent; Ragas's IDBasedContextRecall needs both {needs}")
    if ids and from_csv:
        # JSON, else repr's list (Python's reader takes `['D1' 'D2']` for `['D1D2']`).
        text = value
        try:
            value = strict_json_loads(text)
        except ValueError:
            value = read_repr_list(text)
        if value is None:
            raise refuse(f" {quote(text, 80)} is not {_LIST_FORM}")
    if ids and type(value) is not list:
        raise refuse(f" must be {_LIST_FORM}, got {quote(value, 80)}")
    if name == "user_input" and isinstance(value, list):
        problem = " is a list of messages, a multi-turn sample, which has no "
        raise refuse(problem + "context IDs to diagnose")
    if not ids and not isinstance(value, str):
        raise refuse(f" must be text, got {quote(value, 80)}")
    for position, item in enumerate(value if ids else [value]):
        at = f"[{position}]" if ids else ""
        if type(item) is not int and not isinstance(item, str):
            problem = "is not an ID: Ragas takes text or an integer"
            raise refuse(f"{at} {quote(item, 80)} {problem}")
        if isinstance(item, str) and has_lone_surrogate(item):
            problem = "holds a lone surrogate, which no log can hold"
            raise refuse(f"{at} {quote(item, 80)} {problem}")
    return [str(item) for item in value] if ids else value


def stream_ragas(
    path: str | Path,
    *,
    labels_path: str | Path | None = None,
    file_format: Format | None = None,
) -> Iterator[dict[str, Any]]:
    """The records, a sample at a time; an unreadable row anywhere is refused
    before a wrong one, and the dataset before the labels."""
    path = str(path)
    from_csv = file_format == "csv" if file_format else path.lower().endswith(".csv")
    labels, refused = None, None
    try:
        labels = None if labels_path is None else read_labels(labels_path)
    except LabelsRefused as error:
        refused = error
    limit = csv.field_size_limit(CSV_FIELD_LIMIT)  # csv's default cuts long contexts
    rows = _csv_rows(path) if from_csv else _jsonl_rows(path)
    index = 0
    try:
        for line, row in rows:
            try:
                record = {
                    key: _field(path, line, column, row.get(column), from_csv)
                    for column, key in ID_COLUMNS.items()
                }
                if labels is not None and str(index) in labels.labels:
                    record["correct"] = labels.labels[str(index)]
                record |= {
                    key: _field(path, line, column, row[column], from_csv)
                    for column, key in TEXT_COLUMNS.items()
                    if row.get(column) is not None
                }
            except InputFileError:
                for _ in rows:
                    pass
                raise
            if refused is None:
                yield {"id": str(index), "input": record}
            index += 1
    finally:
        csv.field_size_limit(limit)
    if index == 0:
        columns = ", ".join(ID_COLUMNS)
        raise InputFileError(path, None, f"holds no samples; each needs {columns}")
    if refused is not None:
        raise refused
    if labels is not None:

        def names_a_sample(i: Any) -> bool:
            return isinstance(i, str) and bool(_INDEX.fullmatch(i)) and int(i) < index

        check_labels_name_records(labels, names_a_sample, "sample", path)
