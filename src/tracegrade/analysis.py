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
from typing import Any, Final, cast

from inspect_ai.analysis import Column, ColumnType, SampleColumn
from inspect_ai.log import EvalSample, EvalSampleSummary
from inspect_ai.scorer import Score

from .bulk.evallog import METADATA_VALUE_REMOVED
from .core.itemise import itemise

STAGE_SCORE: Final = "stage_diagnosis"
EXTRACTION_SCORE: Final = "ordered_extraction"

# Inspect turns a list into JSON text unless the column's type is one the
# value already is; `list` is not among the `ColumnType`s it declares, but
# it is what keeps a list a list (tests/test_analysis.py checks the dtype).
_LIST: Final = cast("type[ColumnType]", list)

_Sample = EvalSample | EvalSampleSummary
_Extract = Callable[[_Sample], Any]


def stage_columns(score: str = STAGE_SCORE, *, prefix: str = "stage") -> list[Column]:
    """Columns of the stage diagnosis score named `score`, named `prefix...`.

    - `stage` (str): the stage: `retrieval`, `generation`, `pass` or
      `unresolved`; None for a data error (unscored).
    - `stage_missing` (list of str): `result.missing`, the required IDs
      absent from the context, in the order the result gives them; `[]`
      for `generation` and `pass`; None where nothing was diagnosed.
    - `stage_missing_count` (int): how many; None with the list.
    - `stage_label` (bool): `record.correct`, the label the stage was
      decided with; None when absent or not a JSON boolean.
    - `stage_label_from` (str): `read_from.correct`, where the label was
      read, e.g. `metadata["correct"]` or `labels file labels.jsonl`.
    - `stage_error` (str): the error kind (`answer-label`,
      `invalid-input`, or from `tracegrade score` a line's
      `malformed-json`, ...), from the score's `reason`; None without one.
    - `stage_error_side` (str): `error.side`, `data` or `answer`.

    An integer column holding a None is `double[pyarrow]` in the frame (pandas
    reads whole numbers beside None as floats); its values are still whole.
    """
    return [
        _column(prefix, _stage_value(score), full=False, type=str),
        _column(f"{prefix}_missing", _missing(score), full=True, type=_LIST),
        _column(f"{prefix}_missing_count", _count(_missing(score)), type=int),
        _column(f"{prefix}_label", _label(score), type=bool),
        _column(f"{prefix}_label_from", _label_from(score), type=str),
        _column(f"{prefix}_error", _error_kind(score), full=False, type=str),
        _column(f"{prefix}_error_side", _error_side(score), type=str),
    ]


def extraction_columns(
    score: str = EXTRACTION_SCORE, *, prefix: str = "extraction"
) -> list[Column]:
    """Columns of the ordered extraction score named `score`, named `prefix_...`.

    - `extraction_membership`, `extraction_order` (bool): the two criteria
      of the value; None for a data error (unscored). An answer failure
      (a repeated ID, an unreadable answer) is False on both.
    - `extraction_read_as` (str): `read_as`, the reading that found the IDs
      in the output (`json`, `lines`, ...); None when none did, and for a
      recorded answer, which is not read from text.
    - `extraction_error` (str): the error kind (`duplicate-source-id`,
      `invalid-input`, `duplicate-answer-id`, `unreadable-answer`, ...),
      from the score's `reason`; None without one.
    - `extraction_error_side` (str): `error.side`, `data` or `answer`.
    - `extraction_dropped`, `extraction_invented` (list of str): from
      `itemised`, the source IDs the answer left out and the IDs it added.
    - `extraction_first_order_break` (int): the first 1-based position
      where answer and source differ; None when they are equal.
    - `extraction_kept_in_order` (int): the most source IDs the answer
      kept in source order.

    The four `itemised` columns are None where the rules did not grade
    (a repeated ID, an unreadable answer, a data error). A graded score
    logged before tracegrade wrote `itemised` is itemised from its
    `record`, by the same definitions, as `tracegrade report` does. An
    integer column holding a None is `double[pyarrow]` in the frame.
    """
    return [
        _column(
            f"{prefix}_membership",
            _criterion(score, "membership"),
            full=False,
            type=bool,
        ),
        _column(f"{prefix}_order", _criterion(score, "order"), full=False, type=bool),
        _column(f"{prefix}_read_as", _read_as(score), full=False, type=str),
        _column(f"{prefix}_error", _error_kind(score), full=False, type=str),
        _column(f"{prefix}_error_side", _error_side(score), type=str),
        _column(f"{prefix}_dropped", _itemised(score, "dropped"), type=_LIST),
        _column(f"{prefix}_invented", _itemised(score, "invented"), type=_LIST),
        _column(
            f"{prefix}_first_order_break",
            _itemised(score, "first_order_break"),
            type=int,
        ),
        _column(f"{prefix}_kept_in_order", _itemised(score, "kept_in_order"), type=int),
    ]


