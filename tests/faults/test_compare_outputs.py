"""`tracegrade compare` writing long lists, and into a pipe or a full disk.

`TRACEGRADE_COMPARE_CHUNK` sends each list to its database on disk after a
few pairs, so a few hundred pairs take the path a million would. Checked:
the streamed JSON lists every pair in order, the HTML page shows
`--html-show` rows with the count of the rest, a reader that stops early
ends the command with one line and SIGPIPE's exit code, and stdout on a
full disk is one line and exit 2; never a traceback. The last two run one
after the other in one fresh interpreter, each with its own stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.commands import StreamedCommand, commands_in_one_interpreter, run_tracegrade
from tests.support import write_lines

PAIRS = 600
CHUNK_ENV = {"TRACEGRADE_COMPARE_CHUNK": "50"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """BASE passes every record; NEW misses a required document in each."""
    root = tmp_path_factory.mktemp("compare-outputs")
    for name, context in (("base", ["D1", "D2"]), ("new", ["D2"])):
        record = {"required": ["D1", "D2"], "context": context, "correct": True}
        records = write_lines(
            root / f"{name}.jsonl",
            [{"id": f"run-{n:05d}", "input": record} for n in range(PAIRS)],
        )
        scored = run_tracegrade(
            *("score", "stage_diagnosis", records, "--log-dir", name),
            "--no-progress",
            cwd=root,
        )
        assert scored.returncode == 0, scored.stderr
    return {"root": root, "base": root / "base", "new": root / "new"}


@pytest.fixture(scope="module")
def to_streams(
    tmp_path_factory: pytest.TempPathFactory, runs: dict[str, Path]
) -> dict[str, subprocess.CompletedProcess[str]]:
    """`tracegrade compare BASE NEW --json` with its standard output a pipe
    whose reader stops after 200 bytes (a named one, read here), and
    /dev/full (where there is one): one after the other in one fresh
    interpreter, each with its own standard output."""
    folder = tmp_path_factory.mktemp("compare-streams")
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    read: list[bytes] = []

    def reader() -> None:
        with open(pipe, "rb") as stream:
            read.append(stream.read(200))

    reading = threading.Thread(target=reader, daemon=True)
    reading.start()
    streams = {"pipe": pipe}
    if Path("/dev/full").exists():
        streams["full"] = Path("/dev/full")
    args = ("compare", str(runs["base"]), str(runs["new"]), "--json")
    try:
        done = commands_in_one_interpreter(
            [
                StreamedCommand(args, runs["root"], stdout=(path, "append"))
                for path in streams.values()
            ],
            folder,
            env=CHUNK_ENV,
        )
    finally:
        if reading.is_alive():
            # The command never opened the pipe: open it, so that the
            # reader's open returns.
            with contextlib.suppress(OSError):
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        reading.join(timeout=60)
    assert read and read[0].startswith(b"{"), read
    return dict(zip(streams, done, strict=True))


def test_the_json_streams_every_pair_and_the_page_shows_a_few(
    runs: dict[str, Path],
) -> None:
    page = runs["root"] / "compare.html"
    done = run_tracegrade(
        *("compare", str(runs["base"]), str(runs["new"])),
        *("--json", "--html", str(page), "--html-show", "7"),
        cwd=runs["root"],
        env=CHUNK_ENV,
    )
    stdout, stderr = done.stdout, done.stderr
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    read = json.loads(stdout)
    (pair,) = read["pairs"]
    (stage,) = pair["stage_diagnosis"]
    assert [change["id"] for change in stage["regressions"]] == [
        f"run-{n:05d}" for n in range(PAIRS)
    ]
    assert stage["worse"] == PAIRS and read["gate"]["regressions"] == PAIRS
    # One line an item of a long list.
    items = [
        line for line in stdout.splitlines() if line.lstrip().startswith('{"id": "run-')
    ]
    assert len(items) == PAIRS
    recall, precision = stage["figures"]
    assert (recall["base_mean"], recall["new_mean"], recall["fell"]) == (
        1.0,
        0.5,
        PAIRS,
    )
    assert (precision["base_mean"], precision["new_mean"]) == (1.0, 1.0)
    assert recall["verdict"] == "worse"
    html = page.read_text("utf-8")
    table = html[html.index("Regressions: stage_diagnosis") :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 1 + 7
    assert f"{PAIRS} pairs. The first 7 are shown (--html-show); --json lists all." in (
        html
    )


def test_a_reader_that_stops_early_ends_the_command_in_one_line(
    to_streams: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = to_streams["pipe"]
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    stderr = done.stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    (line,) = [line for line in stderr.splitlines() if not line.startswith("warning")]
    assert line.startswith("tracegrade compare: stdout was closed")


def test_json_to_a_full_disk_is_one_line_and_exit_2(
    to_streams: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    if "full" not in to_streams:
        pytest.skip("no /dev/full")
    done = to_streams["full"]
    assert done.returncode == 2, done.stderr
    stderr = done.stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    (line,) = [line for line in stderr.splitlines() if not line.startswith("warning")]
    assert line.startswith("tracegrade:")
