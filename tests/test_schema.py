"""One score schema: a logged score broken a field at a time is refused by
every reader of that field, in the schema's words."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.analysis import SampleSummary, samples_df
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.scorer import SampleScore

from tracegrade import stage_diagnosis_scorer
from tracegrade.analysis import StageColumns
from tracegrade.bulk.results import RunResults
from tracegrade.compare.build import UnreadableScore, compare_logs
from tracegrade.report.aggregate import ReportError, build_report
from tracegrade.schema import InvalidScore, read_extraction
from tracegrade.scorers.metrics import (
    answer_failures,
    context_precision,
    context_recall,
)
from tracegrade.tasks import stage_diagnosis

SCORE = "stage_diagnosis"


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """A real log of one diagnosed run (retrieval: B never reached the context)."""
    work = tmp_path_factory.mktemp("schema")
    dataset = work / "runs.jsonl"
    record = {"required": ["A", "B"], "context": ["A", "C"], "correct": True}
    dataset.write_text(json.dumps({"id": "gap", "input": record}) + "\n")
    (log,) = eval(
        stage_diagnosis(dataset=str(dataset)),
        display="none",
        log_dir=str(work),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def broken(logged: EvalLog, key: str, value: Any) -> EvalLog:
    """A copy of the log whose score has `value` at `key` ("result.missing")."""
    log = copy.deepcopy(logged)
    (sample,) = log.samples or []
    assert sample.scores is not None
    metadata = sample.scores[SCORE].metadata
    assert metadata is not None
    *parents, last = key.split(".")
    for parent in parents:
        metadata = metadata[parent]
    metadata[last] = value
    return log


SHARE = "must be null or a share from 0.0 to 1.0, got"
# Each break: the key and its bad value, the schema's words for it, and the
# metric that reads the field (the bulk results read what the metrics read);
# report, compare and the columns read every field.
BREAKS = {
    "integer recall": ("recall", 1, f"metadata recall {SHARE} 1", "recall"),
    "boolean recall": ("recall", True, f"metadata recall {SHARE} true", "recall"),
    "integer precision": ("precision", 0, f"metadata precision {SHARE} 0", "precision"),
    "recall over 1": ("recall", 1.5, f"metadata recall {SHARE} 1.5", "recall"),
    "error of no side": (
        "error", {"kind": "x", "side": "elsewhere"},
        "metadata error must be null or have a kind and a side", "failures",
    ),
    "missing not a list": (
        "result.missing", "B",
        "a diagnosed score needs the ID lists record.required and "
        'result.missing, got ["A", "B"] and "B"', None,
    ),
    "step recall of an integer": (
        "step_recall", {"retriever": 1},
        "metadata step_recall must map each step's name to a share", None,
    ),
    "lost without lost_at": (
        "lost", [{"id": "B"}], "metadata lost[0] must be an object", None,
    ),
}  # fmt: skip
METRICS = {
    "recall": context_recall,
    "precision": context_precision,
    "failures": answer_failures,
}


def refusals(log: EvalLog, tmp_path: Path, metric: str | None) -> dict[str, str]:
    """What each reader of the broken field says of the log's one score."""
    path = tmp_path / "broken.eval"
    write_eval_log(log, str(path))
    said: dict[str, str] = {}
    with pytest.raises(ReportError) as report:
        build_report([str(path)])
    said["report"] = str(report.value)
    with pytest.raises(UnreadableScore) as compared:
        compare_logs(str(path), str(path))
    said["compare"] = str(compared.value)
    with pytest.raises(ValueError) as column:
        samples_df(str(path), columns=SampleSummary + StageColumns, quiet=True)
    said["analysis"] = str(column.value)
    (sample,) = read_eval_log(str(path)).samples or []
    if metric is not None:
        score = (sample.scores or {})[SCORE]
        sample_score = SampleScore(score=score, sample_id=sample.id)
        with pytest.raises(ValueError) as refused:
            METRICS[metric]()([sample_score])  # type: ignore[call-arg,arg-type]
        said[f"metric {metric}"] = str(refused.value)
        results = RunResults(stage_diagnosis_scorer(), SCORE, str(tmp_path))
        try:
            with pytest.raises(InvalidScore) as bulk:
                results.add(str(sample.id), score)
        finally:
            results.close()
        said["bulk results"] = str(bulk.value)
    return said


@pytest.mark.parametrize("case", list(BREAKS))
def test_every_reader_refuses_a_broken_score_in_the_same_words(
    logged: EvalLog, tmp_path: Path, case: str
) -> None:
    key, value, words, metric = BREAKS[case]
    said = refusals(broken(logged, key, value), tmp_path, metric)
    assert len(said) == (5 if metric else 3)
    for reader, text in said.items():
        assert words in text, (reader, text)


def test_an_extraction_score_refuses_an_itemisation_where_nothing_was_graded() -> None:
    error = {"kind": "duplicate-answer-id", "side": "answer", "field": None}
    itemised = {"dropped": [], "invented": [], "first_order_break": None}
    metadata = {
        "result": {"error": "duplicate-id"},
        "record": {"source": ["A"], "answer": ["A", "A"]},
        "read_from": {},
        "error": {**error, "message": "m"},
        "itemised": {**itemised, "kept_in_order": 1},
    }
    value = {"membership": False, "order": False}
    with pytest.raises(
        InvalidScore, match="itemised must be null where result is no grade"
    ):
        read_extraction(value, metadata)
    metadata["itemised"] = None
    assert read_extraction(value, metadata).itemised is None


def test_the_schema_imports_no_inspect() -> None:
    code = """import sys, tracegrade.schema
roots = {name.split(".")[0] for name in sys.modules}
print(sorted(roots & {"inspect_ai", "pydantic", "pandas"}))"""
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"
