"""Columns for `inspect_ai.analysis.samples_df` that read tracegrade scores.

```python
from inspect_ai.analysis import SampleSummary, samples_df
from tracegrade.analysis import ExtractionColumns, StageColumns

runs = samples_df("logs", columns=SampleSummary + StageColumns)
```

One row per sample and epoch, as `samples_df` always gives; the columns
are typed, and the ID lists are lists (pyarrow `list<string>`), not the
JSON text Inspect makes of a list by default. A column is None (`<NA>`)
where it does not apply: no missing IDs on an `unresolved` stage or a data
error, no membership on an unscored sample, no score of that name at all.
A score that is not one tracegrade writes (a share that is no float
from 0.0 to 1.0, a diagnosed stage without its ID lists, a score from
before 0.1.0 without `itemised`) raises `InvalidScore` (a
`ValueError`) naming the sample: the columns read scores through
`tracegrade.schema`, as `tracegrade report` and `compare` do, so they
refuse what those refuse.

**Types in the frame.** Inspect infers each column's pyarrow type from
the values: a list column is `list<string>`, or `list<null>` when every
list in the frame is empty; a column with no value at all is a string
column of `<NA>`; whole numbers beside a None are `double`. With
`parallel=True`, Inspect builds a frame per log and concatenates them, so
a column typed differently in two logs (all None in one) is `object`, its
lists numpy arrays; the values are the same.

**Which score.** `StageColumns` reads the score named `stage_diagnosis`
and `ExtractionColumns` the one named `ordered_extraction`: what Inspect
names the scorers' scores, in logs of `inspect eval` and of `tracegrade
score` alike. `inspect score --action append` on a log that already holds
the score adds it as `stage_diagnosis1` (then `2`, ...) and keeps the
original, which these groups go on reading; `stage_columns(
"stage_diagnosis1", prefix="relabelled")` reads the new one, into columns
of their own name. (`--action overwrite` keeps the name.)

**Summaries or full samples.** `samples_df` reads sample summaries unless
a column needs the full sample, and a summary drops each score metadata
value whose JSON exceeds 1,024 characters: a `result` with a long list of
missing IDs, a `record` with a long context, an `error` quoting a long
value. So the columns that read those (the ID lists and counts, the label,
the error side) are `full=True`, and the groups read full samples. The
rest (stage, membership, order, error kind, `read_as`) read what a summary
always keeps: the score's value, its `reason` and short strings, so a
selection of only those, such as `[c for c in StageColumns if c.name in
("stage", "stage_error")]`, reads summaries, which is faster on a big log.
With full samples, `samples_df(..., exclude_fields={"events"})` skips
the transcript of a `.eval` log, which these columns never read.

Reading needs pandas and pyarrow, as `inspect_ai.analysis` does: the
`analysis` extra (`pip install "tracegrade[analysis]"`) installs them.
Importing this module does not need them, and neither does `import
tracegrade`; `samples_df` names what is missing when it is called.
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
    """Columns of the stage diagnosis score named `score`, names from `prefix`.

    - `stage` (str): the stage: `retrieval`, `generation`, `pass` or
      `unresolved`; None for a data error (unscored).
    - `stage_missing` (list of str): `result.missing`, the required IDs
      absent from the context, in JavaScript sort order as the result has
      them; `[]` for `generation` and `pass`; None where nothing was
      diagnosed (`unresolved`, data errors).
    - `stage_missing_count` (int): how many; None with the list.
    - `stage_recall` (float): the share of the run's unique required IDs
      that reached its context (metadata `recall`), labelled or not: an
      `answer-label` run has one, which the `context_recall` metric never
      sees (Inspect gives metrics scored runs only), so the mean of this
      column over every run with evidence can differ from that metric.
      None when nothing is required, for a record outside the contract
      and for a `sample-error`.
    - `stage_precision` (float): the share of the run's unique context IDs
      that are required (metadata `precision`; a repeated context ID is
      one document), labelled or not, as `stage_recall` is; 0.0 when the
      required list is empty. None for an empty context, when nothing was
      judged (`required` absent or null), for a record outside the
      contract and for a `sample-error`.
    - `stage_label` (bool): `record.correct`, the run's label as the
      scorer read it; None when absent or not a JSON boolean.
    - `stage_label_from` (str): `read_from.correct`, where the label was
      read, e.g. `metadata["correct"]`, `labels file labels.jsonl`,
      `scorer match` (a grader) or `score model_graded_qa` (`label_from`).
    - `stage_error` (str): the error kind (`answer-label`,
      `invalid-input`, `sample-error`, or from `tracegrade score` a line's
      `malformed-json`, ...), from the score's `reason`; None without one.
    - `stage_error_side` (str): `error.side`, `data`, `answer` or `run`.
    - `stage_lost_at` (list of str): where each missing ID was lost, in the
      order of `stage_missing` (metadata `lost`: a step's name, or
      `context` for an ID every step kept but the prompt's cut left out);
      None for a run whose record carried no pipeline steps. Each step's
      recall is in `step_recall_columns`, named after the steps.
    """
    return [
        _column(prefix, _stage, score, full=False, type=str),
        _column(f"{prefix}_missing", _missing, score, type=_LIST),
        _column(f"{prefix}_missing_count", _missing_count, score, type=int),
        _column(f"{prefix}_recall", _recall, score, type=float),
        _column(f"{prefix}_precision", _precision, score, type=float),
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
    """A column per named pipeline step, `{prefix}_{step}_recall` (float):
    the share of the run's required IDs in that step's output (metadata
    `step_recall`), as `stage_recall` is of its context; None for a run
    without that step.

    Steps are named by the pipeline that recorded them, so the caller names
    the ones to read: `samples_df(logs, columns=SampleSummary + StageColumns
    + step_recall_columns("retriever", "reranker"))`.
    """
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
    """Columns of the ordered extraction score named `score`, names from `prefix`.

    - `extraction_membership`, `extraction_order` (bool): the two criteria
      of the value; None for a data error (unscored). An answer failure
      (a repeated ID, an unreadable answer) is False on both.
    - `extraction_read_as` (str): `read_as`, the reading that found the IDs
      in the output (`json`, `lines`, ...); None when none did, and for a
      recorded answer, which is not read from text.
    - `extraction_error` (str): the error kind (`duplicate-source-id`,
      `invalid-input`, `duplicate-answer-id`, `unreadable-answer`,
      `sample-error`, ...),
      from the score's `reason`; None without one.
    - `extraction_error_side` (str): `error.side`, `data`, `answer` or `run`.
    - `extraction_dropped`, `extraction_invented` (list of str): from
      `itemised`, the source IDs the answer left out and the IDs it added.
    - `extraction_first_order_break` (int): the first 1-based position
      where answer and source differ; None when they are equal.
    - `extraction_kept_in_order` (int): the most source IDs the answer
      kept in source order.

    The four `itemised` columns are None where the rules did not grade
    (a repeated ID, an unreadable answer, a data error).
    """
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
    """A column of `extract(sample, score, **arguments)`.

    Only columns that say so read a summary; the default is the safe one.
    The extractor is a module function bound with `partial`, not a closure,
    so that the columns pickle: `samples_df(..., parallel=True)` sends them
    to other processes.
    """
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
    """The score's metadata, refusing a summary's stub.

    The full-sample columns never see a summary from `samples_df`; read
    one some other way and a removed value must not pass for "none".
    """
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


def _missing(sample: _Sample, score: str) -> list[str] | None:
    staged = _staged(sample, score)
    return None if staged is None else staged.missing


def _missing_count(sample: _Sample, score: str) -> int | None:
    missing = _missing(sample, score)
    return None if missing is None else len(missing)


def _recall(sample: _Sample, score: str) -> float | None:
    staged = _staged(sample, score)
    return None if staged is None else staged.recall


def _precision(sample: _Sample, score: str) -> float | None:
    staged = _staged(sample, score)
    return None if staged is None else staged.precision


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
