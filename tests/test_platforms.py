"""Every command with the Linux-only calls hidden, as on Windows and macOS
(`tests/hidden_calls.py`): each works, and writes what it writes on Linux."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from tests.faults.conftest import write_stage_records
from tests.support import SUBPROCESS_ENV, write_lines

pytestmark = pytest.mark.runs_long

SHIM = Path(__file__).with_name("hidden_calls.py")
RECORDS = 120  # `compare` spills lists past TRACEGRADE_COMPARE_CHUNK=50 to SQLite
SCORE = "tracegrade score stage_diagnosis runs.jsonl"
STEPS = {
    "windows": [
        # The .eval writer in this process, and the .json writer's spool.
        f"{SCORE} --log-dir logs --out results.jsonl",
        f"{SCORE} --log-dir json --log-format json --out json.jsonl",
        "tracegrade check stage_diagnosis runs.jsonl",
        "tracegrade labels export logs/*.eval --out to-label.jsonl",
        # The lock, the log moved aside and checked, signals held.
        "tracegrade labels apply logs/*.eval staff.jsonl",
        "tracegrade report logs/*.eval --html report.html",
        # Lists past 50 items spilled to SQLite.
        "tracegrade compare logs json --json",
        "inspect-eval tracegrade/stage_diagnosis plugin",
        # A large input's workers, spawned.
        "workers",
        f"{SCORE} --log-dir in-child --out in-child.jsonl --workers 2",
    ],
}
# macOS lacks a few: the pipe size (the writers), pidfd (the workers).
STEPS["macos"] = [STEPS["windows"][step] for step in (0, 4, 8, 9)]


@pytest.mark.parametrize("platform", ["windows", "macos"])
def test_every_command_works_without_the_linux_only_calls(
    tmp_path: Path, platform: str
) -> None:
    write_stage_records(tmp_path / "runs.jsonl", RECORDS)
    labels = [{"id": f"run-{n}", "correct": n % 2 == 0} for n in range(RECORDS)]
    write_lines(tmp_path / "staff.jsonl", labels)
    steps = [step.split() for step in STEPS[platform]]
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    env = {**SUBPROCESS_ENV, "TRACEGRADE_COMPARE_CHUNK": "50"}
    shim = [sys.executable, str(SHIM), platform, "steps.json"]
    done = subprocess.run(shim, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    expected = ["success" if step[0] == "inspect-eval" else 0 for step in steps]
    assert results == expected, done.stderr
    # The workers (and multiprocessing's resource tracker) hid them too.
    said = (tmp_path / "hidden-in-child").read_text().splitlines()
    assert len(said) >= 2 and set(said) == {"hidden"}
    logs = (tmp_path / "in-child").glob("*.eval")
    written = [read_eval_log(str(log)) for log in logs]
    assert [log.status for log in written] == ["success", "success"]
    ids = sorted(str(s.id) for log in written for s in log.samples or [])
    assert ids == sorted(f"run-{number}" for number in range(RECORDS))
    scored = (tmp_path / "results.jsonl").read_text()
    assert (tmp_path / "in-child.jsonl").read_text() == scored
    assert len(scored.splitlines()) == RECORDS
    (log,) = (tmp_path / "logs").glob("*.eval")
    labelled = read_eval_log(str(log))
    assert labelled.status == "success"
    assert labelled.results is not None and len(labelled.results.scores) == 2
