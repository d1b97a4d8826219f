"""`tracegrade/ordered_extraction`: did the answer keep every source ID, in order?"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, NoReturn

import anyio
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, grade_extraction, has_duplicates, itemise
from ..core.errors import quote
from ..lines import strict_json_loads
from .answer_parsing import UnreadableAnswer, read_answer_ids
from .arguments import ScorerArgumentError, check_key, refuse_unknown_arguments
from .common import record_scorer
from .explain import explain_extraction, explain_invalid, explain_unreadable
from .key_warnings import KeyWatch
from .metrics import answer_failures, criteria_shares, scored_runs
from .outcome import ErrorInfo, data_error, graded, metadata_source, shown

READ_IN_THREAD_CHARACTERS: Final = 100_000
"""An output at least this long is read in a worker thread, off the event loop."""


def failed_both() -> dict[str, bool]:
    """The value of an answer that broke the answer contract."""
    return {"membership": False, "order": False}


def extraction_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    answer_text: str | None = None,
    structured_key: str | None = None,
) -> Score:
    """An extraction record's `Score`, errors included: its one path to a result.

    With `answer_text` the answer is read from that output (unreadable is
    the model's failure; `read_as` says how it was read); without it,
    `record` holds a recorded answer, whose wrong type is the data's error.
    """
    if answer_text is None:
        return _with_itemisation(_answer_value_score(record, read_from))
    read_as = None
    try:
        reading = read_answer_ids(answer_text, structured_key=structured_key)
    except Exception as failure:
        # Whatever the reader meets is the answer's to answer for, never the
        # eval's: a failure the rules did not foresee is still a refusal.
        unreadable = (
            failure
            if isinstance(failure, UnreadableAnswer)
            else UnreadableAnswer(
                f"the answer could not be read ({type(failure).__name__}: {failure})"
            )
        )
        refusal = _source_refusal(record, answer_text, read_from)
        score = (
            refusal
            if refusal is not None
            else graded(
                failed_both(),
                answer=answer_text,
                explanation=explain_unreadable(str(unreadable)),
                result=None,
                record=record,
                read_from=read_from,
                error=ErrorInfo(
                    kind="unreadable-answer",
                    side="answer",
                    field="answer",
                    message=str(unreadable),
                ),
            )
        )
    else:
        score = _answer_value_score({**record, "answer": reading.ids}, read_from)
        read_as = reading.read_as
    score = _with_itemisation(score)
    score.metadata = {**(score.metadata or {}), "read_as": read_as}
    return score


def recorded_output_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    output: Any,
    *,
    answer_too: bool = False,
) -> Score:
    """The score of a run that recorded the model's output text instead of
    its answer, read as a live output is; two answers, or no text, are invalid."""
    if isinstance(output, str) and not answer_too:
        return extraction_score(record, read_from, answer_text=output)
    problem = (
        "is given beside a recorded answer: a run records its answer once, as "
        "a list or as the output text"
        if answer_too
        else "must be a text, the model's output"
    )
    invalid = InvalidRecord("output", output, problem)
    return _with_itemisation(_invalid(invalid, shown(output), record, read_from))


def _answer_value_score(record: dict[str, Any], read_from: dict[str, str]) -> Score:
    """The score of a record that holds its answer as a value, read or recorded."""
    answer = shown(record["answer"]) if "answer" in record else ""
    try:
        result = grade_extraction(record)
    except InvalidRecord as invalid:
        return _invalid(invalid, answer, record, read_from)
    explanation = explain_extraction(record["source"], record["answer"], result)
    if "error" in result and has_duplicates(record["source"]):
        return _duplicate_source(explanation, answer, result, record, read_from)
    if "error" in result:
        value, error = (
            failed_both(),
            ErrorInfo(
                kind="duplicate-answer-id",
                side="answer",
                field="answer",
                message=explanation,
            ),
        )
    else:
        value, error = (
            {"membership": result["membership"], "order": result["order"]},
            None,
        )
    return graded(
        value,
        answer=answer,
        explanation=explanation,
        result=result,
        record=record,
        read_from=read_from,
        error=error,
    )


def _source_refusal(
    record: dict[str, Any], answer: str, read_from: dict[str, str]
) -> Score | None:
    """The data error in the source alone, if any: a broken source is the
    data's fault whatever the model wrote, so it wins over an unreadable answer."""
    try:
        grade_extraction(record)  # reads the source before the answer
    except InvalidRecord as invalid:
        if invalid.field != "answer":
            return _invalid(invalid, answer, record, read_from)
    if has_duplicates(record["source"]):
        explanation = explain_extraction(
            record["source"], [], {"error": "duplicate-id"}
        )
        return _duplicate_source(explanation, answer, None, record, read_from)
    return None


def _invalid(
    invalid: InvalidRecord,
    answer: str,
    record: dict[str, Any],
    read_from: dict[str, str],
) -> Score:
    return data_error(
        ErrorInfo(
            kind="invalid-input", side="data", field=invalid.field, message=str(invalid)
        ),
        answer=answer,
        explanation=explain_invalid(invalid),
        result=None,
        record=record,
        read_from=read_from,
    )


def _duplicate_source(
    explanation: str,
    answer: str,
    result: Any,
    record: dict[str, Any],
    read_from: dict[str, str],
) -> Score:
    """A repeated source ID: the answer key is broken, not the answer."""
    return data_error(
        ErrorInfo(
            kind="duplicate-source-id", side="data", field="source", message=explanation
        ),
        answer=answer,
        explanation=explanation,
        result=result,
        record=record,
        read_from=read_from,
    )


def _with_itemisation(score: Score) -> Score:
    """`score` with its `itemised`, None where the rules refused to grade
    (itemising those lists would mean guessing which list was meant)."""
    metadata = score.metadata
    assert metadata is not None, "outcome's builders always set metadata"
    result, record = metadata["result"], metadata["record"]
    graded = isinstance(result, dict) and "membership" in result
    metadata["itemised"] = (
        itemise(record["source"], record["answer"]) if graded else None
    )
    return score


def source_from_target(target: Target) -> Any:
    """The source IDs written as a JSON array in the target text.

    A list target is refused: Inspect reads it as alternative answers, and
    its `text` runs the items together (`"CAB"`), which no one wrote.
    """
    if len(target.target) != 1:
        raise InvalidRecord(
            "source",
            target.target,
            "must be one JSON array of string IDs in the target's text, as in "
            'Sample(target=\'["C", "A"]\'); a list target is a list of '
            "alternative answers to Inspect, not of IDs",
        )
    text = target.text
    try:
        return strict_json_loads(text)
    except ValueError as error:
        raise InvalidRecord(
            "source",
            text,
            f"must be a JSON array of string IDs in the target ({error})",
        ) from error


@scorer(
    # `criteria_shares` fills the entry Inspect gives the plain reduced
    # metrics, which would otherwise be logged empty and take the headline.
    metrics=[
        criteria_shares(),
        {"membership": [accuracy(), stderr()], "order": [accuracy(), stderr()]},
        answer_failures(),
        scored_runs(),
    ],
    name="ordered_extraction",
)
def ordered_extraction_scorer(
    source_key: str | None = "source",
    answer_key: str | None = None,
    structured_key: str | None = None,
    output_key: str | None = None,
    **unknown: NoReturn,
) -> Scorer:
    """Grade membership and order of an extracted ID list separately.

    A repeated ID or an output with no readable ID list fails both, so a
    model cannot escape grading; a broken source is unscored. docs/scores.md
    has the whole contract, docs/answer-formats.md how an output is read.

    Args:
        source_key: Sample metadata key of the source IDs; None reads them
            from the target, a JSON array (`Sample(target='["C", "A"]')`).
        answer_key: None grades the model's output; a metadata key grades a
            recorded answer, an array of strings.
        structured_key: The key an object of structured output holds the
            list under (`read_as` "structured").
        output_key: With `answer_key`, the metadata key of a recorded model
            output, read as a live output is; a run with both is invalid.

    Raises:
        ScorerArgumentError: A key that is neither None nor a non-empty
            string, keys that do not go together, or an argument this scorer
            does not take.
    """
    refuse_unknown_arguments("ordered_extraction", ordered_extraction_scorer, unknown)
    for argument, key in (
        ("source_key", source_key),
        ("answer_key", answer_key),
        ("structured_key", structured_key),
        ("output_key", output_key),
    ):
        check_key(argument, key, optional=True)
    if structured_key is not None and answer_key is not None:
        raise ScorerArgumentError(
            "structured_key reads the model's output, and answer_key="
            f"{quote(answer_key)} grades a recorded answer instead; give one"
        )
    if output_key is not None and answer_key is None:
        raise ScorerArgumentError(
            f"output_key={quote(output_key)} reads a recorded output beside "
            "recorded answers, so it needs answer_key too; without answer_key "
            "the model's own output is graded"
        )
    reader = _ExtractionReader(source_key, answer_key, structured_key, output_key)
    return record_scorer(
        reader.score,
        read_from=reader.read_from("answer", answer_key),
        absent=("itemised", "read_as") if answer_key is None else ("itemised",),
    )


@dataclass
class _ExtractionReader:
    """Reads a run's record from its state as the scorer's arguments say."""

    source_key: str | None
    answer_key: str | None
    structured_key: str | None
    output_key: str | None
    watch: KeyWatch = field(default_factory=KeyWatch)

    def read_from(self, role: str, key: str | None) -> dict[str, str]:
        """Where the source is read, and the answer, or the output, as `role`."""
        source = self.source_key
        return {
            "source": metadata_source(source) if source is not None else "target",
            role: metadata_source(key) if key is not None else "output",
        }

    async def score(self, state: TaskState, target: Target) -> Score:
        read_from = self.read_from("answer", self.answer_key)
        record: dict[str, Any] = {}
        if self.source_key is None:
            try:
                record["source"] = source_from_target(target)
            except InvalidRecord as invalid:
                score = _invalid(invalid, state.output.completion, record, read_from)
                return _with_itemisation(score)
        else:
            self._read_key(state, record, "source", self.source_key)
        metadata = state.metadata
        if self.answer_key is None:
            text = state.output.completion
            read = partial(
                extraction_score,
                record,
                read_from,
                answer_text=text,
                structured_key=self.structured_key,
            )
            return await _off_the_loop_if_long(read, text)
        if self.output_key is not None and self.output_key in metadata:
            self.watch.note("answer", True, str)
            output = metadata[self.output_key]
            read = partial(
                recorded_output_score,
                record,
                self.read_from("answer", self.output_key),
                output,
                answer_too=self.answer_key in metadata,
            )
            return await _off_the_loop_if_long(read, output)
        self._read_key(state, record, "answer", self.answer_key)
        return extraction_score(record, read_from)

    def _read_key(
        self, state: TaskState, record: dict[str, Any], role: str, key: str
    ) -> None:
        """Copy metadata `key` into the record's `role`, if the run has it."""
        self.watch.note_key(
            "ordered_extraction",
            state,
            role,
            key,
            "A run without it is not graded: invalid-input.",
        )
        if key in state.metadata:
            record[role] = state.metadata[key]


async def _off_the_loop_if_long(read: Callable[[], Score], text: object) -> Score:
    """`read()`, in a worker thread when `text` is long: reading is linear,
    but a long text would stall every other sample's scoring."""
    if not isinstance(text, str) or len(text) < READ_IN_THREAD_CHARACTERS:
        return read()
    return await anyio.to_thread.run_sync(read)


__all__ = [
    "extraction_score",
    "ordered_extraction_scorer",
    "recorded_output_score",
    "source_from_target",
]
