"""`samples_df` columns of tracegrade scores, read as report reads them."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final, cast

from inspect_ai.analysis import Column, ColumnType, SampleColumn
from inspect_ai.log import EvalSample, EvalSampleSummary
from inspect_ai.scorer import Score

from ._inspect_internals import METADATA_VALUE_REMOVED
from .schema import (
    CRITERIA,
    EXTRACTION_SCORER,
    STAGE_SCORER,
    InvalidScore,
    is_nan,
    read_as,
    read_criteria,
    read_extraction,
    read_stage,
    read_stage_value,
)
from .scorers.outcome import error_kind

STAGE_SCORE: Final = STAGE_SCORER
EXTRACTION_SCORE: Final = EXTRACTION_SCORER
# Inspect turns a list into JSON text unless the column's type is `list`.
_LIST: Final = cast("type[ColumnType]", list)
_Sample = EvalSample | EvalSampleSummary


# Each column's key (after the prefix) and type; only `_SUMMARISED` keys skip `full`.
_STAGE_KEYS: Final = {
    "": str, "missing": _LIST, "missing_count": int, "recall": float,
    "precision": float, "label": bool, "label_from": str, "error": str,
    "error_side": str, "lost_at": _LIST,
}  # fmt: skip
_EXTRACTION_KEYS: Final = {
    "membership": bool, "order": bool, "read_as": str, "error": str,
    "error_side": str, "dropped": _LIST, "invented": _LIST,
    "first_order_break": int, "kept_in_order": int,
}  # fmt: skip
_SUMMARISED: Final = frozenset({"", "error", "membership", "order", "read_as"})


def stage_columns(score: str = STAGE_SCORE, *, prefix: str = "stage") -> list[Column]:
    """Columns of the stage diagnosis score named `score`, names from `prefix`."""
    return [_column(_staged, score, prefix, k, t) for k, t in _STAGE_KEYS.items()]


def step_recall_columns(
    *steps: str, score: str = STAGE_SCORE, prefix: str = "stage"
) -> list[Column]:
    """A column `{prefix}_{step}_recall` per step named (a pipeline names them)."""
    if not steps:
        raise ValueError("step_recall_columns needs at least one step name")
    for step in steps:
        if not isinstance(step, str) or not step:
            raise ValueError(f"a step name is a non-empty string, got {step!r}")
    return [
        _column(_staged, score, prefix, f"{step}_recall", float)
        for step in dict.fromkeys(steps)
    ]


def extraction_columns(
    score: str = EXTRACTION_SCORE, *, prefix: str = "extraction"
) -> list[Column]:
    """Columns of the ordered extraction score named `score`, names from `prefix`."""
    return [_column(_graded, score, prefix, k, t) for k, t in _EXTRACTION_KEYS.items()]


def _column(
    read_key: Callable[..., Any], score: str, prefix: str, key: str, kind: type
) -> Column:
    full = key not in _SUMMARISED
    # Partials of module-level functions pickle, for `samples_df(parallel=True)`.
    read = partial(read_key if full else _summarised, key=key)
    path = partial(_read, score=score, read=read)
    name = f"{prefix}_{key}" if key else prefix
    return SampleColumn(name, path=path, type=kind, full=full)


def _read(sample: _Sample, score: str, read: Callable[[Score], Any]) -> Any:
    found = (sample.scores or {}).get(score)
    try:
        return None if found is None else read(found)
    except InvalidScore as invalid:
        where = f"score {score!r} of sample {sample.id!r} epoch {sample.epoch}"
        raise InvalidScore(f"{where}: {invalid}") from None


def _whole(found: Score) -> dict[str, Any]:
    metadata = found.metadata or {}
    for key, value in metadata.items():
        if isinstance(value, str) and value == METADATA_VALUE_REMOVED:
            raise InvalidScore(
                f"metadata {key!r} was removed from the sample summary (over "
                "1k characters); read it from the full sample (full=True)"
            )
    return metadata


def _staged(found: Score, key: str) -> Any:
    metadata = _whole(found)
    staged = read_stage(found.value, metadata)
    if key == "missing_count":
        return None if staged.missing is None else len(staged.missing)
    if key == "lost_at":
        return None if staged.lost is None else [e.lost_at for e in staged.lost]
    if key == "error_side":
        return None if staged.error is None else staged.error.side
    if key in ("label", "label_from"):
        field = metadata["record" if key == "label" else "read_from"]
        value = field.get("correct") if isinstance(field, dict) else None
        # Exactly the type: 1 must not be read as True.
        return value if type(value) is (bool if key == "label" else str) else None
    if key.endswith("_recall"):  # a step's; no other key ends so
        return (staged.step_recall or {}).get(key.removesuffix("_recall"))
    return getattr(staged, key)


def _graded(found: Score, key: str) -> Any:
    graded = read_extraction(found.value, _whole(found))
    if key == "error_side":
        return None if graded.error is None else graded.error.side
    return None if graded.itemised is None else getattr(graded.itemised, key)


def _summarised(found: Score, key: str) -> Any:
    if key == "error":
        # `reason`, the error kind, is kept by a summary whatever its length.
        return error_kind(found)
    if key == "read_as":
        return read_as(_whole(found))
    if is_nan(found.value):  # unscored
        return None
    if key == "":
        return read_stage_value(found.value)
    return read_criteria(found.value)[CRITERIA.index(key)]


StageColumns: list[Column] = stage_columns()
"""The columns of the score `stage_diagnosis` (`stage_columns`)."""
ExtractionColumns: list[Column] = extraction_columns()
"""The columns of the score `ordered_extraction` (`extraction_columns`)."""

__all__ = [
    "EXTRACTION_SCORE", "STAGE_SCORE", "ExtractionColumns", "StageColumns",
    "extraction_columns", "stage_columns", "step_recall_columns",
]  # fmt: skip
