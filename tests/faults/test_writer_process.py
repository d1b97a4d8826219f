"""The `.eval` writer process of a large run, hit the way it is hit in real runs.

A large input's `.eval` log is written by a child process (`bulk.spawned`),
in a session of its own. A terminal's signals reach the main process only;
a full disk, a kill or a bug can end the child while the main process
still scores; the main process can be killed outright. Each way, the run
ends as any fault does: one clear line, nothing under a final name, the
child gone, and once the child has seen its input end, not even a
`.eval.partial` file.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    TIGHT_WITHIN,
    InputWatch,
    assert_no_final_outputs,
    digest,
    frozen,
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    process_state,
    snapshot,
    write_stage_records,
)
from tests.support import working_in
from tracegrade.bulk import spawned
from tracegrade.bulk.scoring import LineScorer

pytestmark = [
    pytest.mark.runs_long,
    pytest.mark.skipif(
        sys.platform != "linux",
        reason="watches the run through /proc and signals process groups",
    ),
]

LARGE_RECORDS = 14_000
"""Stage records of `write_stage_records` enough to pass
`spawned.WRITER_PROCESS_FROM`: a run of them writes in a child process."""


@pytest.fixture(scope="module")
def large_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large-input") / "runs.jsonl"
    write_stage_records(path, LARGE_RECORDS)
    assert spawned.writes_in_a_process(str(path))
    return path


def _children(pid: int) -> list[int]:
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in listed]


def _wait_gone(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while process_state(pid) not in (None, "Z"):
        if time.monotonic() > deadline:
            pytest.fail(f"the writer process {pid} is still running")
        time.sleep(0.05)


def _start_score(work: Path, records: Path) -> Any:
    return start_tracegrade(
        *("score", "stage_diagnosis", str(records)),
        *("--log-dir", str(work / "logs"), "--out", str(work / "results.jsonl")),
        cwd=work,
    )


@pytest.mark.parametrize(
    ("signum", "exit_code", "said", "when"),
    [
        (signal.SIGINT, 130, "interrupted (SIGINT)", "loop"),
        (signal.SIGTERM, 143, "stopped by SIGTERM", "finishing"),
    ],
    ids=["SIGINT-loop", "SIGTERM-finishing"],
)
def test_a_signal_to_the_process_group_stops_the_writer_process(
    tmp_path: Path,
    large_input: Path,
    signum: int,
    exit_code: int,
    said: str,
    when: str,
    request: pytest.FixtureRequest,
) -> None:
    """Sent to the whole group, as a terminal sends it: the child, in a
    session of its own, does not see it; the main process stops the child,
    which removes its logs, and waits for it."""
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    input_digest = digest(large_input)
    process = _start_score(work, large_input)
    watch = InputWatch(process, large_input)
    if when == "loop":
        fraction = random.Random(request.node.nodeid).uniform(0.05, 0.6)
        wait = partial(watch.wait_until_past, fraction, tight_within=TIGHT_WITHIN)
    else:
        wait = partial(watch.wait_until_closed, tight_within=TIGHT_WITHIN)
    with frozen(process, once=wait):
        if when == "loop":
            watch.assert_mid_input()
        else:
            watch.assert_closed()
        (writer,) = _children(process.pid)
        assert list((work / "logs").glob("*.eval.partial")), "no log was begun"
        os.killpg(process.pid, signum)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == exit_code, stderr
    assert one_clear_line(stderr).startswith(f"tracegrade score: {said}")
    assert process_state(writer) is None, "the writer process was not waited for"
    assert snapshot(work) == before
    assert digest(large_input) == input_digest


def test_sigkill_of_the_run_leaves_the_writer_process_to_remove_its_logs(
    tmp_path: Path, large_input: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL cannot be caught, but the child sees its input end, as it
    would mid-message, and removes the logs it began."""
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    process = _start_score(work, large_input)
    watch = InputWatch(process, large_input)
    fraction = random.Random(request.node.nodeid).uniform(0.05, 0.6)
    with frozen(
        process,
        once=partial(watch.wait_until_past, fraction, tight_within=TIGHT_WITHIN),
    ):
        watch.assert_mid_input()
        (writer,) = _children(process.pid)
        assert list((work / "logs").glob("*.eval.partial")), "no log was begun"
        process.send_signal(signal.SIGKILL)
    process.communicate(timeout=300)
    _wait_gone(writer)

    assert process.returncode == -signal.SIGKILL
    assert_no_final_outputs(work, before)
    assert not list((work / "logs").glob("*.eval*"))
    left = set(snapshot(work)) - set(before)
    assert all(name.endswith(".partial") for name in left), left


def test_a_writer_process_that_dies_stops_the_run_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed part way (by the OOM killer, say): the main process finds its
    pipe broken at the next batch and says so once; the log the child
    left under its `.partial` name is removed."""
    from click.testing import CliRunner

    from tracegrade.cli import main

    write_stage_records(tmp_path / "runs.jsonl", 3000)
    monkeypatch.setattr(spawned, "WRITER_PROCESS_FROM", 0)
    started: list[spawned.WriterProcess] = []
    start = spawned.WriterProcess.__init__

    def remembered(self: spawned.WriterProcess) -> None:
        start(self)
        started.append(self)

    score_line = LineScorer.score_line

    def killing_the_writer(self: LineScorer, number: int, text: str) -> Any:
        if number == 1000:
            (writer,) = started
            os.kill(writer._process.pid, signal.SIGKILL)
            writer._process.wait()
        return score_line(self, number, text)

    monkeypatch.setattr(spawned.WriterProcess, "__init__", remembered)
    monkeypatch.setattr(LineScorer, "score_line", killing_the_writer)
    before = snapshot(tmp_path)
    with working_in(tmp_path):
        result = CliRunner().invoke(
            main, ["score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"]
        )

    assert result.exit_code == 2, result.stderr
    line = one_clear_line(result.stderr)
    assert f"the log writer process has ended (exit code {-signal.SIGKILL})" in line
    assert "no log or results were written" in line
    assert snapshot(tmp_path) == before
    assert not list((tmp_path / "logs").iterdir())


@needs_mount
@pytest.mark.parametrize("size", ["64k", "2m"])
def test_a_full_disk_in_the_writer_process_is_one_line(
    tmp_path: Path, large_input: Path, size: str
) -> None:
    """The child's error (ENOSPC, as the OS said it) is raised in the main
    process, which says it as it says any full disk."""
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(work)
    with mounted_tmpfs(work / "mnt", f"size={size}"):
        process = start_tracegrade(
            *("score", "stage_diagnosis", str(large_input), "--log-dir", "mnt"),
            *("--out", str(work / "results.jsonl")),
            cwd=work,
        )
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 2, stderr
        line = one_clear_line(stderr)
        assert os.strerror(errno.ENOSPC) in line
        assert "no log or results were written" in line
        assert list((work / "mnt").iterdir()) == []
    assert snapshot(work) == before


def test_only_a_large_regular_file_is_written_in_a_process(tmp_path: Path) -> None:
    large = tmp_path / "large.jsonl"
    with large.open("wb") as sparse:
        sparse.truncate(spawned.WRITER_PROCESS_FROM)
    small = tmp_path / "small.jsonl"
    with small.open("wb") as sparse:
        sparse.truncate(spawned.WRITER_PROCESS_FROM - 1)

    assert spawned.writes_in_a_process(str(large))
    assert not spawned.writes_in_a_process(str(small))
    assert not spawned.writes_in_a_process("-")  # stdin: its size is unknown
    assert not spawned.writes_in_a_process(str(tmp_path / "missing.jsonl"))
