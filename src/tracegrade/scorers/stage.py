"""`tracegrade/stage_diagnosis`: where did a RAG run fail, retrieval or generation?"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, NoReturn

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from ..core import InvalidRecord, diagnose_stage
from ..core.errors import quote
from ..core.recall import stage_precision, stage_recall
from ..core.steps import lost_documents, read_steps, step_recalls
from ..labels import StaffLabels
from .arguments import (
    ScorerArgumentError,
    check_key,
    refuse_unknown_arguments,
    tool_names,
)
from .common import record_scorer
from .explain import (
    explain_invalid,
    explain_lost,
    explain_stage,
    explain_unrecorded_context,
)
from .grader import (
    GIVEN_SOURCE,
    LABEL_SOURCE,
    LabelScorerError,
    Verdict,
    given_verdict,
    grade,
    grader_name,
    resolve_label_scorer,
)
from .key_warnings import KeyWatch, listed_keys
from .metrics import (
    context_precision,
    context_recall,
    lucky_answers,
    scored_runs,
    stage_modes,
    stage_shares,
    step_recall,
)
from .outcome import ErrorInfo, data_error, graded, metadata_source, stage_answer
from .store import context_store_key, recorded_context, steps_store_key
from .transcript import ToolContext, read_tool_context

STAGE_METRICS = [
    stage_shares(),
    stage_modes(),
    lucky_answers(),
    context_recall(),
    context_precision(),
    step_recall(),
    scored_runs(),
]


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

    `context_recorded` is False for an unset `RetrievalTrace`; `no_label`
    says why a grader gave no label; `calls` are the tool calls read.
    """
    answer = stage_answer(record, output)
    try:
        if calls is not None and calls.problem is not None:
            raise calls.problem
        result = diagnose_stage(record)
        steps = read_steps(record)
    except InvalidRecord as invalid:
        score = data_error(
            ErrorInfo(
                kind="invalid-input",
                side="data",
                field=invalid.field,
                message=str(invalid),
            ),
            answer=answer,
            explanation=_invalid_explanation(invalid, record, context_recorded),
            result=None,
            record=record,
            read_from=read_from,
        )
        return _with_recall(score, record)
    missing = result.get("missing")
    # `missing` is absent exactly on `unresolved`.
    lost = None
    if steps is not None and isinstance(missing, list):
        lost = lost_documents(missing, steps)
    if "error" in result and no_label is not None:
        explanation = no_label
    else:
        explanation = explain_stage(record, result, label_from=read_from["correct"])
    if lost:
        assert steps is not None
        explanation += " " + (
            calls.explain_lost(lost)
            if calls is not None
            else explain_lost(lost, steps, record["context"])
        )
    if calls is not None:
        explanation += calls.note()
    if "error" in result:
        error = ErrorInfo(
            kind="answer-label", side="data", field="correct", message=explanation
        )
        score = data_error(
            error,
            answer=answer,
            explanation=explanation,
            result=result,
            record=record,
            read_from=read_from,
        )
    else:
        score = graded(
            result["stage"],
            answer=answer,
            explanation=explanation,
            result=result,
            record=record,
            read_from=read_from,
        )
    score = _with_recall(score, record)
    assert score.metadata is not None
    if lost is not None:
        score.metadata["lost"] = lost
    if steps is not None and score.metadata["recall"] is not None:
        score.metadata["step_recall"] = step_recalls(record["required"], steps)
    return score


def _invalid_explanation(
    invalid: InvalidRecord, record: dict[str, Any], context_recorded: bool
) -> str:
    if invalid.field == "context" and not context_recorded:
        recorded_null = "context" in record and record["context"] is None
        return explain_unrecorded_context(recorded_null=recorded_null)
    return explain_invalid(invalid)


