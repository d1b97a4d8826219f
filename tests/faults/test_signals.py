"""Signals at random points of a 200,000-record run leave nothing half-written.

`tracegrade score` writes its log and results under `.partial` names and
renames them only when both are complete. SIGINT and SIGTERM must remove
what was begun and say so in one line; SIGKILL cannot be caught, so what
it leaves must be under a `.partial` name. `tracegrade check` keeps its
sample ids in a temporary database that SQLite deletes as soon as it is
opened, so not even SIGKILL leaves that behind.

The points are random (seeded by pytest's test id, so a failure can be
rerun), spread over the line loop and the final writing of the logs, for
both log formats; the `.eval` run is split into parts, so that several are
open at once.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from tests.faults.conftest import (
    assert_no_final_outputs,
    digest,
    one_clear_line,
    snapshot,
    start_tracegrade,
)

# From start-up (past the interpreter's own, before tracegrade can catch a
# signal) to well into the line loop of the 200,000-record run on the
# project's 2-core machine; the `finishing` cases cover what comes after.
LOOP_SECONDS = (1.0, 8.0)


def _wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


class _InputWatch:
    """Watches, through /proc, a process read a file."""

    def __init__(self, pid: int, path: Path) -> None:
        self.pid = pid
        self.path = path.resolve()
        self.size = path.stat().st_size
        self.opened = False

    def read_whole(self) -> bool:
        """Whether it has read the file to its end, or read and closed it:
        from then on it is writing its logs."""
        positions = []
        for fd in Path(f"/proc/{self.pid}/fd").iterdir():
            try:
                if Path(fd.readlink()) == self.path:
                    info = Path(f"/proc/{self.pid}/fdinfo/{fd.name}").read_text()
                    positions.append(int(info.split("pos:", 1)[1].split()[0]))
            except OSError:
                continue  # closed meanwhile
        if positions:
            self.opened = True
            return max(positions) >= self.size
        return self.opened


# `eval` split into parts, so that several parts are open when the signal
# comes; `json` whole.
FORMATS = {
    "eval": ("--log-format", "eval", "--max-samples-per-log", "60000"),
    "json": ("--log-format", "json"),
}


def _signal_score(
    tmp_path: Path,
    large_input: Path,
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
    input_digest = digest(large_input)
    logs = work / "logs"
    process = start_tracegrade(
        "score",
        "stage_diagnosis",
        str(large_input),
        "--log-dir",
        str(logs),
        "--out",
        str(work / "results.jsonl"),
        *FORMATS[log_format],
        cwd=work,
    )
    if when == "loop":
        time.sleep(random.Random(seed).uniform(*LOOP_SECONDS))
    else:
        watch = _InputWatch(process.pid, large_input)
        assert _wait_for(watch.read_whole, timeout=300)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)
    assert digest(large_input) == input_digest
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
    large_input: Path,
    signum: int,
    exit_code: int,
    said: str,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, stderr, work, before = _signal_score(
        tmp_path, large_input, signum, when, request.node.nodeid, log_format
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
    large_input: Path,
    when: str,
    log_format: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, _, work, before = _signal_score(
        tmp_path, large_input, signal.SIGKILL, when, request.node.nodeid, log_format
    )

    assert returncode == -signal.SIGKILL
    assert_no_final_outputs(work, before)
    left = set(snapshot(work)) - set(before)
    assert all(name.endswith(".partial") for name in left), left


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_check_leaves_no_temporary_id_database(
    tmp_path: Path, large_input: Path, signum: int, request: pytest.FixtureRequest
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = start_tracegrade(
        "check",
        "stage_diagnosis",
        str(large_input),
        cwd=tmp_path,
        env={"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)},
    )
    time.sleep(random.Random(request.node.nodeid).uniform(*LOOP_SECONDS))
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)

    assert list(temporary.iterdir()) == []
    if signum == signal.SIGTERM:
        assert process.returncode == 143
        line = one_clear_line(stderr)
        assert line.startswith("tracegrade check: stopped by SIGTERM after line")
        assert line.endswith("the check is incomplete")
