"""`tracegrade labels export` and `labels apply` (a rescore by Inspect's `score`)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from inspect_ai import score
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.scorer import Score

from .labels import LabelsError, StaffLabels
from .scorers import label_from_value, stage_diagnosis_scorer

STAGE_READ_FROM = frozenset({"required", "context", "correct"})


def stage_score(sample: EvalSample) -> Score | None:
    """The sample's first stage-diagnosis score, or None, found by what it
    carries: `inspect score --action append` renames it `stage_diagnosis1`."""
    for logged in (sample.scores or {}).values():
        metadata = logged.metadata or {}
        read_from = metadata.get("read_from")
        if (
            isinstance(metadata.get("record"), dict)
            and isinstance(read_from, dict)
            and read_from.keys() >= STAGE_READ_FROM
        ):
            return logged
    return None


def _first_stage_score(log: EvalLog, nothing: str) -> Score:
    first = next(filter(None, map(stage_score, log.samples or [])), None)
    if first is not None:
        return first
    raise LabelsError(
        log.location or "the log",
        None,
        f"no sample has a stage_diagnosis score, so there is nothing {nothing} "
        "a log of a task scored with tracegrade's stage_diagnosis_scorer",
    )


def label_requests(log: EvalLog) -> list[dict[str, Any]]:
    """One line to label per run, in sample order then epoch (docs/labels.md)."""
    _first_stage_score(log, "to label; export")
    samples = list(log.samples or [])
    order = {id_: n for n, id_ in enumerate(dict.fromkeys(s.id for s in samples))}
    samples.sort(key=lambda sample: (order[sample.id], sample.epoch))
    per_epoch = (log.eval.config.epochs or 1) > 1
    return [_label_request(sample, per_epoch) for sample in samples]


def _label_request(sample: EvalSample, per_epoch: bool) -> dict[str, Any]:
    score = stage_score(sample)
    metadata = (score.metadata or {}) if score is not None else {}
    record, grader = metadata.get("record", {}), metadata.get("grader")
    grader = grader if isinstance(grader, dict) else None
    return {
        "id": sample.id,
        **({"epoch": sample.epoch} if per_epoch else {}),
        "question": _question(sample),
        "answer": sample.output.completion,
        "required": record.get("required"),
        "context": record.get("context"),
        # The raw value stays out: a NaN is no JSON, and the file must read
        # back; the label it gives is what staff check.
        "correct": None if grader is None else label_from_value(grader.get("value")),
        "grader": None
        if grader is None
        else {key: grader.get(key) for key in ("name", "explanation")},
    }


def _question(sample: EvalSample) -> str:
    """The record's question (an imported trace's), else the sample input."""
    question = (sample.metadata or {}).get("question")
    if isinstance(question, str):
        return question
    if isinstance(sample.input, str):
        return sample.input
    return "\n\n".join(
        message.text for message in sample.input if message.role == "user"
    )


ApplyAction = Literal["append", "overwrite"]


def _metadata_key(source: Any) -> str | None:
    """`metadata["gold"]` as `gold`; None for any other source (the store)."""
    found = re.fullmatch(r'metadata\[(".*")\]', str(source))
    return json.loads(found[1]) if found else None


def apply_labels(
    log: EvalLog, path: str, *, action: ApplyAction
) -> tuple[EvalLog, int, int]:
    """`log` rescored in place with the staff labels in `path`, once every
    label names one of its runs (its samples, errored ones included, and
    epochs, configured or logged); with how many samples and epochs it has."""
    labels = StaffLabels.read(path)
    # The keys the log's first stage score read, so labels join onto exactly
    # the records the run diagnosed.
    first = _first_stage_score(log, "to join labels onto; apply labels to")
    read_from = (first.metadata or {})["read_from"]
    samples = log.samples or []
    ids = {*(log.eval.dataset.sample_ids or []), *(s.id for s in samples)}
    epochs = max([log.eval.config.epochs or 1, *(s.epoch for s in samples)])
    runs = f"{len(ids):,} sample{'' if len(ids) == 1 else 's'}"
    runs += f", {epochs} epochs" if epochs > 1 else ""
    labels.check_names(
        lambda id_, epoch: id_ in ids and (epoch or 1) <= epochs,
        "run",
        f"{log.location or 'the log'} ({runs})",
    )
    scorer = stage_diagnosis_scorer(
        required_key=_metadata_key(read_from["required"]) or "required",
        context_key=_metadata_key(read_from["context"]),
        labels=path,
    )
    # The stage scorer needs no model; without one given, Inspect would
    # rebuild the run's model from the log, API key and all.
    labelled = score(
        log, scorer, action=action, display="none", model="none/none", copy=False
    )
    return labelled, len(ids), epochs
