"""The `tracegrade` program as a whole: what it runs, and how it ends.

Every command ends by freezing the objects the garbage collector tracks
(`tracegrade.cli.run`), so that the interpreter's last collections skip
what Inspect's import made. Calling `main` as a library, as the tests do
through click's runner, leaves the collector alone.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from importlib import metadata

from click.testing import CliRunner

from tests.support import SUBPROCESS_ENV
from tracegrade.cli import main

# Prints the number of frozen objects once the command has ended, from an
# exit handler registered before it started (exit handlers run last first).
PROBE = (
    "import atexit, gc, runpy\n"
    "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
    "runpy.run_module('tracegrade.cli', run_name='__main__')\n"
)


def test_the_program_ends_with_the_collector_frozen_even_on_an_error() -> None:
    # A fresh interpreter: the tests' own has frozen what it imported
    # (tests/conftest.py), and could not tell.
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, "check"],
        env=SUBPROCESS_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )

    assert completed.returncode == 2, completed.stderr
    assert "Usage: tracegrade check" in completed.stderr
    assert completed.stdout == "frozen True\n"


def test_main_called_as_a_library_leaves_the_collector_alone() -> None:
    frozen = gc.get_freeze_count()

    result = CliRunner().invoke(main, ["--version"])

    assert result.exit_code == 0, result.output
    # Frozen objects can be freed meanwhile; a freeze would add the runner's.
    assert gc.get_freeze_count() <= frozen


def test_the_tracegrade_script_runs_the_program() -> None:
    (script,) = metadata.entry_points(group="console_scripts", name="tracegrade")
    assert script.value == "tracegrade.cli:run"
