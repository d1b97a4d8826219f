"""`run_tracegrade` (in this interpreter) ends as a fresh interpreter does,
and a bug is a traceback with exit code 1."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.commands import (
    run_tracegrade,
    start_tracegrade,
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
        ["check", "stage_diagnosis", "missing.jsonl"],
        ["check", "stage_diagnosis", "runs.jsonl"],
    ],
    ids=["missing", "bad-lines"],
)
def test_in_process_a_command_ends_as_in_a_fresh_interpreter(
    work: Path, args: list[str]
) -> None:
    in_process = run_tracegrade(*args, cwd=work)
    fresh = start_tracegrade(*args, cwd=work).to_its_end()

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
