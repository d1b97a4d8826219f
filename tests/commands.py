"""`inspect` and `tracegrade` run as a user runs them, many times, cheaply.

Every command runs in a real process of its own, through the real entry
point (`python -m inspect_ai`, `python -m tracegrade.cli`), with its own
pid, working directory, environment, standard streams and exit code. What
the processes share is the interpreter's start-up and imports, about a
second each time: they are forked from a server that imported Inspect and
tracegrade once, as `multiprocessing`'s forkserver does (which itself
cannot run a module as `__main__` with exit codes, atexit handlers and
standard streams as a command has them).

`run_module` runs a command to its end; `start_module` leaves it running,
for a test that signals it, freezes it or watches it from /proc, as it
would a `subprocess.Popen`. A test of start-up itself (what a command
imports, a signal before tracegrade can catch it) or of a process's own
peak memory (a forked one shares the server's) starts a fresh interpreter
with `subprocess`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any, Protocol

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
import atexit, importlib, json, os, runpy, selectors, signal, sys, tempfile, threading

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
    if request["new_session"]:
        # As Popen(start_new_session=True) from a terminal: a process group
        # of its own, and SIGINT raising KeyboardInterrupt even when the
        # tests run in the background with SIGINT ignored.
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
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


# Requests come in on fd 0, one JSON line each; each is forked at once and
# answered with its pid, and later, when it has ended, with its status.
# Several run at a time: a test may start a command and run another.
requests = os.fdopen(0, "rb", buffering=0)
replies = os.fdopen(os.dup(1), "wb", buffering=0)
waiting = selectors.DefaultSelector()
waiting.register(requests, selectors.EVENT_READ)
pending = b""


def reply(message):
    replies.write(json.dumps(message).encode() + b"\n")


def start(request):
    pid = os.fork()
    if pid == 0:
        # Nothing of the server's stays open in the command: its pipes
        # (fd 0 is replaced by the command's stdin) and the pidfds of
        # the other commands.
        replies.close()
        for key in list(waiting.get_map().values()):
            if key.fileobj is not requests:
                os.close(key.fd)
        waiting.close()
        run(request)
    waiting.register(os.pidfd_open(pid), selectors.EVENT_READ, (request["id"], pid))
    reply({"id": request["id"], "pid": pid})


while True:
    for key, _ in waiting.select():
        if key.fileobj is requests:
            chunk = requests.read(65536)
            if not chunk:
                sys.exit(0)
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                start(json.loads(line))
        else:
            number, pid = key.data
            waiting.unregister(key.fd)
            os.close(key.fd)
            _, status = os.waitpid(pid, 0)
            reply({"id": number, "status": os.waitstatus_to_exitcode(status)})
"""


class Running(Protocol):
    """A command left running: a `subprocess.Popen` (text mode) or a
    `ServedProcess`, as the fault tests handle either."""

    pid: int

    @property
    def returncode(self) -> int | Any: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]: ...


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
        # Replies read while waiting for another one: (request, "pid" or
        # "status") -> value. Whoever waits reads, under the lock.
        self.arrived: dict[tuple[int, str], int] = {}
        self.lock = threading.Lock()
        self.numbers = itertools.count()

    def start(
        self,
        module: str,
        args: tuple[str, ...],
        *,
        cwd: Path,
        env: dict[str, str],
        stdin: Path | None,
        new_session: bool,
    ) -> ServedProcess:
        number = next(self.numbers)
        streams = Path(tempfile.mkdtemp(prefix="tracegrade-command-"))
        out, err = streams / "stdout", streams / "stderr"
        out.touch()
        err.touch()
        request = {
            "id": number,
            "module": module,
            "args": list(args),
            "cwd": str(cwd),
            "env": env,
            "stdin": None if stdin is None else str(stdin),
            "stdout": str(out),
            "stderr": str(err),
            "new_session": new_session,
        }
        with self.lock:
            self.requests.write(json.dumps(request).encode() + b"\n")
            self.requests.flush()
        pid = self.reply(number, "pid", timeout=60)
        assert pid is not None, "the command server did not answer"
        argv = [sys.executable, "-m", module, *args]
        return ServedProcess(self, number, pid, argv, streams)

    def reply(self, number: int, kind: str, timeout: float | None) -> int | None:
        """The server's reply of `kind` to request `number`, or None when
        `timeout` passes first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while (number, kind) not in self.arrived:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining < 0:
                    return None
                with selectors.DefaultSelector() as waiting:
                    waiting.register(self.replies, selectors.EVENT_READ)
                    if not waiting.select(remaining):
                        return None
                line = self.replies.readline()
                if not line:
                    raise RuntimeError(
                        f"the command server ended (exit {self.process.wait()}); "
                        "its stderr is in the test's output"
                    )
                message = json.loads(line)
                found = "pid" if "pid" in message else "status"
                self.arrived[message["id"], found] = message[found]
            return self.arrived.pop((number, kind))


class ServedProcess:
    """A command forked by the server, handled as a `subprocess.Popen` is:
    its pid for /proc, `send_signal`, `poll`, `wait`, `communicate`. Its
    standard output and error go to files, read once it has ended.

    The server reaps a command as soon as it ends, where a Popen's pid
    stays a zombie until waited for: signals go through a pidfd, so that
    one sent late finds nothing rather than a process given the pid since.
    """

    def __init__(
        self, server: _Server, number: int, pid: int, args: list[str], streams: Path
    ) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._server = server
        self._number = number
        self._streams = streams
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            self._pidfd = None  # ended and reaped already
        self._cleanup = weakref.finalize(self, _forget, self._pidfd, streams)

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.reply(self._number, "status", timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.reply(self._number, "status", timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Send `signum`, unless the command has ended."""
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def stderr_so_far(self) -> str:
        """What the command has written to its standard error until now."""
        return (self._streams / "stderr").read_text(encoding="utf-8")

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the command; its standard output and error."""
        self.wait(timeout)
        output = (
            (self._streams / "stdout").read_text(encoding="utf-8"),
            (self._streams / "stderr").read_text(encoding="utf-8"),
        )
        self._cleanup()
        return output


def _forget(pidfd: int | None, streams: Path) -> None:
    if pidfd is not None:
        os.close(pidfd)
    shutil.rmtree(streams, ignore_errors=True)


_server: _Server | None = None


def _served() -> _Server:
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = _Server()
    return _server


def start_module(
    module: str,
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: Path | None = None,
) -> ServedProcess:
    """`python -m MODULE ARGS` started in a process of its own, and left
    running: as `subprocess.Popen(..., start_new_session=True)` from a
    terminal, for a test that signals it or watches it from /proc."""
    return _served().start(
        module,
        args,
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=stdin,
        new_session=True,
    )


def run_module(
    module: str,
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` in a process of its own, run to its end; see
    the module's docstring. `env` adds to the environment tests run
    commands with."""
    process = _served().start(
        module,
        args,
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=stdin,
        new_session=False,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.wait(), stdout, stderr)


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


__all__ = [
    "PRELOADED",
    "Running",
    "ServedProcess",
    "run_inspect",
    "run_module",
    "run_tracegrade",
    "start_module",
]
