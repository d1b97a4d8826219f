"""Mistakes a user can make on the command line: each is refused in one
line that says what is wrong, before anything is read or written; inputs
are checked by hash before and after."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import (
    CommandProcess,
    StreamedCommand,
    commands_in_one_interpreter,
    run_tracegrade,
)
from tests.faults.conftest import (
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    snapshot,
    write_labels,
    write_stage_log,
)
from tests.support import write_lines

pytestmark = pytest.mark.runs_long

RECORDS = 40
Run = tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`runs.jsonl`, its log `log.eval`, `base/` and `new/` holding a copy
    of it each, and staff labels: every command's input."""
    folder = tmp_path_factory.mktemp("scored")
    log = write_stage_log(folder, RECORDS)
    for side in ("base", "new"):
        (folder / side).mkdir()
        shutil.copyfile(log, folder / side / "run.eval")
    write_labels(folder / "staff.jsonl", RECORDS, every=2)
    return folder


@pytest.fixture()
def work(tmp_path: Path, scored: Path) -> Path:
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    return tmp_path


# Each command that reads a file, and that file.
READERS = {
    "score": (["score", "stage_diagnosis", "runs.jsonl", "--out", "-"], "runs.jsonl"),
    "check": (["check", "stage_diagnosis", "runs.jsonl"], "runs.jsonl"),
    "compare": (["compare", "base", "new"], "base"),
    "labels apply": (
        ["labels", "apply", "log.eval", "staff.jsonl", "--out", "out.eval"],
        "staff.jsonl",
    ),
}


def _input_file(work: Path, name: str) -> Path:
    path = work / name
    return next(path.iterdir()) if path.is_dir() else path


def _bad_dataset(folder: Path) -> Path:
    """A dataset whose line 2 is not JSON, for `inspect eval`."""
    return Path(write_lines(folder / "bad.jsonl", [{"id": "a", "input": {}}, "{"]))


def _bad_dataset_eval(folder: Path, display: str) -> StreamedCommand:
    return StreamedCommand(
        [
            "eval",
            "tracegrade/stage_diagnosis",
            "-T",
            f"dataset={_bad_dataset(folder)}",
            "--log-dir",
            "logs",
            "--display",
            display,
        ],
        folder,
        program="inspect",
    )


# The display of the bad dataset eval that runs first in the shared
# interpreter: Inspect keeps the display of a process's first eval, so the
# others each have a fresh interpreter of their own.
FIRST_DISPLAY = "full"

# What needs a process but not one of its own, each command in a directory
# of its own, in one fresh interpreter: the bad dataset eval under
# FIRST_DISPLAY (first, as the first eval of any process), and the refusals
# of a stream redirected into an input (`>> INPUT` for some readers,
# `1<>runs.jsonl` and `2>>runs.jsonl`).
APPENDED_TO = ("score", "compare", "labels apply")
STREAM_CASES = {
    **{f">> {command}": (command, 1, "append") for command in APPENDED_TO},
    "1<>": ("score", 1, "read-write"),
    "2>>": ("check", 2, "append"),
}


@pytest.fixture(scope="module")
def in_one_interpreter(
    tmp_path_factory: pytest.TempPathFactory, scored: Path
) -> dict[tuple[str, str], Run]:
    commands: dict[tuple[str, str], StreamedCommand] = {
        ("display", FIRST_DISPLAY): _bad_dataset_eval(
            tmp_path_factory.mktemp("display"), FIRST_DISPLAY
        )
    }
    for number, (case, (command, descriptor, how)) in enumerate(STREAM_CASES.items()):
        work = tmp_path_factory.mktemp(f"stream-{number}")
        shutil.copytree(scored, work, dirs_exist_ok=True)
        args, name = READERS[command]
        into = (_input_file(work, name), how)
        commands["stream", case] = StreamedCommand(
            args,
            work,
            stdout=into if descriptor == 1 else None,
            stderr=into if descriptor == 2 else None,
        )
    befores = [snapshot(command.cwd) for command in commands.values()]
    done = commands_in_one_interpreter(
        list(commands.values()), tmp_path_factory.mktemp("commands")
    )
    return {
        key: (command.cwd, before, result)
        for (key, command), before, result in zip(
            commands.items(), befores, done, strict=True
        )
    }


@pytest.mark.parametrize("case", STREAM_CASES)
def test_a_standard_stream_into_the_input_is_refused(
    in_one_interpreter: dict[tuple[str, str], Run], case: str
) -> None:
    """`>> INPUT` would read its output back, `1<>` overwrite the input as
    it is read; after `2>>` not even the refusal goes into the input."""
    command, descriptor, _ = STREAM_CASES[case]
    work, before, done = in_one_interpreter["stream", case]
    path = _input_file(work, READERS[command][1])
    # As given; compare names a log it found under the directory given.
    shown = path if command == "compare" else path.relative_to(work)
    stream = "output" if descriptor == 1 else "error"

    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr if descriptor == 1 else done.stdout)
    assert f"standard {stream} is the input '{shown}' (redirected into it)" in line
    assert snapshot(work) == before


