"""What the importers share: refusals naming file, line and field; labels read."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import quote
from ..lines import LineError

if TYPE_CHECKING:
    from ..labels import StaffLabels

SHOWN = 10  # names a refusal or a note shows before it only counts


class ImportRefused(ValueError):
    """Files that cannot become records: one line, and the exit code."""

    exit_code = 1


class InputFileError(LineError, ImportRefused):
    """An input refused by file, line (None: the whole file) and field."""


class LabelsRefused(ImportRefused):
    """A labels file that cannot label this import."""


class NoTemporarySpace(ImportRefused):
    """A temporary file that could not be written: exit 2, as a failed write."""

    exit_code = 2

    def __init__(self, error: OSError, holding: str) -> None:
        super().__init__(
            f"cannot write a temporary file in {tempfile.gettempdir()!r} to "
            f"hold the {holding} ({error.strerror or error}); nothing was "
            "written (set TMPDIR to a directory with space)"
        )


def listed(items: Sequence[Any], show: Callable[[Any], str] = quote) -> str:
    """The first `SHOWN` items as `show` gives them, then how many more."""
    more = len(items) - SHOWN
    shown = ", ".join(show(item) for item in items[:SHOWN])
    return shown + (f" and {more} more" if more > 0 else "")


def named(names: Sequence[Any], lines: Mapping[Any, int]) -> str:
    return listed(names, lambda name: f"{quote(name)} (line {lines[name]})")


def counted(count: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"1 {noun}" if count == 1 else f"{count} {plural}"


def read_labels(path: str | Path) -> StaffLabels:
    """A labels file without `epoch`: an imported run has one label."""
    from ..labels import LabelsError, StaffLabels  # loads Inspect AI

    try:
        staff = StaffLabels.read(path)
    except LabelsError as error:
        raise LabelsRefused(str(error)) from None
    if staff.epoch_labels:
        (sample_id, epoch), line = min(staff.epoch_lines.items(), key=lambda i: i[1])
        raise LabelsRefused(
            f"{path}, line {line}: id {quote(sample_id)} has an 'epoch' ({epoch}); "
            "an imported run is one record with one label, so leave 'epoch' out"
        )
    return staff


def check_labels_name_records(
    labels: StaffLabels, known: Callable[[Any], bool], what: str, where: str
) -> None:
    """Refuse labels naming no `known` id: a typo would leave a run unlabelled."""
    unmatched = [sample_id for sample_id in labels.labels if not known(sample_id)]
    if not unmatched:
        return
    count = "1 label names" if len(unmatched) == 1 else f"{len(unmatched)} labels name"
    message = f"{labels.path}: {count} no {what} of {where}: "
    message += named(unmatched, labels.lines)
    if numbers := [i for i in unmatched if isinstance(i, int)]:
        message += f"; {what} ids are text, so write {quote(str(numbers[0]))}, "
        message += f"not {numbers[0]}"
    raise LabelsRefused(message)
