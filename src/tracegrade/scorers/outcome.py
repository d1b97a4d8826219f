"""The shape every tracegrade `Score` has, errors included.

- `value`: the stage ("retrieval", "generation", "pass", "unresolved") or
  `{"membership": bool, "order": bool}`; NaN (`Score.unscored`) for a
  data error.
- `answer`: for a stage, the model's output, or with none the supplied
  context as compact JSON (None when there is no context either); for an
  extraction, the extracted ID list as compact JSON (the raw text when it
  held no list).
- `explanation`: one sentence, the decision and its reason.
- `reason`: the error kind, or `None`.

`Score.metadata`:

- `result`: the evaluator's exact output, the JSON the core and the Node
  originals return (`{"stage": ..., "missing": [...]}`,
  `{"error": "duplicate-id"}`, ...), or `None` when the core never ran: the
  record was outside the contract, or the answer text held no ID list.
- `record`: the record graded, exactly as the core received it (fields
  absent from the inputs are absent here too; a refused value that is not
  JSON, such as a Python set, is shown by its repr).
- `read_from`: where each field of the record was read, e.g.
  `{"context": "store RetrievalTrace:context"}`.
- `error`: `None`, or `{"kind", "side", "field", "message"}`. `field` is
  the record field at fault (for invalid input, exactly what
  `InvalidRecord.field` reports, such as `"context[1]"`), `None` when no
  field is. `side` says whose fault it is:
  - `"data"`: what the sample supplied (the score is `Score.unscored`,
    counted neither correct nor incorrect);
  - `"answer"`: the model's answer (the score fails both extraction
    criteria, so a model cannot escape grading);
  - `"run"`: the run itself failed before an answer existed, e.g. the
    model API raised: the sample's own error, which Inspect scores only
    under `--score-on-error` (and `inspect score` rescores). Kind
    `sample-error`, `field` `None`, `message` the sample's error message;
    `Score.unscored`, since a run that never answered has no stage and no
    grade (an empty output is not a wrong answer). `result` is `None`
    and `record` empty: nothing was read or graded.

Stage scores also carry `recall`: the share of the run's unique required
IDs that its context held, as `tracegrade.core.recall` defines it (Ragas'
ID-based context recall; TREC's recall over the whole context), from the
record alone. It is a number whenever `required` is a non-empty ID list
and `context` an ID list, label or no label: a diagnosed stage (where it
agrees with `missing`) and an `answer-label` run alike, since what reached
the context does not depend on whether the answer was judged. `None` when
nothing is required (`unresolved`), on `invalid-input` (an ID list is not
one) and on `sample-error`. An `answer-label` score is unscored, so its
recall is in its metadata (and `tracegrade.analysis`' `stage_recall`) but
never reaches the `context_recall` metric: Inspect gives metrics scored
samples only. Absent on `tracegrade score`'s placeholder for a line that
is not a record.

Beside it, `precision`: the share of the run's unique context IDs that
are required (a repeated context ID is one document, as trec_eval and
ir-measures count it; Ragas' ID-based context precision; trec_eval's
`P@k` at k = the unique context IDs), from the record alone too. A number
whenever both values are ID lists and the context holds an ID, labelled
or not, and 0.0 when `required` is an empty list (nothing supplied was
required). `None` for an empty context (a share of nothing), when
`required` is absent or null (nothing was judged), on `invalid-input` and
on `sample-error`. It reaches the `context_precision` metric on scored
runs only, as recall does; absent where `recall` is.

Extraction scores also carry `itemised`: where exactly a graded answer
went wrong, as `tracegrade.core.itemise` defines it, for the lists in
`record`:

- `dropped`: the source IDs absent from the answer, in source order;
- `invented`: the answer IDs absent from the source, in answer order;
- `first_order_break`: the first 1-based position where answer and source
  differ (the "position 2" of the explanation), a list that ends early
  differing at the position after its end; `None` when the lists are
  equal, which is exactly when order passes;
- `kept_in_order`: the length of the longest common subsequence of source
  and answer, the most source IDs kept in source order.

`itemised` is `None` whenever `result` is not a grade: a repeated ID on
either side (`{"error": "duplicate-id"}`), an answer text with no readable
ID list, and every data error. The rules refuse to grade those lists, and
itemising them would mean guessing which list was meant, e.g. reading an
unreadable answer as an empty one. The key is absent, rather than `None`,
on `tracegrade score`'s placeholder for a line that is not a record (a
data error with an empty `record`).

`tracegrade.schema` declares each of these keys once, with its type, and
reads them for every reader of a score; this module writes them.

Error kinds: data side `answer-label`, `invalid-input`,
`duplicate-source-id`; answer side `duplicate-answer-id`,
`unreadable-answer`; run side `sample-error`.
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


"""Characters of a sample's error message an explanation quotes; the
metadata `error.message` keeps it whole."""

RUN_ERRORS = ("sample-error",)
"""Kinds of failure of the run itself, before any answer; such samples are
unscored."""


class ErrorInfo(TypedDict):
    kind: str
    side: ErrorSide
    field: str | None
    message: str


def as_json_value(value: Any) -> Any:
    """`value` if it is JSON, else a bounded quote of it: only a record
    refused for a non-JSON value (a set, a NaN, nesting too deep to
    serialise) can need this, and metadata must still serialise to the
    log."""
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
    was given, else None.

    The record is in the metadata already and a replayed one is the
    sample's input, so showing it as the answer told a reader of `inspect
    view` nothing the input did not.
    """
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
    """The score of a sample whose run failed before an answer existed.

    Nothing is read or graded: what the run left (an empty output, a
    context perhaps never recorded) is no evidence of where a pipeline
    fails or what an answer got wrong, so it is neither a stage nor a
    grade, and no warning of an absent key is due. `absent` names the
    scorer's own metadata keys, which such a sample has as None.
    """
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
