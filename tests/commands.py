"""`inspect` and `tracegrade` run as a user runs them, many times, cheaply.

Every command runs in a real process of its own, through the real entry
point (`python -m inspect_ai`, `python -m tracegrade.cli`), with its own
pid, working directory, environment, standard streams and exit code. What
the processes share is the interpreter's start-up and imports, about a
second each time: they are forked from a server that imported Inspect and
tracegrade once, as `multiprocessing`'s forkserver does (which itself
cannot run a module as `__main__` with exit codes, atexit handlers and
standard streams as a command has them).

A test of start-up itself (what a command imports, a signal before
tracegrade can catch it) starts a fresh interpreter with `subprocess`.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from tests.support import SUBPROCESS_ENV

# What the server imports before it forks: all that a command's start-up
# would import, so a child starts at once.
PRELOADED = (
    "inspect_ai._cli.main",
    "inspect_ai.log",
    "tracegrade.cli",
    "tracegrade._registry",
    "tracegrade.bulk.log",
    "tracegrade.report.aggregate",
    "tracegrade.compare.build",
)

_SERVER = r"""
import atexit, importlib, json, os, runpy, signal, sys, tempfile, threading

for name in sys.argv[1:]:
    importlib.import_module(name)
# A fork copies only the forking thread; one started by an import would
# leave the children with its locks held.
assert threading.active_count() == 1, threading.enumerate()


def exit_code(stop):
    # As the interpreter exits on an uncaught SystemExit.
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


def run(request):
    streams = (
        os.open(request["stdin"] or os.devnull, os.O_RDONLY),
        os.open(request["stdout"], os.O_WRONLY | os.O_TRUNC),
        os.open(request["stderr"], os.O_WRONLY | os.O_TRUNC),
    )
    for number, stream in enumerate(streams):
        if stream != number:
            os.dup2(stream, number)
            os.close(stream)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # TMPDIR is read again, as at start-up
    sys.path[0] = os.getcwd()  # as `python -m` puts it first
    importlib.invalidate_caches()
    sys.argv = [request["module"], *request["args"]]
    code = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = exit_code(stop)
    except BaseException:
        # As the interpreter reports an uncaught exception: through
        # sys.excepthook, which a command may have replaced.
        sys.excepthook(*sys.exc_info())
        code = -signal.SIGINT if isinstance(sys.exc_info()[1], KeyboardInterrupt) else 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if code == -signal.SIGINT:
        # As the interpreter ends on an uncaught KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


requests = os.fdopen(0, "rb", buffering=0)
replies = os.fdopen(os.dup(1), "wb", buffering=0)
pending = b""
while True:
    while b"\n" not in pending:
        chunk = requests.read(65536)
        if not chunk:
            sys.exit(0)
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        # The protocol's pipes: fd 0 is replaced by the command's stdin.
        replies.close()
        run(request)
    replies.write(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    replies.write(
        json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n"
    )
"""


class _Server:
    """The fork server of one test process, started on first use."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, *PRELOADED],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=SUBPROCESS_ENV,
            cwd=tempfile.gettempdir(),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.replies: IO[bytes] = self.process.stdout
        self.lock = threading.Lock()

    def _reply(self, timeout: float | None) -> dict[str, Any] | None:
        """The server's next reply, or None when `timeout` passes first."""
        with selectors.DefaultSelector() as waiting:
            waiting.register(self.replies, selectors.EVENT_READ)
            if not waiting.select(timeout):
                return None
        line = self.replies.readline()
        if not line:
            raise RuntimeError(
                f"the command server ended (exit {self.process.wait()}); "
                "its stderr is in the test's output"
            )
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(
        self,
        module: str,
        args: tuple[str, ...],
        *,
        cwd: Path,
        env: dict[str, str],
        stdin: Path | None,
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", module, *args]
        with self.lock, tempfile.TemporaryDirectory() as streams:
            out, err = Path(streams, "stdout"), Path(streams, "stderr")
            out.touch()
            err.touch()
            request = {
                "module": module,
                "args": list(args),
                "cwd": str(cwd),
                "env": env,
                "stdin": None if stdin is None else str(stdin),
                "stdout": str(out),
                "stderr": str(err),
            }
            self.requests.write(json.dumps(request).encode() + b"\n")
            self.requests.flush()
            started = self._reply(timeout=60)
            assert started is not None, "the command server did not answer"
            finished = self._reply(timeout)
            if finished is None:
                os.kill(started["pid"], signal.SIGKILL)
                self._reply(None)
                raise subprocess.TimeoutExpired(argv, timeout)
            return subprocess.CompletedProcess(
                argv,
                finished["status"],
                out.read_text(encoding="utf-8"),
                err.read_text(encoding="utf-8"),
            )


_server: _Server | None = None


def run_module(
    module: str,
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` in a process of its own; see the module's
    docstring. `env` adds to the environment tests run commands with."""
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = _Server()
    return _server.run(
        module,
        args,
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=stdin,
        timeout=timeout,
    )


def run_inspect(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS`; check the log's status, not the exit code, since
    `inspect eval` exits 0 when the eval fails."""
    return run_module("inspect_ai", *args, cwd=cwd, env=env, timeout=timeout)


def run_tracegrade(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS`."""
    return run_module(
        "tracegrade.cli", *args, cwd=cwd, env=env, stdin=stdin, timeout=timeout
    )


__all__ = ["PRELOADED", "run_inspect", "run_module", "run_tracegrade"]
