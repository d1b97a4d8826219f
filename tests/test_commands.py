"""The test suite's command runners behave as the commands do for a user.

`tests/commands.py` runs `tracegrade` and `inspect` in the test's own
interpreter; these checks hold that to a fresh interpreter (exit codes,
standard output and error), and to what a process keeps to itself (its
working directory, environment, exception hook, outputs named to a
signal). A command started in a fresh interpreter is signalled, limited
and measured as a `subprocess.Popen` is.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from tests.commands import (
    CommandProcess,
    inspect_process,
    peak_rss_mib_of,
    run_inspect,
    run_tracegrade,
    tracegrade_process,
)
from tests.support import write_lines

RECORD = {"required": ["D1"], "context": ["D1"], "correct": True}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    write_lines(
        tmp_path / "runs.jsonl", [{"id": "r1", "input": RECORD}, {"id": "r2"}, "{"]
    )
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["report"],
        ["check"],
        ["check", "stage_diagnosis", "missing.jsonl"],
        ["check", "stage_diagnosis", "runs.jsonl"],
    ],
    ids=["no-input", "usage", "missing", "bad-lines"],
)
def test_in_process_a_command_ends_as_in_a_fresh_interpreter(
    work: Path, args: list[str]
) -> None:
    in_process = run_tracegrade(*args, cwd=work)
    fresh = tracegrade_process(*args, cwd=work)

    assert in_process.returncode == fresh.returncode
    assert in_process.stdout == fresh.stdout
    assert in_process.stderr == fresh.stderr


def test_a_bug_is_a_traceback_and_exit_code_1_as_the_interpreter_prints_it(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    # The module, which the group's `check` command hides by its name.
    check = importlib.import_module("tracegrade.cli.check")
    monkeypatch.setattr(check, "_print_summary", broken)
    done = run_tracegrade("check", "stage_diagnosis", "runs.jsonl", cwd=work)

    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1] == "ZeroDivisionError: a bug"


def test_a_command_has_its_own_directory_and_environment(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A caller's INSPECT_* setting: not the command's, as `SUBPROCESS_ENV`
    # runs one.
    monkeypatch.setenv("INSPECT_LOG_FORMAT", "yaml")
    here = os.getcwd()
    args = ("score", "stage_diagnosis", "runs.jsonl", "--no-progress")
    plain = run_tracegrade(*args, "--log-dir", "plain", cwd=work)
    given = run_tracegrade(
        *args, "--log-dir", "given", cwd=work, env={"INSPECT_LOG_FORMAT": "json"}
    )

    # Each relative to its directory, with the variables it was given.
    assert plain.returncode == given.returncode == 1, (plain.stderr, given.stderr)
    assert len(list((work / "plain").glob("*.eval"))) == 1
    assert len(list((work / "given").glob("*.json"))) == 1
    assert os.getcwd() == here
    assert os.environ["INSPECT_LOG_FORMAT"] == "yaml"


def test_inspect_in_process_ends_as_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Twice in-process, after a `tracegrade` command: Inspect sets its
    exception hook once per interpreter, and each run must report through
    it."""
    dataset = write_lines(tmp_path / "bad.jsonl", [{"id": "a", "input": {}}, "{"])
    args = (
        *("eval", "tracegrade/stage_diagnosis", "-T", f"dataset={dataset}"),
        *("--log-dir", "logs", "--display", "none"),
    )
    fresh = inspect_process(*args, cwd=tmp_path)
    write_lines(tmp_path / "runs.jsonl", [{"id": "r1", "input": RECORD}])
    scored = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", "scored", cwd=tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    for _ in range(2):
        in_process = run_inspect(*args, cwd=tmp_path)
        assert in_process.returncode == fresh.returncode == 1
        assert in_process.stderr == fresh.stderr
        assert "Traceback" not in in_process.stderr


PROBE = """
import resource, sys

what = sys.argv[1]
if what == "limits":
    print(*resource.getrlimit(resource.RLIMIT_FSIZE))
if what == "hold":
    held = b"x" * (int(sys.argv[2]) << 20)  # written, so resident
"""


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX")
def test_a_limit_is_set_before_the_command_starts(tmp_path: Path) -> None:
    import resource

    process = CommandProcess(
        [sys.executable, "-c", PROBE, "limits"],
        cwd=tmp_path,
        rlimits=((resource.RLIMIT_FSIZE, 10_000, 20_000),),
    )
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert stdout == "10000 20000\n"


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_a_programs_peak_memory_is_its_own(tmp_path: Path) -> None:
    peaks = {
        mib: peak_rss_mib_of(
            [sys.executable, "-c", PROBE, "hold", str(mib)], cwd=tmp_path
        )
        for mib in (0, 200)
    }

    assert 190 < peaks[200] - peaks[0] < 230, peaks
