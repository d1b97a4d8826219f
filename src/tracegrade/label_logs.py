"""Labels for a log: the lines staff fill in, and joining them back.

`tracegrade labels export LOG` writes one line per run to fill
(`label_requests`); `tracegrade labels apply LOG LABELS` checks the filled
file against the log's runs and rescores the log with it (`apply_labels`),
through Inspect's public `score`. The file itself is read by
`tracegrade.labels`, which the stage scorer uses too.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from inspect_ai import score
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.scorer import Score

from .labels import LabelsError, SampleId, StaffLabels
from .scorers import label_from_value, stage_diagnosis_scorer

STAGE_READ_FROM = frozenset({"required", "context", "correct"})


def stage_score(sample: EvalSample) -> Score | None:
    """The sample's first stage-diagnosis score, or None.

    Found by what it carries, not by its name: a scorer renamed by
    `inspect score --action append` (`stage_diagnosis1`) still counts.
    """
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


def label_requests(log: EvalLog) -> list[dict[str, Any]]:
    """One line to label per run in `log`, its `"correct"` to fill or check.

    Each line holds, in this order:

    - `id` (and `epoch`, see below): the run;
    - `question`: the record's `question` text, else the sample input;
      `answer`: the model's output text;
    - `required`, `context`: the IDs the stage scorer read (null where the
      score has none);
    - `correct`: the label to fill. Where the stage score's label came from
      a grader (`label_scorer=` or `label_from=`), it is pre-filled with
      the grader's verdict, the label its value gives by the table of
      `tracegrade.scorers.grader` (null when it gives none), so staff
      check and correct a verdict rather than start from nothing; else
      null. A pre-filled label is the grader's word until staff change or
      keep it: applied as it stands, the file says what the grader said.
    - `grader`: null without a grader, else `{"name", "explanation"}`:
      which grader gave the verdict and why, in its own words.

    A log run with several epochs gets one line per sample and epoch, with
    an `epoch` field, since each epoch's answer needs its own judgement; a
    single-epoch log gets one line per sample, without one.

    Lines follow the log's sample order, epochs in order. Raises
    `LabelsError` when no sample has a stage-diagnosis score: such a log
    did not come from a task with the stage scorer, and labels for it
    would join onto nothing.
    """
    samples = list(log.samples or [])
    if not any(stage_score(sample) is not None for sample in samples):
        location = log.location or "the log"
        raise LabelsError(
            location,
            None,
            "no sample has a stage_diagnosis score, so there is "
            "nothing to label; export a log of a task scored with "
            "tracegrade's stage_diagnosis_scorer",
        )
    position: dict[SampleId, int] = {}
    for sample in samples:
        position.setdefault(sample.id, len(position))
    samples.sort(key=lambda sample: (position[sample.id], sample.epoch))
    per_epoch = any(sample.epoch != 1 for sample in samples) or (
        (log.eval.config.epochs or 1) > 1
    )
    return [_label_request(sample, per_epoch) for sample in samples]


def _label_request(sample: EvalSample, per_epoch: bool) -> dict[str, Any]:
    score = stage_score(sample)
    metadata = (score.metadata or {}) if score is not None else {}
    record = metadata.get("record", {})
    grader = metadata.get("grader")
    line: dict[str, Any] = {"id": sample.id}
    if per_epoch:
        line["epoch"] = sample.epoch
    line["question"] = _question(sample)
    line["answer"] = sample.output.completion
    line["required"] = record.get("required")
    line["context"] = record.get("context")
    line["correct"] = None
    line["grader"] = None
    if isinstance(grader, dict):
        # The raw value stays out: a NaN is no JSON, and the file must read
        # back; the label it gives is what staff check.
        line["correct"] = label_from_value(grader.get("value"))
        line["grader"] = {
            "name": grader.get("name"),
            "explanation": grader.get("explanation"),
        }
    return line


def _question(sample: EvalSample) -> str:
    """The record's question text where it has one (an imported trace's
    user text), else the sample input."""
    question = (sample.metadata or {}).get("question")
    if isinstance(question, str):
        return question
    if isinstance(sample.input, str):
        return sample.input
    return "\n\n".join(
        message.text for message in sample.input if message.role == "user"
    )


# --- joining staff labels onto a log ---------------------------------------------

ApplyAction = Literal["append", "overwrite"]


def log_runs(log: EvalLog) -> tuple[set[SampleId], int]:
    """The sample ids of `log` and its number of epochs.

    The ids are the dataset's (`eval.dataset.sample_ids`, which a sample
    that errored is still among) and every logged sample's; the epochs
    are the configured count, or the highest logged epoch if more.
    """
    ids: set[SampleId] = set(log.eval.dataset.sample_ids or [])
    epochs = log.eval.config.epochs or 1
    for sample in log.samples or []:
        ids.add(sample.id)
        epochs = max(epochs, sample.epoch)
    return ids, epochs


def stage_keys(log: EvalLog) -> dict[str, str | None]:
    """`required_key` and `context_key` as the log's stage scores read them.

    Taken from the first stage score's `read_from`, so labels are joined
    onto exactly the records the run diagnosed, whatever keys its task
    passed. Raises `LabelsError` when no sample has a stage score.
    """
    location = log.location or "the log"
    for sample in log.samples or []:
        score = stage_score(sample)
        if score is None:
            continue
        read_from = (score.metadata or {})["read_from"]
        return {
            "required_key": _metadata_key(read_from["required"]),
            "context_key": _metadata_key(read_from["context"]),
        }
    raise LabelsError(
        location,
        None,
        "no sample has a stage_diagnosis score, so there is nothing "
        "to join labels onto; apply labels to a log of a task scored with "
        "tracegrade's stage_diagnosis_scorer",
    )


def _metadata_key(source: Any) -> str | None:
    """`metadata["gold"]` as `gold`; None for any other source (the store)."""
    if isinstance(source, str) and source.startswith("metadata[") and source[-1] == "]":
        key = json.loads(source[len("metadata[") : -1])
        if isinstance(key, str):
            return key
    return None


def apply_labels(log: EvalLog, path: str, *, action: ApplyAction) -> EvalLog:
    """`log` rescored with the staff labels in `path`, after checking them.

    Every label must name a run of the log (`StaffLabels.check_names`);
    otherwise `LabelsError`, before anything is scored. The stage scorer
    is rebuilt with the keys the log's stage scores were read with and
    the labels file as its only label source, and run through Inspect's
    public `score`: `append` adds its score beside the existing ones
    (`stage_diagnosis1`), `overwrite` replaces them. The log is changed
    in place and returned; writing it is the caller's job.
    """
    labels = StaffLabels.read(path)
    keys = stage_keys(log)
    ids, epochs = log_runs(log)
    labels.check_names(ids, epochs, log.location or "the log")
    scorer = stage_diagnosis_scorer(
        required_key=keys["required_key"] or "required",
        context_key=keys["context_key"],
        labels=path,
    )
    # The stage scorer needs no model; without one given, Inspect would
    # rebuild the run's model from the log, API key and all.
    return score(
        log, scorer, action=action, display="none", model="none/none", copy=False
    )


__all__ = [
    "ApplyAction",
    "apply_labels",
    "label_requests",
    "log_runs",
    "stage_keys",
    "stage_score",
]
