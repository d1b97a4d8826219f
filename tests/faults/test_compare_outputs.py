"""`tracegrade compare` writing long lists (on disk past
`TRACEGRADE_COMPARE_CHUNK` pairs, as a million would be), and into a pipe
whose reader stops early: one line, never a traceback. (A full disk under
standard output is test_standard_output's.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.commands import StreamedCommand, commands_in_one_interpreter, run_tracegrade
from tests.support import write_lines

PAIRS = 600
IDS = [f"run-{n:05d}" for n in range(PAIRS)]
CHUNK_ENV = {"TRACEGRADE_COMPARE_CHUNK": "50"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """BASE passes every record; NEW misses a required document in each."""
    root = tmp_path_factory.mktemp("compare-outputs")
    for name, context in (("base", ["D1", "D2"]), ("new", ["D2"])):
        record = {"required": ["D1", "D2"], "context": context, "correct": True}
        lines = [{"id": sample, "input": record} for sample in IDS]
        records = write_lines(root / f"{name}.jsonl", lines)
        args = ("score", "stage_diagnosis", records, "--log-dir", name, "--no-progress")
        scored = run_tracegrade(*args, cwd=root)
        assert scored.returncode == 0, scored.stderr
    return root


def test_the_json_streams_every_pair_and_the_page_shows_a_few(root: Path) -> None:
    args = ("compare", "base", "new", "--json", "--html", "compare.html")
    done = run_tracegrade(*args, "--html-show", "7", cwd=root, env=CHUNK_ENV)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    (stage,) = read["pairs"][0]["stage_diagnosis"]
    assert [change["id"] for change in stage["regressions"]] == IDS
    assert stage["worse"] == PAIRS and read["gate"]["regressions"] == PAIRS
    # One line an item of a long list.
    lines = done.stdout.splitlines()
    assert sum(line.lstrip().startswith('{"id": "run-') for line in lines) == PAIRS
    recall, precision = stage["figures"]
    assert [recall[k] for k in ("base_mean", "new_mean", "fell")] == [1, 0.5, PAIRS]
    assert (precision["new_mean"], recall["verdict"]) == (1.0, "worse")
    html = (root / "compare.html").read_text("utf-8")
    table = html[html.index("Regressions: stage_diagnosis") :]
    assert table[: table.index("</table>")].count("<tr>") == 1 + 7
    cut = f"{PAIRS} pairs. The first 7 are shown (--html-show); --json lists all."
    assert cut in html


def test_a_reader_that_stops_early_ends_the_command_in_one_line(
    root: Path, tmp_path: Path
) -> None:
    """`compare --json` into a named pipe whose reader stops after 200 bytes."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    read: list[bytes] = []

    def reader() -> None:
        with open(pipe, "rb") as stream:
            read.append(stream.read(200))

    reading = threading.Thread(target=reader, daemon=True)
    reading.start()
    args = ("compare", "base", "new", "--json")
    command = StreamedCommand(args, root, stdout=(pipe, "append"))
    try:
        (done,) = commands_in_one_interpreter([command], tmp_path, env=CHUNK_ENV)
    finally:
        if reading.is_alive():
            # The command never opened the pipe: open it, so the reader's returns.
            with contextlib.suppress(OSError):
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        reading.join(timeout=60)
    assert read and read[0].startswith(b"{"), read
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("tracegrade: standard output was closed")
