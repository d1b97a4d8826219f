"""`tracegrade/ordered_extraction`: did the answer keep every source ID, in order?

A thin wrapper over `tracegrade.core.grade_extraction`: the closure only
reads the source and the answer from the task state, and
`extraction_score` turns the core's result into a `Score` without seeing
the state.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final, NoReturn

import anyio
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, grade_extraction, has_duplicates, itemise
from ..core.errors import quote
from ..lines import strict_json_loads
from .answer_parsing import ReadAs, UnreadableAnswer, read_answer_ids
from .arguments import ScorerArgumentError, check_key, refuse_unknown_arguments
from .explain import explain_extraction, explain_invalid, explain_unreadable
from .key_warnings import KeyWatch, absent_metadata_key
from .metrics import answer_failures, criteria_shares, scored_runs
from .outcome import (
    ErrorInfo,
    data_error,
    graded,
    metadata_source,
    run_error,
    shown,
)
from .sample_error import sample_error

READ_IN_THREAD_CHARACTERS: Final = 100_000
"""An output at least this long is read in a worker thread, off the event loop."""


def failed_both() -> dict[str, bool]:
    """The value of an answer that broke the answer contract."""
    return {"membership": False, "order": False}


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


def _source_refusal(
    record: dict[str, Any], answer: str, read_from: dict[str, str]
) -> Score | None:
    """The data error in the source alone, if any.

    Used when the answer cannot be read: a broken source is the data's
    fault whatever the model wrote, so it must win over the answer failure.
    The core reads the source first, so a record without an answer lets it
    check the source and then stop at the missing answer.
    """
    try:
        grade_extraction(record)
    except InvalidRecord as invalid:
        if invalid.field != "answer":
            return _invalid(invalid, answer, record, read_from)
    if has_duplicates(record["source"]):
        explanation = explain_extraction(
            record["source"], [], {"error": "duplicate-id"}
        )
        return _duplicate_source(explanation, answer, None, record, read_from)
    return None


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


def extraction_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    answer_text: str | None = None,
    structured_key: str | None = None,
) -> Score:
    """The score for one record, errors included.

    With `answer_text`, the answer is the model's output and is read from
    it (`read_answer_ids`, with `structured_key`); an unreadable text is
    the model's failure, and the metadata's `read_as` says which reading
    found the IDs (a `ReadAs` name such as "json" or "lines"; None when
    none did). Without it, `record` already holds the answer (a recorded
    one, from metadata), an answer of the wrong type is the data's error,
    and there is no `read_as`.
    """
    if answer_text is None:
        return _with_itemisation(_answer_value_score(record, read_from))
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
        score = _unreadable_answer_score(record, answer_text, read_from, unreadable)
        read_as: ReadAs | None = None
    else:
        score = _answer_value_score({**record, "answer": reading.ids}, read_from)
        read_as = reading.read_as
    score = _with_itemisation(score)
    # Set on the score, not built into `graded`, because only answers
    # read from output text have a reading; recorded answers have none.
    score.metadata = {**(score.metadata or {}), "read_as": read_as}
    return score


def _with_itemisation(score: Score) -> Score:
    """`score` with its metadata `itemised`, which every extraction score has.

    Only a grade is itemised. Where the rules refused to grade (a repeated
    ID, an unreadable answer, a data error), the figures would have to
    guess which list the answer or the source was meant to be.
    """
    # The builders in `outcome` give every score a fresh metadata dict, so
    # it is ours to extend in place.
    metadata = score.metadata
    assert metadata is not None, "outcome's builders always set metadata"
    result = metadata["result"]
    record = metadata["record"]
    graded = isinstance(result, dict) and "membership" in result
    metadata["itemised"] = (
        itemise(record["source"], record["answer"]) if graded else None
    )
    return score


def _unreadable_answer_score(
    record: dict[str, Any],
    answer_text: str,
    read_from: dict[str, str],
    unreadable: UnreadableAnswer,
) -> Score:
    refusal = _source_refusal(record, answer_text, read_from)
    if refusal is not None:
        return refusal
    return graded(
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


def _answer_value_score(record: dict[str, Any], read_from: dict[str, str]) -> Score:
    """The score of a record that holds its answer as a value, read or recorded."""
    answer = shown(record["answer"]) if "answer" in record else ""
    try:
        result = grade_extraction(record)
    except InvalidRecord as invalid:
        return _invalid(invalid, answer, record, read_from)

    explanation = explain_extraction(record["source"], record["answer"], result)
    if "error" in result:
        if has_duplicates(record["source"]):
            return _duplicate_source(explanation, answer, result, record, read_from)
        return graded(
            failed_both(),
            answer=answer,
            explanation=explanation,
            result=result,
            record=record,
            read_from=read_from,
            error=ErrorInfo(
                kind="duplicate-answer-id",
                side="answer",
                field="answer",
                message=explanation,
            ),
        )
    return graded(
        {"membership": result["membership"], "order": result["order"]},
        answer=answer,
        explanation=explanation,
        result=result,
        record=record,
        read_from=read_from,
    )


def source_from_target(target: Target) -> Any:
    """The source IDs written as a JSON array in the target text.

    A list target (`Sample(target=["C", "A", "B"])`) is refused as the user
    wrote it: Inspect reads it as alternative answers, and its `text` runs
    the items together (`"CAB"`), which no one wrote.
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

    The value is `{"membership": bool, "order": bool}`. A repeated ID or an
    output with no readable ID list fails both criteria (the reason names
    which), so a model cannot escape grading with a broken answer. A
    repeated source ID or a record outside the contract is a data error:
    `Score.unscored`, counted neither way. A graded answer's metadata
    `itemised` lists the IDs it dropped and invented, where its order first
    breaks and how many IDs it kept in order. A sample whose run failed
    before answering (scored under `--score-on-error`, e.g. after the model
    API raised) is `sample-error`, unscored: no answer is not an unreadable
    one. See `tracegrade.scorers.outcome` for the metadata every score
    carries.

    A run that lacks a metadata key the scorer reads, when no run scored
    before it had the key, is warned of once, in the terminal and in the
    log (see `tracegrade.scorers.key_warnings`): a typo in `source_key` or
    `answer_key` would otherwise give a run that is all `invalid-input`.

    Args:
        source_key: Sample metadata key of the source IDs, in source order.
            None reads them from the target instead, written as a JSON
            array (`Sample(target='["C", "A", "B"]')`).
        answer_key: None (the default) grades the model's output, read
            only when every list found in it agrees on one: the list of an
            `ANSWER:` line when there is one, else every JSON array, Python
            list, list of lines, comma list or lone ID in the text, as
            docs/answer-formats.md details. The score's metadata `read_as`
            names the reading used. A metadata key grades a recorded
            answer instead, which must be an array of strings like any
            other record field.
        structured_key: For a task that asks for structured output (a
            `response_schema` of an object holding the list under one
            key): that key. An output that is exactly such an object is
            read as its list (`read_as` "structured"); any other output is
            read as usual, for providers that ignore the schema.
        output_key: With `answer_key`, the metadata key of a recorded
            model output, a text: a run that has it instead of a recorded
            answer is graded on the list read from that text, as a live
            model's output is read. A run with both is invalid input.

    Examples:
        ```python
        Task(dataset=[Sample(input=prompt, target='["C", "A", "B"]')],
             solver=generate(),
             scorer=ordered_extraction_scorer(source_key=None))
        ```

        Recorded answers: `ordered_extraction_scorer(answer_key="answer")`;
        recorded answers or outputs, as `tracegrade/ordered_extraction_recorded`
        grades them: `ordered_extraction_scorer(answer_key="answer",
        output_key="output")`.

    Raises:
        ScorerArgumentError: A key argument is neither None nor a
            non-empty string, or an argument this scorer does not take is
            given (`-S sorce_key=...`).
    """
    refuse_unknown_arguments("ordered_extraction", ordered_extraction_scorer, unknown)
    check_key("source_key", source_key, optional=True)
    check_key("answer_key", answer_key, optional=True)
    check_key("structured_key", structured_key, optional=True)
    check_key("output_key", output_key, optional=True)
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
    watch = KeyWatch()
    source_from = metadata_source(source_key) if source_key is not None else "target"
    read_from = {
        "source": source_from,
        "answer": metadata_source(answer_key) if answer_key is not None else "output",
    }
    output_read_from = {
        "source": source_from,
        "answer": metadata_source(output_key) if output_key is not None else "output",
    }

    async def score(state: TaskState, target: Target) -> Score:
        failure = sample_error()
        if failure is not None:
            # An empty output after an API error is no answer at all, so
            # it is not an unreadable one.
            return run_error(
                failure,
                answer=state.output.completion,
                read_from=read_from,
                absent=("itemised", "read_as") if answer_key is None else ("itemised",),
            )
        metadata = state.metadata
        record: dict[str, Any] = {}
        if source_key is None:
            try:
                record["source"] = source_from_target(target)
            except InvalidRecord as invalid:
                return _with_itemisation(
                    _invalid(invalid, state.output.completion, record, read_from)
                )
        else:
            _note_key(watch, state, "source", source_key)
            if source_key in metadata:
                record["source"] = metadata[source_key]
        if answer_key is None:
            text = state.output.completion
            read = partial(
                extraction_score,
                record,
                read_from,
                answer_text=text,
                structured_key=structured_key,
            )
            return await _off_the_loop_if_long(read, text)
        if output_key is not None and output_key in metadata:
            watch.note("answer", True, str)
            output = metadata[output_key]
            recorded = answer_key in metadata
            read = partial(recorded_output_score, record, output_read_from, output)
            return await _off_the_loop_if_long(
                partial(read, answer_too=recorded), output
            )
        _note_key(watch, state, "answer", answer_key)
        if answer_key in metadata:
            record["answer"] = metadata[answer_key]
        return extraction_score(record, read_from)

    return score


def recorded_output_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    output: Any,
    *,
    answer_too: bool = False,
) -> Score:
    """The score of a run that recorded the model's output text instead of
    its answer: the answer is read from the text as a live output is.

    An output that is no text, or one recorded beside an answer (two
    answers, which may differ), is invalid input.
    """
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


async def _off_the_loop_if_long(read: Callable[[], Score], text: object) -> Score:
    """`read()`, in a worker thread when `text` is long: reading is linear,
    but a long text would stall every other sample's scoring."""
    if not isinstance(text, str) or len(text) < READ_IN_THREAD_CHARACTERS:
        return read()
    return await anyio.to_thread.run_sync(read)


def _note_key(watch: KeyWatch, state: TaskState, field: str, key: str) -> None:
    """Note whether this run has the metadata key `field` is read from."""
    watch.note(
        field,
        key in state.metadata,
        lambda: absent_metadata_key(
            "ordered_extraction",
            quote(state.sample_id),
            key=key,
            argument=f"{field}_key",
            keys=state.metadata,
            consequence="A run without it is not graded: invalid-input.",
        ),
    )


__all__ = [
    "extraction_score",
    "ordered_extraction_scorer",
    "recorded_output_score",
    "source_from_target",
]
