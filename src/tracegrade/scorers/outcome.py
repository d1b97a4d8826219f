"""The shape every tracegrade `Score` has, errors included.

docs/scores.md declares each part (value, answer, explanation, reason and
metadata), `tracegrade.schema` types and reads them; this module writes them.
"""

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

_SHOWN_ERROR = 200
"""Characters of a sample's error message an explanation quotes; the
metadata `error.message` keeps it whole."""

_SCORES_HAVE_REASON = "reason" in Score.model_fields
"""`Score.reason` came with Inspect 0.3.261. Before it, a score's error
kind is in `metadata["error"]` alone, where `error_kind` finds it too."""


def _reason(kind: str | None) -> dict[str, Any]:
    """`reason=kind` for `Score`, where Inspect's scores have a reason."""
    return {"reason": kind} if _SCORES_HAVE_REASON else {}


def error_kind(score: Score) -> str | None:
    """The kind of a tracegrade score's error (None when it has none): its
    `reason`, or on an Inspect before `Score.reason` its metadata's."""
    reason = getattr(score, "reason", None)
    if reason is not None or _SCORES_HAVE_REASON:
        return reason if isinstance(reason, str) else None
    error = (score.metadata or {}).get("error")
    kind = error.get("kind") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


RUN_ERRORS = ("sample-error",)
"""Kinds of failure of the run itself, before any answer; such samples are
unscored."""


class ErrorInfo(TypedDict):
    kind: str
    side: ErrorSide
    field: str | None
    message: str


def as_json_value(value: Any) -> Any:
    """`value` if it is JSON, else a bounded quote of it, so that a record
    refused for a non-JSON value still serialises to the log."""
    try:
        canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return quote(value)
    return value


def shown(value: Any) -> str:
    """A compact text of a graded value for `Score.answer`."""
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError):
        return quote(value)


def stage_answer(record: dict[str, Any], output: str) -> str | None:
    """A stage score's `answer`: what the run answered, else the context it
    was given, else None."""
    if output:
        return output
    return shown(record["context"]) if "context" in record else None


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
    return Score(
        value=value,
        answer=answer,
        explanation=explanation,
        **_reason(error["kind"] if error else None),
        metadata={
            "result": result,
            "record": record,
            "read_from": read_from,
            "error": error,
        },
    )


def data_error(
    error: ErrorInfo,
    *,
    answer: str | None,
    explanation: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
) -> Score:
    """An unscored sample: the data, not the model, is at fault."""
    return Score.unscored(
        **_reason(error["kind"]),
        answer=answer,
        explanation=explanation,
        metadata={
            "result": result,
            "record": {key: as_json_value(item) for key, item in record.items()},
            "read_from": read_from,
            "error": error,
        },
    )


def run_error(
    message: str,
    *,
    answer: str | None,
    read_from: dict[str, str],
    absent: tuple[str, ...] = (),
) -> Score:
    """The score of a run that failed before an answer existed: what it left
    is no evidence, so nothing is read or graded. `absent` names the
    scorer's own metadata keys, None here."""
    shown_message = (
        message if len(message) <= _SHOWN_ERROR else message[:_SHOWN_ERROR] + "..."
    )
    return Score.unscored(
        **_reason("sample-error"),
        answer=answer or None,
        explanation=(
            f"The run failed before an answer existed ({shown_message}), so "
            "there is nothing to grade; inspect eval-retry runs it again."
        ),
        metadata={
            "result": None,
            "record": {},
            "read_from": read_from,
            "error": ErrorInfo(
                kind="sample-error", side="run", field=None, message=message
            ),
            **dict.fromkeys(absent),
        },
    )


def metadata_source(key: str) -> str:
    return f"metadata[{json.dumps(key)}]"
