"""The benchmarks run end to end and report both sides.

`benchmarks/throughput.py` (the core against the original under Node) and
`benchmarks/report_scale.py` (`tracegrade report` on large logs);
`benchmarks/bulk_scoring.py` and the launcher every benchmark measures
through are in `test_benchmark_bulk.py`, a file of its own so that the two
test workers share the load.
Smoke tests only: tiny inputs, one pass, and no assertion on any timing, which
would make CI depend on the machine. What is checked is the shape of the
report and that both sides answered identically, since a speed ratio between
different answers would mean nothing. The report_scale runs, which start a
baseline revision and `tracegrade report` as processes, are marked
`benchmark`: `nox -s benchmarks` runs them, a bare `pytest` does not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.throughput import batched, first_mismatch, make_inputs

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "throughput.py"
SMALL_RECORDS = 40
LARGE_RECORDS = 2
LARGE_IDS = 200
CLASSES = {
    ("stage_diagnosis", "small"),
    ("stage_diagnosis", "large"),
    ("stage_diagnosis", "large-context"),
    ("ordered_extraction", "small"),
    ("ordered_extraction", "large"),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("benchmark") / "throughput.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--seed=7",
            f"--small-records={SMALL_RECORDS}",
            f"--large-records={LARGE_RECORDS}",
            f"--large-ids={LARGE_IDS}",
            "--batch-ids=100",
            "--warmup=1",
            "--repeat=1",
            f"--json={out}",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Python/Node" in completed.stdout
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def test_report_has_one_row_per_evaluator_and_size_class(
    report: dict[str, Any],
) -> None:
    rows = report["rows"]
    assert {(row["evaluator"], row["size_class"]) for row in rows} == CLASSES
    assert len(rows) == len(CLASSES)
    for row in rows:
        expected = SMALL_RECORDS if row["size_class"] == "small" else LARGE_RECORDS
        assert row["records"] == expected, row


def test_both_sides_measured_and_answered_identically(report: dict[str, Any]) -> None:
    for row in report["rows"]:
        assert row["outputs_identical"] is True, row
        assert row["python_best_ns"] > 0 and row["node_best_ns"] > 0, row
        assert row["ratio"] == pytest.approx(
            row["python_records_per_s"] / row["node_records_per_s"]
        )


def test_targets_follow_the_issue(report: dict[str, Any]) -> None:
    for row in report["rows"]:
        target = {"small": 1 / 3, "large": 50.0, "large-context": None}[
            row["size_class"]
        ]
        assert row["target"] == target, row
        met = None if target is None else row["ratio"] >= target
        assert row["met"] == met, row


def test_report_says_how_to_reproduce_and_where_it_ran(report: dict[str, Any]) -> None:
    assert report["command"].startswith("python benchmarks/throughput.py")
    assert "--seed=7" in report["command"]
    machine = report["machine"]
    assert machine["node"].startswith("v")
    assert machine["python"].count(".") == 2
    assert machine["cpus"] >= 1


def test_inputs_depend_only_on_the_seed() -> None:
    first = make_inputs(3, small=25, large=1, large_ids=50)
    again = make_inputs(3, small=25, large=1, large_ids=50)
    other = make_inputs(4, small=25, large=1, large_ids=50)
    assert json.dumps(first) == json.dumps(again)
    assert json.dumps(first) != json.dumps(other)


def test_small_records_stay_within_ten_ids_per_list() -> None:
    inputs = make_inputs(11, small=500, large=1, large_ids=50)
    for classes in inputs.values():
        for record in classes["small"]:
            lists = [value for value in record.values() if isinstance(value, list)]
            assert lists and all(len(ids) <= 10 for ids in lists), record


def test_batches_keep_every_record_in_order() -> None:
    records = make_inputs(5, small=60, large=1, large_ids=50)["stage_diagnosis"]
    small = records["small"]
    batches = batched(small, 30)
    assert len(batches) > 1
    assert [record for batch in batches for record in batch] == small
    assert batched(records["large"], 30) == [records["large"]]


def test_a_differing_answer_is_reported() -> None:
    same = ['{"stage":"pass","missing":[]}']
    other = ['{"stage":"generation","missing":[]}']
    assert first_mismatch(same, same) is None
    found = first_mismatch(same, other)
    assert found is not None and "record 0" in found
    assert first_mismatch(same, same * 2) is not None


def run_report_scale(out_dir: Path, *options: str) -> tuple[dict[str, Any], str]:
    """`benchmarks/report_scale.py OPTIONS` to its end: its JSON and what it
    printed."""
    out = out_dir / "report_scale.json"
    completed = subprocess.run(
        [
            *(sys.executable, str(ROOT / "benchmarks" / "report_scale.py")),
            *(*options, f"--json={out}"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(out.read_text(encoding="utf-8")), completed.stdout


@pytest.fixture(scope="module")
def report_scale(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], str]:
    """One log and one run in parts, at toy sizes, once."""
    out_dir = tmp_path_factory.mktemp("report_scale")
    return run_report_scale(
        out_dir, "--samples=40", "--pooled=70", "--part-size=25", "--repeat=1"
    )


@pytest.fixture(scope="module")
def report_scale_against_head(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], str]:
    """`--baseline REV` against this very revision, the pooled case skipped."""
    out_dir = tmp_path_factory.mktemp("report_scale_baseline")
    return run_report_scale(
        out_dir, "--samples=12", "--pooled=0", "--repeat=2", "--baseline=HEAD"
    )


@pytest.mark.benchmark
def test_the_report_scale_benchmark_checks_its_figures(
    report_scale: tuple[dict[str, Any], str],
) -> None:
    """`benchmarks/report_scale.py` at toy sizes; no timing is asserted."""
    result, _ = report_scale
    one, parts = result["rows"]
    assert (one["samples"], one["logs"], one["logs_read"]) == (40, 1, 1)
    assert (parts["samples"], parts["logs"], parts["logs_read"]) == (70, 3, 3)
    for row in (one, parts):
        assert row["figures_match"] is True, row
        assert row["part_warnings"] == "", row
        assert row["seconds"] > 0 and row["peak_mib"] > 0
    assert result["baseline"] is None
    assert result["command"].startswith("python benchmarks/report_scale.py")


@pytest.mark.benchmark
def test_the_report_scale_benchmark_runs_a_revision_in_alternating_pairs(
    report_scale_against_head: tuple[dict[str, Any], str],
) -> None:
    """No timing is asserted, only that both sides ran in turn and read the
    log alike."""
    result, _ = report_scale_against_head
    before = result["baseline"]
    assert before["revision"] == "HEAD" and before["figures_match"] is True
    assert [pair["first"] for pair in before["pairs"]] == ["new", "baseline"]
    for pair in before["pairs"]:
        for side in ("new", "baseline"):
            assert pair[side]["seconds"] > 0 and pair[side]["peak_mib"] > 0
            assert "load_average" in pair[side]
    assert set(before["ratios"]) == {"seconds", "cpu_seconds", "peak_mib"}


@pytest.mark.benchmark
def test_the_report_scale_benchmark_says_when_it_skips(
    report_scale_against_head: tuple[dict[str, Any], str],
) -> None:
    result, printed = report_scale_against_head
    assert "parts of one run: skipped (--pooled 0)" in printed
    (_, skipped) = result["rows"]
    assert skipped["skipped"] == "--pooled 0"


def test_the_answer_reading_benchmark_reports_each_family(tmp_path: Path) -> None:
    from benchmarks import answer_reading

    out = tmp_path / "answers.json"
    sizes = "1000,2000,4000"
    assert (
        answer_reading.main(["--sizes", sizes, "--repeat", "1", "--json", str(out)])
        == 0
    )
    report = json.loads(out.read_text())
    assert [row["family"] for row in report["rows"]] == list(answer_reading.FAMILIES)
    for row in report["rows"]:
        assert [point["characters"] for point in row["points"]] == pytest.approx(
            [1000, 2000, 4000], abs=20
        )
        assert row["growth"] > 0
        assert row["max_peak_multiple"] > 0
    outcomes = {row["family"]: row["points"][-1]["outcome"] for row in report["rows"]}
    assert outcomes["one JSON array of IDs"] == "json"
    assert outcomes["unclosed brackets"].startswith("unreadable: the bracketed text")
    assert report["command"] == (
        "python benchmarks/answer_reading.py --sizes=1000,2000,4000 --repeat=1"
    )


def test_the_score_table_benchmark_reports_one_core(tmp_path: Path) -> None:
    """`benchmarks/score_table.py` at a toy size, without Ray (whose run is
    tests/test_ray.py's); no timing is asserted."""
    from benchmarks import score_table

    out = tmp_path / "score_table.json"
    argv = ["--records", "3000", "--files", "3", "--no-ray", "--json", str(out)]
    assert score_table.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["one_core"]["records"] == 3000
    assert report["one_core"]["records_per_second_per_core"] > 0
    assert len(report["one_core"]["load_average_before"]) == 3
    assert {"answer-label", "invalid-input", "none"} <= set(report["error_kinds"])
    assert "ray" not in report