def _with_recall(score: Score, record: dict[str, Any]) -> Score:
    """`score` with the record's `recall` and `precision`, labelled or not."""
    assert score.metadata is not None
    score.metadata["recall"] = stage_recall(record)
    score.metadata["precision"] = stage_precision(record)
    return score


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
    """Diagnose each run's failing stage: retrieval, generation, pass or unresolved.

    A missing label (`answer-label`) or a record outside the contract
    (`invalid-input`) is unscored, never a guessed stage; docs/scores.md
    has the whole contract, with the table by which a grader's value
    becomes a label.

    Args:
        required_key: Sample metadata key of the required document IDs.
        correct_key: Sample metadata key of the label, JSON `true` or `false`.
        context_key: Sample metadata key of the context IDs; by default
            the context a solver recorded in `RetrievalTrace`.
        labels: A JSON Lines staff labels file, then the only label source
            (docs/labels.md).
        label_scorer: A grader (a scorer such as `match()`, or its registry
            name) run on the same state and target.
        label_from: The name of a score an earlier scorer gave this sample.
        steps_key: Sample metadata key of the pipeline's steps; by default
            `RetrievalTrace.steps`, if recorded (docs/pipeline-steps.md).
        context_tools: A tool name, or a list, whose results in the
            messages are the context, each call a step (docs/agents.md).
        context_id_key: The key of a document's ID in a tool result's objects.

    Raises:
        ScorerArgumentError: A key or `context_tools` of the wrong kind, two
            context sources, or an argument this scorer does not take.
        LabelsError: The labels file cannot be read or has a bad line.
        LabelScorerError: No usable grader, or more than one label source.
    """
    refuse_unknown_arguments("stage_diagnosis", stage_diagnosis_scorer, unknown)
    check_key("required_key", required_key)
    check_key("correct_key", correct_key)
    check_key("context_key", context_key, optional=True)
    check_key("steps_key", steps_key, optional=True)
    check_key("context_id_key", context_id_key)
    tools = _context_tools(context_tools, context_key, steps_key)
    _one_label_source(labels=labels, label_scorer=label_scorer, label_from=label_from)
    reader = _StageReader(
        required_key=required_key,
        correct_key=correct_key,
        context_key=context_key,
        steps_key=steps_key,
        tools=tools,
        id_key=context_id_key,
        staff_labels=StaffLabels.read(labels) if labels is not None else None,
        grader=resolve_label_scorer(label_scorer) if label_scorer is not None else None,
        label_from=label_from,
    )
    return record_scorer(
        reader.score, read_from=reader.read_from, absent=("recall", "precision")
    )


def _context_tools(
    context_tools: object, context_key: str | None, steps_key: str | None
) -> tuple[str, ...] | None:
    """The tools whose results are the context, alone as its source."""
    tools = tool_names("context_tools", context_tools)
    if tools is not None and (context_key is not None or steps_key is not None):
        raise ScorerArgumentError(
            f"context_tools={quote(context_tools)} reads the context and steps "
            "from the tool calls; context_key and steps_key read them from "
            "metadata: give one source"
        )
    return tools


