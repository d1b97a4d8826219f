"""`benchmarks/bulk_scoring.py` runs end to end at toy sizes (`nox -s
benchmarks`), and `benchmarks/measure.py` measures a command's own peak.
No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import SUBPROCESS_ENV

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.benchmark
def test_bulk_rows_pair_the_baseline_and_the_floor_and_match_inspect_eval(
    tmp_path: Path,
) -> None:
    out = tmp_path / "bulk.json"
    completed = subprocess.run(
        [
            *(sys.executable, str(ROOT / "benchmarks" / "bulk_scoring.py")),
            *("--records=60", "--inspect-records=20", "--tasks=stage_diagnosis"),
            *("--formats=eval", "--max-samples-per-log=25", "--baseline=HEAD"),
            *("--floor", "--repeats=2", f"--json={out}"),
        ],
        env=SUBPROCESS_ENV,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    (row,) = report["rows"]
    assert row["task"] == "stage_diagnosis" and row["format"] == "eval"
    assert row["records"] == 60
    assert row["logs"] == 3 and row["log_bytes"] > 0  # 60 samples, 25 a log
    assert {"parse", "score", "serialize"} <= set(row["timings"])
    for name in ("tracegrade", "baseline", "floor"):
        assert len(row[name]["runs"]) == 2 and row[name]["seconds"] > 0
        assert row[name]["cpu_seconds"] > 0
    assert row["tracegrade"]["peak_mib"] > 0 and row["baseline"]["peak_mib"] > 0
    for name in ("baseline", "floor"):
        assert row[f"ratio_to_{name}"] == pytest.approx(
            row["tracegrade"]["seconds"] / row[name]["seconds"]
        )
    (compared,) = report["comparisons"]
    assert compared["answers_identical"], compared
    table = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "vs baseline" in table and "vs floor" in table and report["command"] in table


def test_a_measured_peak_is_the_childs_own_not_its_parents(tmp_path: Path) -> None:
    """Linux starts a child's ru_maxrss at its parent's resident size; the
    launcher keeps a benchmark's own memory out of tracegrade's figure."""
    from benchmarks.measure import run_measured

    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # make it resident
    small = run_measured([sys.executable, "-c", "pass"], ROOT)
    assert small.exit_code == 0
    assert small.peak_mib < 100, small
    grow = "x = bytearray(200 * 2**20); x[::4096] = b'1' * len(x[::4096])"
    grown = run_measured([sys.executable, "-c", grow], ROOT)
    assert grown.peak_mib > 200, grown
    del ballast
    written = tmp_path / "out.txt"
    said = run_measured(
        [sys.executable, "-c", "print('hi'); raise SystemExit(3)"],
        stdout_to=written,
        exit_codes=(3,),
    )
    assert (said.exit_code, said.stdout, written.read_text()) == (3, "", "hi\n")
    with pytest.raises(RuntimeError, match="exited 3"):
        run_measured([sys.executable, "-c", "raise SystemExit(3)"])
