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


def per_sample(log: EvalLog, scorer: str) -> dict[str, list[Any]]:
    """Each sample's score values, one per epoch, in epoch order."""
    assert log.samples is not None
    values: dict[str, list[Any]] = {}
    for sample in sorted(log.samples, key=lambda s: (str(s.id), s.epoch)):
        assert sample.scores is not None
        values.setdefault(str(sample.id), []).append(sample.scores[scorer].value)
    return values


# --- ordered extraction: membership and order by mean ---------------------------

A, B, C = "shipping_manifest-001", "citation_list-002", "log_excerpt-004"


def replies() -> dict[str, list[str]]:
    def right(i: str) -> str:
        return json.dumps(source_ids(i))

    return {
        A: [right(A), json.dumps(sorted(source_ids(A))), right(A)],
        B: [right(B)] * EPOCHS,
        C: [json.dumps(source_ids(C)[1:]), right(C), "I'm sorry, I can't."],
    }


def grade(membership: bool, order: bool) -> dict[str, bool]:
    return {"membership": membership, "order": order}


EXPECTED = {
    A: [grade(True, True), grade(True, False), grade(True, True)],
    B: [grade(True, True)] * EPOCHS,
    C: [grade(False, False), grade(True, True), grade(False, False)],
}


@pytest.fixture(scope="module")
def extraction_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    from tracegrade import ordered_extraction

    assert {A, B, C} <= set(BY_ID)
    (log,) = eval(
        ordered_extraction(),
        model=mock_model(replies()),
        sample_id=[A, B, C],
        epochs=EPOCHS,
        log_dir=str(tmp_path_factory.mktemp("epochs")),
        display="none",
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return log


def test_extraction_epochs_are_reduced_by_mean(extraction_log: EvalLog) -> None:
    assert extraction_log.eval.config.epochs == EPOCHS
    assert extraction_log.eval.config.epochs_reducer == ["mean"]
    means = {
        document_id: {
            key: statistics.mean(float(grade[key]) for grade in grades)
            for key in ("membership", "order")
        }
        for document_id, grades in EXPECTED.items()
    }
    (reduction,) = extraction_log.reductions or []
    assert (reduction.scorer, reduction.reducer) == ("ordered_extraction", "mean")
    reduced = {str(s.sample_id): s.value for s in reduction.samples}
    assert reduced.keys() == means.keys()
    for document_id, mean in means.items():
        assert reduced[document_id] == pytest.approx(mean)
    metrics = metric_values(extraction_log)
    for key in ("membership", "order"):
        accuracy = statistics.mean(mean[key] for mean in means.values())
        assert metrics[(key, "mean", "accuracy")] == pytest.approx(accuracy)
    # Answer failures are counted per run, not per reduced sample.
    assert metrics[("ordered_extraction", None, "unreadable")] == 1
    assert metrics[("ordered_extraction", None, "duplicate-id")] == 0


# --- stage diagnosis: every epoch diagnosed ---------------------------------------


@pytest.fixture(scope="module")
def rag_epochs_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    (log,) = eval(
        rag.rag_qa(),
        model=answering_model(
            {"Q-001": ["-18 degrees C.", "I do not know.", "-18 degrees C."]}
        ),
        sample_id=["Q-001", "Q-004"],
        epochs=EPOCHS,
        log_dir=str(tmp_path_factory.mktemp("rag-epochs")),
        display="none",
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return log


def write_labels(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_every_epoch_of_a_rag_run_is_diagnosed(
    rag_epochs_log: EvalLog, tmp_path: Path
) -> None:
    """One label per sample (no epoch) applies to each epoch's run."""
    labels = write_labels(
        tmp_path / "labels.jsonl",
        [{"id": "Q-001", "correct": True}, {"id": "Q-004", "correct": True}],
    )
    log = score(
        rag_epochs_log,
        stage_diagnosis_scorer(labels=labels),
        action="overwrite",
        display="none",
    )
    stages = per_sample(log, "stage_diagnosis")
    assert stages == {"Q-001": ["pass"] * EPOCHS, "Q-004": ["retrieval"] * EPOCHS}
    metrics = metric_values(log)
    # The stage metrics count runs: each sample contributes its 3 epochs.
    assert metrics[("stage_diagnosis", None, "pass")] == pytest.approx(0.5)
    assert metrics[("stage_diagnosis", None, "lucky_answers")] == EPOCHS


def test_each_epoch_is_diagnosed_by_its_own_label_and_reduced_by_mode(
    rag_epochs_log: EvalLog, tmp_path: Path
) -> None:
    lines = label_requests(rag_epochs_log)
    # The export names each epoch: each gets its own label.
    assert [(x["id"], x["epoch"]) for x in lines] == [
        (i, epoch) for i in ("Q-001", "Q-004") for epoch in range(1, EPOCHS + 1)
    ]
    filled = [{**line, "correct": line["answer"] != "I do not know."} for line in lines]
    log = score(
        rag_epochs_log,
        stage_diagnosis_scorer(labels=write_labels(tmp_path / "l.jsonl", filled)),
        action="overwrite",
        display="none",
    )
    stages = per_sample(log, "stage_diagnosis")
    assert Counter(stages["Q-001"]) == Counter({"pass": 2, "generation": 1})
    assert stages["Q-004"] == ["retrieval"] * EPOCHS
    metrics = metric_values(log)
    # pass, pass, generation -> pass; Q-004: retrieval x3 -> retrieval.
    assert metrics[("stage_diagnosis", None, "pass_mode")] == pytest.approx(0.5)
    assert metrics[("stage_diagnosis", None, "retrieval_mode")] == pytest.approx(0.5)
    assert metrics[("stage_diagnosis", None, "generation_mode")] == 0
