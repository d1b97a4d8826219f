"""Memory: out of it (RLIMIT_AS set on a running `score`), one line, exit 2
and nothing left; a file of bad lines costs no more than a good one."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import pytest

from tests.commands import peaks_in_one_interpreter, start_tracegrade
from tests.faults.conftest import (
    InputWatch,
    assert_no_final_outputs,
    frozen,
    one_clear_line,
    snapshot,
    write_stage_records,
)

# Far more than the run gets through before its limit is set: each sample
# adds a `ZipInfo` to the part, and a new arena for them soon.
RECORDS = 20_000


def _address_space(pid: int) -> int:
    """VmSize in bytes."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    (size,) = (line.split()[1] for line in status if line.startswith("VmSize:"))
    return int(size) * 1024


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, sets prlimit")
def test_running_out_of_memory_stops_the_run_with_one_line(tmp_path: Path) -> None:
    write_stage_records(tmp_path / "runs.jsonl", RECORDS)
    before = snapshot(tmp_path)
    process = start_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--workers", "1"),
        *("--log-dir", "logs", "--out", "results.jsonl"),
        cwd=tmp_path,
    )
    try:
        watch = InputWatch(process, tmp_path / "runs.jsonl")
        # Frozen while its limit is set, so it cannot grow in between.
        with frozen(process, once=lambda: watch.wait_until_past(0.05)):
            limit = _address_space(process.pid)
            resource.prlimit(process.pid, resource.RLIMIT_AS, (limit, limit))
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 2, stderr
    line = one_clear_line(stderr)
    assert "out of memory" in line, line
    assert_no_final_outputs(tmp_path, before)


MALFORMED_LINES = 6_000
MALFORMED_WIDTH = 2_000  # the most the log shows of a line: all of it would be held


@pytest.mark.skipif(sys.platform != "linux", reason="reads VmHWM from /proc")
def test_a_file_of_malformed_lines_costs_no_more_than_a_good_one(
    tmp_path: Path,
) -> None:
    """A large wrong file passed by mistake: every line malformed. Each
    becomes an unscored sample written at the end; until then it must not
    be held in memory (it was: 1M short lines peaked at 694 MB). Both
    files are scored in one interpreter, the good one first
    (`peaks_in_one_interpreter`)."""
    write_stage_records(tmp_path / "good.jsonl", MALFORMED_LINES)
    with (tmp_path / "wrong.jsonl").open("w", encoding="utf-8") as out:
        for number in range(MALFORMED_LINES):
            out.write(f"not json {number} ".ljust(MALFORMED_WIDTH, "x") + "\n")
    names = ("good", "wrong")
    commands = [
        (
            (
                *("score", "stage_diagnosis", f"{name}.jsonl"),
                *("--log-dir", f"logs-{name}", "--log-format", "json"),
                *("--out", f"{name}.results.jsonl"),
            ),
            tmp_path,
        )
        for name in names
    ]
    scored = peaks_in_one_interpreter(commands, tmp_path)
    peaks = {}
    for name, done in zip(names, scored, strict=True):
        # 1: a run whose lines had errors, all logged.
        assert done.returncode in (0, 1), done.stderr
        assert list((tmp_path / f"logs-{name}").glob("*.json")), name
        peaks[name] = done.peak_mib
    # Held in memory, the wrong file's 12 MB of lines raise the peak by
    # about 15 MiB, two and a half times the margin.
    assert peaks["wrong"] <= peaks["good"] + 6, peaks
