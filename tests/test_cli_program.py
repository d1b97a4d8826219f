"""The `tracegrade` program as a whole: what it runs, and how it ends."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from tests.support import SUBPROCESS_ENV


def test_the_program_ends_with_its_usage_error_code() -> None:
    # A fresh interpreter: the program's own exit, not a runner's.
    completed = subprocess.run(
        [sys.executable, "-m", "tracegrade.cli", "check"],
        env=SUBPROCESS_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )

    assert completed.returncode == 2, completed.stderr
    assert "Usage: tracegrade check" in completed.stderr
    assert completed.stdout == ""


def test_the_tracegrade_script_runs_the_program() -> None:
    (script,) = metadata.entry_points(group="console_scripts", name="tracegrade")
    assert script.value == "tracegrade.cli:run"
