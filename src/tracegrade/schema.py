"""What a tracegrade score holds (docs/scores.md), read one way by every reader."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple, TypeGuard

from .core.errors import InvalidRecord, quote
from .core.fields import is_id_list
from .core.recall import stage_precision, stage_recall
from .core.steps import Step, read_steps

STAGE_SCORER: Final = "stage_diagnosis"
EXTRACTION_SCORER: Final = "ordered_extraction"
STAGES: Final = ("retrieval", "generation", "pass", "unresolved")
"""Worst first: a tie between modes goes to the earlier one."""
DIAGNOSED_STAGES: Final = ("retrieval", "generation", "pass")
CRITERIA: Final = ("membership", "order")
ErrorSide = Literal["data", "answer", "run"]
ERROR_SIDES: Final = ("data", "answer", "run")
UNSCORED_SIDES: Final = ("data", "run")
METADATA_KEYS: Final = frozenset({"result", "record", "read_from", "error"})
_RESCORE: Final = "score the log again (`inspect score LOG --scorer tracegrade/{}`)"


class InvalidScore(ValueError):
    """A score unlike any tracegrade writes; the message names the field."""


def _refused(what: str, *values: Any) -> InvalidScore:
    return InvalidScore(f"{what}, got {' and '.join(map(quote, values))}")


def is_share(value: Any) -> TypeGuard[float]:
    """A float from 0 to 1, as tracegrade writes a share (never 1, True or NaN)."""
    return type(value) is float and 0.0 <= value <= 1.0


def is_tracegrade_metadata(metadata: Any) -> TypeGuard[dict[str, Any]]:
    return type(metadata) is dict and metadata.keys() >= METADATA_KEYS


def is_nan(value: Any) -> bool:
    """An unscored score's value (`Score.unscored`, NaN)."""
    return type(value) is float and math.isnan(value)


class ScoreError(NamedTuple):
    """A score's `error`; `field` and `message` None in the bulk results."""

    kind: str
    side: ErrorSide
    field: str | None = None
    message: str | None = None

    @property
    def unscored(self) -> bool:
        return self.side in UNSCORED_SIDES


def read_error(metadata: Mapping[str, Any]) -> ScoreError | None:
    if (error := metadata.get("error")) is None:
        return None
    parts = map(error.get, ScoreError._fields) if type(error) is dict else [None] * 4
    kind, side, field, message = parts
    if not (type(kind) is str and kind and side in ERROR_SIDES):
        sides = ", ".join(ERROR_SIDES)
        what = f"metadata error must be null or have a kind and a side ({sides})"
        raise _refused(what, error)
    if not (field is None or type(field) is str):
        raise _refused("metadata error.field must be a string or null", field)
    if not (message is None or type(message) is str):
        raise _refused("metadata error.message must be a string", message)
    return ScoreError(kind, side, field, message)


def read_share(
    metadata: Mapping[str, Any], key: str, where: str = "metadata"
) -> float | None:
    """`recall` or `precision`: a share, or None; `where` names its source."""
    share = metadata.get(key)
    if not (share is None or is_share(share)):
        raise _refused(f"{where} {key} must be null or a share from 0.0 to 1.0", share)
    return share


def read_stage_value(value: Any, where: str = "the value") -> str:
    if not (type(value) is str and value in STAGES):
        raise _refused(f"{where} must be one of {', '.join(STAGES)}", value)
    return str(value)


def read_criteria(value: Any) -> tuple[bool, bool]:
    """A scored extraction score's value: `(membership, order)`."""
    membership, order = map(value.get, CRITERIA) if type(value) is dict else (0, 0)
    if not (type(membership) is bool and type(order) is bool):
        raise _refused('the value must be {"membership": bool, "order": bool}', value)
    if order and not membership:
        raise InvalidScore(
            "order passes without membership, which the grading rules never give"
        )
    return membership, order


def read_as(metadata: Mapping[str, Any], where: str = "metadata") -> str | None:
    reading = metadata.get("read_as")
    if not (reading is None or (type(reading) is str and reading)):
        raise _refused(f"{where} read_as must be a reading's name or null", reading)
    return reading


class LostID(NamedTuple):
    id: str
    lost_at: str
    last_step: str | None
    last_rank: int | None


class StageScore(NamedTuple):
    """A stage score, read: `stage` None when unscored; lists when diagnosed."""

    stage: str | None
    error: ScoreError | None
    recall: float | None
    precision: float | None
    required: list[str] | None = None
    missing: list[str] | None = None
    labelled_correct: bool = False
    lost: list[LostID] | None = None
    step_recall: dict[str, float] | None = None
    steps: list[Step] | None = None
    context_size: int | None = None


