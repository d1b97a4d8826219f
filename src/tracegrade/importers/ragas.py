"""A Ragas evaluation dataset (JSON Lines or CSV, as `to_jsonl` and `to_csv`
write it) as stage-diagnosis records, one per sample, id its index; a CSV
list cell is JSON or Python's repr, nothing else (docs/import-ragas.md)."""

from __future__ import annotations

import csv
import re
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any, Literal

from ..core.errors import quote
from ..lines import (
    MALFORMED_JSON,
    has_lone_surrogate,
    json_objects,
    read_lines,
    strict_json_loads,
    undecodable,
)
from ..literals import read_repr_list
from .common import (
    InputFileError,
    LabelsRefused,
    RecordLabels,
    check_labels_name_records,
    label_record,
    read_labels,
)

Format = Literal["jsonl", "csv"]

ID_COLUMNS = {"reference_context_ids": "required", "retrieved_context_ids": "context"}
TEXT_COLUMNS = {
    "user_input": "question",
    "response": "answer",
    "reference": "reference",
}

CSV_FIELD_LIMIT = 2**31 - 1
"""The largest cell read: the largest C long on every platform."""

_LIST_FORM = (
    "a list of IDs, as Ragas writes one (['D1', 'D2']): a JSON array, or a "
    "Python list of quoted strings with a comma between each two"
)


def format_of(path: str | Path) -> Format:
    """CSV for a `.csv` name, else JSON Lines (what `to_jsonl` writes)."""
    return "csv" if str(path).lower().endswith(".csv") else "jsonl"


# --- reading the rows ----------------------------------------------------------