def _column(
    name: str, extract: _Extract, *, type: type[ColumnType], full: bool = True
) -> SampleColumn:
    # Only columns that say so read a summary; the default is the safe one.
    return SampleColumn(name, path=extract, type=type, full=full)


def _score(sample: _Sample, name: str) -> Score | None:
    return (sample.scores or {}).get(name)


def _metadata(sample: _Sample, name: str, key: str) -> Any:
    """`metadata[key]` of the score, or None; refuses a summary's stub.

    The full-sample columns never see a summary from `samples_df`; read
    one some other way and a removed value must not pass for "none".
    """
    score = _score(sample, name)
    metadata = score.metadata if score is not None else None
    if not isinstance(metadata, Mapping):
        return None
    value = metadata.get(key)
    if isinstance(value, str) and value == METADATA_VALUE_REMOVED:
        raise ValueError(
            f"score {name!r} of sample {sample.id!r} epoch {sample.epoch}: "
            f"metadata {key!r} was removed from the sample summary (over 1k "
            "characters); read it from the full sample (full=True)"
        )
    return value


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _id_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _stage_value(name: str) -> _Extract:
    def extract(sample: _Sample) -> str | None:
        score = _score(sample, name)
        # An unscored sample's value is NaN.
        value = score.value if score is not None else None
        return value if isinstance(value, str) else None

    return extract


def _missing(name: str) -> _Extract:
    def extract(sample: _Sample) -> list[str] | None:
        return _id_list(_field(_metadata(sample, name, "result"), "missing"))

    return extract


def _count(ids: _Extract) -> _Extract:
    def extract(sample: _Sample) -> int | None:
        found = ids(sample)
        return None if found is None else len(found)

    return extract


def _label(name: str) -> _Extract:
    def extract(sample: _Sample) -> bool | None:
        label = _field(_metadata(sample, name, "record"), "correct")
        return label if isinstance(label, bool) else None

    return extract


def _label_from(name: str) -> _Extract:
    def extract(sample: _Sample) -> str | None:
        source = _field(_metadata(sample, name, "read_from"), "correct")
        return source if isinstance(source, str) else None

    return extract


def _error_kind(name: str) -> _Extract:
    # `reason` is the error kind on every tracegrade score, and unlike the
    # metadata `error` a summary keeps it whatever the message's length.
    def extract(sample: _Sample) -> str | None:
        score = _score(sample, name)
        reason = score.reason if score is not None else None
        return reason if isinstance(reason, str) else None

    return extract


def _error_side(name: str) -> _Extract:
    def extract(sample: _Sample) -> str | None:
        side = _field(_metadata(sample, name, "error"), "side")
        return side if isinstance(side, str) else None

    return extract


def _criterion(name: str, criterion: str) -> _Extract:
    def extract(sample: _Sample) -> bool | None:
        score = _score(sample, name)
        passed = _field(score.value if score is not None else None, criterion)
        return passed if isinstance(passed, bool) else None

    return extract


def _read_as(name: str) -> _Extract:
    def extract(sample: _Sample) -> str | None:
        reading = _metadata(sample, name, "read_as")
        return reading if isinstance(reading, str) else None

    return extract


def _itemised(name: str, key: str) -> _Extract:
    def extract(sample: _Sample) -> Any:
        score = _score(sample, name)
        if score is None or not isinstance(score.metadata, Mapping):
            return None
        if "itemised" in score.metadata:
            return _field(_metadata(sample, name, "itemised"), key)
        # Logged before `itemised` existed: itemise a grade from its record.
        result = _metadata(sample, name, "result")
        record = _metadata(sample, name, "record")
        source = _id_list(_field(record, "source"))
        answer = _id_list(_field(record, "answer"))
        if _field(result, "membership") is None or source is None or answer is None:
            return None
        itemisation: Mapping[str, Any] = itemise(source, answer)
        return itemisation[key]

    return extract


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
]
