"""Staff labels joined onto a run after the fact.

A labels file is JSON Lines, one `{"id": <sample id>, "correct": true|false}`
per line (other keys, such as a reviewer's note, are ignored).
It is the staff's word on a run: when a stage scorer is given one, it is
the only source of labels, and a sample it does not mention has no label.

Everything that can be checked in the file alone is checked when it is
read, before any sample is scored. Whether every id names a sample can only
be known once scoring is over; `StaffLabels.check_all_matched` does that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from .datasets import strict_json_loads

SampleId = str | int


class LabelsError(Exception):
    """A labels file that cannot be trusted, named by path and line.

    Not a `ValueError`, unlike tracegrade's other input errors: Inspect's
    scorer loader (`inspect score --scorer ...`) catches `ValueError` while
    building a scorer and replaces it with "couldn't be loaded", which
    would hide the line to fix.
    """


def _is_sample_id(value: Any) -> bool:
    # Inspect sample ids are strings or integers; `true` is not the id 1.
    if isinstance(value, str):
        return value != ""
    return type(value) is int


@dataclass
class StaffLabels:
    """Labels by sample id, and which samples have been scored so far."""

    path: str
    labels: dict[SampleId, bool]
    lines: dict[SampleId, int]
    seen: set[SampleId] = field(default_factory=set)

    @classmethod
    def read(cls, path: str | Path) -> StaffLabels:
        """Read and check a labels file; raises `LabelsError` naming the line."""
        path = str(path)
        labels: dict[SampleId, bool] = {}
        lines: dict[SampleId, int] = {}
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise LabelsError(f"cannot read labels file {path}: {error}") from error
        # Split on newlines only: `splitlines` would also split inside a JSON
        # string holding U+2028, which JSON allows unescaped.
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            sample_id, correct = _parse_line(path, number, line)
            if sample_id in labels:
                raise LabelsError(
                    f"{path}, line {number}: id {sample_id!r} is already labelled "
                    f"on line {lines[sample_id]}; one label per sample"
                )
            labels[sample_id] = correct
            lines[sample_id] = number
        return cls(path=path, labels=labels, lines=lines)

    def label_for(self, sample_id: SampleId) -> bool | None:
        """The label for a sample being scored, or None; notes the sample."""
        self.seen.add(sample_id)
        return self.labels.get(sample_id)

    def unmatched(self) -> list[SampleId]:
        """Labelled ids that no scored sample has had, in file order."""
        return [sample_id for sample_id in self.labels if sample_id not in self.seen]

    def check_all_matched(self) -> None:
        """Raise `LabelsError` if a label names no sample that was scored."""
        unmatched = self.unmatched()
        if unmatched:
            raise LabelsError(unmatched_message(self.path, unmatched, self.lines))


def unmatched_message(
    path: str, unmatched: Iterable[SampleId], lines: dict[SampleId, int]
) -> str:
    ids = list(unmatched)
    shown = ", ".join(
        f"{sample_id!r} (line {lines[sample_id]})" for sample_id in ids[:5]
    )
    more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    counted = "1 label names" if len(ids) == 1 else f"{len(ids)} labels name"
    return (
        f"{path}: {counted} no sample that was scored: {shown}{more}. "
        'Sample ids match exactly, type included ("1" is not 1).'
    )


def _parse_line(path: str, number: int, line: str) -> tuple[SampleId, bool]:
    def fail(problem: str) -> NoReturn:
        raise LabelsError(f"{path}, line {number}: {problem}")

    try:
        record = strict_json_loads(line)
    except ValueError as error:
        fail(f"not valid JSON ({error})")
    if not isinstance(record, dict):
        shape = '{"id": ..., "correct": true}'
        fail(f"expected an object like {shape}, got {line.strip()[:80]}")
    if "id" not in record:
        fail("no 'id' field")
    sample_id = record["id"]
    if not _is_sample_id(sample_id):
        got = json.dumps(sample_id)
        fail(f"'id' must be a non-empty string or an integer, got {got}")
    if "correct" not in record:
        fail(f"no 'correct' field for id {sample_id!r}")
    correct = record["correct"]
    if type(correct) is not bool:
        fail(
            f"'correct' must be true or false for id {sample_id!r}, "
            f"got {json.dumps(correct)}; labels are never guessed"
        )
    return sample_id, correct
