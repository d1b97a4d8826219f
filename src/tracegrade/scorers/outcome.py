"""The shape every tracegrade `Score` has, errors included (docs/scores.md)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from inspect_ai.event import ErrorEvent
from inspect_ai.log import TranscriptHistoryUnavailableError, transcript
from inspect_ai.scorer import Score, Scorer, Target
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, canonical_json
from ..core.errors import quote
from ..schema import ErrorSide

DATA_ERRORS = ("answer-label", "invalid-input", "duplicate-source-id")
"""Kinds of error in what the sample supplied; such samples are unscored."""

ANSWER_FAILURES = ("duplicate-answer-id", "unreadable-answer")
"""Kinds of failure of the model's answer; such answers fail both criteria."""

RUN_ERRORS = ("sample-error",)
"""Kinds of failure of the run itself, before any answer; unscored."""

_SHOWN_ERROR = 200  # characters of a run's error an explanation quotes
_SCORES_HAVE_REASON = "reason" in Score.model_fields  # Inspect 0.3.261 on
ErrorInfo = dict[str, Any]


def error_info(kind: str, side: ErrorSide, field: str | None, msg: str) -> ErrorInfo:
    return {"kind": kind, "side": side, "field": field, "message": msg}


def error_kind(score: Score) -> str | None:
    """A score's error kind: its `reason`, or before `Score.reason` its metadata's."""
    reason = getattr(score, "reason", None)
    if reason is None and not _SCORES_HAVE_REASON:
        reason = ((score.metadata or {}).get("error") or {}).get("kind")
    return reason if isinstance(reason, str) else None


def shown(value: Any) -> str:
    """A compact text of a graded value for `Score.answer`."""
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return quote(value)


def _as_json(value: Any) -> Any:
    try:
        canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return quote(value)
    return value


def metadata_source(key: str) -> str:
    return f"metadata[{json.dumps(key)}]"


def graded(
    value: Any,
    *,
    answer: str | None,
    explanation: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
    error: ErrorInfo | None = None,
    **more: Any,
) -> Score:
    """A stage, a grade or an answer failure; a None `value` is unscored, its
    record's values that are no JSON kept as quotes so the log serialises."""
    if value is None:
        record = {key: _as_json(item) for key, item in record.items()}
    metadata = {"result": result, "record": record, "read_from": read_from}
    fields: dict[str, Any] = {"answer": answer, "explanation": explanation}
    fields["metadata"] = metadata | {"error": error, **more}
    if _SCORES_HAVE_REASON:
        fields["reason"] = error and error["kind"]
    return (
        Score(value=value, **fields) if value is not None else Score.unscored(**fields)
    )


def data_error(error: ErrorInfo, **where: Any) -> Score:
    """An unscored sample: the data, not the model, is at fault."""
    return graded(None, error=error, **where)


def invalid_score(invalid: InvalidRecord, **where: Any) -> Score:
    """A record outside the contract: unscored, not graded."""
    why = (
        f"The record is outside the evaluators' contract: {invalid}; it is not graded."
    )
    error = error_info("invalid-input", "data", invalid.field, str(invalid))
    return data_error(error, explanation=why, result=None, **where)


def record_scorer(
    score_run: Callable[[TaskState, Target], Awaitable[Score]],
    *,
    read_from: dict[str, str],
    absent: tuple[str, ...],
) -> Scorer:
    """`score_run`, but a run that failed before answering is `sample-error`,
    its scorer's own metadata keys (`absent`) None."""

    async def score(state: TaskState, target: Target) -> Score:
        failure = _sample_error()
        if failure is None:
            return await score_run(state, target)
        cut = failure[:_SHOWN_ERROR] + ("..." if len(failure) > _SHOWN_ERROR else "")
        return data_error(
            error_info("sample-error", "run", None, failure),
            answer=state.output.completion or None,
            explanation=f"The run failed before an answer existed ({cut}), so "
            "there is nothing to grade; inspect eval-retry runs it again.",
            result=None,
            record={},
            read_from=read_from,
            **dict.fromkeys(absent),
        )

    return score


def _sample_error() -> str | None:
    """The sample's error: Inspect logs it as an `ErrorEvent` before scoring."""
    history = transcript().history
    try:
        if hasattr(history, "find_last"):
            event = history.find_last(lambda event: isinstance(event, ErrorEvent))
        else:  # Inspect before 0.3.279: the events from the last error on.
            event = next(iter(history.events_since_last(ErrorEvent)), None)
    except TranscriptHistoryUnavailableError:
        return None  # a bounded transcript: no error among its recent events
    return event.error.message if isinstance(event, ErrorEvent) else None
