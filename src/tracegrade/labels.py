"""Staff labels joined onto a run after the fact: a JSON Lines file, one
`{"id", "correct", "epoch"?}` per line, the only label source when given
(docs/labels.md). Everything the file alone can show is checked on reading.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ._inspect_internals import PrerequisiteError
from .core.errors import quote
from .lines import LineError, has_lone_surrogate, is_blank, json_object, read_lines

SampleId = str | int
EpochKey = tuple[SampleId, int]


class LabelsError(LineError, PrerequisiteError):
    """A labels file that cannot be trusted, named by path, line and field; a
    `PrerequisiteError`, as `ArgumentError` is and for the same reason."""


def _is_sample_id(value: Any) -> bool:
    # Inspect sample ids are strings or integers; `true` is not the id 1.
    if isinstance(value, str):
        return value != ""
    return type(value) is int


@dataclass
class StaffLabels:
    """Labels by sample id, with the line each came from.

    `labels` holds the lines without an epoch (for every epoch of the
    sample), `epoch_labels` those with one, by `(sample id, epoch)`.
    """

    path: str
    labels: dict[SampleId, bool]
    lines: dict[SampleId, int]
    epoch_labels: dict[EpochKey, bool] = field(default_factory=dict)
    epoch_lines: dict[EpochKey, int] = field(default_factory=dict)
    first_epoch_line: dict[SampleId, tuple[int, int]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """Each sample's first epoch and line labelled by epoch, to refuse mixing."""

    @classmethod
    def read(cls, path: str | Path) -> StaffLabels:
        """Read and check a labels file; raises `LabelsError` naming the line."""
        staff = cls(path=str(path), labels={}, lines={})
        try:
            numbered = [(raw.number, raw.text) for raw in read_lines(staff.path)]
        except OSError as error:
            raise LabelsError(
                staff.path,
                None,
                f"cannot read the labels file ({error.strerror or error})",
            ) from None
        for number, line in numbered:
            if not is_blank(line):
                staff._add(number, *_parse_line(staff.path, number, line))
        if not staff.labels and not staff.epoch_labels:
            # Every sample would silently become `answer-label`.
            raise LabelsError(
                staff.path,
                None,
                "the labels file holds no labels; give one "
                '{"id": ..., "correct": true|false} line per sample',
            )
        return staff

    def _add(
        self, number: int, sample_id: SampleId, epoch: int | None, correct: bool
    ) -> None:
        """Add line `number`'s label, refusing one that another line gave."""
        where = f"id {quote(sample_id)}"

        def fail(problem: str, field: str) -> NoReturn:
            raise LabelsError(self.path, number, problem, field=field)

        if epoch is None:
            if sample_id in self.labels:
                fail(
                    f"{where} is already labelled on line {self.lines[sample_id]}; "
                    "one label per sample",
                    "id",
                )
            if sample_id in self.first_epoch_line:
                other_epoch, other_line = self.first_epoch_line[sample_id]
                fail(_mixed_message(where, other_epoch, other_line), "epoch")
            self.labels[sample_id] = correct
            self.lines[sample_id] = number
            return
        key = (sample_id, epoch)
        if key in self.epoch_labels:
            fail(
                f"{where} epoch {epoch} is already labelled on line "
                f"{self.epoch_lines[key]}; one label per sample and epoch",
                "epoch",
            )
        if sample_id in self.labels:
            fail(
                f"{where} epoch {epoch}: line {self.lines[sample_id]} already "
                "labels every epoch of this sample; label a sample either "
                "once for all epochs or epoch by epoch, not both",
                "epoch",
            )
        self.first_epoch_line.setdefault(sample_id, (epoch, number))
        self.epoch_labels[key] = correct
        self.epoch_lines[key] = number

    def label_for(self, sample_id: SampleId, epoch: int | None = None) -> bool | None:
        """The label for a run, or None.

        Without `epoch`, only a label for every epoch of the sample applies.
        """
        if epoch is not None and (sample_id, epoch) in self.epoch_labels:
            return self.epoch_labels[(sample_id, epoch)]
        return self.labels.get(sample_id)

    def ids(self) -> list[SampleId]:
        """The sample ids labelled, in file order, each once."""
        return list(
            dict.fromkeys([*self.labels, *(key[0] for key in self.epoch_labels)])
        )

    def check_names(
        self, sample_ids: Collection[SampleId], epochs: int, where: str
    ) -> None:
        """Raise `LabelsError` if a label names no run of `where`.

        A run is a sample id of `sample_ids` and an epoch from 1 to
        `epochs`; a label naming an epoch beyond them names no run either.
        Ids match exactly, type included.
        """
        unmatched = [
            (line, quote(sample_id))
            for sample_id, line in self.lines.items()
            if sample_id not in sample_ids
        ] + [
            (line, f"{quote(sample_id)} epoch {epoch}")
            for (sample_id, epoch), line in self.epoch_lines.items()
            if sample_id not in sample_ids or epoch > epochs
        ]
        if unmatched:
            count = len(sample_ids)
            runs = f"{count:,} sample{'' if count == 1 else 's'}" + (
                f", {epochs} epochs" if epochs > 1 else ""
            )
            raise LabelsError(
                self.path,
                None,
                _unmatched_text(sorted(unmatched), f"{where} ({runs})"),
            )


def _mixed_message(where: str, epoch: int, line: int) -> str:
    return (
        f"{where} has no epoch, so it would label every epoch, but line {line} "
        f"labels epoch {epoch} of it; label a sample either once for all "
        "epochs or epoch by epoch, not both"
    )


def _unmatched_text(unmatched: list[tuple[int, str]], where: str) -> str:
    """The message for labels, as (line, '"id"' or '"id" epoch N'), that
    name no run of `where`."""
    shown = ", ".join(f"{name} (line {line})" for line, name in unmatched[:5])
    more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
    counted = (
        "1 label names" if len(unmatched) == 1 else f"{len(unmatched)} labels name"
    )
    return (
        f"{counted} no run of {where}: {shown}{more}. "
        'Sample ids match exactly, type included ("1" is not 1).'
    )


def _parse_line(path: str, number: int, line: str) -> tuple[SampleId, int | None, bool]:
    def fail(problem: str, field: str | None = None) -> NoReturn:
        raise LabelsError(path, number, problem, field=field)

    record = json_object(path, number, line, "label", LabelsError)
    if "id" not in record:
        fail("no 'id' field", "id")
    sample_id = record["id"]
    if not _is_sample_id(sample_id):
        got = quote(sample_id, 80)
        fail(f"'id' must be a non-empty string or an integer, got {got}", "id")
    if isinstance(sample_id, str) and has_lone_surrogate(sample_id):
        fail(
            f"'id' {quote(sample_id, 80)} holds a lone surrogate, which no "
            "sample id can; sample ids must be valid Unicode text",
            "id",
        )
    shown_id = quote(sample_id, 80)
    if "correct" not in record:
        fail(f"no 'correct' field for id {shown_id}", "correct")
    correct = record["correct"]
    if type(correct) is not bool:
        fail(
            f"'correct' must be true or false for id {shown_id}, "
            f"got {quote(correct, 80)}; labels are never guessed",
            "correct",
        )
    epoch = record.get("epoch")
    if "epoch" in record and (type(epoch) is not int or epoch < 1):
        fail(
            f"'epoch' must be a positive integer for id {shown_id}, "
            f"got {quote(epoch, 80)}; leave it out to label every epoch",
            "epoch",
        )
    return sample_id, epoch, correct


__all__ = ["EpochKey", "LabelsError", "SampleId", "StaffLabels"]
