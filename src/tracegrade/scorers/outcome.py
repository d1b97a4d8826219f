"""The shape every tracegrade `Score` has, errors included (docs/scores.md)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from inspect_ai.scorer import Score, Value

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


class ErrorInfo(TypedDict):
    kind: str
    side: ErrorSide
    field: str | None
    message: str


def error_info(kind: str, side: ErrorSide, field: str | None, msg: str) -> ErrorInfo:
    return ErrorInfo(kind=kind, side=side, field=field, message=msg)


def error_kind(score: Score) -> str | None:
    """A score's error kind: its `reason`, or before `Score.reason` its metadata's."""
    reason = getattr(score, "reason", None)
    if reason is not None or _SCORES_HAVE_REASON:
        return reason if isinstance(reason, str) else None
    error = (score.metadata or {}).get("error")
    kind = error.get("kind") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def shown(value: Any) -> str:
    """A compact text of a graded value for `Score.answer`."""
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return quote(value)


def metadata_source(key: str) -> str:
    return f"metadata[{json.dumps(key)}]"


def graded(
    value: Value | None,
    *,
    answer: str | None,
    explanation: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
    error: ErrorInfo | None = None,
) -> Score:
    """A stage, a grade or an answer failure; a None `value` is unscored, its
    record's values that are no JSON kept as quotes so the log serialises."""
    if value is None:
        record = {k: v if _is_json(v) else quote(v) for k, v in record.items()}
    metadata = {"result": result, "record": record, "read_from": read_from}
    return _score(value, error, answer, explanation, {**metadata, "error": error})


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


def _score(
    value: Value | None,
    error: ErrorInfo | None,
    answer: str | None,
    explanation: str,
    metadata: dict[str, Any],
) -> Score:
    reason: dict[str, Any] = {}
    if _SCORES_HAVE_REASON:
        reason["reason"] = error and error["kind"]
    if value is None:
        return Score.unscored(
            answer=answer, explanation=explanation, metadata=metadata, **reason
        )
    return Score(
        value=value, answer=answer, explanation=explanation, metadata=metadata, **reason
    )


def _is_json(value: Any) -> bool:
    try:
        canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def run_error(
    message: str,
    *,
    answer: str | None,
    read_from: dict[str, str],
    absent: tuple[str, ...] = (),
) -> Score:
    """A run that failed before an answer existed: nothing is read or graded;
    `absent` names the scorer's own metadata keys, None here."""
    cut = message if len(message) <= _SHOWN_ERROR else message[:_SHOWN_ERROR] + "..."
    error = error_info("sample-error", "run", None, message)
    return _score(
        None,
        error,
        answer or None,
        f"The run failed before an answer existed ({cut}), so there is nothing "
        "to grade; inspect eval-retry runs it again.",
        {
            "result": None,
            "record": {},
            "read_from": read_from,
            "error": error,
            **dict.fromkeys(absent),
        },
    )
