"""The `tracegrade` program as a whole: what it runs, and how it ends."""

from __future__ import annotations

import os
import select
import signal
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.commands import start_tracegrade

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
