"""Logs scored by an earlier tracegrade (tests/data/old_logs, made at
commit 081f5b0, whose stage scores lack `precision`) are read by `report`
and `compare` as the same records scored now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_compare import compared
from tests.test_cli_score import score_file
from tests.test_report_parquet import figures, report_json

OLD = Path(__file__).parent / "data" / "old_logs"
LOGS = {
    "stage_diagnosis.eval": ("stage_diagnosis", "stage_records.jsonl"),
    "stage_diagnosis_score.eval": ("stage_diagnosis", "stage_records.jsonl"),
    "ordered_extraction.eval": ("ordered_extraction", "extraction_records.jsonl"),
}


@pytest.mark.parametrize("name", LOGS)
def test_an_older_log_reports_and_compares_as_the_records_scored_now(
    name: str, tmp_path: Path
) -> None:
    task, records = LOGS[name]
    result, summary = score_file(task, str(OLD / records), tmp_path)
    assert result.exit_code == 0, result.output
    log = summary["log"]
    older = report_json(str(OLD / name))

    assert figures(older, task) == figures(report_json(log), task)
    (pair,) = compared(str(OLD / name), log)["pairs"]
    (summary,) = pair[task]
    assert summary["base_runs"] == summary["new_runs"]
    if task == "stage_diagnosis":
        (reported,) = older[task]
        assert reported["precision_runs"] == 7
        assert reported["precision"] is not None
        transitions = summary["transitions"]
        changed = sum(
            count
            for row, counts in enumerate(transitions)
            for column, count in enumerate(counts)
            if row != column
        )
        assert (changed, summary["pairs"]) == (0, 8)
