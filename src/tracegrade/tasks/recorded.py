"""Tasks that replay recorded runs: no model, no network, no API key."""

from __future__ import annotations

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
from ..scorers.arguments import checked_task
from ..scorers.extraction import recorded_output_score
from ..scorers.outcome import metadata_source
from ..scorers.store import context_store_key, steps_store_key
from .replay import replay, replayed_output

EDGE_CASES = "edge-cases"

# Where each task's scorer reads each field of a record.
STAGE_READ_FROM = {
    "required": metadata_source("required"),
    "context": f"store {context_store_key()}",
    "correct": metadata_source("correct"),
}
EXTRACTION_READ_FROM = {
    "source": metadata_source("source"),
    "answer": metadata_source("answer"),
}


def stage_input_score(case: dict[str, Any]) -> Score:
    """The score `tracegrade/stage_diagnosis` gives a case with this `input`."""
    fields = ("required", "context", "steps", "correct")
    record = {key: case[key] for key in fields if key in case}
    read_from = dict(STAGE_READ_FROM)
    if record.get("steps") is not None:  # the scorer reads steps unless null
        read_from["steps"] = f"store {steps_store_key()}"
    else:
        record.pop("steps", None)
    return diagnosis_score(
        record,
        read_from,
        context_recorded=case.get("context") is not None,
        output=replayed_output(case) or "",
    )


def extraction_input_score(case: dict[str, Any]) -> Score:
    """The score `tracegrade/ordered_extraction_recorded` gives this `input`."""
    if "output" in case:
        read_from = {**EXTRACTION_READ_FROM, "answer": metadata_source("output")}
        record = {"source": case["source"]} if "source" in case else {}
        return recorded_output_score(
            record, read_from, case["output"], "answer" in case
        )
    record = {key: case[key] for key in ("source", "answer") if key in case}
    return extraction_score(record, dict(EXTRACTION_READ_FROM))


@task
def stage_diagnosis(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Diagnose the failing stage of recorded RAG runs; `dataset`: a
    fixture-format file, `edge-cases`, or by default the 30 packaged runs."""
    with checked_task("tracegrade/stage_diagnosis", stage_diagnosis, kwargs):
        source: Any = dataset  # None is the edge cases' file
        if dataset is None:
            source = packaged_fixture("recorded_rag_runs.jsonl")
        return Task(
            dataset=stage_diagnosis_dataset(None if source == EDGE_CASES else source),
            solver=replay(),
            scorer=stage_diagnosis_scorer(),
        )


@task
def ordered_extraction_recorded(dataset: str | None = None, **kwargs: NoReturn) -> Task:
    """Grade recorded answers, or output texts read as the live task reads them;
    `dataset`: a fixture-format file, by default the packaged edge cases."""
    name = "tracegrade/ordered_extraction_recorded"
    with checked_task(name, ordered_extraction_recorded, kwargs):
        # None is the edge cases' file.
        source = None if dataset == EDGE_CASES else dataset
        return Task(
            dataset=ordered_extraction_dataset(source),
            solver=replay(),
            scorer=ordered_extraction_scorer(answer_key="answer", output_key="output"),
        )
