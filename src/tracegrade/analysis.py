"""Columns for `inspect_ai.analysis.samples_df` that read tracegrade scores
through `tracegrade.schema`, so they refuse what report and compare refuse;
docs/analysis.md lists each column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, TypeVar, cast

from inspect_ai.analysis import Column, ColumnType, SampleColumn
from inspect_ai.log import EvalSample, EvalSampleSummary
from inspect_ai.scorer import Score

from ._inspect_internals import METADATA_VALUE_REMOVED
from .schema import (
    EXTRACTION_SCORER,
    STAGE_SCORER,
    ExtractionScore,
    InvalidScore,
    StageScore,
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

# Inspect turns a list into JSON text unless the column's type is one the
# value already is; `list` is not among the `ColumnType`s it declares, but
# it is what keeps a list a list (tests/test_analysis.py checks the dtype).
_LIST: Final = cast("type[ColumnType]", list)

_Sample = EvalSample | EvalSampleSummary
_T = TypeVar("_T")


def stage_columns(score: str = STAGE_SCORE, *, prefix: str = "stage") -> list[Column]:
    """Columns of the stage diagnosis score named `score`, names from `prefix`."""
    return [
        _column(prefix, _stage, score, full=False, type=str),
        _column(f"{prefix}_missing", _staged_field, score, type=_LIST, key="missing"),
        _column(f"{prefix}_missing_count", _missing_count, score, type=int),
        _column(f"{prefix}_recall", _staged_field, score, type=float, key="recall"),
        _column(
            f"{prefix}_precision", _staged_field, score, type=float, key="precision"
        ),
        _column(f"{prefix}_label", _label, score, type=bool),
        _column(f"{prefix}_label_from", _label_from, score, type=str),
        _column(f"{prefix}_error", _error_kind, score, full=False, type=str),
        _column(
            f"{prefix}_error_side", _error_side, score, type=str, scorer=STAGE_SCORER
        ),
        _column(f"{prefix}_lost_at", _lost_at, score, type=_LIST),
    ]


def step_recall_columns(
    *steps: str, score: str = STAGE_SCORE, prefix: str = "stage"
) -> list[Column]:
    """A column per named pipeline step, `{prefix}_{step}_recall`: steps are
    named by the pipeline that recorded them, so the caller names them."""
    if not steps:
        raise ValueError("step_recall_columns needs at least one step name")
    for step in steps:
        if not isinstance(step, str) or not step:
            raise ValueError(f"a step name is a non-empty string, got {step!r}")
    return [
        _column(f"{prefix}_{step}_recall", _step_recall, score, type=float, step=step)
        for step in dict.fromkeys(steps)
    ]


def extraction_columns(
    score: str = EXTRACTION_SCORE, *, prefix: str = "extraction"
) -> list[Column]:
    """Columns of the ordered extraction score named `score`, names from `prefix`."""
    columns = [
        _column(
            f"{prefix}_{criterion}",
            _criterion,
            score,
            full=False,
            type=bool,
            criterion=criterion,
        )
        for criterion in ("membership", "order")
    ]
    columns += [
        _column(f"{prefix}_read_as", _read_as, score, full=False, type=str),
        _column(f"{prefix}_error", _error_kind, score, full=False, type=str),
        _column(
            f"{prefix}_error_side",
            _error_side,
            score,
            type=str,
            scorer=EXTRACTION_SCORER,
        ),
    ]
    columns += [
        _column(f"{prefix}_{key}", _itemised, score, type=key_type, key=key)
        for key, key_type in (
            ("dropped", _LIST),
            ("invented", _LIST),
            ("first_order_break", int),
            ("kept_in_order", int),
        )
    ]
    return columns


def _column(
    name: str,
    extract: Callable[..., Any],
    score: str,
    *,
    type: type[ColumnType],
    full: bool = True,
    **arguments: str,
) -> Column:
    """A column of `extract(sample, score, **arguments)`, bound with `partial`
    so that it pickles for `samples_df(..., parallel=True)`."""
    path = partial(extract, score=score, **arguments)
    return SampleColumn(name, path=path, type=type, full=full)


def _score(sample: _Sample, score: str) -> Score | None:
    return (sample.scores or {}).get(score)


def _where(sample: _Sample, score: str) -> str:
    return f"score {score!r} of sample {sample.id!r} epoch {sample.epoch}"


def _read(sample: _Sample, score: str, read: Callable[[Score], _T]) -> _T | None:
    """`read` of the score named `score` (None without one), its
    `InvalidScore` named by sample."""
    found = _score(sample, score)
    if found is None:
        return None
    try:
        return read(found)
    except InvalidScore as invalid:
        raise InvalidScore(f"{_where(sample, score)}: {invalid}") from None


def _whole(found: Score) -> dict[str, Any]:
    """The score's metadata, refusing a summary's stub: a removed value must
    not pass for "none"."""
    metadata = found.metadata or {}
    for key, value in metadata.items():
        if isinstance(value, str) and value == METADATA_VALUE_REMOVED:
            raise InvalidScore(
                f"metadata {key!r} was removed from the sample summary (over "
                "1k characters); read it from the full sample (full=True)"
            )
    return metadata


def _staged(sample: _Sample, score: str) -> StageScore | None:
    return _read(sample, score, lambda found: read_stage(found.value, _whole(found)))


def _graded(sample: _Sample, score: str) -> ExtractionScore | None:
    return _read(
        sample, score, lambda found: read_extraction(found.value, _whole(found))
    )


def _typed(value: Any, kind: type[_T]) -> _T | None:
    # Exactly `kind`: True is an int to `isinstance`, and 1 must not be True.
    if isinstance(value, kind) and type(value) is kind:
        return value
    return None


def _stage(sample: _Sample, score: str) -> str | None:
    # A summary keeps the value whole; an unscored sample's value is NaN.
    return _read(
        sample,
        score,
        lambda found: None if is_nan(found.value) else read_stage_value(found.value),
    )


def _staged_field(sample: _Sample, score: str, key: str) -> Any:
    """`key` of the stage score read (`missing`, `recall`, ...), or None."""
    staged = _staged(sample, score)
    return None if staged is None else getattr(staged, key)


def _missing_count(sample: _Sample, score: str) -> int | None:
    missing = _staged_field(sample, score, "missing")
    return None if missing is None else len(missing)


def _record_field(sample: _Sample, score: str, key: str, field: str) -> Any:
    """`metadata[key][field]` of a score read whole, or None."""
    if _staged(sample, score) is None:
        return None
    found = _score(sample, score)
    assert found is not None and found.metadata is not None
    value = found.metadata[key]
    return value.get(field) if isinstance(value, Mapping) else None


def _lost_at(sample: _Sample, score: str) -> list[str] | None:
    staged = _staged(sample, score)
    if staged is None or staged.lost is None:
        return None
    return [entry.lost_at for entry in staged.lost]


def _step_recall(sample: _Sample, score: str, step: str) -> float | None:
    staged = _staged(sample, score)
    if staged is None or staged.step_recall is None:
        return None
    return staged.step_recall.get(step)


def _label(sample: _Sample, score: str) -> bool | None:
    return _typed(_record_field(sample, score, "record", "correct"), bool)


def _label_from(sample: _Sample, score: str) -> str | None:
    return _typed(_record_field(sample, score, "read_from", "correct"), str)


def _error_kind(sample: _Sample, score: str) -> str | None:
    # `reason` is the error kind on every tracegrade score, and unlike the
    # metadata `error` a summary keeps it whatever the message's length.
    found = _score(sample, score)
    return error_kind(found) if found is not None else None


def _error_side(sample: _Sample, score: str, scorer: str) -> str | None:
    read = _staged if scorer == STAGE_SCORER else _graded
    decoded = read(sample, score)
    error = None if decoded is None else decoded.error
    return None if error is None else error.side


def _criterion(sample: _Sample, score: str, criterion: str) -> bool | None:
    def read(found: Score) -> bool | None:
        if is_nan(found.value):
            return None
        membership, order = read_criteria(found.value)
        return membership if criterion == "membership" else order

    return _read(sample, score, read)


def _read_as(sample: _Sample, score: str) -> str | None:
    return _read(sample, score, lambda found: read_as(_whole(found)))


def _itemised(sample: _Sample, score: str, key: str) -> Any:
    graded = _graded(sample, score)
    if graded is None or graded.itemised is None:
        return None
    return getattr(graded.itemised, key)


StageColumns: list[Column] = stage_columns()
"""The stage diagnosis columns of the score `stage_diagnosis`; see
`stage_columns`."""

ExtractionColumns: list[Column] = extraction_columns()
"""The ordered extraction columns of the score `ordered_extraction`; see
`extraction_columns`."""

__all__ = [
    "EXTRACTION_SCORE",
    "STAGE_SCORE",
    "ExtractionColumns",
    "StageColumns",
    "extraction_columns",
    "stage_columns",
    "step_recall_columns",
]