def _one_label_source(
    *, labels: str | None, label_scorer: Any, label_from: Any
) -> None:
    """Refuse more than one label source, and a `label_from` that names no score."""
    given = [
        f"{argument}={shown}"
        for argument, value, shown in (
            ("labels", labels, quote(labels)),
            ("label_scorer", label_scorer, _shown_grader(label_scorer)),
            ("label_from", label_from, quote(label_from)),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise LabelScorerError(
            f"{' and '.join(given)} were given, but a run's label has one "
            "source: a staff labels file (labels), a grader (label_scorer) or an "
            "earlier scorer's score (label_from); give one"
        )
    if label_from is not None and (
        not isinstance(label_from, str) or not label_from.strip()
    ):
        raise LabelScorerError(
            f"label_from must name a score an earlier scorer gives, such as "
            f'"model_graded_qa", got {quote(label_from)}'
        )


@dataclass
class _StageReader:
    """Reads a run's record from its state as the scorer's arguments say,
    noting each source it read (`tracegrade.scorers.key_warnings`)."""

    required_key: str
    correct_key: str
    context_key: str | None
    steps_key: str | None
    tools: tuple[str, ...] | None
    id_key: str
    staff_labels: StaffLabels | None
    grader: Scorer | None
    label_from: str | None
    watch: KeyWatch = field(default_factory=KeyWatch)

    @property
    def read_from(self) -> dict[str, str]:
        """Where the record's fields are read."""
        tools = ", ".join(self.tools or ())
        return {
            "required": metadata_source(self.required_key),
            "context": metadata_source(self.context_key)
            if self.context_key is not None
            else f"tool results {tools}"
            if tools
            else f"store {context_store_key()}",
            "correct": self._label_source(),
        }

    def _label_source(self) -> str:
        if self.grader is not None:
            return f"{LABEL_SOURCE} {grader_name(self.grader)}"
        if self.label_from is not None:
            return f"{GIVEN_SOURCE} {self.label_from}"
        if self.staff_labels is not None:
            return f"labels file {self.staff_labels.path}"
        return metadata_source(self.correct_key)

    def _steps_source(self) -> str:
        if self.steps_key is not None:
            return metadata_source(self.steps_key)
        if self.tools:
            return f"tool calls {', '.join(self.tools)}"
        return f"store {steps_store_key()}"

    async def score(self, state: TaskState, target: Target) -> Score:
        record, context_recorded, calls = self.record(state)
        read_from = self.read_from
        # Where a run's steps came from is said only of a run that has them.
        if "steps" in record:
            read_from["steps"] = self._steps_source()
        verdict = await self._verdict(state, target)
        if verdict is not None and verdict.label is not None:
            record["correct"] = verdict.label
        score = diagnosis_score(
            record,
            read_from,
            context_recorded=context_recorded,
            output=state.output.completion,
            no_label=verdict.why_no_label()
            if verdict is not None and verdict.label is None
            else None,
            calls=calls,
        )
        if verdict is not None:
            assert score.metadata is not None
            score.metadata["grader"] = verdict.as_metadata()
        return score

    async def _verdict(self, state: TaskState, target: Target) -> Verdict | None:
        """The grader's verdict, when the label comes from a grader."""
        if self.grader is not None:
            return await grade(self.grader, grader_name(self.grader), state, target)
        if self.label_from is None:
            return None
        name = self.label_from
        given = (state.scores or {}).get(name)
        self.watch.note(
            "label_from",
            given is not None,
            lambda: _no_given_score_warning(state, name),
        )
        return given_verdict(name, given)

    def record(
        self, state: TaskState
    ) -> tuple[dict[str, Any], bool, ToolContext | None]:
        """The record but for a grader's label, whether its context was
        recorded, and the tool calls it was read from."""
        record: dict[str, Any] = {}
        self._read_key(state, record, "required", self.required_key)
        context_recorded, calls = self._read_context(state, record)
        self._read_steps(state, record)
        labels = self.staff_labels
        if labels is not None:
            label = labels.label_for(state.sample_id, state.epoch)
            self.watch.note(
                "labels", label is not None, lambda: _unlabelled_warning(state, labels)
            )
            if label is not None:
                record["correct"] = label
        elif self.grader is None and self.label_from is None:
            self._read_key(state, record, "correct", self.correct_key)
        return record, context_recorded, calls

    def _read_context(
        self, state: TaskState, record: dict[str, Any]
    ) -> tuple[bool, ToolContext | None]:
        if self.tools is not None:
            calls = read_tool_context(state.messages, self.tools, self.id_key)
            record.update(calls.record())
            return True, calls
        if self.context_key is not None:
            self._read_key(state, record, "context", self.context_key)
            return True, None
        if context_store_key() in state.store:
            record["context"] = recorded_context(state.store)
        recorded = record.get("context") is not None
        self.watch.note("context", recorded, lambda: _unrecorded_warning(state))
        return recorded, None

    def _read_steps(self, state: TaskState, record: dict[str, Any]) -> None:
        # Steps are optional: only a key the user named is warned of.
        if self.steps_key is not None:
            self._read_key(state, record, "steps", self.steps_key)
        elif self.tools is None and state.store.get(steps_store_key()) is not None:
            record["steps"] = state.store.get(steps_store_key())

    def _read_key(
        self, state: TaskState, record: dict[str, Any], role: str, key: str
    ) -> None:
        """Copy metadata `key` into the record's `role`, if the run has it."""
        self.watch.note_key("stage_diagnosis", state, role, key, _WITHOUT[role])
        if key in state.metadata:
            record[role] = state.metadata[key]


_WITHOUT = {
    "required": "A run without it has nothing to diagnose: unresolved.",
    "context": "A run without it is not graded: invalid-input.",
    "correct": "A run without it has no label: answer-label.",
    "steps": "A run without it is diagnosed without steps: no lost.",
}


def _shown_grader(grader: Any) -> str:
    """A grader as it was written: `"match"`, `match()`, `match`."""
    if isinstance(grader, str):
        return quote(grader)
    try:
        name = registry_info(grader).name.removeprefix("inspect_ai/")
    except ValueError:  # not registered
        return str(getattr(grader, "__name__", type(grader).__name__))
    return f"{name}()" if inspect.iscoroutinefunction(grader) else name


def _unrecorded_warning(state: TaskState) -> str:
    return (
        f"stage_diagnosis: sample {quote(state.sample_id)} recorded no context "
        f"(no solver set RetrievalTrace.context), and no run scored before it "
        f"did. Its store keys: {listed_keys(state.store.keys())}. A run without "
        "it is not graded: invalid-input. If no run records it, the solver must "
        "set state.store_as(RetrievalTrace).context to the IDs it supplied, or "
        "pass context_key= to read them from metadata."
    )


def _unlabelled_warning(state: TaskState, labels: StaffLabels) -> str:
    return (
        f"stage_diagnosis: labels file {labels.path} has no label for sample "
        f"{quote(state.sample_id)} epoch {state.epoch}, nor for any run scored "
        f"before it. It labels ids {listed_keys(labels.ids())}. A run without a "
        "label is answer-label. If the file matches no sample, check its ids: "
        'they match sample ids exactly, type included ("1" is not 1).'
    )


def _no_given_score_warning(state: TaskState, name: str) -> str:
    return (
        f"stage_diagnosis: sample {quote(state.sample_id)} has no score "
        f"{quote(name)} (label_from={quote(name)}), and no run scored before it "
        f"had one. Its scores: {listed_keys(state.scores or {})}. A run without "
        "it has no label: answer-label. The score must come from a scorer listed "
        "before stage_diagnosis, or from the log under inspect score --action "
        "append (--action overwrite scores without the log's scores). If no "
        "sample has it, check label_from."
    )


__all__ = ["STAGE_METRICS", "diagnosis_score", "stage_diagnosis_scorer"]