def read_stage(value: Any, metadata: Any) -> StageScore:
    """A stage score from its value and metadata, checked as a whole."""
    metadata = _tracegrade_metadata(metadata)
    error = read_error(metadata)
    unscored = error is not None and error.unscored
    recall = read_share(metadata, "recall")
    precision = read_share(metadata, "precision")
    record, result = metadata["record"], metadata["result"]
    if "recall" not in metadata or "precision" not in metadata:
        # By a tracegrade that wrote neither (or only recall): from the record.
        if type(record) is dict:
            recall, precision = stage_recall(record), stage_precision(record)
        elif not unscored:
            absent = "recall" if "recall" not in metadata else "precision"
            raise InvalidScore(
                f"a scored stage score needs metadata {absent}, and its record "
                f"cannot give it, got {quote(record)}: " + _RESCORE.format(STAGE_SCORER)
            )
    lost = read_lost(metadata.get("lost"))
    step_recall = read_step_recall(metadata)
    if not unscored:
        read_stage_value(value)
    if unscored or value == "unresolved":
        stage = None if unscored else value
        return StageScore(stage, error, recall, precision, lost=lost,
                          step_recall=step_recall)  # fmt: skip
    required = record.get("required") if type(record) is dict else None
    missing = result.get("missing") if type(result) is dict else None
    if not (is_id_list(required) and is_id_list(missing)):
        what = "a diagnosed score needs the ID lists record.required and result.missing"
        raise _refused(what, required, missing)
    if recall is None:
        raise _refused("a diagnosed score's metadata recall must be a share", None)
    try:
        steps = read_steps(record)
    except InvalidRecord as invalid:
        raise InvalidScore(f"record.{invalid}") from None
    context = record.get("context")
    if steps is not None and not is_id_list(context):
        what = "a diagnosed score with steps needs the ID list record.context"
        raise _refused(what, context)
    if (steps is None) != (lost is None):
        raise InvalidScore(
            "metadata lost and record.steps go together, got "
            f"{'lost' if lost is not None else 'steps'} alone"
        )
    context_size = None if steps is None else len(context)
    # `_make` builds the tuple in C; the generated `__new__` is Python.
    return StageScore._make(
        (value, error, recall, precision, required, missing,
         record.get("correct") is True, lost, step_recall, steps, context_size)
    )  # fmt: skip


def _is_lost(item: LostID) -> bool:
    step, rank = item.last_step, item.last_rank
    named = type(step) is str and type(rank) is int and rank >= 1
    unnamed = step is None and rank is None
    return type(item.id) is str and type(item.lost_at) is str and (named or unnamed)


def read_lost(lost: Any, where: str = "metadata lost") -> list[LostID] | None:
    """`lost` (None when null), checked; `where` names it in an error."""
    if lost is None:
        return None
    if type(lost) is not list:
        raise _refused(f"{where} must be an array", lost)
    read = []
    for position, entry in enumerate(lost):
        fields = map(entry.get, LostID._fields) if type(entry) is dict else None
        if fields is None or not _is_lost(item := LostID._make(fields)):
            what = (
                f"{where}[{position}] must be an object of a string id and "
                "lost_at, and a last_step (a string) and last_rank (from 1) both "
                "null or both set"
            )
            raise _refused(what, entry)
        read.append(item)
    return read


def read_step_recall(metadata: Mapping[str, Any]) -> dict[str, float] | None:
    """`step_recall`, step name to share, or None when absent."""
    recalls = metadata.get("step_recall")
    if recalls is None or (
        type(recalls) is dict and all(map(is_share, recalls.values()))
    ):
        return recalls
    what = "metadata step_recall must map each step's name to a share from 0.0 to 1.0"
    raise _refused(what, recalls)


class Itemised(NamedTuple):
    dropped: list[str]
    invented: list[str]
    first_order_break: int | None
    kept_in_order: int


class ExtractionScore(NamedTuple):
    """An extraction score, read: criteria None when unscored."""

    membership: bool | None
    order: bool | None
    error: ScoreError | None
    read_as: str | None
    source: list[str] | None = None
    itemised: Itemised | None = None


def read_extraction(value: Any, metadata: Any) -> ExtractionScore:
    """An extraction score from its value and metadata, checked as a whole."""
    metadata = _tracegrade_metadata(metadata)
    error, reading = read_error(metadata), read_as(metadata)
    if error is not None and error.unscored:
        return ExtractionScore(None, None, error, reading)
    membership, order = read_criteria(value)
    if "itemised" not in metadata:
        raise InvalidScore(
            "a scored extraction score needs metadata itemised, which a log "
            f"scored before 0.1.0 lacks: {_RESCORE.format(EXTRACTION_SCORER)}"
        )
    itemised, result, record = map(metadata.get, ("itemised", "result", "record"))
    if type(result) is not dict or "membership" not in result:
        if itemised is not None:
            what = "metadata itemised must be null where result is no grade"
            raise _refused(what, itemised)
        return ExtractionScore(membership, order, error, reading)
    source = record.get("source") if type(record) is dict else None
    if not is_id_list(source):
        raise _refused("a graded score needs the ID list record.source", source)
    if type(itemised) is not dict:
        raise _refused("a graded score's metadata itemised must be an object", itemised)
    items = read_itemised(itemised, "metadata itemised")
    return ExtractionScore(membership, order, error, reading, source, items)


def read_itemised(itemised: Mapping[str, Any], where: str) -> Itemised:
    """The itemisation's four fields, checked; `where` names their source."""
    dropped, invented, first_break, kept = map(itemised.get, Itemised._fields)
    if not (is_id_list(dropped) and is_id_list(invented)):
        what = f"{where} needs the ID lists dropped and invented"
        raise _refused(what, dropped, invented)
    breaks = first_break is None or (type(first_break) is int and first_break >= 1)
    if not (breaks and type(kept) is int and kept >= 0):
        what = "needs first_order_break (from 1, or null) and kept_in_order (from 0)"
        raise _refused(f"{where} {what}", first_break, kept)
    return Itemised(dropped, invented, first_break, kept)


def _tracegrade_metadata(metadata: Any) -> dict[str, Any]:
    if is_tracegrade_metadata(metadata):
        return metadata
    keys = f"the keys {quote(sorted(metadata))}" if isinstance(metadata, dict) else None
    raise InvalidScore(
        f"the metadata must hold {', '.join(sorted(METADATA_KEYS))}, got "
        + (keys or "no object")
    )
