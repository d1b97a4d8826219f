"""Shared pieces of the fault tests: a large input, real runs, and the checks.

Faults are caused the way they happen to users: the real `tracegrade`
command in a subprocess, real signals, a real full or read-only file
system, real links. After each, the same four things are checked (see
`assert_fault_handled`): the inputs are unchanged, nothing complete-looking
is left, stderr is one clear line, and there is no traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from tests.support import SUBPROCESS_ENV

LARGE_RECORDS = 200_000
# Names a reader takes for a finished output. Anything else left after a
# kill must end in `.partial`.
FINAL_SUFFIXES = (".json", ".eval", ".jsonl", ".html")


def tracegrade(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: IO[bytes] | int = subprocess.DEVNULL,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS` as a user runs it, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "tracegrade.cli", *args],
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=preexec_fn,
    )


def start_tracegrade(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tracegrade.cli", *args],
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    # As from a terminal: a test run started in the background (`nox &`,
    # `nohup`) inherits SIGINT ignored, and a process that starts with it
    # ignored rightly keeps ignoring it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` and its hash, links not followed."""
    found: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(directory))] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(directory))] = digest(path)
    return found


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
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            context = ["D1"] if number % 3 else ["D1", "D2"]
            record = {
                "required": ["D1", "D2"],
                "context": context,
                "correct": number % 2 == 0,
            }
            out.write(json.dumps({"id": f"run-{number}", "input": record}) + "\n")


@pytest.fixture(scope="session")
def large_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200,000 stage records (about 19 MB), written once per session."""
    path = tmp_path_factory.mktemp("large") / "runs.jsonl"
    write_stage_records(path, LARGE_RECORDS)
    return path


def _can_mount() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0


@contextmanager
def mounted_tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A real tmpfs at `where` (root only): a small or read-only file system."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
        check=True,
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


needs_mount = pytest.mark.skipif(
    not _can_mount(), reason="mounting a tmpfs needs root on Linux"
)
