"""Signals at random points of a run leave nothing half-written.

`tracegrade score` writes its log and results under `.partial` names and
renames them only when both are complete. SIGINT and SIGTERM must remove
what was begun and say so in one line; SIGKILL cannot be caught, so what
it leaves must be under a `.partial` name. `tracegrade check` keeps its
sample ids in a temporary database that SQLite deletes as soon as it is
opened, so not even SIGKILL leaves that behind.

The points are random (seeded by pytest's test id, so a failure can be
rerun), spread over the line loop, and at the start of the final writing
of the logs, for both log formats; the `.eval` run is split into parts, so
that several are open at once. Each signal lands where it must on a
machine of any speed: the run is frozen at a progress marker (how far it
has read its input), checked from /proc, then signalled (see conftest).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    SIGNAL_PART_SAMPLES,
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

# Where in the input a "loop" signal lands: past the start of the line
# loop, and far enough from its end that the freeze comes well before it.
LOOP_FRACTIONS = (0.05, 0.6)

# `eval` split into parts, so that several parts are open when the signal
# comes; `json` whole.
FORMATS = {
    "eval": (
        "--log-format",
        "eval",
        "--max-samples-per-log",
        str(SIGNAL_PART_SAMPLES),
    ),
    "json": ("--log-format", "json"),
}


def _loop_fraction(seed: str) -> float:
    return random.Random(seed).uniform(*LOOP_FRACTIONS)


def _signal_score(
    tmp_path: Path,
    signal_input: Path,
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
    input_digest = digest(signal_input)
    logs = work / "logs"
    process = start_tracegrade(
        "score",
        "stage_diagnosis",
        str(signal_input),
        "--log-dir",
        str(logs),
        "--out",
        str(work / "results.jsonl"),
        *FORMATS[log_format],
        cwd=work,
    )
    if when == "loop":
        signal_mid_input(process, signal_input, signum, _loop_fraction(seed))
    else:
        watch = InputWatch(process, signal_input)
        with frozen(process, once=watch.wait_until_closed):
            watch.assert_closed()
            assert_still_writing(work, before)
            process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)
    assert digest(signal_input) == input_digest
    return process.returncode, stderr, work, before


@pytest.mark.parametrize("log_format", sorted(FORMATS))
@pytest.mark.parametrize("when", ["loop", "finishing"])
@pytest.mark.parametrize(
    ("signum", "exit_code", "said"),
    [
        (signal.SIGINT, 130, "interrupted (SIGINT)"),
        (signal.SIGTERM, 143, "stopped by SIGTERM"),
    ],
)
def test_a_caught_signal_removes_everything_begun_and_says_so(
    tmp_path: Path,
    signal_input: Path,
    signum: int,
    exit_code: int,
    said: str,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, stderr, work, before = _signal_score(
        tmp_path, signal_input, signum, when, request.node.nodeid, log_format
    )

    assert returncode == exit_code, stderr
    line = one_clear_line(stderr)
    assert line.startswith(f"tracegrade score: {said}")
    assert "no log or results were written" in line
    # Not even a `.partial` file: cleanup ran.
    assert snapshot(work) == before


@pytest.mark.parametrize("log_format", sorted(FORMATS))
@pytest.mark.parametrize("when", ["loop", "finishing"])
def test_sigkill_leaves_only_partial_names(
    tmp_path: Path,
    signal_input: Path,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, _, work, before = _signal_score(
        tmp_path, signal_input, signal.SIGKILL, when, request.node.nodeid, log_format
    )

    assert returncode == -signal.SIGKILL
    assert_no_final_outputs(work, before)
    left = set(snapshot(work)) - set(before)
    assert all(name.endswith(".partial") for name in left), left


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_check_leaves_no_temporary_id_database(
    tmp_path: Path, signal_input: Path, signum: int, request: pytest.FixtureRequest
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = start_tracegrade(
        "check",
        "stage_diagnosis",
        str(signal_input),
        cwd=tmp_path,
        env={"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)},
    )
    signal_mid_input(process, signal_input, signum, _loop_fraction(request.node.nodeid))
    _, stderr = process.communicate(timeout=300)

    assert list(temporary.iterdir()) == []
    if signum == signal.SIGTERM:
        assert process.returncode == 143, stderr
        line = one_clear_line(stderr)
        assert line.startswith("tracegrade check: stopped by SIGTERM after line")
        assert line.endswith("the check is incomplete")
    else:
        assert process.returncode == -signal.SIGKILL


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
