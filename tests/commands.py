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
imports, a signal before tracegrade can catch it) starts a fresh
interpreter with `subprocess`. A command's peak memory comes back with
its status (`ServedProcess.peak_rss_kib`, from `os.wait4`); a fork starts
with the server's pages resident, so tests compare two commands' peaks.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Protocol

from tests.support import SUBPROCESS_ENV

# What the server imports before it forks: all that a command's start-up
# would import, and what an eval imports only once it runs (its control
# server, hooks, the `none` model, Markdown rendering: 0.7 s), so a
# child starts at once. `test_commands` fails if one is gone.
PRELOADED = (
    "inspect_ai._cli.main",
    "inspect_ai.log",
    "inspect_ai.agent._acp.server",
    "inspect_ai.hooks._startup",
    "inspect_ai.model._providers.none",
    "inspect_ai._control.scoring",
    "inspect_ai.solver._transcript",
    "inspect_ai._control.current_server",
    "inspect_ai.agent._acp.transport_live",
    "anyio._backends._asyncio",
    "fastapi",
    "uvicorn.main",
    "starlette.staticfiles",
    "opentelemetry.propagate",
    "opentelemetry.metrics",
    "pydantic.v1",
    "rich.markdown",
    "multiprocessing.connection",
    "logging.config",
    "logging.handlers",
    "markdown_it",
    "linkify_it",
    "tracegrade.cli",
    "tracegrade._registry",
    "tracegrade.bulk.log",
    "tracegrade.bulk.run",
    "tracegrade.report.aggregate",
    "tracegrade.report.tables",
    "tracegrade.compare.build",
    "tracegrade.compare.tables",
)

_SERVER = r"""
import atexit, gc, importlib, json, os, resource, runpy, selectors, signal
import socket, sys, tempfile, threading

for name in sys.argv[2:]:
    importlib.import_module(name)
# A fork copies only the forking thread; one started by an import would
# leave the children with its locks held.
assert threading.active_count() == 1, threading.enumerate()
# Out of the collector's sight, so that each child's collections neither
# walk nor copy what it shares with the server.
gc.freeze()


def exit_code(stop):
    # As the interpreter exits on an uncaught SystemExit.
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


def run(request, streams):
    if request["new_session"]:
        # As Popen(start_new_session=True) from a terminal: a process group
        # of its own, and SIGINT raising KeyboardInterrupt even when the
        # tests run in the background with SIGINT ignored.
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for limit, soft, hard in request["rlimits"]:
        resource.setrlimit(limit, (soft, hard))
    # The descriptors the test passed: stdin, stdout, stderr.
    for number, stream in enumerate(streams):
        os.dup2(stream, number)
    for stream in streams:
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


# fd 0 is a socket to the test process. Each request is one message, JSON
# with the command's three standard streams attached; it is forked at once
# and answered with its pid, and later, when it has ended, with its status.
# Several run at a time: a test may start a command and run another. The
# listening socket at fd argv[1] takes the same requests from
# `tests/served.py`, the stand-in for a command in a shell script, one
# connection each.
channel = socket.socket(fileno=0)
listener = socket.socket(fileno=int(sys.argv[1]))
waiting = selectors.DefaultSelector()
waiting.register(channel, selectors.EVENT_READ, "test")
waiting.register(listener, selectors.EVENT_READ, "listener")


def reply(to, message):
    to.send(json.dumps(message).encode())


def start(request, streams, to):
    pid = os.fork()
    if pid == 0:
        # Nothing of the server's stays open in the command: its sockets
        # (fd 0 becomes the command's stdin) and the other commands' pidfds.
        for key in list(waiting.get_map().values()):
            if isinstance(key.fileobj, socket.socket):
                key.fileobj.detach()
            if key.fd != 0:
                os.close(key.fd)
        waiting.close()
        run(request, streams)
    for stream in streams:
        os.close(stream)
    pidfd = os.pidfd_open(pid)
    waiting.register(pidfd, selectors.EVENT_READ, (request["id"], pid, to))
    reply(to, {"id": request["id"], "pid": pid})


def receive(source):
    message, streams, _, _ = socket.recv_fds(source, 1 << 20, 3)
    if message:
        start(json.loads(message), streams, source)
    return bool(message)


while True:
    for key, _ in waiting.select():
        if key.data == "test":
            if not receive(channel):
                sys.exit(0)
        elif key.data == "listener":
            connection, _ = listener.accept()
            waiting.register(connection, selectors.EVENT_READ, "shell")
        elif key.data == "shell":
            if not receive(key.fileobj):
                waiting.unregister(key.fileobj)
                key.fileobj.close()
        else:
            number, pid, to = key.data
            waiting.unregister(key.fd)
            os.close(key.fd)
            _, status, usage = os.wait4(pid, 0)
            ended = {
                "id": number,
                "status": os.waitstatus_to_exitcode(status),
                "peak_rss_kib": usage.ru_maxrss,
            }
            try:
                reply(to, ended)
            except OSError:
                pass  # a shell's stand-in that is gone
"""

