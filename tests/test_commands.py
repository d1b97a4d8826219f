"""The test suite's command runner behaves as a fresh `python -m` would.

`tests/commands.py` forks each command from a server that imported
Inspect once; these checks hold it to what a real process gives: exit
codes, streams, working directory, environment, uncaught exceptions, and a
timeout that ends the command; a command left running (`start_module`) is
signalled and waited for as a `subprocess.Popen` started in a session of
its own from a terminal.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import (
    PRELOADED,
    ServedProcess,
    run_module,
    server_address,
    start_module,
)
from tests.support import SUBPROCESS_ENV

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
if what == "hold":
    held = b"x" * (int(sys.argv[2]) << 20)  # written, so resident
if what == "wait":
    try:
        print("ready", file=sys.stderr, flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print(os.getpgid(0) == os.getpid(), flush=True)
        raise
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


def _started(probe: Path, *args: str) -> ServedProcess:
    """A probe left running, once it has said it is ready."""
    process = start_module("probe", *args, cwd=probe)
    deadline = time.monotonic() + 60
    while "ready" not in process.stderr_so_far():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the probe never got ready"
        time.sleep(0.01)
    return process


def _fresh_started(probe: Path, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "probe", *args],
        cwd=probe,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,
    )
    assert process.stderr is not None
    assert process.stderr.readline() == "ready\n"
    return process


def test_a_started_command_ends_on_ctrl_c_as_a_fresh_one(probe: Path) -> None:
    forked = _started(probe, "wait")
    real = _fresh_started(probe, "wait")
    assert forked.poll() is None and real.poll() is None

    forked.send_signal(signal.SIGINT)
    real.send_signal(signal.SIGINT)
    forked_out, forked_err = forked.communicate(timeout=60)
    real_out, real_err = real.communicate(timeout=60)

    # Its own process group, KeyboardInterrupt, and death by SIGINT.
    assert forked_out == real_out == "True\n"
    assert forked.returncode == real.returncode == -signal.SIGINT
    assert forked_err.splitlines()[-1] == real_err.splitlines()[-1]


def test_a_started_command_is_waited_for_and_signalled_as_popen(
    probe: Path,
) -> None:
    first = _started(probe, "wait")
    second = start_module("probe", "exit", "5", cwd=probe)
    # One command running does not hold up another.
    assert second.wait(timeout=60) == 5
    with pytest.raises(subprocess.TimeoutExpired):
        first.wait(timeout=0.1)
    assert os.getpgid(first.pid) == first.pid

    first.kill()
    assert first.wait(timeout=60) == -signal.SIGKILL
    # Ended and reaped: a late signal reaches nothing, as with Popen.
    first.send_signal(signal.SIGTERM)
    assert first.poll() == -signal.SIGKILL


def test_a_commands_peak_memory_is_its_own_on_top_of_the_servers(
    probe: Path,
) -> None:
    peaks = {}
    for mib in (0, 200):
        process = start_module("probe", "hold", str(mib), cwd=probe)
        assert process.peak_rss_kib is None  # until it is waited for
        assert process.wait(timeout=60) == 0
        assert process.peak_rss_kib is not None
        peaks[mib] = process.peak_rss_kib / 1024

    assert 190 < peaks[200] - peaks[0] < 230, peaks


@pytest.mark.parametrize("module", PRELOADED)
def test_every_module_the_server_preloads_exists(module: str) -> None:
    """The server imports Inspect's own modules by name, some private: one
    that an Inspect release renames or drops fails here, by name, rather
    than every test that runs a command."""
    assert importlib.util.find_spec(module) is not None, module


def test_a_command_in_a_shell_pipeline_runs_as_a_fresh_one(probe: Path) -> None:
    """`tests/served.py`, the stand-in for `tracegrade` in a test's shell
    script: stdin and stdout are the pipeline's pipes, its exit code and
    its death by a signal are the command's."""
    served = str(Path(__file__).with_name("served.py"))
    environment = {**SUBPROCESS_ENV, "TRACEGRADE_COMMAND_SERVER": server_address()}
    runs = {}
    for name, command in (
        ("forked", f"{sys.executable} -S {served} probe"),
        ("fresh", f"{sys.executable} -m probe"),
    ):
        runs[name] = subprocess.run(
            [
                "bash",
                "-c",
                f"printf hi | {command} echo | tr a-z A-Z; "
                f"{command} exit 3; echo $?; "
                f"{command} raise 2>/dev/null; echo $?",
            ],
            cwd=probe,
            env={**environment, "PROBE": "set"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert runs["forked"].stdout == runs["fresh"].stdout
    assert runs["forked"].stdout == f"HI {str(probe).upper()} SET\n3\n1\n"
