"""Helpers shared by the tests: writing JSON Lines, running Inspect's CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# No INSPECT_* settings from the caller (a default model, a log dir), and a
# wide console so error messages are not wrapped mid-sentence.
SUBPROCESS_ENV = {
    **{
        key: value
        for key, value in os.environ.items()
        if not key.startswith("INSPECT_")
    },
    "COLUMNS": "400",
}


def write_lines(path: Path, lines: list[Any], newline: str = "\n") -> str:
    """One line per item: strings as they are (malformed lines), else JSON."""
    path.write_text(
        "".join(
            (line if isinstance(line, str) else json.dumps(line)) + newline
            for line in lines
        ),
        encoding="utf-8",
        newline="",
    )
    return str(path)


def inspect_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` as a user runs it; check the log, not the exit code."""
    return subprocess.run(
        [sys.executable, "-m", "inspect_ai", *args],
        cwd=cwd,
        env=SUBPROCESS_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
