"""Tasks that replay recorded runs: no model, no network, no API key.

By default the packaged recorded runs; `-T dataset=edge-cases` the contract's
edge cases (the fixtures `nox -s parity` checks), `-T dataset=PATH` your own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources.abc import Traversable
from typing import Any, NoReturn

from inspect_ai import Task, task
from inspect_ai.scorer import Score
from inspect_ai.util import display_type

from .._inspect_internals import PrerequisiteError
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
from .replay import replay, replayed_output

EDGE_CASES = "edge-cases"

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


@contextmanager
def said_in_any_display() -> Iterator[None]:
    """Write a `PrerequisiteError` to stderr under `--display none`, where
    Inspect's CLI would print nothing, then let it go on."""
    try:
        yield
    except PrerequisiteError as error:
        if display_type() == "none":
            print(f"\n{error.message}\n", file=sys.stderr, flush=True)
        raise


def stage_input_score(case: dict[str, Any]) -> Score:
    """The score `tracegrade/stage_diagnosis` gives a case with this `input`,
    without Inspect's runner: replayed, then read as its scorer reads it."""
    record: dict[str, Any] = {k: case[k] for k in ("required", "context") if k in case}
    read_from = STAGE_READ_FROM
    if case.get("steps") is not None:  # the scorer reads steps unless null
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
        return recorded_output_score(
            record, read_from, case["output"], answer_too="answer" in case
        )
    if "answer" in case:
        record["answer"] = case["answer"]
    return extraction_score(record, EXTRACTION_READ_FROM)


@task
def stage_diagnosis(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Diagnose the failing stage of recorded RAG runs, each run's context
    replayed into `RetrievalTrace` where a live RAG solver would record it.

    Args:
        dataset: A fixture-format JSON Lines file of your own runs, each
            `{"id", "input": {"required", "context", "correct"}}`; by
            default 30 packaged recorded runs; `edge-cases`, the packaged
            edge cases of the contract.
    """
    with said_in_any_display():
        refuse_unknown_arguments(
            "tracegrade/stage_diagnosis", stage_diagnosis, kwargs, TaskArgumentError
        )
        source: Traversable | str = packaged_fixture("recorded_rag_runs.jsonl")
        if dataset is not None:
            edge_cases = dataset == EDGE_CASES
            source = (
                packaged_fixture("stage_diagnosis.jsonl") if edge_cases else dataset
            )
        return Task(
            dataset=stage_diagnosis_dataset(source),
            solver=replay(),
            scorer=stage_diagnosis_scorer(),
        )


@task
def ordered_extraction_recorded(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Grade recorded extraction answers for membership and order.

    A recorded `answer` of the wrong type is the dataset's error; a recorded
    model `output` text is read as the live task reads it, and an unreadable
    one is the model's failure (docs/answer-formats.md).

    Args:
        dataset: A fixture-format JSON Lines file of your own recorded
            runs, each `{"id", "input": {"source", "answer"}}` or
            `{"id", "input": {"source", "output"}}`; by default (or
            `edge-cases`) the packaged edge cases of the contract.
    """
    with said_in_any_display():
        refuse_unknown_arguments(
            "tracegrade/ordered_extraction_recorded",
            ordered_extraction_recorded,
            kwargs,
            TaskArgumentError,
        )
        source: Traversable | str = packaged_fixture("ordered_extraction.jsonl")
        if dataset is not None and dataset != EDGE_CASES:
            source = dataset
        return Task(
            dataset=ordered_extraction_dataset(source),
            solver=replay(),
            scorer=ordered_extraction_scorer(answer_key="answer", output_key="output"),
        )
