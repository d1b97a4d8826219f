"""The `.eval` writer's child process, hit the way it is hit in real runs.

`tracegrade score` writes `.eval` logs in a forked child (`bulk.forked`). A
terminal's Ctrl-C reaches the child too; the out-of-memory killer may take
it alone. Either way the run must end as any fault does: one clear line,
nothing under a final name, not even a `.partial` file left behind.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.commands import ServedProcess
from tests.faults.conftest import (
    SIGNAL_PART_SAMPLES,
    InputWatch,
    assert_no_final_outputs,
    digest,
    frozen,
    one_clear_line,
    process_state,
    snapshot,
    start_tracegrade,
)
from tracegrade.bulk.forked import WriterProcess


def _start(signal_input: Path, work: Path) -> ServedProcess:
    return start_tracegrade(
        *("score", "stage_diagnosis", str(signal_input)),
        *("--log-dir", str(work / "logs")),
        *("--max-samples-per-log", str(SIGNAL_PART_SAMPLES)),
        cwd=work,
    )


def _writer_pid(pid: int, timeout: float = 120.0) -> int:
    """The pid of the writer child `tracegrade score` forks at start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            children = []  # ended, and reaped
        if process_state(pid) in (None, "Z"):
            raise AssertionError("tracegrade score ended without a writer process")
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise AssertionError("tracegrade score started no writer process")


@contextmanager
def _frozen_in_the_line_loop(
    process: ServedProcess, signal_input: Path, work: Path
) -> Iterator[None]:
    """`process` and its writer frozen a third of the way through the input,
    its logs begun (see `frozen`): a signal sent in the block lands there."""
    watch = InputWatch(process, signal_input)
    with frozen(process, once=lambda: watch.wait_until_past(1 / 3)):
        watch.assert_mid_input()
        assert list((work / "logs").glob("*.eval.partial")), "no log was begun"
        yield


def test_a_killed_writer_stops_the_run_with_one_line_and_nothing_left(
    tmp_path: Path, signal_input: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    input_digest = digest(signal_input)
    process = _start(signal_input, work)
    writer = _writer_pid(process.pid)
    with _frozen_in_the_line_loop(process, signal_input, work):
        os.kill(writer, signal.SIGKILL)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 2, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade score: the log writer process ended")
    assert "killed by SIGKILL" in line
    assert "no log or results were written" in line
    assert digest(signal_input) == input_digest
    assert_no_final_outputs(work, before)
    assert snapshot(work) == before  # no .partial either: the run removed them


def test_ctrl_c_to_the_process_group_is_handled_once_by_the_run(
    tmp_path: Path, signal_input: Path
) -> None:
    # The writer ignores SIGINT; the main process removes everything, the
    # writer's files included, and says so once.
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    process = _start(signal_input, work)
    _writer_pid(process.pid)
    with _frozen_in_the_line_loop(process, signal_input, work):
        os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 130, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade score: interrupted (SIGINT)")
    assert snapshot(work) == before


@pytest.fixture
def nothing_frozen() -> Iterator[None]:
    """A program that has frozen nothing, as `tracegrade score` has not (the
    test session freezes what it has collected: tests/conftest.py)."""
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    yield
    if frozen:
        gc.freeze()


@pytest.mark.usefixtures("nothing_frozen")
@pytest.mark.parametrize("end", ["close", "abort"])
def test_the_writer_leaves_the_garbage_collector_as_it_found_it(end: str) -> None:
    """The writer freezes the objects it shares with its child (so neither
    process's collections copy their pages) only for the run's length: a
    program scoring many files must get its garbage collected again."""
    before = gc.get_freeze_count()
    process = WriterProcess()
    assert gc.get_freeze_count() > 0
    getattr(process, end)()
    assert gc.get_freeze_count() == before
    with pytest.raises(ChildProcessError):
        os.waitpid(process.pid, os.WNOHANG)  # reaped


@pytest.mark.usefixtures("nothing_frozen")
def test_a_fork_that_fails_leaves_no_pipe_and_nothing_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Out of processes (EAGAIN), the run fails as any fault does, and the
    program is left as it was."""

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before_frozen = gc.get_freeze_count()
    before_fds = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", no_fork)
    with pytest.raises(BlockingIOError):
        WriterProcess()
    assert gc.get_freeze_count() == before_frozen
    assert set(os.listdir("/proc/self/fd")) == before_fds
