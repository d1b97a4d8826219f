"""`tracegrade/stage_diagnosis`: where did a RAG run fail, retrieval or generation?

A thin wrapper over `tracegrade.core.diagnose_stage`: the closure only
gathers the record (required IDs, the context actually supplied, the
label) from the task state, and `diagnosis_score` turns the core's result
into a `Score` without seeing the state. The label comes from one source:
sample metadata, a staff labels file (`labels=`), a grader run here
(`label_scorer=`) or a score an earlier scorer already gave the sample
(`label_from=`); see `tracegrade.scorers.grader` for how a grader's value
becomes a label.
"""

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
from ..core.steps import Step, lost_documents, read_steps, step_recalls
from ..labels import StaffLabels
from .arguments import (
    ScorerArgumentError,
    check_key,
    refuse_unknown_arguments,
    tool_names,
)
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
    given_verdict,
    grade,
    grader_name,
    resolve_label_scorer,
)
from .key_warnings import KeyWatch, absent_metadata_key, listed_keys
from .metrics import (
    context_precision,
    context_recall,
    lucky_answers,
    scored_runs,
    stage_modes,
    stage_shares,
    step_recall,
)
from .outcome import (
    ErrorInfo,
    data_error,
    graded,
    metadata_source,
    run_error,
    stage_answer,
)
from .sample_error import sample_error
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
    """The score for one record, errors included, with its `recall` and
    `precision`.

    `context_recorded` is False when the context came from an unset
    `RetrievalTrace` (absent, or `null` in the store), so the error can say
    the retrieval step never recorded it rather than only that the field
    is missing. `output` is the model's answer text, if any: the score's
    `answer`, which the viewer shows beside the input. `no_label` says why
    a grader gave no label, to explain an `answer-label` error with instead
    of "no staff label was found".

    Every score made here has `recall` and `precision` in its metadata,
    from the record alone (`tracegrade.core.recall`), labelled or not:
    recall a number wherever something is required and both ID lists are
    lists of IDs, precision wherever both are and the context holds an ID.

    A record with `steps` (`tracegrade.core.steps`) also gets `lost`, where
    each missing ID was lost, wherever the rules report `missing`, and
    `step_recall`, each step's recall, wherever recall is a number; the
    explanation then says where each was lost. Without steps neither key
    is there, and nothing else differs. `calls` is the context read from
    the transcript (`tracegrade.scorers.transcript`), when it was.
    """
    score, steps = _diagnosis_score(
        record,
        read_from,
        context_recorded=context_recorded,
        output=output,
        no_label=no_label,
        calls=calls,
    )
    metadata = score.metadata
    assert metadata is not None
    recall = stage_recall(record)
    metadata["recall"] = recall
    metadata["precision"] = stage_precision(record)
    if steps is not None:
        result = metadata["result"]
        if isinstance(result, dict) and "missing" in result:
            metadata["lost"] = lost_documents(result["missing"], steps)
        if recall is not None:
            metadata["step_recall"] = step_recalls(record["required"], steps)
    return score


