"""The `.eval` writer thread, hit the way it is hit in real runs.

`tracegrade score` writes `.eval` logs on a thread of its own
(`bulk.threaded`). A terminal's Ctrl-C reaches the whole process group; a
full disk or a bug can end the writer while the main thread still scores.
Either way the run must end as any fault does: one clear line, nothing
under a final name, not even a `.partial` file, and no thread left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    SIGNAL_PART_SAMPLES,
    InputWatch,
    digest,
    frozen,
    one_clear_line,
    snapshot,
    write_stage_records,
)
from tests.support import working_in
from tracegrade.bulk import evallog
from tracegrade.bulk.scoring import LineScorer
from tracegrade.cli import main

RECORDS = 3000
INTERRUPTED_AT = 1000
"""A line past the writer's queue (`threaded._QUEUED` messages)."""


def test_ctrl_c_to_the_process_group_is_handled_once_by_the_run(
    tmp_path: Path, signal_input: Path
) -> None:
    # Only the main thread sees the signal; it stops the writer, which
    # removes its files, and says so once.
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    input_digest = digest(signal_input)
    process = start_tracegrade(
        *("score", "stage_diagnosis", str(signal_input)),
        *("--log-dir", str(work / "logs")),
        *("--max-samples-per-log", str(SIGNAL_PART_SAMPLES)),
        cwd=work,
    )
    watch = InputWatch(process, signal_input)
    with frozen(process, once=lambda: watch.wait_until_past(1 / 3)):
        watch.assert_mid_input()
        assert list((work / "logs").glob("*.eval.partial")), "no log was begun"
        os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 130, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade score: interrupted (SIGINT)")
    assert snapshot(work) == before
    assert digest(signal_input) == input_digest


@contextlib.contextmanager
def _no_thread_left() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


def _score_in_process(work: Path) -> tuple[int, str]:
    """`tracegrade score` of `runs.jsonl` in this process (through click),
    so that the test can slow down or break its writer."""
    with working_in(work):
        result = CliRunner().invoke(
            main, ["score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"]
        )
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exc_info
    )
    return result.exit_code, result.stderr


def test_an_error_on_the_writer_thread_stops_the_run_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample the writer cannot write (the disk full, said by the OS
    part way) is raised in the main thread at its next sample."""
    write_stage_records(tmp_path / "runs.jsonl", RECORDS)
    add = evallog.EvalLogWriter.add
    added = 0

    def add_until_full(self: evallog.EvalLogWriter, parts: Any) -> None:
        nonlocal added
        added += 1
        if added == RECORDS // 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        add(self, parts)

    monkeypatch.setattr(evallog.EvalLogWriter, "add", add_until_full)
    before = snapshot(tmp_path)
    with _no_thread_left():
        exit_code, stderr = _score_in_process(tmp_path)
    assert exit_code == 2, stderr
    line = one_clear_line(stderr)
    assert "No space left on device" in line
    assert "no log or results were written" in line
    assert snapshot(tmp_path) == before
    assert not list((tmp_path / "logs").iterdir())


def test_a_signal_while_the_writer_is_behind_stops_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the main thread waits for room in the writer's queue
    (the writer slowed down): the writer stops after its current sample,
    with everything queued dropped, and its files are removed."""
    write_stage_records(tmp_path / "runs.jsonl", RECORDS)
    add = evallog.EvalLogWriter.add

    def slow_add(self: evallog.EvalLogWriter, parts: Any) -> None:
        time.sleep(0.002)
        add(self, parts)

    score_line = LineScorer.score_line

    def interrupted_late(self: LineScorer, number: int, text: str) -> Any:
        if number == INTERRUPTED_AT:
            raise KeyboardInterrupt
        return score_line(self, number, text)

    monkeypatch.setattr(evallog.EvalLogWriter, "add", slow_add)
    monkeypatch.setattr(LineScorer, "score_line", interrupted_late)
    before = snapshot(tmp_path)
    with _no_thread_left():
        exit_code, stderr = _score_in_process(tmp_path)
    assert exit_code == 130, stderr
    assert one_clear_line(stderr).startswith("tracegrade score: interrupted (SIGINT)")
    assert snapshot(tmp_path) == before
    assert not list((tmp_path / "logs").iterdir())