# A command's standard stream: a file to read it from (stdin), a descriptor
# of the test's own, or None: stdin from /dev/null, stdout and stderr
# captured, as `subprocess.PIPE` does, for `communicate`.
Stream = Path | int | None
# (resource.RLIMIT_*, soft, hard), set in the command as a preexec_fn would.
Limit = tuple[int, int, int]


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
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sockets = tempfile.mkdtemp(prefix="tracegrade-commands-")
        # Where `tests/served.py` reaches the server.
        self.address = os.path.join(self.sockets, "server")
        weakref.finalize(self, shutil.rmtree, self.sockets, True)
        # Listening before the server starts: a stand-in may connect while
        # the server is still importing.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(self.address)
        listener.listen()
        with theirs, listener:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SERVER, str(listener.fileno()), *PRELOADED],
                pass_fds=(listener.fileno(),),
                stdin=theirs.fileno(),
                env=SUBPROCESS_ENV,
                cwd=tempfile.gettempdir(),
            )
        # Replies read while waiting for another one: (request, "pid",
        # "status" or "peak_rss_kib") -> value. Whoever waits reads, under
        # the lock.
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
        stdin: Stream,
        stdout: Stream,
        stderr: Stream,
        new_session: bool,
        rlimits: tuple[Limit, ...],
    ) -> ServedProcess:
        number = next(self.numbers)
        captured = Path(tempfile.mkdtemp(prefix="tracegrade-command-"))
        request = {
            "id": number,
            "module": module,
            "args": list(args),
            "cwd": str(cwd),
            "env": env,
            "new_session": new_session,
            "rlimits": list(rlimits),
        }
        with contextlib.ExitStack() as opened:

            def descriptor(stream: Stream, read: bool, capture: Path) -> int:
                if isinstance(stream, int):
                    return stream
                if read:
                    path = os.devnull if stream is None else stream
                    flags = os.O_RDONLY
                else:
                    path = capture if stream is None else stream
                    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
                opened.callback(os.close, fd)
                return fd

            streams = [
                descriptor(stdin, True, Path(os.devnull)),
                descriptor(stdout, False, captured / "stdout"),
                descriptor(stderr, False, captured / "stderr"),
            ]
            with self.lock:
                socket.send_fds(self.channel, [json.dumps(request).encode()], streams)
        pid = self.reply(number, "pid", timeout=60)
        assert pid is not None, "the command server did not answer"
        argv = [sys.executable, "-m", module, *args]
        return ServedProcess(
            self,
            number,
            pid,
            argv,
            captured,
            stdout is None,
            stderr is None,
        )

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
                    waiting.register(self.channel, selectors.EVENT_READ)
                    if not waiting.select(remaining):
                        return None
                received = self.channel.recv(65536)
                if not received:
                    raise RuntimeError(
                        f"the command server ended (exit {self.process.wait()}); "
                        "its stderr is in the test's output"
                    )
                message = json.loads(received)
                for found in ("pid", "status", "peak_rss_kib"):
                    if found in message:
                        self.arrived[message["id"], found] = message[found]
            return self.arrived.pop((number, kind))


