"""A large run's workers signalled, stopped, killed or out of disk: the run
ends in one line, nothing under a final name and no worker left."""

from __future__ import annotations

import errno
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    process_state,
    snapshot,
    write_stage_records,
)
from tracegrade.bulk import workers

pytestmark = [
    pytest.mark.runs_long,
    pytest.mark.skipif(
        sys.platform != "linux", reason="finds the workers through /proc"
    ),
]

LARGE_RECORDS = 30_000  # well past where `--workers 2` scores in workers


@pytest.fixture(scope="module")
def large_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large-input") / "runs.jsonl"
    write_stage_records(path, LARGE_RECORDS)
    assert path.stat().st_size >= workers.PARALLEL_FROM // 16  # with --workers
    return path


def _workers_of(pid: int) -> list[int]:
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [
        int(child)
        for child in listed
        if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def _start(work: Path, records: Path, log_dir: str = "logs") -> Any:
    return start_tracegrade(
        *("score", "stage_diagnosis", str(records), "--workers", "2"),
        *("--log-dir", log_dir, "--out", str(work / "results.jsonl")),
        cwd=work,
    )


def _scoring(process: Any, logs: Path) -> list[int]:
    """The two workers, once both have begun a log."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before its workers scored"
        found = _workers_of(process.pid)
        if len(found) == 2 and len(list(logs.glob("*.eval.partial"))) == 2:
            return found
        time.sleep(0.02)
    pytest.fail("the workers never began their logs")


def _gone(pids: list[int]) -> bool:
    return all(process_state(pid) in (None, "Z") for pid in pids)


@pytest.mark.parametrize(
    ("signum", "to_group", "stop_a_worker", "exit_code", "said"),
    [
        (signal.SIGINT, True, False, 130, "interrupted (SIGINT)"),
        (signal.SIGTERM, False, True, 143, "stopped by SIGTERM"),
    ],
    ids=["SIGINT-group", "SIGTERM-worker-stopped"],
)
def test_a_signal_ends_the_run_and_its_workers(
    tmp_path: Path,
    large_input: Path,
    signum: int,
    to_group: bool,
    stop_a_worker: bool,
    exit_code: int,
    said: str,
) -> None:
    """A stopped worker (SIGSTOP) cannot hold the run: it is killed."""
    before = snapshot(tmp_path)
    process = _start(tmp_path, large_input)
    found = _scoring(process, tmp_path / "logs")
    if stop_a_worker:
        os.kill(found[0], signal.SIGSTOP)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == exit_code, stderr
    assert one_clear_line(stderr).startswith(f"tracegrade score: {said}")
    assert _gone(found), "a worker outlived the run"
    assert snapshot(tmp_path) == before


def test_a_worker_that_dies_ends_the_run_in_one_line(
    tmp_path: Path, large_input: Path
) -> None:
    """Killed part way (by the OOM killer, say)."""
    before = snapshot(tmp_path)
    process = _start(tmp_path, large_input)
    found = _scoring(process, tmp_path / "logs")
    os.kill(found[1], signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == 2, stderr
    line = one_clear_line(stderr)
    assert "a scoring worker process ended" in line
    assert "no log or results were written" in line
    assert _gone(found)
    assert snapshot(tmp_path) == before


@needs_mount
def test_a_full_disk_in_a_worker_is_one_line(tmp_path: Path, large_input: Path) -> None:
    """The worker's error (ENOSPC, as the OS said it) is raised in the main
    process, which says it as it says any full disk: here part way through
    the workers' logs."""
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    with mounted_tmpfs(work / "mnt", "size=2m"):
        process = _start(work, large_input, log_dir="mnt")
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 2, stderr
        line = one_clear_line(stderr)
        assert os.strerror(errno.ENOSPC) in line
        assert "no log or results were written" in line
        assert list((work / "mnt").iterdir()) == []
    assert snapshot(work) == before
