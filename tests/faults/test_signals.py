"""Signals at random points of a run leave nothing half-written.

`score`: SIGINT and SIGTERM remove what was begun and say so in one line;
SIGKILL leaves only `.partial` names. `check`: its id database leaves no
file, even on SIGKILL. Points are seeded by the test id; which signal comes
when (in the line loop, or finishing) in which log format is all-pairs:

    signal   when       format   test
    SIGINT   loop       eval     caught
    SIGINT   finishing  json     caught
    SIGTERM  loop       json     caught
    SIGTERM  finishing  eval     caught
    SIGKILL  loop       json     sigkill
    SIGKILL  finishing  eval     sigkill
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    SHORT_SIGNAL_RECORDS,
    TIGHT_WITHIN,
    InputWatch,
    assert_no_final_outputs,
    assert_still_writing,
    digest,
    frozen,
    one_clear_line,
    signal_mid_input,
    snapshot,
)
from tests.support import SUBPROCESS_ENV

pytestmark = pytest.mark.runs_long

# Where in the input a "loop" signal lands: past the start of the line
# loop, and far enough from its end that the freeze comes well before it.
LOOP_FRACTIONS = (0.05, 0.6)

# `eval` split into parts, so that several parts are open when the signal
# comes (all of them while the logs are finished); `json` whole. Four
# parts, not more: each part's header is built as Inspect builds an eval's
# (its package distributions looked up afresh), a cost that grows with
# the parts and proves nothing more past a few.
EVAL_PARTS = 4
FORMATS = {
    "eval": (
        "--log-format",
        "eval",
        "--max-samples-per-log",
        str(SHORT_SIGNAL_RECORDS // EVAL_PARTS),
    ),
    "json": ("--log-format", "json"),
}


def _records_for(log_format: str, signal_input: Path, short_input: Path) -> Path:
    """What a `score` run reads: an `.eval` run the short input, since the
    writer deflates each record it scores, so that its line loop and its
    finishing still last longer than a `.json` run's of the full input; a
    `.json` run the full input, whose log is written quickly enough that
    fewer records would leave its finishing little longer than a freeze."""
    return short_input if log_format == "eval" else signal_input


def _loop_fraction(seed: str) -> float:
    return random.Random(seed).uniform(*LOOP_FRACTIONS)


def _signal_score(
    tmp_path: Path,
    records: Path,
    signum: int,
    when: str,
    seed: str,
    log_format: str,
) -> tuple[int, str, Path, dict[str, str]]:
    """Run `score`, send `signum` in the loop or while the logs are written."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "old.results.jsonl").write_text("kept\n")
    before = snapshot(work)
    input_digest = digest(records)
    logs = work / "logs"
    process = start_tracegrade(
        "score",
        "stage_diagnosis",
        str(records),
        "--log-dir",
        str(logs),
        "--out",
        str(work / "results.jsonl"),
        *FORMATS[log_format],
        cwd=work,
    )
    if when == "loop":
        signal_mid_input(process, records, signum, _loop_fraction(seed))
    else:
        watch = InputWatch(process, records)
        wait = partial(watch.wait_until_closed, tight_within=TIGHT_WITHIN)
        with frozen(process, once=wait):
            watch.assert_closed()
            assert_still_writing(work, before)
            process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)
    assert digest(records) == input_digest
    return process.returncode, stderr, work, before


