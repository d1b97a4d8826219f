"""Fault tests' inputs and checks; a signal lands at a marker seen in /proc."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.commands import CommandProcess, run_tracegrade
from tests.support import write_lines

FINAL_SUFFIXES = (".json", ".eval", ".jsonl", ".html")  # else `.partial`
CAN_MOUNT = sys.platform == "linux" and os.geteuid() == 0
needs_mount = pytest.mark.skipif(not CAN_MOUNT, reason="mounting needs root on Linux")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` and its hash, links not followed."""
    return {
        str(path.relative_to(directory)): "-> " + os.readlink(path)
        if path.is_symlink()
        else digest(path)
        for path in sorted(directory.rglob("*"))
        if path.is_symlink() or path.is_file()
    }


def one_clear_line(stderr: str) -> str:
    """The one line a fault prints; fails on a traceback or more lines."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def assert_no_final_outputs(directory: Path, before: dict[str, str]) -> None:
    """Nothing new under a final-looking name; old files unchanged."""
    after = snapshot(directory)
    assert {name: after.get(name) for name in before} == before
    final = [name for name in set(after) - set(before) if name.endswith(FINAL_SUFFIXES)]
    assert not final, final


def write_stage_records(path: Path, count: int) -> None:
    records = []
    for n in range(count):
        context = ["D1"] if n % 3 else ["D1", "D2"]
        stage = {"required": ["D1", "D2"], "context": context, "correct": n % 2 == 0}
        records.append({"id": f"run-{n}", "input": stage})
    write_lines(path, records)


SCORED_RECORDS = 400  # reading, scoring and writing the log each last a while


@pytest.fixture(scope="session")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`runs.jsonl`, its log `log.eval` (copied to `base/` and `new/`), and
    labels: `staff.jsonl` of every run, `even.jsonl` and `odd.jsonl`."""
    folder = tmp_path_factory.mktemp("scored")
    write_stage_records(folder / "runs.jsonl", SCORED_RECORDS)
    args = ("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs")
    assert run_tracegrade(*args, cwd=folder).returncode == 0
    (log,) = (folder / "logs").glob("*.eval")
    for copy in ("log.eval", "base/run.eval", "new/run.eval"):
        (folder / copy).parent.mkdir(exist_ok=True)
        shutil.copyfile(log, folder / copy)
    shutil.rmtree(folder / "logs")
    numbers = range(SCORED_RECORDS)
    staff = [{"id": f"run-{n}", "correct": n % 3 == 0} for n in numbers]
    write_lines(folder / "staff.jsonl", staff)
    labels = [{"id": f"run-{n}", "correct": n % 4 < 2} for n in numbers]
    write_lines(folder / "even.jsonl", labels[::2])
    write_lines(folder / "odd.jsonl", labels[1::2])
    return folder


def workload_too_small(what: str) -> NoReturn:
    """Fail, never pass, a test whose signal cannot land where it must."""
    message = f"{what}: the workload is too small for this machine: more records"
    pytest.fail(message, pytrace=False)


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat; None once the process is reaped."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return None


def wait_for(reached: Callable[[], object], process: CommandProcess, what: str) -> None:
    """Poll until `reached()`; fail if `process` ends first or after 300 s."""
    deadline = time.monotonic() + 300
    while not reached():
        if process_state(process.pid) in (None, "Z"):
            _, stderr = process.communicate()
            if process.returncode == 0:
                workload_too_small(f"the process ended before {what}")
            pytest.fail(f"the process failed before {what}: {stderr}")
        if time.monotonic() > deadline:
            pytest.fail(f"no sign of {what} after 300 s")
        time.sleep(0.0005)


class InputWatch:
    """How far a process has read an input, from /proc/PID/fdinfo."""

    def __init__(self, process: CommandProcess, path: Path) -> None:
        self.process, self.path = process, path.resolve()
        self.size = path.stat().st_size
        self.opened = False

    def position(self) -> int | None:
        folder = f"/proc/{self.process.pid}"
        with contextlib.suppress(OSError):  # the process is gone
            for fd in os.listdir(f"{folder}/fd"):
                with contextlib.suppress(OSError):  # closed meanwhile
                    if os.readlink(f"{folder}/fd/{fd}") == str(self.path):
                        self.opened = True
                        info = Path(f"{folder}/fdinfo/{fd}").read_bytes()
                        return int(info.split(b"pos:")[1].split()[0])
        return None

    def wait_until_past(self, fraction: float) -> None:
        def past() -> bool:
            return (self.position() or 0) >= fraction * self.size

        wait_for(past, self.process, f"{fraction:.0%} of {self.path.name}")

    def wait_until_closed(self) -> None:
        def closed() -> bool:
            return self.position() is None and self.opened

        wait_for(closed, self.process, f"the closing of {self.path.name}")


@contextlib.contextmanager
def frozen(process: CommandProcess, once: Callable[[], object]) -> Iterator[None]:
    """The process stopped as soon as `once` returns, for the block."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(PermissionError):  # nice -10 as root: stop promptly
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    try:
        once()
        process.send_signal(signal.SIGSTOP)
    finally:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, before)
    try:
        wait_for(lambda: process_state(process.pid) in ("T", "t"), process, "a stop")
        yield
    finally:
        process.send_signal(signal.SIGCONT)


@contextlib.contextmanager
def mounted_tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A real tmpfs at `where` (root only)."""
    where.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)]
    subprocess.run(mount, check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