class ServedProcess:
    """A command forked by the server, handled as a `subprocess.Popen` is:
    its pid for /proc, `send_signal`, `poll`, `wait`, `communicate`. The
    standard output and error it captures go to files, read once it has
    ended.

    The server reaps a command as soon as it ends, where a Popen's pid
    stays a zombie until waited for: signals go through a pidfd, so that
    one sent late finds nothing rather than a process given the pid since.
    """

    def __init__(
        self,
        server: _Server,
        number: int,
        pid: int,
        args: list[str],
        captured: Path,
        stdout_captured: bool,
        stderr_captured: bool,
    ) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.peak_rss_kib: int | None = None
        """Once it has ended: its peak resident memory (`ru_maxrss` from
        `os.wait4`), its own and its children's. A fork starts resident
        with the server's pages, so only a difference between two commands
        says what they held."""
        self._server = server
        self._number = number
        self._captured = captured
        self._streams = {"stdout": stdout_captured, "stderr": stderr_captured}
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            self._pidfd = None  # ended and reaped already
        self._cleanup = weakref.finalize(self, _forget, self._pidfd, captured)

    def poll(self) -> int | None:
        if self.returncode is None:
            self._ended(self._server.reply(self._number, "status", timeout=0))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._ended(self._server.reply(self._number, "status", timeout))
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def _ended(self, status: int | None) -> None:
        if status is not None:
            # Both came in the one message.
            self.peak_rss_kib = self._server.reply(self._number, "peak_rss_kib", 0)
            self.returncode = status

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
        """What the command has written to its captured stderr until now."""
        return self._read("stderr") or ""

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Wait for the command; its captured standard output and error (None
        for a stream the test gave it)."""
        self.wait(timeout)
        output = self._read("stdout"), self._read("stderr")
        self._cleanup()
        return output

    def _read(self, stream: str) -> str | None:
        if not self._streams[stream]:
            return None
        # As Popen(text=True) decodes: universal newlines.
        return (self._captured / stream).read_text(encoding="utf-8")


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
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    rlimits: tuple[Limit, ...] = (),
    new_session: bool = True,
) -> ServedProcess:
    """`python -m MODULE ARGS` started in a process of its own, and left
    running: as `subprocess.Popen(..., start_new_session=True)` from a
    terminal, for a test that signals it or watches it from /proc
    (`new_session=False`: in the tests' own session, as `run_module`)."""
    return _served().start(
        module,
        args,
        cwd=cwd,
        env={**SUBPROCESS_ENV, **(env or {})},
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        new_session=new_session,
        rlimits=rlimits,
    )


def run_module(
    module: str,
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    rlimits: tuple[Limit, ...] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` in a process of its own, run to its end; see
    the module's docstring. `env` adds to the environment tests run
    commands with; `stdin`, `stdout` and `stderr` are a file or a
    descriptor (else /dev/null, and captured); `rlimits` are set in it."""
    process = start_module(
        module,
        *args,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        rlimits=rlimits,
        new_session=False,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.wait(), out, err)


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
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    rlimits: tuple[Limit, ...] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS`."""
    return run_module(
        "tracegrade.cli",
        *args,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        rlimits=rlimits,
        timeout=timeout,
    )


def server_address() -> str:
    """Where `tests/served.py` reaches the command server (its
    TRACEGRADE_COMMAND_SERVER)."""
    return _served().address


def tracegrade_shell(
    script: str, cwd: Path, *, errexit: bool = False
) -> subprocess.CompletedProcess[str]:
    """A bash script, as in the docs, in which `tracegrade` is run by the
    command server (`tests/served.py`) and `python` is this interpreter; a
    pipeline fails if any command in it fails, and with `errexit` the
    script stops at the first that does."""
    interpreter = shlex.quote(sys.executable)
    stand_in = shlex.quote(str(Path(__file__).with_name("served.py")))
    define = (
        f'tracegrade() {{ {interpreter} -S {stand_in} tracegrade.cli "$@"; }}\n'
        f'python() {{ {interpreter} "$@"; }}\n'
    )
    return subprocess.run(
        ["bash", *(["-e"] if errexit else []), "-o", "pipefail", "-c", define + script],
        cwd=cwd,
        env={**SUBPROCESS_ENV, "TRACEGRADE_COMMAND_SERVER": server_address()},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def peak_rss_mib(*args: str, cwd: Path, exit_codes: tuple[int, ...] = (0,)) -> float:
    """`tracegrade ARGS` run to its end; its peak resident memory in MiB,
    from the kernel (ru_maxrss, KiB on Linux): the command server's pages,
    which it starts with, and what it added. It is the largest peak of the
    command's processes, not their sum: measure `.json` runs or `check`,
    which fork no `.eval` writer."""
    process = start_module("tracegrade.cli", *args, cwd=cwd)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode in exit_codes, stderr
    assert process.peak_rss_kib is not None
    return process.peak_rss_kib / 1024


__all__ = [
    "PRELOADED",
    "Limit",
    "Running",
    "ServedProcess",
    "Stream",
    "peak_rss_mib",
    "run_inspect",
    "run_module",
    "run_tracegrade",
    "server_address",
    "start_module",
    "tracegrade_shell",
]
