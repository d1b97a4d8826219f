"""File-system faults (real links, full or read-only tmpfs, pipes) and mistakes:
one line, exit code 2, inputs unchanged, nothing under an output's name."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import (
    StreamedCommand,
    commands_in_one_interpreter,
    inspect_in_one_fresh_process,
    run_tracegrade,
)
from tests.faults.conftest import (
    CAN_MOUNT,
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    snapshot,
    write_stage_records,
)
from tests.support import write_lines

pytestmark = pytest.mark.runs_long

SCORE = ["score", "stage_diagnosis", "runs.jsonl"]
APPLY = ["labels", "apply", "log.eval", "staff.jsonl"]
REPORT = ["report", "log.eval"]


@pytest.fixture()
def work(tmp_path: Path, scored: Path) -> Path:
    """`scored` with links: `hard` to `runs.jsonl`, `soft` to `log.eval`, `loop`."""
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    (tmp_path / "hard").hardlink_to(tmp_path / "runs.jsonl")
    (tmp_path / "soft").symlink_to("log.eval")
    (tmp_path / "loop").symlink_to("loop-other")
    (tmp_path / "loop-other").symlink_to("loop")
    return tmp_path


REFUSED = [
    ([*SCORE, "--out", "./runs.jsonl"], "is the input"),
    ([*SCORE, "--force", "--out", "hard"], "is the input"),
    ([*APPLY, "--out", "soft"], "is the input"),
    ([*SCORE, "--out", "log.eval"], "already exists; pass --force"),
    ([*APPLY, "--out", "base/run.eval"], "already exists; pass --force"),
    ([*SCORE, "--out", "missing/results.jsonl"], "does not exist"),
    ([*SCORE, "--log-dir", "runs.jsonl/logs"], "a file stands in its path"),
    ([*SCORE, "--out", "base"], "is a directory, not a file"),
    ([*SCORE, "--out", "loop"], "is a loop of symbolic links"),
    ([*SCORE, "--out", ""], "names no file"),
    ([*SCORE, "--out", "newdir/"], "ends in /, as a directory does"),
    ([*APPLY, "--out", "/dev/null"], "is not a regular file"),
    (["labels", "apply", "/dev/null", "staff.jsonl"], "LOG '/dev/null' is not a"),
    (
        ["check", "stage_diagnosis", "loop"],
        "Invalid value for 'PATH': 'loop' is a loop of symbolic links",
    ),
    (
        ["labels", "apply", "LOG", "staff.jsonl"],
        "Invalid value for 'LOG': File 'LOG' does not exist",
    ),
    (
        [*SCORE, "--log-dir", "s3://bucket/logs"],
        "--log-dir 's3://bucket/logs' is a remote location",
    ),
    (
        ["INSPECT_LOG_FORMAT=yaml", *SCORE, "--log-dir", "logs"],
        "Invalid value for '--log-format': the environment variable "
        "INSPECT_LOG_FORMAT='yaml' is not a log format",
    ),
]


@pytest.mark.parametrize(
    ("args", "said"), REFUSED, ids=[" ".join(args) for args, _ in REFUSED]
)
def test_a_mistake_is_one_line_before_anything_is_written(
    work: Path, args: list[str], said: str
) -> None:
    """One line (click's usage block: three); a leading NAME=value is the env."""
    env = dict(arg.split("=", 1) for arg in args[:1] if "=" in arg)
    paths, before = sorted(work.rglob("*")), snapshot(work)
    done = run_tracegrade(*args[len(env) :], cwd=work, env=env)

    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == (3 if said.startswith("Invalid value") else 1), lines
    assert said in lines[-1]
    assert snapshot(work) == before
    assert sorted(work.rglob("*")) == paths
    assert not list(work.parent.glob("*.partial"))


def test_force_writes_through_a_link(work: Path) -> None:
    (work / "real").write_text("old\n")
    (work / "link").symlink_to("real")
    done = run_tracegrade(*APPLY, "--force", "--out", "link", cwd=work)

    assert done.returncode == 0, done.stderr
    assert (work / "link").is_symlink()
    assert (work / "real").read_bytes() != b"old\n"


BIG = ["score", "stage_diagnosis", "big.jsonl"]
NOT_WRITTEN = ("No space left on device", "no log or results were written")
READ_ONLY = ("Read-only file system",)


def cannot(name: str) -> tuple[str, str]:
    return f"cannot write 'mnt/{name}' (No space left on device)", "nothing was written"


# 3,000 records: a 2.4 MB log and 0.7 MB of results, so the disk fills in each
# phase; "filled" is a 64 KB disk taken whole.
DISKS = {
    "score, samples": ([*BIG, "--log-dir", "mnt"], "size=64k", NOT_WRITTEN),
    "score, finishing": ([*BIG, "--log-dir", "mnt"], "size=2700k", NOT_WRITTEN),
    "score --out": ([*BIG, "--out", "mnt/r.jsonl"], "size=64k", NOT_WRITTEN),
    "report --html": ([*REPORT, "--html", "mnt/r.html"], "filled", cannot("r.html")),
    "labels apply": ([*APPLY, "--out", "mnt/l.eval"], "filled", cannot("l.eval")),
    "read-only --log-dir": ([*SCORE, "--log-dir", "mnt"], "ro", READ_ONLY),
    "read-only --out": ([*SCORE, "--out", "mnt/r.jsonl"], "ro", READ_ONLY),
}


@needs_mount
@pytest.mark.parametrize("disk", DISKS)
def test_a_full_or_read_only_disk_leaves_nothing(work: Path, disk: str) -> None:
    args, options, said = DISKS[disk]
    write_stage_records(work / "big.jsonl", 3000)
    before = snapshot(work)
    with mounted_tmpfs(work / "mnt", "size=64k" if options == "filled" else options):
        if options == "filled":
            with pytest.raises(OSError, match="No space left"):
                (work / "mnt" / "filler").write_bytes(bytes(2**24))
        done = run_tracegrade(*args, cwd=work)

        assert done.returncode == 2, done.stderr
        line = one_clear_line(done.stderr)
        assert all(part in line for part in said), line
        assert [path.name for path in (work / "mnt").iterdir()] in ([], ["filler"])
    assert snapshot(work) == before


# Each command that reads a file, and that file.
READERS = {
    "score": ([*SCORE, "--out", "-"], "runs.jsonl"),
    "check": (["check", "stage_diagnosis", "runs.jsonl"], "runs.jsonl"),
    "compare": (["compare", "base", "new"], "base/run.eval"),
    "labels apply": ([*APPLY, "--out", "out.eval"], "staff.jsonl"),
}
# `>> INPUT` would read its output back, `1<>` overwrite the input; `2>>` too.
STREAMS = {
    **{f">> {command}": (command, 1, "append") for command in READERS},
    "1<>": ("score", 1, "read-write"),
    "2>>": ("check", 2, "append"),
}
BAD_DATASET = ["eval", "tracegrade/stage_diagnosis", "-T", "dataset=bad.jsonl"]
BAD_DATASET += ["--log-dir", "logs", "--display"]
APPENDED = b"kept\n"
Ran = tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def in_one_interpreter(
    tmp_path_factory: pytest.TempPathFactory, scored: Path
) -> Iterator[dict[str, Ran]]:
    """Each in a copy of `scored`, in one interpreter under PYTHONUNBUFFERED=1
    (where Python ignores a short write); `full` first: Inspect keeps one display."""

    def copy() -> Path:
        work = tmp_path_factory.mktemp("one")
        shutil.copytree(scored, work, dirs_exist_ok=True)
        return work

    write_lines((work := copy()) / "bad.jsonl", [{"id": "a", "input": {}}, "{"])
    full = StreamedCommand([*BAD_DATASET, "full"], work, program="inspect")
    commands = {"full": full}
    for case, (command, descriptor, how) in STREAMS.items():
        args, name = READERS[command]
        into = ((work := copy()) / name, how)
        stdout, stderr = (into, None) if descriptor == 1 else (None, into)
        commands[case] = StreamedCommand(args, work, stdout, stderr)
    commands["short write"] = StreamedCommand(
        ["labels", "export", "log.eval"],
        work := copy(),
        stdout=(work / "out.jsonl", "capture"),
        soft_limits=((resource.RLIMIT_FSIZE, 10_000),),
    )
    with contextlib.ExitStack() as mounts:
        if CAN_MOUNT:
            mounts.enter_context(mounted_tmpfs((work := copy()) / "mnt", "size=64k"))
            (work / "mnt" / "out.jsonl").write_bytes(APPENDED)
            into = (work / "mnt" / "out.jsonl", "append")
            full_disk = StreamedCommand([*SCORE, "--out", "-"], work, into)
            commands["full disk"] = full_disk
        befores = [snapshot(command.cwd) for command in commands.values()]
        folder = tmp_path_factory.mktemp("commands")
        done = commands_in_one_interpreter(
            list(commands.values()), folder, env={"PYTHONUNBUFFERED": "1"}
        )
        ran = zip(commands.items(), befores, done, strict=True)
        yield {case: (c.cwd, before, result) for (case, c), before, result in ran}


@pytest.mark.parametrize("case", STREAMS)
def test_a_standard_stream_into_the_input_is_refused(
    in_one_interpreter: dict[str, Ran], case: str
) -> None:
    command, descriptor, _ = STREAMS[case]
    work, before, done = in_one_interpreter[case]
    # As given; compare names a log it found under the directory given.
    name = READERS[command][1]
    shown = work / name if command == "compare" else name
    stream = "output" if descriptor == 1 else "error"

    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr if descriptor == 1 else done.stdout)
    assert f"standard {stream} is the input '{shown}' (redirected into it)" in line
    assert snapshot(work) == before


