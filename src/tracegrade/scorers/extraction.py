"""`tracegrade/ordered_extraction`: did the answer keep every source ID, in order?"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NoReturn

import anyio
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from ..core import InvalidRecord, grade_extraction, has_duplicates, itemise
from ..core.errors import quote
from ..lines import strict_json_loads
from .answer_parsing import UnreadableAnswer, read_answer_ids
from .arguments import ScorerArgumentError, check_key, refuse_unknown_arguments
from .explain import explain_extraction, explain_unreadable
from .key_warnings import KeyWatch
from .metrics import EXTRACTION_METRICS
from .outcome import (
    data_error,
    error_info,
    graded,
    invalid_score,
    metadata_source,
    record_scorer,
    shown,
)

READ_IN_THREAD_CHARACTERS = 100_000
"""An output at least this long is read in a worker thread, off the event loop."""

FAILED_BOTH = {"membership": False, "order": False}


def extraction_score(
    record: dict[str, Any],
    read_from: dict[str, str],
    *,
    answer_text: str | None = None,
    structured_key: str | None = None,
) -> Score:
    """An extraction record's `Score`, errors included: its one path to a result.
    With `answer_text` the answer is read from that output, else from `record`."""
    if answer_text is None:
        return _value_score(record, read_from)
    try:
        reading = read_answer_ids(answer_text, structured_key=structured_key)
    except Exception as failure:
        # A failure the rules did not foresee is still the answer's refusal.
        problem = str(failure)
        if not isinstance(failure, UnreadableAnswer):
            name = type(failure).__name__
            problem = f"the answer could not be read ({name}: {failure})"
        where = _where(answer_text, record, read_from, read_as=None)
        return _source_refusal(record, where) or graded(
            dict(FAILED_BOTH),
            explanation=explain_unreadable(problem),
            result=None,
            error=error_info("unreadable-answer", "answer", "answer", problem),
            **where,
        )
    record = {**record, "answer": reading.ids}
    return _value_score(record, read_from, read_as=reading.read_as)


def recorded_output_score(
    record: dict[str, Any], read_from: dict[str, str], output: Any, answer_too: bool
) -> Score:
    """A recorded output text, read as a live output is; beside a recorded
    answer, or not a text, it is invalid."""
    if isinstance(output, str) and not answer_too:
        return extraction_score(record, read_from, answer_text=output)
    problem = "must be a text, the model's output"
    if answer_too:
        problem = (
            "is given beside a recorded answer: a run records its answer once, "
            "as a list or as the output text"
        )
    invalid = InvalidRecord("output", output, problem)
    return invalid_score(invalid, **_where(shown(output), record, read_from))


def _where(
    answer: str, record: dict[str, Any], read_from: dict[str, str], **more: Any
) -> dict[str, Any]:
    where = {"answer": answer, "record": record, "read_from": read_from}
    return where | {"itemised": None, **more}


def _value_score(
    record: dict[str, Any], read_from: dict[str, str], **more: Any
) -> Score:
    answer = shown(record["answer"]) if "answer" in record else ""
    where = _where(answer, record, read_from, **more)
    try:
        result = grade_extraction(record)
    except InvalidRecord as invalid:
        return invalid_score(invalid, **where)
    source, ids = record["source"], record["answer"]
    why = explain_extraction(source, ids, result)
    if "error" not in result:
        value = {"membership": result["membership"], "order": result["order"]}
        where["itemised"] = itemise(source, ids)
        return graded(value, explanation=why, result=result, **where)
    if has_duplicates(source):
        return _duplicate_source(why, result, where)
    error = error_info("duplicate-answer-id", "answer", "answer", why)
    value = dict(FAILED_BOTH)
    return graded(value, explanation=why, result=result, error=error, **where)


def _source_refusal(record: dict[str, Any], where: dict[str, Any]) -> Score | None:
    """The source's own data error wins over an unreadable answer."""
    try:
        grade_extraction(record)  # reads the source before the answer
    except InvalidRecord as invalid:
        if invalid.field != "answer":
            return invalid_score(invalid, **where)
    if not has_duplicates(record["source"]):
        return None
    why = explain_extraction(record["source"], [], {"error": "duplicate-id"})
    return _duplicate_source(why, None, where)


def _duplicate_source(why: str, result: Any, where: dict[str, Any]) -> Score:
    """A repeated source ID: the answer key is broken, not the answer."""
    error = error_info("duplicate-source-id", "data", "source", why)
    return data_error(error, explanation=why, result=result, **where)


def _source_from_target(target: Target) -> Any:
    """A list target is refused: Inspect reads it as alternative answers."""
    if len(target.target) != 1:
        raise InvalidRecord(
            "source",
            target.target,
            "must be one JSON array of string IDs in the target's text, as in "
            'Sample(target=\'["C", "A"]\'); a list target is a list of '
            "alternative answers to Inspect, not of IDs",
        )
    try:
        return strict_json_loads(target.text)
    except ValueError as error:
        raise InvalidRecord(
            "source",
            target.text,
            f"must be a JSON array of string IDs in the target ({error})",
        ) from error


@scorer(metrics=EXTRACTION_METRICS, name="ordered_extraction")
def ordered_extraction_scorer(
    source_key: str | None = "source",
    answer_key: str | None = None,
    structured_key: str | None = None,
    output_key: str | None = None,
    **unknown: NoReturn,
) -> Scorer:
    """Grade membership and order of an extracted ID list separately; a repeated
    or unreadable answer fails both, a broken source is unscored (docs/scores.md)."""
    refuse_unknown_arguments("ordered_extraction", ordered_extraction_scorer, unknown)
    keys = dict(source_key=source_key, answer_key=answer_key)
    keys |= dict(structured_key=structured_key, output_key=output_key)
    for argument, key in keys.items():
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
    without = "A run without it is not graded: invalid-input."
    watch = KeyWatch("ordered_extraction", lambda role: without)
    read_from = {
        "source": "target" if source_key is None else metadata_source(source_key),
        "answer": "output" if answer_key is None else metadata_source(answer_key),
    }

    async def score(state: TaskState, target: Target) -> Score:
        record: dict[str, Any] = {}
        if source_key is None:
            try:
                record["source"] = _source_from_target(target)
            except InvalidRecord as invalid:
                where = _where(state.output.completion, record, dict(read_from))
                return invalid_score(invalid, **where)
        else:
            watch.read_key(state, record, "source", source_key)
        if answer_key is None:
            text = state.output.completion
            read = partial(
                extraction_score, answer_text=text, structured_key=structured_key
            )
            return await _off_the_loop_if_long(text, read, record, dict(read_from))
        if output_key is not None and output_key in state.metadata:
            watch.note("answer", True, str)
            output = state.metadata[output_key]
            output_from = {**read_from, "answer": metadata_source(output_key)}
            answer_too = answer_key in state.metadata
            return await _off_the_loop_if_long(
                output, recorded_output_score, record, output_from, output, answer_too
            )
        watch.read_key(state, record, "answer", answer_key)
        return extraction_score(record, dict(read_from))

    absent = ("itemised", "read_as") if answer_key is None else ("itemised",)
    return record_scorer(score, read_from=read_from, absent=absent)


async def _off_the_loop_if_long(
    text: object, read: Callable[..., Score], *args: Any
) -> Score:
    """A long text read on the event loop would stall every other sample."""
    if not isinstance(text, str) or len(text) < READ_IN_THREAD_CHARACTERS:
        return read(*args)
    return await anyio.to_thread.run_sync(read, *args)
