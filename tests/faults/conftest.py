"""Fault tests' inputs and checks; a signal lands at a marker seen from /proc
while the process is frozen, never after a guessed delay."""

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
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import NoReturn

import pytest

from tests.commands import CommandProcess, run_tracegrade
from tests.support import write_lines
from tracegrade.cli.labels import lock_path

# Each phase a marker stands for must outlast a freeze (else `workload_too_small`).
SIGNAL_RECORDS = 6_000
SHORT_SIGNAL_RECORDS = SIGNAL_RECORDS // 2
FINAL_SUFFIXES = (".json", ".eval", ".jsonl", ".html")  # else `.partial`
# Between two looks at /proc: tightly only within TIGHT_WITHIN of the mark.
POLL_SECONDS = 0.0005
STARTING_POLL_SECONDS = 0.005
TIGHT_WITHIN = 0.05


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
    for name, value in before.items():
        assert after.get(name) == value, f"{name} was changed or removed"
    new = set(after) - set(before)
    complete_looking = [name for name in new if name.endswith(FINAL_SUFFIXES)]
    assert not complete_looking, complete_looking


def write_stage_records(path: Path, count: int) -> None:
    write_lines(path, [{"id": f"run-{n}", "input": _stage(n)} for n in range(count)])


def _stage(n: int) -> dict[str, object]:
    context = ["D1"] if n % 3 else ["D1", "D2"]
    return {"required": ["D1", "D2"], "context": context, "correct": n % 2 == 0}


def write_stage_log(folder: Path, count: int) -> Path:
    """`folder/log.eval`: `tracegrade score` of `count` stage records."""
    write_stage_records(folder / "runs.jsonl", count)
    done = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    (log,) = (folder / "logs").glob("*.eval")
    shutil.move(log, folder / "log.eval")
    shutil.rmtree(folder / "logs")
    return folder / "log.eval"


def write_labels(path: Path, count: int, every: int) -> None:
    labels = [{"id": f"run-{n}", "correct": n % every == 0} for n in range(count)]
    write_lines(path, labels)


@pytest.fixture(scope="session")
def signal_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("signal-input") / "runs.jsonl"
    write_stage_records(path, SIGNAL_RECORDS)
    return path


@pytest.fixture(scope="session")
def short_signal_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("short-signal-input") / "runs.jsonl"
    write_stage_records(path, SHORT_SIGNAL_RECORDS)
    return path


def workload_too_small(what: str) -> NoReturn:
    """Fail, never pass, a test whose signal cannot land where it must."""
    pytest.fail(
        f"{what}: the workload is too small for this machine "
        "(raise SIGNAL_RECORDS, or SHORT_SIGNAL_RECORDS for the test's "
        "short_signal_input, in tests/faults/conftest.py)",
        pytrace=False,
    )


def ended_before(process: CommandProcess, what: str) -> NoReturn:
    """Fail a test whose process ended (too fast, or failed) before `what`."""
    _, stderr = process.communicate()
    if process.returncode == 0:
        workload_too_small(f"the process ended before {what}")
    pytest.fail(
        f"the process failed (exit code {process.returncode}) before {what}: {stderr}"
    )


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat; None once the process is reaped."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return None


class InputWatch:
    """How far a process has read an input, from /proc/PID/fdinfo."""

    def __init__(self, process: CommandProcess, path: Path) -> None:
        self.process, self.pid = process, process.pid
        self.path, self.size = path.resolve(), path.stat().st_size
        self.opened = False

    def position(self) -> int | None:
        with contextlib.suppress(OSError):  # the process is gone
            for fd in os.listdir(f"/proc/{self.pid}/fd"):
                with contextlib.suppress(OSError):  # closed meanwhile
                    if os.readlink(f"/proc/{self.pid}/fd/{fd}") == str(self.path):
                        info = Path(f"/proc/{self.pid}/fdinfo/{fd}").read_bytes()
                        self.opened = True
                        return int(info.split(b"pos:", 1)[1].split()[0])
        return None

    def wait_until_past(self, fraction: float) -> None:
        target = fraction * self.size
        self._wait(
            lambda position: position is not None and position >= target,
            f"{fraction:.0%} of {self.path.name}",
            target - TIGHT_WITHIN * self.size,
        )

    def wait_until_closed(self) -> None:
        self._wait(
            lambda position: position is None and self.opened,
            f"the closing of {self.path.name}",
            (1 - TIGHT_WITHIN) * self.size,
        )

    def _wait(
        self,
        reached: Callable[[int | None], bool],
        what: str,
        tight_from: float,
    ) -> None:
        deadline = time.monotonic() + 300
        while not reached(position := self.position()):
            if process_state(self.pid) in (None, "Z"):
                ended_before(self.process, what)
            if time.monotonic() > deadline:
                pytest.fail(f"no sign of {what} after 300 s")
            near = self.opened and (position is None or position >= tight_from)
            time.sleep(POLL_SECONDS if near else STARTING_POLL_SECONDS)

    def assert_mid_input(self) -> None:
        position = self.position()
        if position is None or position >= self.size:
            workload_too_small(f"{self.path.name} was read whole when frozen")

    def assert_closed(self) -> None:
        assert self.opened and self.position() is None, self.path


def holds_lock(pid: int, log: Path) -> bool:
    """Whether `pid` holds `labels apply`'s lock on `log` (not waiting: '->')."""
    try:
        inode = Path(lock_path(str(log))).stat().st_ino
    except FileNotFoundError:
        return False
    return any(
        f[1] != "->" and f[4] == str(pid) and f[5].rsplit(":", 1)[-1] == str(inode)
        for f in map(str.split, Path("/proc/locks").read_text().splitlines())
    )


def wait_stopped(pid: int, timeout: float = 60.0) -> bool:
    """Wait until the process shows it is stopped; False if it has ended."""
    deadline = time.monotonic() + timeout
    while (state := process_state(pid)) not in ("T", "t"):
        if state in (None, "Z", "X"):
            return False
        if time.monotonic() > deadline:
            pytest.fail(f"process {pid} did not stop (state {state})")
        time.sleep(POLL_SECONDS)
    return True


@contextmanager
def frozen(
    process: CommandProcess, once: Callable[[], None] = lambda: None
) -> Iterator[None]:
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
        if not wait_stopped(process.pid):
            ended_before(process, "it could be frozen")
        yield
    finally:
        process.send_signal(signal.SIGCONT)


def signal_mid_input(
    process: CommandProcess, path: Path, signum: int, fraction: float
) -> None:
    """Send `signum` once `process` has read `fraction` of `path`, frozen."""
    watch = InputWatch(process, path)
    with frozen(process, once=partial(watch.wait_until_past, fraction)):
        watch.assert_mid_input()
        process.send_signal(signum)


def assert_still_writing(directory: Path, before: dict[str, str]) -> None:
    """Outputs begun under `.partial` names, none final yet (frozen process)."""
    names = {str(path.relative_to(directory)) for path in directory.rglob("*")}
    new = names - set(before)
    final = sorted(name for name in new if name.endswith(FINAL_SUFFIXES))
    if final:
        workload_too_small(f"the run had finished when frozen ({final})")
    if not any(name.endswith(".partial") for name in new):
        workload_too_small("no output was begun when frozen")


@contextmanager
def mounted_tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A real tmpfs at `where` (root only)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
        check=True,
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


CAN_MOUNT = sys.platform == "linux" and os.geteuid() == 0
needs_mount = pytest.mark.skipif(
    not CAN_MOUNT, reason="mounting a tmpfs needs root on Linux"
)
