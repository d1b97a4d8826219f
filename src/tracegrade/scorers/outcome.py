"""The shape every tracegrade `Score` has, errors included (docs/scores.md)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from inspect_ai.scorer import Score, Value

from ..core import canonical_json
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


def graded(
    value: Value,
    *,
    answer: str | None,
    explanation: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
    error: ErrorInfo | None = None,
) -> Score:
    """A score that counts: a stage, a grade, or an answer failure."""
    metadata = {"result": result, "record": record, "read_from": read_from}
    return _score(value, error, answer, explanation, {**metadata, "error": error})


def data_error(
    error: ErrorInfo,
    *,
    answer: str | None,
    explanation: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
) -> Score:
    """An unscored sample: the data, not the model, is at fault. A value that
    is no JSON is kept as a quote of it, so the log still serialises."""
    kept = {
        key: item if _is_json(item) else quote(item) for key, item in record.items()
    }
    metadata = {"result": result, "record": kept, "read_from": read_from}
    return _score(None, error, answer, explanation, {**metadata, "error": error})


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
    error = ErrorInfo(kind="sample-error", side="run", field=None, message=message)
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
