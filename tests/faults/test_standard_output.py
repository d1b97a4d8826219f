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

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.commands import start_tracegrade, tracegrade_process
from tests.faults.conftest import (
    frozen,
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    write_stage_log,
)

REPORT = ("report", "log.eval", "--html", "report.html")
LOG_SAMPLES = 1000
"""About 200 KB of lines to label: more than the full disk takes."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stdout")
    write_stage_log(folder, LOG_SAMPLES)
    return folder


def _tracegrade(
    *args: str,
    cwd: Path,
    stdout: Path,
    unbuffered: bool,
    append: bool = False,
    file_size: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS > STDOUT` (`>>` with `append`), buffered or not, under
    `ulimit -f FILE_SIZE` if given."""
    # An empty PYTHONUNBUFFERED is as good as none, whatever the caller's.
    env = {"PYTHONUNBUFFERED": "1" if unbuffered else ""}
    limits = (
        [] if file_size is None else [(resource.RLIMIT_FSIZE, file_size, file_size)]
    )
    with stdout.open("ab" if append else "wb") as out:
        return tracegrade_process(
            *args, cwd=cwd, env=env, stdout=out.fileno(), rlimits=limits
        )


EXPORT = ("labels", "export", "log.eval")
SCORE_TO_STDOUT = ("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs")


@needs_mount
@pytest.mark.parametrize(
    ("args", "unbuffered", "held"),
    [
        (EXPORT, True, b""),
        (EXPORT, False, b""),
        # `>>`: what the file held before stays, and only that.
        ((*SCORE_TO_STDOUT, "--out", "-"), True, b"kept\n"),
    ],
    ids=["unbuffered", "buffered", "appended"],
)
def test_standard_output_to_a_full_disk_is_one_line_and_cut_back(
    folder: Path, args: tuple[str, ...], unbuffered: bool, held: bytes
) -> None:
    with mounted_tmpfs(folder / f"mnt-{len(args)}-{unbuffered}", "size=64k") as mnt:
        out = mnt / "out.jsonl"
        out.write_bytes(held)
        done = _tracegrade(
            *args, cwd=folder, stdout=out, unbuffered=unbuffered, append=bool(held)
        )
        assert done.returncode == 2, done.stderr
        line = one_clear_line(done.stderr)
        assert "cannot write standard output (No space left on device)" in line
        assert out.read_bytes() == held
    assert not (folder / "logs").exists() or not any((folder / "logs").iterdir())


def test_a_short_write_to_standard_output_is_never_taken_for_the_whole(
    folder: Path,
) -> None:
    """`ulimit -f`: the write that crosses the limit writes part of its
    bytes (a short write), the next fails; Python ignored the short one."""
    out = folder / "limited.jsonl"
    done = _tracegrade(
        "labels",
        "export",
        "log.eval",
        cwd=folder,
        stdout=out,
        unbuffered=True,
        file_size=10_000,
    )
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
