"""Standard output checked like any output, whatever the buffering.

With PYTHONUNBUFFERED=1 (common in CI images and containers) Python hands
each write straight to the descriptor and ignores a short one: on a full
disk, `labels export > file` left a truncated file and exited 0. Now a
short write goes on with the rest, and a failed one stops the command:
exit 2, one line naming standard output, and a file cut back to what it
held before, so that no part passes for the whole. And a signal that comes
once an output is complete says it was written, not that nothing was.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import (
    StreamedCommand,
    commands_in_one_interpreter,
    start_tracegrade,
)
from tests.faults.conftest import (
    CAN_MOUNT,
    frozen,
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    write_stage_log,
)

pytestmark = pytest.mark.runs_long

REPORT = ("report", "log.eval", "--html", "report.html")
LOG_SAMPLES = 1000
"""About 200 KB of lines to label: more than the full disk takes."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stdout")
    write_stage_log(folder, LOG_SAMPLES)
    return folder


EXPORT = ("labels", "export", "log.eval")
APPENDED = b"kept\n"
SHORT_WRITE_LIMIT = 10_000


@pytest.fixture(scope="module")
def unbuffered(
    tmp_path_factory: pytest.TempPathFactory, folder: Path
) -> Iterator[dict[str, tuple[Path, subprocess.CompletedProcess[str]]]]:
    """With PYTHONUNBUFFERED=1, in one fresh interpreter: `score --out - >>`
    a file on a full 64 KB disk (where a tmpfs can be mounted), and `labels
    export` under `ulimit -f`. Each case's output file and how it ended."""
    outputs: dict[str, Path] = {}
    commands: list[StreamedCommand] = []
    with contextlib.ExitStack() as mounts:
        if CAN_MOUNT:
            mnt = mounts.enter_context(mounted_tmpfs(folder / "mnt", "size=64k"))
            outputs["full disk"] = mnt / "out.jsonl"
            outputs["full disk"].write_bytes(APPENDED)
            score = ("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs")
            commands.append(
                StreamedCommand(
                    (*score, "--out", "-"),
                    folder,
                    stdout=(outputs["full disk"], "append"),
                )
            )
        outputs["short write"] = folder / "limited.jsonl"
        commands.append(
            StreamedCommand(
                EXPORT,
                folder,
                stdout=(outputs["short write"], "capture"),
                soft_limits=((resource.RLIMIT_FSIZE, SHORT_WRITE_LIMIT),),
            )
        )
        done = commands_in_one_interpreter(
            commands,
            tmp_path_factory.mktemp("unbuffered"),
            env={"PYTHONUNBUFFERED": "1"},
        )
        yield {
            case: (out, result)
            for (case, out), result in zip(outputs.items(), done, strict=True)
        }


@needs_mount
def test_standard_output_to_a_full_disk_is_one_line_and_cut_back(
    folder: Path,
    unbuffered: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
) -> None:
    """`>>`: what the file held before stays, and only that."""
    out, done = unbuffered["full disk"]
    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr)
    assert "cannot write standard output (No space left on device)" in line
    assert out.read_bytes() == APPENDED
    assert not (folder / "logs").exists() or not any((folder / "logs").iterdir())


def test_a_short_write_to_standard_output_is_never_taken_for_the_whole(
    unbuffered: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
) -> None:
    """`ulimit -f`: the write that crosses the limit writes part of its
    bytes (a short write), the next fails; Python ignored the short one."""
    out, done = unbuffered["short write"]
    assert done.returncode == 2, done.stderr
    assert "cannot write standard output (File too large)" in one_clear_line(
        done.stderr
    )
    assert out.read_bytes() == b""


def test_a_signal_after_the_output_is_written_says_so(folder: Path) -> None:
    """SIGTERM the moment `report --html` has put its page under its name:
    the page stays, whole, and the line says it was written."""
    html = folder / "report.html"
    html.unlink(missing_ok=True)
    process = start_tracegrade(*REPORT, cwd=folder, stdout=Path(os.devnull))

    def published() -> None:
        deadline = time.monotonic() + 300
        while not html.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no report was written: {process.communicate()}")
            time.sleep(0.0005)

    with frozen(process, once=published):
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert one_clear_line(stderr) == (
        "tracegrade: stopped by SIGTERM; report.html was written"
    )
    assert html.read_text().rstrip().endswith("</html>")