# --- --log-dir URLs and INSPECT_LOG_FORMAT -----------------------------------


def test_a_file_url_log_dir_is_the_directory_it_names(work: Path) -> None:
    logs = work / "url logs"
    done = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", logs.as_uri(), cwd=work
    )

    assert done.returncode == 0, done.stderr
    assert len(list(logs.glob("*.eval"))) == 1
    assert not (work / "file:").exists()


@pytest.mark.parametrize(
    ("log_dir", "env", "said"),
    [
        ("s3://bucket/logs", {}, "--log-dir 's3://bucket/logs' is a remote location"),
        (
            "logs",
            {"INSPECT_LOG_FORMAT": "yaml"},
            "the environment variable INSPECT_LOG_FORMAT='yaml' is not a log format",
        ),
    ],
)
def test_a_log_dir_or_format_score_cannot_write_is_refused(
    work: Path, log_dir: str, env: dict[str, str], said: str
) -> None:
    """A remote --log-dir is not written to a look-alike local directory."""
    before = snapshot(work)
    args = ("score", "stage_diagnosis", "runs.jsonl", "--log-dir", log_dir)
    done = run_tracegrade(*args, cwd=work, env=env)

    assert done.returncode == 2, done.stderr
    assert said in done.stderr.splitlines()[-1]
    assert "Traceback" not in done.stderr
    assert snapshot(work) == before


# --- Names that are no file --------------------------------------------------


def test_a_loop_of_links_as_an_input_is_named_as_one(work: Path) -> None:
    (work / "loop").symlink_to("loop-other")
    (work / "loop-other").symlink_to("loop")
    before = snapshot(work)
    done = run_tracegrade("check", "stage_diagnosis", "loop", cwd=work)

    assert done.returncode == 2, done.stderr
    assert "'loop' is a loop of symbolic links" in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot(work) == before


def test_comparing_an_eval_with_itself_warns(work: Path) -> None:
    done = run_tracegrade("compare", "base", "new", cwd=work)

    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "warning: BASE and NEW are the same eval" in said


# --- A full disk under each command's output ---------------------------------

FULL_DISK_OUTPUTS = {
    "report --html": ["report", "log.eval", "--html", "mnt/report.html"],
    "labels apply": [
        "labels",
        "apply",
        "log.eval",
        "staff.jsonl",
        "--out",
        "mnt/l.eval",
    ],
}


@needs_mount
@pytest.mark.parametrize("command", sorted(FULL_DISK_OUTPUTS))
def test_a_full_disk_names_the_file_and_says_nothing_was_written(
    work: Path, command: str
) -> None:
    args = FULL_DISK_OUTPUTS[command]
    output = args[-1]
    before = snapshot(work)
    with mounted_tmpfs(work / "mnt", "size=64k"):
        # All but a few bytes taken: any output fails part-way.
        filler = os.open(work / "mnt" / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"x" * 512):
                pass
        except OSError as error:
            assert error.errno == errno.ENOSPC
        finally:
            os.close(filler)
        done = run_tracegrade(*args, cwd=work)

        assert done.returncode == 2, done.stderr
        line = one_clear_line(done.stderr)
        assert f"cannot write '{output}' (No space left on device)" in line, line
        assert "nothing was written" in line
        assert [path.name for path in (work / "mnt").iterdir()] == ["filler"]
    assert snapshot(work) == before


# --- A bad dataset under every display of inspect eval -----------------------


@pytest.mark.parametrize("display", ["full", "none"])
def test_a_bad_dataset_line_reaches_the_user_in_every_display(
    in_one_interpreter: dict[tuple[str, str], Run],
    tmp_path: Path,
    display: str,
) -> None:
    """Once in every display: Inspect prints it (on stdout), but through
    rich, which `--display none` silences; then tracegrade does (stderr).
    Each as the first eval of a fresh interpreter: Inspect keeps the
    display of its first eval for the life of the process."""
    if display == FIRST_DISPLAY:
        work, _, result = in_one_interpreter["display", display]
    else:
        work = tmp_path
        argv = [
            sys.executable,
            "-m",
            "inspect_ai",
            *_bad_dataset_eval(work, display).args,
        ]
        result = CommandProcess(argv, cwd=work, new_session=False).to_its_end()
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    said = f"{work / 'bad.jsonl'}, line 2: not valid JSON"
    assert (result.stdout + result.stderr).count(said) == 1
    assert not (work / "logs").exists()


def test_a_missing_input_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    """A placeholder pasted as it is (`labels export LOG`): nothing read,
    no traceback, the path named."""
    done = run_tracegrade(*READERS["labels apply"][0], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: Invalid value for ") and "does not exist" in last
    assert not list(tmp_path.iterdir())
