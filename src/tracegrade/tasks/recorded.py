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
from typing import NoReturn

from inspect_ai import Task, task

from ..datasets import (
    ordered_extraction_dataset,
    packaged_fixture,
    stage_diagnosis_dataset,
)
from ..scorers import ordered_extraction_scorer, stage_diagnosis_scorer
from ..scorers.arguments import TaskArgumentError, refuse_unknown_arguments
from .building import said_in_any_display
from .replay import replay

EDGE_CASES = "edge-cases"
"""The `dataset` that names the packaged edge cases (`./edge-cases` is a file)."""


def _dataset(given: str | None, default: str, edge_cases: str) -> str | Traversable:
    if given is None:
        return packaged_fixture(default)
    return packaged_fixture(edge_cases) if given == EDGE_CASES else given


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
