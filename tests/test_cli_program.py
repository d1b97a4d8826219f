"""The `tracegrade` program as a whole: what it runs, and how it ends; and
`run_tracegrade` (in this interpreter) ends as a fresh interpreter does."""

from __future__ import annotations

import importlib
import os
import select
import signal
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.commands import run_tracegrade, start_tracegrade
from tests.support import write_lines

# Put on the PYTHONPATH of one command: its first import of click (the
# first of its commands' imports) says so on the fifo READY, then waits on
# stdin, which stays open and silent, until a signal ends the wait.
_HELD_IMPORT = """
import os, sys

class HoldClick:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            os.write(os.open(READY, os.O_WRONLY), b"importing")
            os.read(0, 1)
        return None

sys.meta_path.insert(0, HoldClick())
"""


def test_the_tracegrade_script_runs_the_program() -> None:
    (script,) = metadata.entry_points(group="console_scripts", name="tracegrade")
    assert script.value == "tracegrade.__main__:run"


@pytest.mark.skipif(sys.platform == "win32", reason="the hold is a fifo")
def test_ctrl_c_while_the_commands_are_imported_is_one_line(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    hook = tmp_path / "hook"
    hook.mkdir()
    held = _HELD_IMPORT.replace("READY", repr(str(ready)))
    (hook / "sitecustomize.py").write_text(held, encoding="utf-8")
    reading = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
    silent_stdin, keeps_it_open = os.pipe()
    try:
        command = start_tracegrade(
            "score",
            "stage_diagnosis",
            "runs.jsonl",
            cwd=tmp_path,
            env={"PYTHONPATH": str(hook)},
            stdin=silent_stdin,
        )
        arrived, _, _ = select.select([reading], [], [], 120)
        assert arrived, command.stderr_so_far()
        assert os.read(reading, 16) == b"importing"
        command.send_signal(signal.SIGINT)
        _, stderr = command.communicate(timeout=120)
    finally:
        for descriptor in (reading, silent_stdin, keeps_it_open):
            os.close(descriptor)

    assert stderr == "tracegrade: interrupted (SIGINT)\n"
    assert command.returncode == 130


RECORD = {"required": ["D1"], "context": ["D1"], "correct": True}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    write_lines(
        tmp_path / "runs.jsonl", [{"id": "r1", "input": RECORD}, {"id": "r2"}, "{"]
    )
    return tmp_path


def test_in_process_a_command_ends_as_in_a_fresh_interpreter(work: Path) -> None:
    args = ("check", "stage_diagnosis", "runs.jsonl")
    in_process = run_tracegrade(*args, cwd=work)
    fresh = start_tracegrade(*args, cwd=work).to_its_end()
    assert in_process.returncode == fresh.returncode == 1
    assert (in_process.stdout, in_process.stderr) == (fresh.stdout, fresh.stderr)


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
