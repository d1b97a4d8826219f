"""Staff labels, one `{"id", "correct", "epoch"?}` a line (docs/labels.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ._inspect_internals import PrerequisiteError
from .core.errors import quote
from .lines import LineError, has_lone_surrogate, is_blank, json_object, read_lines

SampleId = str | int
EpochKey = tuple[SampleId, int]


class LabelsError(LineError, PrerequisiteError):
    """A labels file refused, named by path, line and field."""


@dataclass
class StaffLabels:
    """Labels by sample id (`labels`: for every epoch) or by (id, epoch)
    (`epoch_labels`), with the line each came from."""

    path: str
    labels: dict[SampleId, bool]
    lines: dict[SampleId, int]
    epoch_labels: dict[EpochKey, bool] = field(default_factory=dict)
    epoch_lines: dict[EpochKey, int] = field(default_factory=dict)
    # Each sample's first line labelling an epoch, to refuse mixing.
    first_epoch_line: dict[SampleId, int] = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path) -> StaffLabels:
        """Read and check a labels file; raises `LabelsError` naming the line."""
        staff = cls(path=str(path), labels={}, lines={})
        try:
            for number, line, _ in read_lines(staff.path):
                if not is_blank(line):
                    staff._add(number, *_parse_line(staff.path, number, line))
        except OSError as error:
            why = f"cannot read the labels file ({error.strerror or error})"
            raise LabelsError(staff.path, None, why) from None
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
        where = f"id {quote(sample_id)}" + ("" if epoch is None else f" epoch {epoch}")
        if epoch is None:
            taken, mixed = self.lines.get(sample_id), self.first_epoch_line
        else:
            taken, mixed = self.epoch_lines.get((sample_id, epoch)), self.lines
        if taken is not None:
            problem = f"{where} is already labelled on line {taken}"
            field_name = "id" if epoch is None else "epoch"
            raise LabelsError(self.path, number, problem, field=field_name)
        if sample_id in mixed:
            labels = "an epoch" if epoch is None else "every epoch"
            problem = (
                f"{where}: line {mixed[sample_id]} labels {labels} of this sample; "
                "label a sample either once for all epochs or epoch by epoch, not both"
            )
            raise LabelsError(self.path, number, problem, field="epoch")
        if epoch is None:
            self.labels[sample_id], self.lines[sample_id] = correct, number
        else:
            self.first_epoch_line.setdefault(sample_id, number)
            self.epoch_labels[sample_id, epoch] = correct
            self.epoch_lines[sample_id, epoch] = number

    def label_for(self, sample_id: SampleId, epoch: int | None = None) -> bool | None:
        """The label for a run, or None; without `epoch`, only a label for
        every epoch of the sample applies."""
        key = (sample_id, epoch or 0)  # epochs count from 1: 0 is never labelled
        return self.epoch_labels.get(key, self.labels.get(sample_id))

    def ids(self) -> list[SampleId]:
        """The sample ids labelled, each once."""
        return list(dict.fromkeys([*self.labels, *self.first_epoch_line]))

    def check_names(
        self, known: Callable[[SampleId, int | None], bool], what: str, where: str
    ) -> None:
        """`LabelsError` if a label names no `known` (id, epoch; None: every
        epoch) of `where`: a typo would leave a run unlabelled."""
        keyed = [
            *self.epoch_lines.items(),
            *(((i, None), n) for i, n in self.lines.items()),
        ]
        unmatched = sorted(
            (line, quote(id_) + ("" if epoch is None else f" epoch {epoch}"))
            for (id_, epoch), line in keyed
            if not known(id_, epoch)
        )
        if not unmatched:
            return
        shown = ", ".join(f"{name} (line {line})" for line, name in unmatched[:10])
        more = f" and {len(unmatched) - 10} more" if len(unmatched) > 10 else ""
        counted = f"{len(unmatched)} labels name" if unmatched[1:] else "1 label names"
        raise LabelsError(
            self.path,
            None,
            f"{counted} no {what} of {where}: {shown}{more}. Ids match exactly, "
            'type included ("1" is not 1).',
        )


def _parse_line(path: str, number: int, line: str) -> tuple[SampleId, int | None, bool]:
    record = json_object(path, number, line, "label", LabelsError)
    sample_id, epoch, correct = map(record.get, ("id", "epoch", "correct"))
    shown, field_name, problem = quote(sample_id, 80), "id", None
    if "id" not in record:
        problem = "no 'id' field"
    # Inspect sample ids are strings or integers; `true` is not the id 1.
    elif sample_id == "" or type(sample_id) not in (str, int):
        problem = f"'id' must be a non-empty string or an integer, got {shown}"
    elif isinstance(sample_id, str) and has_lone_surrogate(sample_id):
        problem = (
            f"'id' {shown} holds a lone surrogate, which no sample id can; "
            "sample ids must be valid Unicode text"
        )
    elif "correct" not in record:
        field_name, problem = "correct", f"no 'correct' field for id {shown}"
    elif type(correct) is not bool:
        field_name = "correct"
        problem = (
            f"'correct' must be true or false for id {shown}, got "
            f"{quote(correct, 80)}; labels are never guessed"
        )
    elif "epoch" in record and (type(epoch) is not int or epoch < 1):
        field_name = "epoch"
        problem = (
            f"'epoch' must be a positive integer for id {shown}, got "
            f"{quote(epoch, 80)}; leave it out to label every epoch"
        )
    if problem is not None:
        raise LabelsError(path, number, problem, field=field_name)
    return record["id"], epoch, record["correct"]
