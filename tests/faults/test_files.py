"""File-system faults: links, existing files, full and read-only disks, streams.

Each fault once per output path that differs. The answer is always one
clear line on stderr, exit code 2, every input unchanged, and nothing left
under an output's name.

Commands run in this process through click (`run_tracegrade`), on real
links, a real full or read-only tmpfs, a real named pipe.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.commands import run_tracegrade
from tests.faults.conftest import (
    assert_no_final_outputs,
    digest,
    mounted_tmpfs,
    needs_mount,
    one_clear_line,
    snapshot,
    write_stage_records,
)

pytestmark = pytest.mark.runs_long

STAGE_OK = {"required": ["D1"], "context": ["D1"], "correct": True}


@pytest.fixture(scope="session")
def scored_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small input, a real log of it and staff labels, scored once per
    session: `work` copies it for each test."""
    folder = tmp_path_factory.mktemp("scored")
    write_stage_records(folder / "runs.jsonl", 50)
    done = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    (folder / "staff.jsonl").write_text(
        "".join(
            json.dumps({"id": f"run-{number}", "correct": number % 3 == 0}) + "\n"
            for number in range(50)
        )
    )
    return folder


@pytest.fixture()
def work(tmp_path: Path, scored_folder: Path) -> Path:
    """A folder of the test's own with a small input and a real log of it,
    `log.eval` a second (hard) link to the log."""
    shutil.copytree(scored_folder, tmp_path, dirs_exist_ok=True)
    (log,) = (tmp_path / "logs").glob("*.eval")
    (tmp_path / "log.eval").hardlink_to(log)
    return tmp_path


def _log(work: Path) -> str:
    (log,) = (work / "logs").glob("*.eval")
    return str(log.relative_to(work))


# Every command with an output option, as (arguments ending in the output
# option, the command's input).
def _commands(work: Path) -> list[tuple[list[str], str]]:
    log = _log(work)
    return [
        (["score", "stage_diagnosis", "runs.jsonl", "--out"], "runs.jsonl"),
        (["labels", "export", log, "--out"], log),
        (["report", log, "--html"], log),
        (["labels", "apply", log, "staff.jsonl", "--out"], log),
    ]


def _refused(work: Path, args: list[str], target: str, said: str) -> None:
    """`tracegrade ARGS TARGET` refused: exit code 2, one clear line saying
    `said`, and not a file changed."""
    before = snapshot(work)
    done = run_tracegrade(*args, target, cwd=work)
    assert done.returncode == 2, done.stderr
    assert said in one_clear_line(done.stderr)
    assert snapshot(work) == before


@pytest.mark.parametrize("command", [0, 3])
def test_no_output_option_writes_over_its_input_by_any_name(
    work: Path, command: int
) -> None:
    args, source = _commands(work)[command]
    (work / "hard").hardlink_to(work / source)
    (work / "soft").symlink_to(work / source)
    for target, force in ((f"./{source}", []), ("hard", ["--force"]), ("soft", [])):
        _refused(work, [*args[:-1], *force, args[-1]], target, "is the input")


@pytest.mark.parametrize("command", [0, 3])
def test_an_existing_file_is_replaced_only_with_force(work: Path, command: int) -> None:
    args, _ = _commands(work)[command]
    (work / "filled.jsonl").write_text('{"id": "staff", "correct": true}\n')

    _refused(work, args, "filled.jsonl", "already exists; pass --force")

    done = run_tracegrade(*args[:-1], "--force", args[-1], "filled.jsonl", cwd=work)
    assert done.returncode in (0, 1), done.stderr
    # Replaced: by text, or by a log (labels apply writes one, in binary).
    assert (work / "filled.jsonl").read_bytes() != b'{"id": "staff", "correct": true}\n'


def test_a_link_to_an_output_is_followed_and_the_link_kept(work: Path) -> None:
    (work / "real.jsonl").write_text("old\n")
    (work / "link.jsonl").symlink_to("real.jsonl")

    done = run_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--out", "link.jsonl", "--force"),
        cwd=work,
    )

    assert done.returncode == 0, done.stderr
    assert (work / "link.jsonl").is_symlink()
    assert len((work / "real.jsonl").read_text().splitlines()) == 50


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--out", "missing/results.jsonl"], "does not exist"),
        (["--log-dir", "runs.jsonl/logs"], "a file stands in its path"),
        (["--out", "logs"], "is a directory, not a file"),
        (["--out", "loop"], "is a loop of symbolic links"),
        (["--out", ""], "names no file"),
        (["--out", "newdir/"], "ends in /, as a directory does"),
    ],
)
def test_unwritable_output_paths_are_one_line_before_anything_runs(
    work: Path, args: list[str], said: str
) -> None:
    (work / "loop").symlink_to("loop-other")
    (work / "loop-other").symlink_to("loop")
    _refused(
        work, ["score", "stage_diagnosis", "runs.jsonl", *args[:-1]], args[-1], said
    )
    # Nothing in the parent directory either.
    assert not (work / "newdir").exists()
    assert not list(work.parent.glob("*.partial"))