def _jsonl_rows(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        yield from json_objects(path, "sample", InputFileError)
    except InputFileError as error:
        if error.line == 1 and error.kind == MALFORMED_JSON and _is_array(path):
            raise InputFileError(
                path,
                1,
                f"{error.problem}; a Ragas dataset is JSON Lines (to_jsonl), "
                "not a JSON array",
                kind=MALFORMED_JSON,
            ) from None
        raise


def _is_array(path: str) -> bool:
    """The file's first line opens a JSON array."""
    first = next(read_lines(path), None)
    return first is not None and first.text.lstrip().startswith("[")


def _csv_lines(path: str) -> Iterator[str]:
    """The lines, ends kept, as the csv module wants them (newline=""), one in
    memory at a time; a line that is not UTF-8 refused by line and column."""
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as text:
        for number, line in enumerate(text, start=1):
            problem = undecodable(line)
            if problem is not None:
                raise InputFileError(path, number, problem)
            yield line


def _csv_rows(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each data row as {column: cell}, empty cells left out, with the line
    it starts on (a quoted cell may span lines)."""
    lines = _csv_lines(path)
    reader = csv.reader(lines, strict=True)
    # The csv module refuses cells over 128 KiB by default; a retrieved
    # context is often longer. The limit is the module's, so it is set back.
    limit = csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        yield from _csv_body(path, reader)
    except InputFileError:
        # Bytes that are not UTF-8 anywhere are said first: the file is
        # not text, so what its rows say is beside the point.
        for _ in lines:
            pass
        raise
    finally:
        csv.field_size_limit(limit)


def _csv_body(path: str, reader: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    header: list[str] | None = None
    header_line = 0
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputFileError(path, start, f"not a CSV row ({error})") from None
        if not cells or cells == [""]:
            continue
        if header is None:
            header, header_line = cells, start
            _check_header(path, start, header)
            continue
        if len(cells) != len(header):
            raise InputFileError(
                path,
                start,
                f"a row of {len(cells)} cells, where the header (line "
                f"{header_line}) names {len(header)} columns",
            )
        yield (
            start,
            {
                name: cell
                for name, cell in zip(header, cells, strict=True)
                if cell != ""
            },
        )


def _check_header(path: str, line: int, header: list[str]) -> None:
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputFileError(
                path, line, f"column {quote(name)} is named twice in the header"
            )
        seen.add(name)
    absent = [name for name in ID_COLUMNS if name not in seen]
    if absent:
        raise InputFileError(
            path,
            line,
            f"the header has no column {quote(absent[0])}; found "
            + ", ".join(quote(name) for name in header),
            field=absent[0],
        )


# --- the fields ------------------------------------------------------------------


def _cell_list(text: str) -> Any:
    """A CSV cell's list, JSON or else `repr`'s list of literals; None for
    anything else (Python's reader would take `['D1' 'D2']` as `D1D2`)."""
    try:
        return strict_json_loads(text)
    except ValueError:
        pass
    return read_repr_list(text)


def _id_list(path: str, line: int, name: str, value: Any, from_csv: bool) -> list[str]:
    """A column of IDs as text, or an `InputFileError` naming it."""

    def refuse(problem: str) -> InputFileError:
        return InputFileError(path, line, name + problem, field=name)

    if value is None:
        raise refuse(
            " is absent; Ragas's IDBasedContextRecall needs both "
            "reference_context_ids and retrieved_context_ids"
        )
    if from_csv:
        text, value = value, _cell_list(value)
        if value is None:
            raise refuse(f" {quote(text, 80)} is not {_LIST_FORM}")
    if type(value) is not list:
        raise refuse(f" must be {_LIST_FORM}, got {quote(value, 80)}")
    ids: list[str] = []
    for position, item in enumerate(value):
        if type(item) is int:
            ids.append(str(item))
        elif isinstance(item, str):
            if has_lone_surrogate(item):
                raise refuse(
                    f"[{position}] {quote(item, 80)} holds a lone surrogate, "
                    "which no log can hold"
                )
            ids.append(item)
        else:
            raise refuse(
                f"[{position}] {quote(item, 80)} is not an ID: Ragas takes text "
                "or an integer"
            )
    return ids


def _text(path: str, line: int, name: str, value: Any) -> str | None:
    if value is None:
        return None
    if name == "user_input" and isinstance(value, list):
        raise InputFileError(
            path,
            line,
            "user_input is a list of messages, a multi-turn sample, which has "
            "no context IDs to diagnose",
            field=name,
        )
    if not isinstance(value, str):
        raise InputFileError(
            path, line, f"{name} must be text, got {quote(value, 80)}", field=name
        )
    if has_lone_surrogate(value):
        raise InputFileError(
            path,
            line,
            f"{name} {quote(value, 80)} holds a lone surrogate, which no log can hold",
            field=name,
        )
    return value


def _samples(
    path: str, file_format: Format | None, labels: RecordLabels | None
) -> Iterator[dict[str, Any]]:
    """One record per sample, a row in memory at a time. A row that cannot be
    read is refused before a sample that can but is wrong, wherever each is."""
    from_csv = (file_format or format_of(path)) == "csv"
    rows = _csv_rows(path) if from_csv else _jsonl_rows(path)
    index = 0
    while (found := _next_row(path, rows)) is not None:
        line, row = found
        try:
            record = _sample(path, line, row, from_csv)
            label_record(record, str(index), labels)
            record.update(_texts(path, line, row))
        except InputFileError:
            while _next_row(path, rows) is not None:
                pass
            raise
        yield {"id": str(index), "input": record}
        index += 1
    if index == 0:
        columns = ", ".join(ID_COLUMNS)
        raise InputFileError(path, None, f"holds no samples; each needs {columns}")
    if labels is not None:
        check_labels_name_records(labels, SampleIds(index), "sample", path)


def _next_row(
    path: str, rows: Iterator[tuple[int, dict[str, Any]]]
) -> tuple[int, dict[str, Any]] | None:
    try:
        return next(rows, None)
    except OSError as error:
        raise InputFileError(
            path, None, f"cannot be read ({error.strerror or error})"
        ) from None


def _sample(
    path: str, line: int, row: dict[str, Any], from_csv: bool
) -> dict[str, Any]:
    return {
        key: _id_list(path, line, column, row.get(column), from_csv)
        for column, key in ID_COLUMNS.items()
    }


def _texts(path: str, line: int, row: dict[str, Any]) -> dict[str, str]:
    texts = {
        key: _text(path, line, column, row.get(column))
        for column, key in TEXT_COLUMNS.items()
    }
    return {key: text for key, text in texts.items() if text is not None}


class SampleIds(Container[object]):
    """The ids "0" to str(count - 1), without a set of them: a sample's id
    is its index."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __contains__(self, sample_id: object) -> bool:
        return (
            isinstance(sample_id, str)
            and len(sample_id) <= len(str(self.count))
            and _INDEX.fullmatch(sample_id) is not None
            and int(sample_id) < self.count
        )


_INDEX = re.compile(r"0|[1-9][0-9]*")


def stream_ragas(
    path: str | Path,
    *,
    labels_path: str | Path | None = None,
    file_format: Format | None = None,
) -> Iterator[dict[str, Any]]:
    """The records, labelled, a sample read for each; a refusal may come after
    some. The dataset's problems are said before the labels file's."""
    labels: RecordLabels | None = None
    refused: LabelsRefused | None = None
    if labels_path is not None:
        try:
            labels = read_labels(labels_path)
        except LabelsRefused as error:
            refused = error
    samples = _samples(str(path), file_format, labels)
    if refused is not None:
        for _ in samples:
            pass
        raise refused
    yield from samples
