"""The test suite's command runner behaves as a fresh `python -m` would.

`tests/commands.py` forks each command from a server that imported
Inspect once; these checks hold it to what a real process gives: exit
codes, streams, working directory, environment, uncaught exceptions, and a
timeout that ends the command.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import run_module

PROBE = """
import os, sys, time

what = sys.argv[1]
if what == "exit":
    sys.exit(int(sys.argv[2]))
if what == "exit-text":
    sys.exit("stopped: " + sys.argv[2])
if what == "raise":
    raise ValueError("boom")
if what == "echo":
    print(sys.stdin.read().upper(), os.getcwd(), os.environ.get("PROBE"))
    print("to stderr", file=sys.stderr)
if what == "pipe":
    read, write = os.pipe()
    print(min(read, write) > 2)
if what == "sleep":
    time.sleep(60)
"""


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    return tmp_path


def fresh(
    probe: Path, *args: str, stdin: Path | None = None
) -> subprocess.CompletedProcess[str]:
    with open(stdin or "/dev/null", "rb") as given:
        return subprocess.run(
            [sys.executable, "-m", "probe", *args],
            cwd=probe,
            stdin=given,
            capture_output=True,
            text=True,
            check=False,
        )


@pytest.mark.parametrize(
    "args",
    [["exit", "0"], ["exit", "3"], ["exit", "258"], ["exit-text", "why"], ["raise"]],
)
def test_exit_codes_and_stderr_are_a_fresh_processs(
    probe: Path, args: list[str]
) -> None:
    forked = run_module("probe", *args, cwd=probe)
    real = fresh(probe, *args)

    assert forked.returncode == real.returncode
    assert forked.stdout == real.stdout
    # A traceback names the same error; its frames differ (runpy's).
    assert forked.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]


def test_stdin_cwd_and_environment_are_the_commands(probe: Path) -> None:
    given = probe / "in.txt"
    given.write_text("hello", encoding="utf-8")
    forked = run_module("probe", "echo", cwd=probe, env={"PROBE": "set"}, stdin=given)

    assert forked.returncode == 0
    assert forked.stdout == f"HELLO {probe} set\n"
    assert forked.stderr == "to stderr\n"


def test_a_pipe_the_command_opens_never_takes_a_standard_descriptor(
    probe: Path,
) -> None:
    assert run_module("probe", "pipe", cwd=probe).stdout == "True\n"


def test_a_timeout_ends_the_command_and_the_next_one_runs(probe: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_module("probe", "sleep", cwd=probe, timeout=1)
    assert run_module("probe", "exit", "4", cwd=probe).returncode == 4
