"""Tasks that replay recorded runs: no model, no network, no API key.

`inspect eval tracegrade/stage_diagnosis` runs on 30 packaged recorded RAG
runs (the README tour's `examples/runs/base.jsonl`), and `inspect eval
tracegrade/ordered_extraction_recorded` on the packaged extraction cases;
`-T dataset=edge-cases` runs either on its contract's edge cases (the
fixtures `nox -s parity` checks against the originals), and `-T
dataset=PATH` on your own fixture-format file.
"""

from __future__ import annotations

from importlib.resources.abc import Traversable
from typing import Any, NoReturn

from inspect_ai import Task, task
from inspect_ai.scorer import Score

from ..datasets import (
    ordered_extraction_dataset,
    packaged_fixture,
    stage_diagnosis_dataset,
)
from ..scorers import (
    diagnosis_score,
    extraction_score,
    ordered_extraction_scorer,
    stage_diagnosis_scorer,
)
from ..scorers.arguments import TaskArgumentError, refuse_unknown_arguments
from ..scorers.extraction import recorded_output_score
from ..scorers.outcome import metadata_source
from ..scorers.store import context_store_key, steps_store_key
from .building import said_in_any_display
from .replay import replay, replayed_output

EDGE_CASES = "edge-cases"
"""The `dataset` that names the packaged edge cases (`./edge-cases` is a file)."""


def _dataset(given: str | None, default: str, edge_cases: str) -> str | Traversable:
    if given is None:
        return packaged_fixture(default)
    return packaged_fixture(edge_cases) if given == EDGE_CASES else given


STAGE_READ_FROM = {
    "required": metadata_source("required"),
    "context": f"store {context_store_key()}",
    "correct": metadata_source("correct"),
}
"""Where `tracegrade/stage_diagnosis`'s scorer reads each field of a record."""

EXTRACTION_READ_FROM = {
    "source": metadata_source("source"),
    "answer": metadata_source("answer"),
}
"""Where `tracegrade/ordered_extraction_recorded`'s scorer reads a record."""


def stage_input_score(case: dict[str, Any]) -> Score:
    """The score `tracegrade/stage_diagnosis` gives a case with this `input`,
    without Inspect's runner: replayed, then read as its scorer reads it."""
    record: dict[str, Any] = {
        key: case[key] for key in ("required", "context") if key in case
    }
    read_from = STAGE_READ_FROM
    # The replay solver records steps, and the scorer reads them, unless null.
    if case.get("steps") is not None:
        record["steps"] = case["steps"]
        read_from = {**read_from, "steps": f"store {steps_store_key()}"}
    if "correct" in case:
        record["correct"] = case["correct"]
    return diagnosis_score(
        record,
        read_from,
        context_recorded=case.get("context") is not None,
        output=replayed_output(case) or "",
    )


def extraction_input_score(case: dict[str, Any]) -> Score:
    """The score `tracegrade/ordered_extraction_recorded` gives a case with
    this `input`: a recorded `answer` as recorded, a recorded `output` read."""
    record = {"source": case["source"]} if "source" in case else {}
    if "output" in case:
        read_from = {**EXTRACTION_READ_FROM, "answer": metadata_source("output")}
        answer_too = "answer" in case
        return recorded_output_score(
            record, read_from, case["output"], answer_too=answer_too
        )
    if "answer" in case:
        record["answer"] = case["answer"]
    return extraction_score(record, EXTRACTION_READ_FROM)


@task
def stage_diagnosis(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Diagnose the failing stage of recorded RAG runs.

    Each run's recorded `context` is replayed into `RetrievalTrace`, where
    a live RAG solver would record it, and the scorer reads it from there.

    Args:
        dataset: A fixture-format JSON Lines file of your own runs, each
            `{"id", "input": {"required", "context", "correct"}}`; by
            default 30 packaged recorded runs; `edge-cases`, the packaged
            edge cases of the contract.
        **kwargs: Refused: an argument the task does not take (a typo).
    """
    with said_in_any_display():
        refuse_unknown_arguments(
            "tracegrade/stage_diagnosis", stage_diagnosis, kwargs, TaskArgumentError
        )
        source = _dataset(dataset, "recorded_rag_runs.jsonl", "stage_diagnosis.jsonl")
        return Task(
            dataset=stage_diagnosis_dataset(source),
            solver=replay(),
            scorer=stage_diagnosis_scorer(),
        )


@task
def ordered_extraction_recorded(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Grade recorded extraction answers for membership and order.

    A recorded `answer` list is graded as recorded, so an answer of the
    wrong type is the dataset's error (invalid input), not the model's. A
    run may record the model's `output` text instead: the list is then
    read from it exactly as the live task reads a model's output
    (docs/answer-formats.md), and an unreadable text is the model's
    failure.

    Args:
        dataset: A fixture-format JSON Lines file of your own recorded
            runs, each `{"id", "input": {"source", "answer"}}` or
            `{"id", "input": {"source", "output"}}`; by default (or
            `edge-cases`) the packaged edge cases of the contract.
        **kwargs: Refused: an argument the task does not take (a typo).
    """
    with said_in_any_display():
        refuse_unknown_arguments(
            "tracegrade/ordered_extraction_recorded",
            ordered_extraction_recorded,
            kwargs,
            TaskArgumentError,
        )
        source = _dataset(
            dataset, "ordered_extraction.jsonl", "ordered_extraction.jsonl"
        )
        return Task(
            dataset=ordered_extraction_dataset(source),
            solver=replay(),
            scorer=ordered_extraction_scorer(answer_key="answer", output_key="output"),
        )
