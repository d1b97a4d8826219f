"""`benchmarks/bulk_scoring.py` (`tracegrade score` against `inspect eval`)
runs end to end, and `benchmarks/measure.py` measures a command's own peak.

Smoke tests, as in `test_benchmarks.py`: tiny inputs, no timing asserted.
The end-to-end run is marked `benchmark` (`nox -s benchmarks`); the
targets' check and the launcher are tested in every run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import SUBPROCESS_ENV

ROOT = Path(__file__).resolve().parent.parent

# --- benchmarks/bulk_scoring.py ------------------------------------------------
# The same policy: toy sizes, no timing asserted; the report's shape, and that
# `tracegrade score` and `inspect eval` answered alike in both log formats.

BULK_SCRIPT = ROOT / "benchmarks" / "bulk_scoring.py"
BULK_RECORDS = 60
PER_LOG = 25  # so that each run is split into 3 parts


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bulk") / "bulk.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(BULK_SCRIPT),
            f"--records={BULK_RECORDS}",
            "--inspect-records=20",
            "--tasks=stage_diagnosis",
            # One format: .json logs are the same run through another
            # writer, held to `inspect eval` in test_cli_score.py.
            "--formats=eval",
            f"--max-samples-per-log={PER_LOG}",
            f"--trace-memory-records={BULK_RECORDS}",
            "--no-viewer",
            # The committed tree's own tracegrade, as a baseline would be.
            "--baseline=HEAD",
            "--floor",
            "--repeats=2",
            f"--json={out}",
        ],
        env=SUBPROCESS_ENV,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result, out


@pytest.mark.benchmark
def test_bulk_report_has_a_row_per_size_and_format(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, _ = bulk
    rows = report["rows"]
    assert [(row["task"], row["records"], row["format"]) for row in rows] == [
        ("stage_diagnosis", BULK_RECORDS, "eval"),
    ]
    for row in rows:
        ours = row["tracegrade"]
        assert ours["exit_code"] == 0
        assert ours["seconds"] > ours["in_process_seconds"] > 0
        assert ours["cpu_seconds"] > 0
        assert ours["records_per_s"] == pytest.approx(BULK_RECORDS / ours["seconds"])
        assert ours["peak_mib"] > 0 and row["floor_peak_mib"] > 0
        assert ours["logs"] == 3, row  # 60 samples, at most 25 a log
        assert ours["log_bytes"] > 0 and ours["results_bytes"] > 0
        assert {"parse", "score", "write"} <= set(ours["timings"])
        theirs = row["inspect_eval"]
        assert theirs["extrapolated"] is True
        assert row["ratio"] == pytest.approx(
            theirs["extrapolated_seconds"] / ours["seconds"]
        )
        before = row["baseline"]
        assert before["revision"] == "HEAD"
        assert before["seconds"] > 0 and before["cpu_seconds"] > 0
        assert before["peak_mib"] > 0


@pytest.mark.benchmark
def test_bulk_rows_alternate_with_the_baseline_and_the_floor(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, out = bulk
    for row in report["rows"]:
        paired = row["paired"]
        for name in ("tracegrade", "baseline", "floor"):
            assert len(paired[name]["runs"]) == 2, name
        assert paired["ratio_to_baseline"] == (
            paired["tracegrade"]["seconds"] / paired["baseline"]["seconds"]
        )
        assert paired["ratio_to_floor"] == (
            paired["tracegrade"]["seconds"] / paired["floor"]["seconds"]
        )
    header = out.with_suffix(".md").read_text(encoding="utf-8").splitlines()[2]
    assert "| before s | vs before | vs floor |" in header


@pytest.mark.benchmark
def test_bulk_answers_are_inspect_evals(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, _ = bulk
    assert [c["format"] for c in report["comparisons"]] == ["eval"]
    for compared in report["comparisons"]:
        assert compared["answers_identical"] is True, compared
        assert compared["records"] == 20
    for row in report["rows"]:
        assert row["answers_identical"] is True, row
    (fit,) = report["inspect_eval"]
    assert [run["records"] for run in fit["runs"]] == [2, 20]


@pytest.mark.benchmark
def test_bulk_viewer_is_null_with_a_reason_when_not_measured(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, _ = bulk
    (eval_row,) = report["rows"]
    assert eval_row["viewer"]["seconds"] is None
    assert "--no-viewer" in eval_row["viewer"]["reason"]
    assert "--no-viewer" in report["viewer_unavailable"]


@pytest.mark.benchmark
def test_bulk_report_says_how_where_and_against_which_targets(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, _ = bulk
    assert report["command"].startswith("python benchmarks/bulk_scoring.py")
    assert f"--max-samples-per-log={PER_LOG}" in report["command"]
    assert report["command"].endswith(" --baseline=HEAD --floor --repeats=2")
    assert report["baseline"] == "HEAD"
    assert report["machine"]["cpus"] >= 1
    assert report["inspect_ai"].count(".") == 2
    assert [target["records"] for target in report["targets"]] == [
        1_000_000,
        100_000,
        1_000_000,
    ]
    for row in report["rows"]:  # no target is set at 60 records
        assert row["targets"] == [] and row["met"] is None and row["misses"] == []


@pytest.mark.benchmark
def test_bulk_memory_is_traced_per_task_and_format(
    bulk: tuple[dict[str, Any], Path],
) -> None:
    report, _ = bulk
    traces = report["memory"]
    assert [(t["task"], t["format"]) for t in traces] == [
        ("stage_diagnosis", "eval"),
    ]
    for trace in traces:
        assert trace["records"] == BULK_RECORDS
        assert trace["traced_records"] == BULK_RECORDS // 5
        assert trace["peak_mib_after_finishing"] >= trace["peak_mib_while_scoring"]
        assert trace["resident_mib_after_first_record"] > 0
        assert trace["top"], trace
        for entry in trace["top"]:
            assert ":" in entry["allocated_at"]
            assert set(entry) == {
                "allocated_at",
                "from",
                "bytes",
                "blocks",
                "bytes_per_record",
            }


@pytest.mark.benchmark
def test_bulk_markdown_is_rendered_from_the_json(
    bulk: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    from benchmarks.bulk_scoring import main

    _, out = bulk
    written = out.with_suffix(".md").read_text(encoding="utf-8")
    table = [line for line in written.splitlines() if line.startswith("| stage")]
    assert len(table) == 1
    assert table[0].startswith(f"| stage_diagnosis | {BULK_RECORDS} | .eval |")
    assert "| seconds | before s | vs before | vs floor | records/s |" in written
    report, _ = bulk
    before = report["rows"][0]["baseline"]["seconds"]
    assert table[0].split(" | ")[4] == f"{before:.1f}"
    assert "of git revision `HEAD`" in written
    again = tmp_path / "again.md"
    assert main(["--render", str(out), "--markdown", str(again)]) == 0
    assert again.read_text(encoding="utf-8") == written


def bulk_row(task: str, records: int, seconds: float, peak: float) -> dict[str, Any]:
    timings = dict.fromkeys(
        ("parse", "score", "sample", "serialize", "jsonl", "results", "write"), 1.0
    )
    timings["serialize"] = seconds - 9.0
    return {
        "task": task,
        "records": records,
        "format": "eval",
        "floor_peak_mib": 100.0,
        "tracegrade": {
            "seconds": seconds,
            "records_per_s": records / seconds,
            "cpu_seconds": seconds - 2.0,
            "peak_mib": peak,
            "in_process_seconds": seconds - 1.0,
            "startup_and_exit_seconds": 1.0,
            "timings": timings,
        },
    }


def test_bulk_targets_apply_by_task_and_size_and_misses_carry_causes() -> None:
    from benchmarks.bulk_scoring import check_targets

    rows = [
        bulk_row("stage_diagnosis", 10_000, 3.0, 120.0),
        bulk_row("stage_diagnosis", 100_000, 12.0, 150.0),
        bulk_row("stage_diagnosis", 1_000_000, 90.0, 480.0),
        bulk_row("ordered_extraction", 100_000, 30.0, 150.0),
        bulk_row("ordered_extraction", 1_000_000, 300.0, 350.0),
    ]
    trace = {
        "task": "stage_diagnosis",
        "format": "eval",
        "records": 100_000,
        "traced_records": 20_000,
        "resident_bytes_per_record": 290.0,
        "peak_mib_while_scoring": 120.0,
        "peak_mib_after_finishing": 150.0,
        "live_bytes_per_record": 180.0,
        "live_bytes_per_record_added_while_finishing": 225.0,
        "top": [
            {
                "allocated_at": "tracegrade/bulk/results.py:175",
                "from": "tracegrade/bulk/results.py:175",
                "bytes_per_record": 64.0,
            }
        ],
    }
    check_targets(rows, [trace])
    assert [row["met"] for row in rows] == [None, False, False, None, True]
    stage_100k, stage_1m = rows[1], rows[2]
    (seconds_miss,) = stage_100k["misses"]
    assert "12.0 s against at most 10 s" in seconds_miss
    assert "handing samples to the writer 3.0 s" in seconds_miss  # the largest, first
    assert [check["met"] for check in stage_1m["targets"]] == [True, False]
    (memory_miss,) = stage_1m["misses"]
    assert "peak 480 MiB against at most 381 MiB" in memory_miss
    assert "peaks at 100 MiB" in memory_miss
    assert "grew 36.4 MiB per 100,000 records" in memory_miss
    assert "the resident size grew 290 bytes a record" in memory_miss
    assert "64 B at tracegrade/bulk/results.py:175" in memory_miss
    assert "raised the peak 30.0 MiB more" in memory_miss


def test_a_measured_peak_is_the_childs_own_not_its_parents(tmp_path: Path) -> None:
    """Linux starts a child's ru_maxrss at its parent's resident size; the
    launcher keeps a benchmark's own memory out of tracegrade's figure. Every
    benchmark that reports a peak measures through it."""
    from benchmarks.measure import run_measured

    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # make it resident
    small = run_measured([sys.executable, "-c", "pass"], ROOT)
    assert small.exit_code == 0
    assert small.peak_mib < 100, small
    grown = run_measured(
        [
            sys.executable,
            "-c",
            "x = bytearray(200 * 2**20); x[::4096] = b'1' * len(x[::4096])",
        ],
        ROOT,
    )
    assert grown.peak_mib > 200, grown
    del ballast
    # Output to a file, an exit code allowed or refused.
    written = tmp_path / "out.txt"
    said = run_measured(
        [sys.executable, "-c", "print('hi'); raise SystemExit(3)"],
        stdout_to=written,
        exit_codes=(3,),
    )
    assert (said.exit_code, said.stdout, written.read_text()) == (3, "", "hi\n")
    with pytest.raises(RuntimeError, match="exited 3"):
        run_measured([sys.executable, "-c", "raise SystemExit(3)"])
    for script in ("bulk_scoring", "compare_scale", "report_scale", "check_memory"):
        text = (ROOT / "benchmarks" / f"{script}.py").read_text("utf-8")
        assert "from benchmarks.measure import" in text, script
        assert "os.wait4(" not in text, script


@pytest.mark.parametrize("name", ["bulk_scoring"])
def test_each_committed_table_is_its_json_rendered(name: str, tmp_path: Path) -> None:
    """The docs quote the Markdown; it must be the committed run's, and say
    which JSON to rerun."""
    from benchmarks.bulk_scoring import main

    results = ROOT / "benchmarks" / "results"
    rendered = tmp_path / f"{name}.md"
    main(["--render", str(results / f"{name}.json"), "--markdown", str(rendered)])
    committed = (results / f"{name}.md").read_text(encoding="utf-8")
    assert rendered.read_text(encoding="utf-8") == committed
    assert f"from {name}.json;" in committed.splitlines()[0]
