"""Each benchmark runs at a toy size and its own check of the answers passes;
no timing is asserted. Process-starting runs are marked `benchmark`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(script: str, *options: str, tmp_path: Path) -> dict[str, Any]:
    """`python benchmarks/SCRIPT OPTIONS --json OUT`, which must exit 0."""
    out = tmp_path / f"{script}.json"
    command = [sys.executable, f"benchmarks/{script}.py", *options, f"--json={out}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert report["command"].startswith(f"python benchmarks/{script}.py")
    return report


def test_throughput_times_both_sides_on_the_same_answers(tmp_path: Path) -> None:
    options = ("--small-records=40", "--large-records=2", "--large-ids=200")
    options += ("--batch-ids=100", "--warmup=1", "--repeat=1")
    rows = run("throughput", *options, tmp_path=tmp_path)["rows"]
    classes = {(row["evaluator"], row["size_class"]) for row in rows}
    assert len(classes) == len(rows) == 5
    for row in rows:
        assert row["outputs_identical"] is True, row
        assert row["python_records_per_s"] > 0 and row["node_records_per_s"] > 0


def test_answer_reading_reads_each_family_at_each_size(tmp_path: Path) -> None:
    options = ("--sizes=1000,2000,4000", "--repeat=1")
    rows = run("answer_reading", *options, tmp_path=tmp_path)["rows"]
    assert len(rows) > 10
    for row in rows:
        assert len(row["points"]) == 3 and row["growth"] > 0, row
        assert row["points"][-1]["outcome"], row


def test_score_table_scores_every_record_on_one_core(tmp_path: Path) -> None:
    options = ("--records=3000", "--files=3", "--no-ray")
    report = run("score_table", *options, tmp_path=tmp_path)
    assert report["one_core"]["records"] == 3000
    assert {"answer-label", "invalid-input", "none"} <= set(report["error_kinds"])


@pytest.mark.benchmark
def test_check_memory_and_compare_scale(tmp_path: Path) -> None:
    report = run("check_memory", "--small=50", "--large=500", tmp_path=tmp_path)
    assert [row["lines"] for row in report["rows"]] == [50, 500]
    assert all(row["peak_mib"] > 0 for row in report["rows"])
    report = run("compare_scale", "--samples=20", "--changed=0,1", tmp_path=tmp_path)
    outputs = [(row["output"], row["changed"]) for row in report["rows"]]
    assert outputs == [("--json", 0), ("--html", 0), ("--json", 20), ("--html", 20)]
    assert all(row["correct"] in (None, True) for row in report["rows"])


@pytest.mark.benchmark
def test_report_scale_checks_its_figures_against_a_revision(tmp_path: Path) -> None:
    options = ("--samples=40", "--pooled=70", "--part-size=25", "--repeat=2")
    report = run("report_scale", *options, "--baseline=HEAD", tmp_path=tmp_path)
    one, parts = report["rows"]
    assert (one["samples"], one["logs"]) == (40, 1)
    assert (parts["samples"], parts["logs"]) == (70, 3)
    assert one["figures_match"] and parts["figures_match"]
    assert report["baseline"]["figures_match"] is True
    firsts = [pair["first"] for pair in report["baseline"]["pairs"]]
    assert firsts == ["new", "baseline"]
