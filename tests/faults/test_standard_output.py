"""Standard output checked like any output, whatever the buffering: with
PYTHONUNBUFFERED=1 Python ignores a short write, and `labels export > file`
on a full disk once left a truncated file and exited 0. A failed write now
stops the command (exit 2, one line) and cuts the file back to what it held."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
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
    wait_for,
    write_stage_log,
)

pytestmark = pytest.mark.runs_long

APPENDED = b"kept\n"
Ended = dict[str, tuple[Path, subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stdout")
    write_stage_log(folder, 1000)  # about 200 KB to label: more than a full disk
    return folder


@pytest.fixture(scope="module")
def unbuffered(
    tmp_path_factory: pytest.TempPathFactory, folder: Path
) -> Iterator[Ended]:
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
            score = ["score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"]
            append = (outputs["full disk"], "append")
            commands.append(
                StreamedCommand([*score, "--out", "-"], folder, stdout=append)
            )
        outputs["short write"] = folder / "limited.jsonl"
        commands.append(
            StreamedCommand(
                ["labels", "export", "log.eval"],
                folder,
                stdout=(outputs["short write"], "capture"),
                soft_limits=((resource.RLIMIT_FSIZE, 10_000),),
            )
        )
        done = commands_in_one_interpreter(
            commands,
            tmp_path_factory.mktemp("unbuffered"),
            env={"PYTHONUNBUFFERED": "1"},
        )
        yield dict(zip(outputs, zip(outputs.values(), done, strict=True), strict=True))


@needs_mount
def test_standard_output_to_a_full_disk_is_one_line_and_cut_back(
    folder: Path, unbuffered: Ended
) -> None:
    """`>>`: what the file held before stays, and only that."""
    out, done = unbuffered["full disk"]
    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr)
    assert "cannot write standard output (No space left on device)" in line
    assert out.read_bytes() == APPENDED
    assert not (folder / "logs").exists() or not any((folder / "logs").iterdir())


def test_a_short_write_to_standard_output_is_never_taken_for_the_whole(
    unbuffered: Ended,
) -> None:
    """`ulimit -f`: the write that crosses the limit writes part of its
    bytes (a short write), the next fails; Python ignored the short one."""
    out, done = unbuffered["short write"]
    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr)
    assert "cannot write standard output (File too large)" in line
    assert out.read_bytes() == b""


def test_a_signal_after_the_output_is_written_says_so(folder: Path) -> None:
    """SIGTERM the moment `report --html` has put its page under its name:
    the page stays, whole, and the line says it was written."""
    html = folder / "report.html"
    process = start_tracegrade(
        "report",
        "log.eval",
        "--html",
        "report.html",
        cwd=folder,
        stdout=Path(os.devnull),
    )
    with frozen(process, once=lambda: wait_for(html.exists, process, "a report")):
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert one_clear_line(stderr) == (
        "tracegrade: stopped by SIGTERM; report.html was written"
    )
    assert html.read_text().rstrip().endswith("</html>")
