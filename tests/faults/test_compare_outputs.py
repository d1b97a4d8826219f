"""`tracegrade compare` writing long lists (on disk past
`TRACEGRADE_COMPARE_CHUNK` pairs, as a million would be), and into a pipe
whose reader stops early or a full disk: one line, never a traceback."""

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
    """`compare --json` into a named pipe whose reader stops after 200
    bytes, then into /dev/full (where there is one), in one interpreter."""
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
    assert [recall[k] for k in ("base_mean", "new_mean", "fell")] == [1, 0.5, PAIRS]
    assert (precision["new_mean"], recall["verdict"]) == (1.0, "worse")
    html = page.read_text("utf-8")
    table = html[html.index("Regressions: stage_diagnosis") :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 1 + 7
    assert f"{PAIRS} pairs. The first 7 are shown (--html-show); --json lists all." in (
        html
    )


@pytest.mark.parametrize(
    ("stream", "exit_code", "said"),
    [
        ("pipe", 128 + signal.SIGPIPE, "tracegrade: standard output was closed"),
        ("full", 2, "tracegrade:"),
    ],
)
def test_a_stopped_reader_or_a_full_disk_ends_the_command_in_one_line(
    to_streams: dict[str, subprocess.CompletedProcess[str]],
    stream: str,
    exit_code: int,
    said: str,
) -> None:
    if stream not in to_streams:
        pytest.skip("no /dev/full")
    done = to_streams[stream]
    assert done.returncode == exit_code, done.stderr
    stderr = done.stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    (line,) = [line for line in stderr.splitlines() if not line.startswith("warning")]
    assert line.startswith(said)
