"""`tracegrade/stage_diagnosis`: where did a RAG run fail, retrieval or generation?

A thin wrapper over `tracegrade.core.diagnose_stage`: the closure only
gathers the record (required IDs, the context actually supplied, the staff
label) from the task state, and `diagnosis_score` turns the core's result
into a `Score` without seeing the state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from inspect_ai.scorer import SampleScore, Score, Scorer, Target
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, diagnose_stage
from ..labels import LabelsError, StaffLabels
from ._inspect_glue import checked_first, register_scorer, tag_scorer
from .explain import explain_invalid, explain_stage, explain_unrecorded_context
from .metrics import lucky_answers, scored_runs, stage_modes, stage_shares
from .outcome import ErrorInfo, data_error, graded, metadata_source, stage_answer
from .store import context_store_key, recorded_context

logger = logging.getLogger(__name__)

STAGE_METRICS = [stage_shares(), stage_modes(), lucky_answers(), scored_runs()]


def diagnosis_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    context_recorded: bool,
    output: str = "",
) -> Score:
    """The score for one record, errors included.

    `context_recorded` is False when the context came from an unset
    `RetrievalTrace` (absent, or `null` in the store), so the error can say
    the retrieval step never recorded it rather than only that the field
    is missing. `output` is the model's answer text, if any: the score's
    `answer`, which the viewer shows beside the input.
    """
    answer = stage_answer(record, output)
    try:
        result = diagnose_stage(record)
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
        )
    explanation = explain_stage(record, result, label_from=read_from["correct"])
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
        )
    return graded(
        result["stage"],
        answer=answer,
        explanation=explanation,
        result=result,
        record=record,
        read_from=read_from,
    )


def stage_diagnosis_scorer(
    required_key: str = "required",
    correct_key: str = "correct",
    context_key: str | None = None,
    labels: str | None = None,
) -> Scorer:
    """Diagnose each run's failing stage: retrieval, generation, pass or unresolved.

    The value is the stage. A missing or non-Boolean label
    (`answer-label`) and a record outside the contract (`invalid-input`,
    e.g. a context that was never recorded) are data errors: the score is
    `Score.unscored`, never a guessed stage. See `tracegrade.scorers.outcome`
    for the metadata every score carries.

    Args:
        required_key: Sample metadata key of the required document IDs. An
            absent key or `null` means nothing is required: `unresolved`.
        correct_key: Sample metadata key of the staff label; only JSON
            `true` and `false` are labels.
        context_key: Sample metadata key of the supplied context IDs. By
            default (None) the context is what a solver recorded in the
            `RetrievalTrace` store model, which is what a RAG pipeline
            should do: the context actually supplied, not the planned one.
        labels: Path to a JSON Lines labels file, one
            `{"id": <sample id>, "correct": true|false}` per line. It is
            then the only label source: a sample it does not name has no
            label (`answer-label`), whatever its metadata says. A malformed
            or repeated line fails when the scorer is built; a label that
            names no scored sample fails the run once scoring ends, before
            the log is written (if every sample ends unscored, Inspect
            downgrades metric errors to warnings, so it is logged as an
            error instead). Build one scorer per log: it remembers the
            samples it has scored.

    Examples:
        In your own task, with the context recorded by your RAG solver:

        ```python
        Task(dataset=..., solver=[retrieve(), generate()],
             scorer=stage_diagnosis_scorer(required_key="gold_docs"))
        ```

        Staff labels joined onto an existing log:

        ```bash
        inspect score LOG --scorer tracegrade/stage_diagnosis \\
            -S labels=labels.jsonl --action append --overwrite
        ```
    """
    staff_labels = StaffLabels.read(labels) if labels is not None else None
    read_from = {
        "required": metadata_source(required_key),
        "context": (
            metadata_source(context_key)
            if context_key is not None
            else f"store {context_store_key()}"
        ),
        "correct": (
            f"labels file {labels}"
            if labels is not None
            else metadata_source(correct_key)
        ),
    }

    async def score(state: TaskState, target: Target) -> Score:
        metadata = state.metadata
        record: dict[str, Any] = {}
        if required_key in metadata:
            record["required"] = metadata[required_key]
        context_recorded = True
        if context_key is not None:
            if context_key in metadata:
                record["context"] = metadata[context_key]
        else:
            if context_store_key() in state.store:
                record["context"] = recorded_context(state.store)
            context_recorded = record.get("context") is not None
        if staff_labels is not None:
            label = staff_labels.label_for(state.sample_id, state.epoch)
            if label is not None:
                record["correct"] = label
        elif correct_key in metadata:
            record["correct"] = metadata[correct_key]
        return diagnosis_score(
            record,
            read_from,
            context_recorded=context_recorded,
            output=state.output.completion,
        )

    metrics = STAGE_METRICS
    if staff_labels is not None:
        metrics = [checked_first(STAGE_METRICS[0], _coverage_check(staff_labels))]
        metrics += STAGE_METRICS[1:]
    return tag_scorer(
        stage_diagnosis_scorer,
        score,
        "stage_diagnosis",
        metrics,
        required_key=required_key,
        correct_key=correct_key,
        context_key=context_key,
        labels=labels,
    )


def _coverage_check(staff_labels: StaffLabels) -> Callable[[list[SampleScore]], None]:
    def check(scores: list[SampleScore]) -> None:
        try:
            staff_labels.check_all_matched()
        except LabelsError as error:
            if not scores:
                # Inspect turns an error raised over an empty score list
                # (every sample unscored) into a warning; say it in full.
                logger.error("%s", error)
            raise

    return check


register_scorer(stage_diagnosis_scorer, "stage_diagnosis", STAGE_METRICS)

__all__ = ["STAGE_METRICS", "diagnosis_score", "stage_diagnosis_scorer"]