@pytest.mark.parametrize("display", ["full", "none"])
def test_a_bad_dataset_line_reaches_the_user_in_every_display(
    in_one_interpreter: dict[str, Ran], tmp_path: Path, display: str
) -> None:
    """Once in each: Inspect's rich (stdout), silenced by `none`, then stderr."""
    if display == "full":
        work, _, done = in_one_interpreter["full"]
    else:
        work = tmp_path
        write_lines(work / "bad.jsonl", [{"id": "a", "input": {}}, "{"])
        (done,) = inspect_in_one_fresh_process([([*BAD_DATASET, display], work)])
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    said = "bad.jsonl, line 2: not valid JSON"
    assert (done.stdout + done.stderr).count(said) == 1
    assert not (work / "logs").exists()


def test_comparing_an_eval_with_itself_warns(work: Path) -> None:
    done = run_tracegrade("compare", "base", "new", cwd=work)

    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "warning: BASE and NEW are the same eval" in said


def test_a_pipe_is_read_as_a_file_and_a_file_url_as_a_folder(work: Path) -> None:
    def results(path: Path) -> list[dict[str, object]]:
        lines = path.read_text().splitlines()
        return [{**json.loads(line), "explanation": None} for line in lines]

    logs = work / "url logs"
    args = ("--log-dir", logs.as_uri(), "--out", "a.jsonl")
    done = run_tracegrade(*SCORE, *args, cwd=work)
    assert done.returncode == 0, done.stderr
    assert len(list(logs.glob("*.eval"))) == 1
    assert not (work / "file:").exists()
    os.mkfifo(work / "pipe")
    feeder = subprocess.Popen(["sh", "-c", "cat runs.jsonl > pipe"], cwd=work)
    args = ("score", "stage_diagnosis", "pipe", "--log-dir", "b", "--out", "b.jsonl")
    done = run_tracegrade(*args, cwd=work)
    feeder.wait(timeout=60)

    assert done.returncode == 0, done.stderr
    assert results(work / "b.jsonl") == results(work / "a.jsonl")


