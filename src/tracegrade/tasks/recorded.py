"""Tasks that replay recorded runs: no model, no network, no API key.

`inspect eval tracegrade/stage_diagnosis` and `inspect eval
tracegrade/ordered_extraction_recorded` run on the packaged fixtures;
`-T dataset=PATH` runs them on your own fixture-format file instead.
"""

from __future__ import annotations

from inspect_ai import Task, task

from ..datasets import ordered_extraction_dataset, stage_diagnosis_dataset
from ..scorers import ordered_extraction_scorer, stage_diagnosis_scorer
from .building import said_in_any_display
from .replay import replay


@task
def stage_diagnosis(dataset: str | None = None) -> Task:
    """Diagnose the failing stage of recorded RAG runs.

    Each run's recorded `context` is replayed into `RetrievalTrace`, where
    a live RAG solver would record it, and the scorer reads it from there.

    Args:
        dataset: A fixture-format JSON Lines file of your own runs, each
            `{"id", "input": {"required", "context", "correct"}}`; by
            default the packaged cases.
    """
    with said_in_any_display():
        return Task(
            dataset=stage_diagnosis_dataset(dataset),
            solver=replay(),
            scorer=stage_diagnosis_scorer(),
        )


@task
def ordered_extraction_recorded(dataset: str | None = None) -> Task:
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
            `{"id", "input": {"source", "output"}}`; by default the
            packaged cases.
    """
    with said_in_any_display():
        return Task(
            dataset=ordered_extraction_dataset(dataset),
            solver=replay(),
            scorer=ordered_extraction_scorer(answer_key="answer", output_key="output"),
        )