@needs_mount
@pytest.mark.parametrize(
    "args",
    [
        ["--log-dir", "mnt"],
        ["--log-dir", "logs2", "--out", "mnt/results.jsonl"],
    ],
)
def test_a_read_only_file_system_is_one_line(work: Path, args: list[str]) -> None:
    with mounted_tmpfs(work / "mnt", "ro", "size=1m"):
        before = snapshot(work)
        done = run_tracegrade("score", "stage_diagnosis", "runs.jsonl", *args, cwd=work)
        assert done.returncode == 2, done.stderr
        assert "Read-only file system" in one_clear_line(done.stderr)
        assert_no_final_outputs(work, before)
        assert list((work / "mnt").iterdir()) == []


@needs_mount
@pytest.mark.parametrize(
    ("log_format", "where", "size"),
    [
        # 3,000 records give a .eval log of about 2.4 MB and 0.7 MB of
        # results: the disk fills while samples are written, while the log
        # is finished, and under the results.
        ("eval", "log-dir", "64k"),
        ("eval", "log-dir", "2700k"),
        ("eval", "out", "64k"),
    ],
)
def test_a_full_disk_leaves_nothing_and_says_so_once(
    tmp_path: Path, size: str, where: str, log_format: str
) -> None:
    write_stage_records(tmp_path / "runs.jsonl", 3000)
    input_digest = digest(tmp_path / "runs.jsonl")
    with mounted_tmpfs(tmp_path / "mnt", f"size={size}"):
        args = (
            ["--log-dir", "mnt"]
            if where == "log-dir"
            else ["--log-dir", "logs", "--out", "mnt/results.jsonl"]
        )
        args += ["--log-format", log_format]
        done = run_tracegrade(
            "score", "stage_diagnosis", "runs.jsonl", *args, cwd=tmp_path
        )

        assert done.returncode == 2, done.stderr
        line = one_clear_line(done.stderr)
        assert "No space left on device" in line
        assert "no log or results were written" in line
        assert list((tmp_path / "mnt").iterdir()) == []
        assert not (tmp_path / "logs").exists() or not any(
            (tmp_path / "logs").iterdir()
        )
    assert digest(tmp_path / "runs.jsonl") == input_digest


def test_labels_apply_refuses_a_stream_as_out(work: Path) -> None:
    _refused(
        work,
        ["labels", "apply", _log(work), "staff.jsonl", "--out"],
        "/dev/null",
        "is not a regular file",
    )


def _results(path: Path) -> list[dict[str, object]]:
    lines = path.read_text().splitlines()
    return [{**json.loads(line), "explanation": None} for line in lines]


def test_a_pipe_as_input_is_read_like_a_file(work: Path) -> None:
    # The results of runs.jsonl read as a file: those of the scored folder.
    (reference,) = (work / "logs").glob("*.results.jsonl")
    args = ("score", "stage_diagnosis")
    outputs = ("--log-dir", "b", "--out", "b.jsonl")
    os.mkfifo(work / "pipe")
    feeder = subprocess.Popen(["sh", "-c", "cat runs.jsonl > pipe"], cwd=work)
    done = run_tracegrade(*args, "pipe", *outputs, cwd=work)
    feeder.wait(timeout=60)

    assert done.returncode == 0, done.stderr
    assert _results(work / "b.jsonl") == _results(reference)


def test_an_empty_or_blank_input_leaves_no_stray_files(tmp_path: Path) -> None:
    for name, text in [("blank.jsonl", "\n  \n\t\r\n")]:
        (tmp_path / name).write_text(text)
        before = snapshot(tmp_path)
        done = run_tracegrade(
            *("score", "stage_diagnosis", name, "--log-dir", "logs"),
            *("--out", "r.jsonl"),
            cwd=tmp_path,
        )
        assert done.returncode == 1
        assert snapshot(tmp_path) == before
        assert not (tmp_path / "logs").exists() or not any(
            (tmp_path / "logs").iterdir()
        )