def test_a_blank_input_leaves_no_stray_files(tmp_path: Path) -> None:
    (tmp_path / "blank.jsonl").write_text("\n  \n\t\r\n")
    before = snapshot(tmp_path)
    args = ["score", "stage_diagnosis", "blank.jsonl", "--log-dir", "logs"]
    done = run_tracegrade(*args, "--out", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert snapshot(tmp_path) == before  # an empty `logs` may stay


# What standard output was redirected to, what it holds after, and the error.
CUT_BACK = {
    "full disk": ("mnt/out.jsonl", APPENDED, "No space left on device"),
    "short write": ("out.jsonl", b"", "File too large"),
}


@pytest.mark.parametrize(
    "case", [pytest.param("full disk", marks=needs_mount), "short write"]
)
def test_standard_output_that_cannot_be_written_is_cut_back(
    in_one_interpreter: dict[str, Ran], case: str
) -> None:
    """`>>` a full disk, or `ulimit -f` (a short write Python ignores): the file
    holds what it held, no log."""
    output, kept, error = CUT_BACK[case]
    work, _, done = in_one_interpreter[case]
    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr)
    assert f"cannot write standard output ({error})" in line
    assert (work / output).read_bytes() == kept
    assert not (work / "logs").exists() or not any((work / "logs").iterdir())
