"""`--epochs N` on a live RAG run, each epoch labelled on its own; epochs run
concurrently, so they are compared as multisets. (Epochs of the recorded tasks:
test_metrics; labels of every epoch: test_labels_apply.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval, score
from inspect_ai.log import EvalLog

# The mock model of the RAG example's tests (pytest puts tests/ on sys.path).
from test_rag_example import answering_model, rag
from tests.support import write_lines
from tracegrade import stage_diagnosis_scorer
from tracegrade.label_logs import label_requests

EPOCHS = 3


def metric_values(log: EvalLog) -> dict[tuple[str, str | None, str], Any]:
    assert log.results is not None
    return {
        (result.name, result.reducer, name): metric.value
        for result in log.results.scores
        for name, metric in result.metrics.items()
    }


def test_each_epoch_of_a_rag_run_is_diagnosed_by_its_own_label(tmp_path: Path) -> None:
    model = answering_model(
        {"Q-001": ["-18 degrees C.", "I do not know.", "-18 degrees C."]}
    )
    (log,) = eval(
        rag.rag_qa(),
        model=model,
        sample_id=["Q-001", "Q-004"],
        epochs=EPOCHS,
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_realtime=False,
    )
    assert log.status == "success", log.error
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
