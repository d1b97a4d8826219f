"""`--epochs N` on live runs; epochs run concurrently: compared as multisets."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval, score
from inspect_ai.log import EvalLog

# The mock models of the live tests (pytest puts tests/ on sys.path).
from test_live_extraction import BY_ID, mock_model
from test_live_extraction import source as source_ids
from test_rag_example import answering_model, rag
from tests.support import write_lines
from tracegrade import ordered_extraction, stage_diagnosis_scorer
from tracegrade.label_logs import label_requests

EPOCHS = 3
A, B, C = "shipping_manifest-001", "citation_list-002", "log_excerpt-004"


def metric_values(log: EvalLog) -> dict[tuple[str, str | None, str], Any]:
    assert log.results is not None
    return {
        (result.name, result.reducer, name): metric.value
        for result in log.results.scores
        for name, metric in result.metrics.items()
    }


def run(tmp_path: Path, task: Any, model: Any, samples: list[str]) -> EvalLog:
    (log,) = eval(
        task,
        model=model,
        sample_id=samples,
        epochs=EPOCHS,
        log_dir=str(tmp_path),
        display="none",
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return log


def test_extraction_epochs_are_reduced_by_mean(tmp_path: Path) -> None:
    assert {A, B, C} <= set(BY_ID)
    right = {i: json.dumps(source_ids(i)) for i in (A, B, C)}
    replies = {
        A: [right[A], json.dumps(sorted(source_ids(A))), right[A]],
        B: [right[B]] * EPOCHS,
        C: [json.dumps(source_ids(C)[1:]), right[C], "I'm sorry, I can't."],
    }
    # Per epoch: (membership, order).
    grades = {
        A: [(1, 1), (1, 0), (1, 1)],
        B: [(1, 1)] * EPOCHS,
        C: [(0, 0), (1, 1), (0, 0)],
    }
    log = run(tmp_path, ordered_extraction(), mock_model(replies), [A, B, C])

    assert log.eval.config.epochs_reducer == ["mean"]
    (reduction,) = log.reductions or []
    assert (reduction.scorer, reduction.reducer) == ("ordered_extraction", "mean")
    reduced = {str(s.sample_id): s.value for s in reduction.samples}
    metrics = metric_values(log)
    for index, key in enumerate(("membership", "order")):
        means = {i: statistics.mean(g[index] for g in grades[i]) for i in grades}
        assert {i: reduced[i][key] for i in grades} == pytest.approx(means)
        accuracy = statistics.mean(means.values())
        assert metrics[(key, "mean", "accuracy")] == pytest.approx(accuracy)
    # Answer failures are counted per run, not per reduced sample.
    assert metrics[("ordered_extraction", None, "unreadable")] == 1
    assert metrics[("ordered_extraction", None, "duplicate-id")] == 0


def test_each_epoch_of_a_rag_run_is_diagnosed_by_its_own_label(
    tmp_path: Path,
) -> None:
    model = answering_model(
        {"Q-001": ["-18 degrees C.", "I do not know.", "-18 degrees C."]}
    )
    log = run(tmp_path / "logs", rag.rag_qa(), model, ["Q-001", "Q-004"])
    lines = label_requests(log)
    # The export names each epoch: each gets its own label.
    assert [(x["id"], x["epoch"]) for x in lines] == [
        (i, epoch) for i in ("Q-001", "Q-004") for epoch in range(1, EPOCHS + 1)
    ]
    # Q-004 labelled correct though its context lacks the evidence: lucky.
    filled = [
        {**line, "correct": line["id"] == "Q-004" or "know" not in line["answer"]}
        for line in lines
    ]
    labels = write_lines(tmp_path / "labels.jsonl", filled)
    scored = score(
        log, stage_diagnosis_scorer(labels=labels), action="overwrite", display="none"
    )
    stages: dict[str, list[str]] = {}
    for sample in scored.samples or []:
        assert sample.scores is not None
        stages.setdefault(str(sample.id), []).append(
            sample.scores["stage_diagnosis"].value  # type: ignore[arg-type]
        )
    assert Counter(stages["Q-001"]) == Counter({"pass": 2, "generation": 1})
    assert stages["Q-004"] == ["retrieval"] * EPOCHS
    metrics = metric_values(scored)
    # pass, pass, generation -> pass; Q-004: retrieval x3 -> retrieval.
    assert metrics[("stage_diagnosis", None, "pass_mode")] == pytest.approx(0.5)
    assert metrics[("stage_diagnosis", None, "retrieval_mode")] == pytest.approx(0.5)
    assert metrics[("stage_diagnosis", None, "generation_mode")] == 0
    # The stage metrics count runs: each of Q-004's epochs is a lucky answer.
    assert metrics[("stage_diagnosis", None, "lucky_answers")] == EPOCHS
