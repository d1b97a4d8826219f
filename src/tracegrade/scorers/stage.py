"""`tracegrade/stage_diagnosis`: where did a RAG run fail, retrieval or generation?"""

from __future__ import annotations

from typing import Any, NoReturn

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, diagnose_stage
from ..core.errors import quote
from ..core.recall import stage_precision, stage_recall
from ..core.steps import lost_documents, read_steps, step_recalls
from .arguments import (
    ScorerArgumentError,
    check_key,
    refuse_unknown_arguments,
    tool_names,
)
from .explain import explain_lost, explain_stage, explain_unrecorded_context
from .grader import LabelSource
from .key_warnings import KeyWatch, listed_keys
from .metrics import STAGE_METRICS
from .outcome import (
    error_info,
    graded,
    invalid_score,
    metadata_source,
    record_scorer,
    shown,
)
from .store import context_store_key, steps_store_key
from .transcript import ToolContext, read_tool_context

_WITHOUT = {
    "required": "A run without it has nothing to diagnose: unresolved.",
    "context": "A run without it is not graded: invalid-input.",
    "correct": "A run without it has no label: answer-label.",
    "steps": "A run without it is diagnosed without steps: no lost.",
}


def diagnosis_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    context_recorded: bool,
    output: str = "",
    no_label: str | None = None,
    calls: ToolContext | None = None,
) -> Score:
    """A stage record's `Score`, errors included: its one path to a result.
    `no_label` says why a grader gave no label; `calls` are the tool calls read."""
    answer = output or (shown(record["context"]) if "context" in record else None)
    where: dict[str, Any] = {"answer": answer, "record": record, "read_from": read_from}
    where |= {"recall": stage_recall(record), "precision": stage_precision(record)}
    try:
        if calls is not None and calls.problem is not None:
            raise calls.problem
        result = diagnose_stage(record)
        steps = read_steps(record)
    except InvalidRecord as invalid:
        score = invalid_score(invalid, **where)
        if invalid.field == "context" and not context_recorded:
            null = record.get("context", False) is None
            score.explanation = explain_unrecorded_context(recorded_null=null)
        return score
    missing = result.get("missing")  # absent exactly on `unresolved`
    lost = None
    if steps is not None and isinstance(missing, list):
        lost = where["lost"] = lost_documents(missing, steps)
    if steps is not None and where["recall"] is not None:
        where["step_recall"] = step_recalls(record["required"], steps)
    failed = "error" in result
    why = explain_stage(record, result, read_from["correct"])
    if failed and no_label is not None:
        why = no_label
    if lost and calls is not None:
        why += " " + calls.explain_lost(lost)
    elif lost and steps is not None:
        why += " " + explain_lost(lost, steps, record["context"])
    why += calls.note() if calls is not None else ""
    error = error_info("answer-label", "data", "correct", why) if failed else None
    return graded(
        result.get("stage"), explanation=why, result=result, error=error, **where
    )


@scorer(metrics=STAGE_METRICS, name="stage_diagnosis")
def stage_diagnosis_scorer(
    required_key: str = "required",
    correct_key: str = "correct",
    context_key: str | None = None,
    labels: str | None = None,
    label_scorer: Scorer | str | None = None,
    label_from: str | None = None,
    steps_key: str | None = None,
    context_tools: str | list[str] | None = None,
    context_id_key: str = "id",
    **unknown: NoReturn,
) -> Scorer:
    """Diagnose each run's failing stage; a missing label or a record outside
    the contract is unscored, never guessed (docs/scores.md, docs/agents.md)."""
    refuse_unknown_arguments("stage_diagnosis", stage_diagnosis_scorer, unknown)
    check_key("required_key", required_key)
    check_key("correct_key", correct_key)
    check_key("context_key", context_key, optional=True)
    check_key("steps_key", steps_key, optional=True)
    check_key("context_id_key", context_id_key)
    tools = tool_names("context_tools", context_tools)
    if tools is not None and (context_key is not None or steps_key is not None):
        raise ScorerArgumentError(
            f"context_tools={quote(context_tools)} reads the context and steps "
            "from the tool calls; context_key and steps_key read them from "
            "metadata: give one source"
        )
    label = LabelSource(correct_key, labels, label_scorer, label_from)
    watch = KeyWatch("stage_diagnosis", _WITHOUT.__getitem__)

    def source(key: str | None, via: str, store_key: str) -> str:
        if key is not None:
            return metadata_source(key)
        return f"{via} {', '.join(tools)}" if tools else f"store {store_key}"

    read_from = {
        "required": metadata_source(required_key),
        "context": source(context_key, "tool results", context_store_key()),
        "correct": label.read_from,
    }
    steps_from = source(steps_key, "tool calls", steps_store_key())

    async def score(state: TaskState, target: Target) -> Score:
        record: dict[str, Any] = {}
        watch.read_key(state, record, "required", required_key)
        calls, recorded = None, True
        if tools is not None:
            calls = read_tool_context(state.messages, tools, context_id_key)
            record.update(calls.record())
        elif context_key is not None:
            watch.read_key(state, record, "context", context_key)
        else:
            if context_store_key() in state.store:
                record["context"] = state.store.get(context_store_key())
            recorded = record.get("context") is not None
            watch.note("context", recorded, lambda: _unrecorded_warning(state))
        # Steps are optional: only a key the user named is warned of.
        if steps_key is not None:
            watch.read_key(state, record, "steps", steps_key)
        elif tools is None and state.store.get(steps_store_key()) is not None:
            record["steps"] = state.store.get(steps_store_key())
        no_label, grader = await label.read(state, target, record, watch)
        run_from = read_from | ({"steps": steps_from} if "steps" in record else {})
        result = diagnosis_score(
            record,
            run_from,
            context_recorded=recorded,
            output=state.output.completion,
            no_label=no_label,
            calls=calls,
        )
        if grader is not None:
            result.metadata = (result.metadata or {}) | {"grader": grader}
        return result

    return record_scorer(score, read_from=read_from, absent=("recall", "precision"))


def _unrecorded_warning(state: TaskState) -> str:
    return (
        f"stage_diagnosis: sample {quote(state.sample_id)} recorded no context "
        f"(no solver set RetrievalTrace.context), and no run scored before it "
        f"did. Its store keys: {listed_keys(state.store.keys())}. A run without "
        "it is not graded: invalid-input. If no run records it, the solver must "
        "set state.store_as(RetrievalTrace).context to the IDs it supplied, or "
        "pass context_key= to read them from metadata."
    )