def _diagnosis_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    context_recorded: bool,
    output: str,
    no_label: str | None,
    calls: ToolContext | None,
) -> tuple[Score, list[Step] | None]:
    answer = stage_answer(record, output)
    try:
        if calls is not None and calls.problem is not None:
            raise calls.problem
        result = diagnose_stage(record)
        steps = read_steps(record)
    except InvalidRecord as invalid:
        unrecorded = invalid.field == "context" and not context_recorded
        recorded_null = "context" in record and record["context"] is None
        return data_error(
            ErrorInfo(
                kind="invalid-input",
                side="data",
                field=invalid.field,
                message=str(invalid),
            ),
            answer=answer,
            explanation=(
                explain_unrecorded_context(recorded_null=recorded_null)
                if unrecorded
                else explain_invalid(invalid)
            ),
            result=None,
            record=record,
            read_from=read_from,
        ), None
    if "error" in result and no_label is not None:
        explanation = no_label
    else:
        explanation = explain_stage(record, result, label_from=read_from["correct"])
    missing = result.get("missing")
    if steps is not None and isinstance(missing, list) and missing:
        lost = lost_documents(missing, steps)
        explanation += " " + (
            calls.explain_lost(lost)
            if calls is not None
            else explain_lost(lost, steps, record["context"])
        )
    if calls is not None:
        explanation += calls.note()
    if "error" in result:
        return data_error(
            ErrorInfo(
                kind="answer-label",
                side="data",
                field="correct",
                message=explanation,
            ),
            answer=answer,
            explanation=explanation,
            result=result,
            record=record,
            read_from=read_from,
        ), steps
    return graded(
        result["stage"],
        answer=answer,
        explanation=explanation,
        result=result,
        record=record,
        read_from=read_from,
    ), steps


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

    The value is the stage. A missing or non-Boolean label
    (`answer-label`) and a record outside the contract (`invalid-input`,
    e.g. a context that was never recorded) are data errors: the score is
    `Score.unscored`, never a guessed stage. A sample whose run failed
    (scored under `--score-on-error`) is `sample-error`, also unscored: it
    never answered, so it has no stage. See `tracegrade.scorers.outcome`
    for the metadata every score carries.

    The label has one source: sample metadata (`correct_key`, the
    default), a staff labels file (`labels`), a grader (`label_scorer`) or
    a score an earlier scorer gave (`label_from`). A grader's value
    becomes the label by one table, in `tracegrade.scorers.grader`:
    `CORRECT`, true or 1 are `true`, `INCORRECT`, false or 0 are `false`,
    and nothing else is a label. A run without a label is `answer-label`,
    its explanation quoting what the grader gave. `read_from["correct"]`
    names the grader (`"scorer match"`) or the score (`"score
    model_graded_qa"`), and the metadata's `grader` keeps its score:
    `name`, `value`, `answer`, `explanation`, `reason` and `metadata`.

    A run that lacks a key the scorer reads, when no run scored before it
    had the key, is warned of once, in the terminal and in the log (see
    `tracegrade.scorers.key_warnings`): a typo in a key would otherwise give a
    run that is silently all `unresolved` or all `answer-label`.

    Args:
        required_key: Sample metadata key of the required document IDs. An
            absent key or `null` means nothing is required: `unresolved`.
        correct_key: Sample metadata key of the staff label; only JSON
            `true` and `false` are labels. Not read when another label
            source is given.
        context_key: Sample metadata key of the supplied context IDs. By
            default (None) the context is what a solver recorded in the
            `RetrievalTrace` store model, which is what a RAG pipeline
            should do: the context actually supplied, not the planned one.
        labels: Path to a JSON Lines labels file, one
            `{"id": <sample id>, "correct": true|false}` per line (with
            `"epoch"` to label one epoch). It is then the only label
            source: a sample it does not name has no label
            (`answer-label`), whatever its metadata says. A malformed or
            repeated line fails when the scorer is built. Whether every
            label names a sample is not checked here, since a scorer never
            sees the whole dataset (a sample that errors is never scored;
            `eval-retry` scores only the retried ones): `tracegrade labels
            apply LOG LABELS` checks it against the log before it writes.
        label_scorer: A grader, any Inspect scorer such as `match()`,
            `includes()` or `model_graded_qa()` (called: the scorer, not
            its `@scorer` function), or its registry name (`"match"`, as
            `-S label_scorer=match` gives it). It runs on the same state
            and target, and its value becomes the label. A grader that
            raises fails the sample, as any scorer's error does: the log
            keeps the traceback and `eval-retry` scores it again.
        label_from: The name of a score an earlier scorer of the same
            sample already gave, such as `"model_graded_qa"` in
            `scorer=[model_graded_qa(), stage_diagnosis_scorer(
            label_from="model_graded_qa")]`: its value becomes the label by
            the same table, and the judge is called once. Under `inspect
            score --action append` the log's own scores count too. A run
            without that score has no label (`answer-label`), warned of
            when no run scored before it had one.
        steps_key: Sample metadata key of the pipeline's steps, each
            `{"name": ..., "ids": [...], "inputs"?: [...]}` in pipeline
            order, its output IDs in rank order (`inputs`: the earlier
            steps it took, by default the one before). By default (None)
            the steps are what a solver recorded in `RetrievalTrace.steps`,
            if it recorded any. A run with steps gets `lost` (where each
            missing ID was lost) and `step_recall` in its score; one
            without has neither.
        context_tools: A tool name, or a list, whose results in the
            sample's messages are the context, each call a step
            (`search#1`): an agent's context, with no instrumentation (see
            docs/agents.md). Not with `context_key` or `steps_key`.
        context_id_key: The key of a document's ID in a tool result's
            objects.

    Raises:
        ScorerArgumentError: A key argument is no non-empty string (None
            too, but for `context_key`), `context_tools` is no tool name or
            list of them or comes with another context source, or an
            argument this scorer does not take is given (`-S requried_key=...`).
        LabelsError: The labels file cannot be read or has a bad line.
        LabelScorerError: `label_scorer` is no scorer (an uncalled
            `@scorer` function, a name no scorer is registered under),
            `label_from` is no score name, or more than one label source
            is given.

    Examples:
        In your own task, with the context recorded by your RAG solver and
        each answer judged by `match()` against the sample's target:

        ```python
        Task(dataset=..., solver=[retrieve(), generate()],
             scorer=stage_diagnosis_scorer(required_key="gold_docs",
                                           label_scorer=match()))
        ```

        Staff labels joined onto an existing log, checked against its
        samples first:

        ```bash
        tracegrade labels apply LOG labels.jsonl
        ```
    """
    refuse_unknown_arguments("stage_diagnosis", stage_diagnosis_scorer, unknown)
    check_key("required_key", required_key)
    check_key("correct_key", correct_key)
    check_key("context_key", context_key, optional=True)
    check_key("steps_key", steps_key, optional=True)
    check_key("context_id_key", context_id_key)
    tools = _context_tools(context_tools, context_key, steps_key)
    _one_label_source(labels=labels, label_scorer=label_scorer, label_from=label_from)
    staff_labels = StaffLabels.read(labels) if labels is not None else None
    grader = resolve_label_scorer(label_scorer) if label_scorer is not None else None
    reader = _RecordReader(
        required_key=required_key,
        correct_key=correct_key,
        context_key=context_key,
        steps_key=steps_key,
        tools=tools,
        id_key=context_id_key,
        staff_labels=staff_labels,
        label_in_metadata=grader is None and label_from is None,
    )
    read_from, steps_from = reader.sources(
        f"{LABEL_SOURCE} {grader_name(grader)}"
        if grader is not None
        else f"{GIVEN_SOURCE} {label_from}"
        if label_from is not None
        else f"labels file {labels}"
        if labels is not None
        else metadata_source(correct_key)
    )

    async def score(state: TaskState, target: Target) -> Score:
        failure = sample_error()
        if failure is not None:
            return run_error(
                failure,
                answer=state.output.completion,
                read_from=read_from,
                absent=("recall", "precision"),
            )
        record, context_recorded, calls = reader.record(state)
        # Where a run's steps came from is said only of a run that has them.
        run_read_from = (
            read_from
            if "steps" not in record
            else {
                **read_from,
                "steps": steps_from,
            }
        )
        if grader is not None:
            verdict = await grade(grader, grader_name(grader), state, target)
        elif label_from is not None:
            given = (state.scores or {}).get(label_from)
            reader.note_given_score(state, label_from, given is not None)
            verdict = given_verdict(label_from, given)
        else:
            return diagnosis_score(
                record,
                run_read_from,
                context_recorded=context_recorded,
                output=state.output.completion,
                calls=calls,
            )
        if verdict.label is not None:
            record["correct"] = verdict.label
        result = diagnosis_score(
            record,
            run_read_from,
            context_recorded=context_recorded,
            output=state.output.completion,
            no_label=verdict.why_no_label() if verdict.label is None else None,
            calls=calls,
        )
        assert result.metadata is not None
        result.metadata["grader"] = verdict.as_metadata()
        return result

    return score


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
class _RecordReader:
    """Gathers a run's record from its state, as the scorer's arguments say,
    and notes each source it read (see `tracegrade.scorers.key_warnings`)."""

    required_key: str
    correct_key: str
    context_key: str | None
    steps_key: str | None
    tools: tuple[str, ...] | None
    id_key: str
    staff_labels: StaffLabels | None
    label_in_metadata: bool
    watch: KeyWatch = field(default_factory=KeyWatch)

    def sources(self, correct: str) -> tuple[dict[str, str], str]:
        """Where the record's fields are read (the label's from `correct`),
        and where its steps are."""
        tools = ", ".join(self.tools or ())
        read_from = {
            "required": metadata_source(self.required_key),
            "context": (
                metadata_source(self.context_key)
                if self.context_key is not None
                else f"tool results {tools}"
                if tools
                else f"store {context_store_key()}"
            ),
            "correct": correct,
        }
        steps_from = (
            metadata_source(self.steps_key)
            if self.steps_key is not None
            else f"tool calls {tools}"
            if tools
            else f"store {steps_store_key()}"
        )
        return read_from, steps_from

    def record(
        self, state: TaskState
    ) -> tuple[dict[str, Any], bool, ToolContext | None]:
        """The record but for a grader's label, whether the context was
        recorded (always, for a context read from metadata or tool calls),
        and the tool calls it was read from."""
        metadata = state.metadata
        record: dict[str, Any] = {}
        self._note_key(state, "required", self.required_key)
        if self.required_key in metadata:
            record["required"] = metadata[self.required_key]
        context_recorded, calls = self._context_and_steps(state, record)
        if self.staff_labels is not None:
            labels = self.staff_labels
            label = labels.label_for(state.sample_id, state.epoch)
            self.watch.note(
                "labels", label is not None, lambda: _unlabelled_warning(state, labels)
            )
            if label is not None:
                record["correct"] = label
        elif self.label_in_metadata:
            self._note_key(state, "correct", self.correct_key)
            if self.correct_key in metadata:
                record["correct"] = metadata[self.correct_key]
        return record, context_recorded, calls

    def _context_and_steps(
        self, state: TaskState, record: dict[str, Any]
    ) -> tuple[bool, ToolContext | None]:
        """Add the run's context and steps to `record`: whether the context
        was recorded, and the tool calls it was read from, if it was."""
        metadata = state.metadata
        calls = None
        if self.tools is not None:
            calls = read_tool_context(state.messages, self.tools, self.id_key)
            record.update(calls.record())
            context_recorded = True
        elif self.context_key is not None:
            self._note_key(state, "context", self.context_key)
            if self.context_key in metadata:
                record["context"] = metadata[self.context_key]
            context_recorded = True
        else:
            if context_store_key() in state.store:
                record["context"] = recorded_context(state.store)
            context_recorded = record.get("context") is not None
            self.watch.note(
                "context", context_recorded, lambda: _unrecorded_warning(state)
            )
        # Steps are optional: only a key the user named is warned of.
        if self.steps_key is not None:
            self._note_key(state, "steps", self.steps_key)
            if self.steps_key in metadata:
                record["steps"] = metadata[self.steps_key]
        elif self.tools is None and state.store.get(steps_store_key()) is not None:
            record["steps"] = state.store.get(steps_store_key())
        return context_recorded, calls

    def note_given_score(self, state: TaskState, name: str, present: bool) -> None:
        self.watch.note(
            "label_from", present, lambda: _no_given_score_warning(state, name)
        )

    def _note_key(self, state: TaskState, role: str, key: str) -> None:
        self.watch.note(
            role,
            key in state.metadata,
            lambda: absent_metadata_key(
                "stage_diagnosis",
                quote(state.sample_id),
                key=key,
                argument=f"{role}_key",
                keys=state.metadata,
                consequence=_WITHOUT[role],
            ),
        )


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
