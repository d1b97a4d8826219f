"""Datasets, labels and the JSON Lines importers refuse a broken line alike:
one `LineError` naming the file, the line and, where one is at fault, the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tracegrade.datasets import read_fixture_cases
from tracegrade.importers.openinference import ImportRules, stream_openinference
from tracegrade.importers.ragas import stream_ragas
from tracegrade.labels import StaffLabels
from tracegrade.lines import NOT_AN_OBJECT, LineError, json_objects

READERS: dict[str, Callable[[str], Any]] = {
    "dataset": read_fixture_cases,
    "labels": StaffLabels.read,
    "ragas": lambda path: list(stream_ragas(path, file_format="jsonl")),
    # The spans are read and refused before the gold file is opened.
    "openinference": lambda path: list(
        stream_openinference(path, "no-gold", rules=ImportRules("key"), notes=[])
    ),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b'["a list"]', 'must be a JSON object, got ["a list"]'),
        (b'{"id": "\xff"}', "not valid UTF-8 text (byte 0xFF at column 9)"),
        (b'{"a": 1, "a": 2}', 'the key "a" appears twice in one object'),
        (b'{"n": 1e400}', "JSON that no Inspect log can hold"),
    ],
    ids=["not JSON", "not an object", "not UTF-8", "repeated key", "infinity"],
)
def test_every_reader_names_the_file_and_line_of_a_broken_line(
    tmp_path: Path, reader: str, line: bytes, problem: str
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(b"\n" + line + b"\n")

    with pytest.raises(LineError) as refused:
        READERS[reader](str(path))

    assert (refused.value.path, refused.value.line) == (str(path), 2)
    assert problem in refused.value.problem
    assert str(refused.value) == f"{path}, line 2: {refused.value.problem}"


def test_a_label_names_its_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a", "correct": "yes"}\n')

    with pytest.raises(LineError) as refused:
        StaffLabels.read(path)

    assert (refused.value.line, refused.value.field) == (1, "correct")


def test_objects_are_read_a_line_at_a_time(tmp_path: Path) -> None:
    """The reader yields each line's object before reading the next, so a
    broken line late in a file is met only once the earlier ones are used."""
    path = tmp_path / "input.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2}\n[3]\n')
    read = json_objects(path, "record", LineError)

    assert next(read) == (1, {"a": 1})
    assert next(read) == (3, {"b": 2})
    with pytest.raises(LineError) as refused:
        next(read)
    assert (refused.value.line, refused.value.kind) == (4, NOT_AN_OBJECT)