# The caught half of the all-pairs design (module docstring): each signal
# in the loop and finishing, with each format, and each point with each
# format. SIGINT in the loop of an `.eval` run is the case that once hung
# (a signal taken mid-exchange with the writer thread).
@pytest.mark.parametrize(
    ("signum", "exit_code", "said", "when", "log_format"),
    [
        (signal.SIGINT, 130, "interrupted (SIGINT)", "loop", "eval"),
        (signal.SIGINT, 130, "interrupted (SIGINT)", "finishing", "json"),
        (signal.SIGTERM, 143, "stopped by SIGTERM", "loop", "json"),
        (signal.SIGTERM, 143, "stopped by SIGTERM", "finishing", "eval"),
    ],
    ids=[
        "SIGINT-loop-eval",
        "SIGINT-finishing-json",
        "SIGTERM-loop-json",
        "SIGTERM-finishing-eval",
    ],
)
def test_a_caught_signal_removes_everything_begun_and_says_so(
    tmp_path: Path,
    signal_input: Path,
    short_signal_input: Path,
    signum: int,
    exit_code: int,
    said: str,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    records = _records_for(log_format, signal_input, short_signal_input)
    returncode, stderr, work, before = _signal_score(
        tmp_path, records, signum, when, request.node.nodeid, log_format
    )

    assert returncode == exit_code, stderr
    line = one_clear_line(stderr)
    assert line.startswith(f"tracegrade score: {said}")
    assert "no log or results were written" in line
    # Not even a `.partial` file: cleanup ran.
    assert snapshot(work) == before


# SIGKILL's rows of the all-pairs design (module docstring): in the loop
# and finishing, with each format; finishing with `.eval`, so that every
# part is open when the process dies.
@pytest.mark.parametrize(
    ("when", "log_format"),
    [("loop", "json"), ("finishing", "eval")],
    ids=["loop-json", "finishing-eval"],
)
def test_sigkill_leaves_only_partial_names(
    tmp_path: Path,
    signal_input: Path,
    short_signal_input: Path,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, _, work, before = _signal_score(
        tmp_path,
        _records_for(log_format, signal_input, short_signal_input),
        signal.SIGKILL,
        when,
        request.node.nodeid,
        log_format,
    )

    assert returncode == -signal.SIGKILL
    assert_no_final_outputs(work, before)
    left = set(snapshot(work)) - set(before)
    assert all(name.endswith(".partial") for name in left), left


def test_check_leaves_no_temporary_id_database(
    tmp_path: Path, signal_input: Path, request: pytest.FixtureRequest
) -> None:
    """SIGTERM; SIGKILL is met where the database has surely reached the
    disk (test_the_id_database_leaves_no_file_even_when_killed)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = start_tracegrade(
        "check",
        "stage_diagnosis",
        str(signal_input),
        cwd=tmp_path,
        env={"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)},
    )
    fraction = _loop_fraction(request.node.nodeid)
    signal_mid_input(process, signal_input, signal.SIGTERM, fraction)
    _, stderr = process.communicate(timeout=300)

    assert list(temporary.iterdir()) == []
    assert process.returncode == 143, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade check: stopped by SIGTERM after line")
    assert line.endswith("the check is incomplete")


_SPILLING_IDS = """
import os, sys
from tracegrade.bulk.scoring import DiskIds

ids = DiskIds(cache_kib=64)
number = 0
while True:
    for _ in range(1_000):
        ids.first_line(f"run-{number}", number)
        number += 1
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the listing's own descriptor, closed by now
    if any(link.startswith(os.environ["TMPDIR"]) for link in links):
        print(number, flush=True)
        break
sys.stdin.read()
"""


def test_the_id_database_leaves_no_file_even_when_killed(tmp_path: Path) -> None:
    """`check` keeps its ids in SQLite's page cache up to 8 MiB, so the runs
    above may never write the database to disk. Here a 64 KiB cache makes
    it spill within a few thousand ids: the file is open, yet no longer in
    the directory, so SIGKILL cannot leave it."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    where = {"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)}
    process = subprocess.Popen(
        [sys.executable, "-c", _SPILLING_IDS],
        env={**SUBPROCESS_ENV, **where},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    spilled_after = process.stdout.readline()
    assert spilled_after.strip().isdigit(), "the database never reached the disk"
    open_files = [os.readlink(fd) for fd in Path(f"/proc/{process.pid}/fd").iterdir()]
    assert any(
        name.startswith(str(temporary)) and name.endswith(" (deleted)")
        for name in open_files
    ), open_files
    assert list(temporary.iterdir()) == []

    process.kill()
    process.wait(timeout=60)
    assert list(temporary.iterdir()) == []
