"""The `.eval` writer in a second process, so both cores share a bulk run.

Building, serialising, summarising, compressing and archiving a sample
cost about as much as reading and scoring it, and in one process a run
would do them one after the other on one core. Here a child forked when
the run begins (sharing the imported code, so it starts at once) holds
the run's `EvalLogWriter`s: the main process hands each sample's parts
(`samples.SampleParts`) down a pipe, pickled, and goes on to the next
line, while the child builds the sample, serialises and summarises it,
and writes it into its part's archive.

What is written is what the in-process writer writes: the child runs the
same `EvalLogWriter` on the same parts (`SampleParts.plain`: pickling
them costs the main process a third of pickling the sample, and less
than serialising it). `tests/test_cli_score.py` holds the logs to
`inspect eval`'s.


The fault guarantees stay:
- The child ignores SIGINT, SIGTERM and SIGHUP (a terminal's Ctrl-C
  reaches the whole process group): the main process handles them, and
  stops the child by closing the pipe.
- End of input, whole or mid-message, means abort: the child removes its
  `.partial` files, says it is done, and exits. So a main
  process killed outright (SIGKILL) leaves no partial log behind it either.
- An error in the child (a full disk) is sent back and raised in the main
  process as the same exception at the next exchange, or when the pipe
  breaks; the child has removed its files by then. Running out of memory
  (`ulimit -v`) comes back as `WriterDied`, one line like any fault.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import pickle
import select
import signal
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

from inspect_ai.log import EvalLog, EvalPlan, EvalSpec

from ..outputs import PARTIAL_SUFFIX, OutputError
from .evallog import EvalLogWriter, StreamedReductions, deflating_with_isal
from .samples import SampleParts, SampleTemplates

_FRAME: Final = struct.Struct("<BIQ")
"""A message: its kind, the part it is for, and its payload's length."""

_START, _ADD, _SUSPEND, _RESUME, _COMPLETE, _CHUNK, _END, _PUBLISH, _CLOSE = range(9)
_FLUSH_AT: Final = 1 << 16
"""Bytes of messages gathered before they go down the pipe."""
_PIPE_SIZE: Final = 1 << 20
"""Linux's largest pipe for an unprivileged process, by default."""
_REDUCTIONS_CHUNK: Final = 1 << 20


class WriterDied(OutputError):
    """The writer process ended without saying why (killed, out of memory):
    the log cannot be written, as when its file cannot."""


class WriterProcess:
    """A forked child holding every part's `EvalLogWriter` of one run."""

    def __init__(self) -> None:
        commands_read, commands_write = os.pipe()
        # A pipe holds 64 KiB: the main process would wait on every batch
        # while the child works through it, and the two would take turns.
        # A larger one lets the main process run ahead.
        with contextlib.suppress(OSError):
            fcntl.fcntl(commands_write, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
        replies_read, replies_write = os.pipe()
        # Copy-on-write shares the parent's pages with the child only until
        # either process writes to them, and a garbage collection writes to
        # every object it visits: each process would soon hold its own copy
        # of everything imported. Frozen objects are never visited (and the
        # main process's collections get cheaper). Undone in `_reap`,
        # unless someone else had frozen objects already. No collection
        # first (the gc.freeze docs ask for none): a full one costs 0.13 s
        # with Inspect imported, more in a larger process, and what
        # garbage it would free is freed after `_reap`.
        self._unfreeze = gc.get_freeze_count() == 0
        gc.freeze()
        try:
            pid = os.fork()
        except BaseException:  # no process to write the log: leave nothing
            if self._unfreeze:
                gc.unfreeze()
            for fd in (commands_read, commands_write, replies_read, replies_write):
                os.close(fd)
            raise
        if pid == 0:  # the child: it never returns from here
            os.close(commands_write)
            os.close(replies_read)
            _serve(commands_read, replies_write)
        os.close(commands_read)
        os.close(replies_write)
        self.pid = pid
        self._commands: int | None = commands_write
        self._replies = replies_read
        self._buffer = bytearray()
        self._ended = False

    # -- sending ------------------------------------------------------------------

    def send(self, kind: int, part: int, payload: bytes = b"") -> None:
        """Queue one message; it goes down the pipe with the next flush."""
        self._buffer += _FRAME.pack(kind, part, len(payload))
        self._buffer += payload
        if len(self._buffer) >= _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Write the queued messages, first raising any error the child sent."""
        self._raise_if_replied()
        if self._commands is None:
            raise WriterDied("the log writer process has ended")
        view = memoryview(self._buffer)
        try:
            while view:
                view = view[os.write(self._commands, view) :]
        except BrokenPipeError:
            self._raise_reply()
        finally:
            view.release()
        self._buffer.clear()

    def call(self, kind: int, part: int, payload: bytes = b"") -> Any:
        """Send one message and wait for the child's answer."""
        self.send(kind, part, payload)
        self.flush()
        return self._read_reply()

    def complete(
        self, part: int, header: EvalLog, reductions: StreamedReductions | None
    ) -> None:
        """Hand the part's header and reductions down, without waiting: the
        child completes the part (its summaries compressed, its directory
        written) while this process works out the next part's metrics. An
        error comes back at the next exchange, `publish`'s at the latest."""
        head = None if reductions is None else reductions.head
        self.send(_COMPLETE, part, pickle.dumps((header, head)))
        if reductions is not None:
            pending = bytearray()
            for chunk in reductions.samples_json:
                pending += chunk
                if len(pending) >= _REDUCTIONS_CHUNK:
                    self.send(_CHUNK, part, bytes(pending))
                    pending.clear()
            if pending:
                self.send(_CHUNK, part, bytes(pending))
            self.send(_END, part)
        self.flush()

    # -- replies ------------------------------------------------------------------

    def _raise_if_replied(self) -> None:
        # Only an error comes unasked; a reply to a call is read by `call`.
        if not self._ended:
            ready, _, _ = select.select([self._replies], [], [], 0)
            if ready:
                self._raise_reply()

    def _raise_reply(self) -> None:
        self._read_reply()
        raise WriterDied("the log writer process answered out of turn")

    def _read_reply(self) -> Any:
        kind, value = self._receive()
        if kind == "error":
            self._ended = True
            self._reap()
            raise value
        return value

    def _receive(self) -> tuple[str, Any]:
        header = _read_exactly(self._replies, 8)
        size = struct.unpack("<Q", header)[0] if len(header) == 8 else 0
        body = _read_exactly(self._replies, size) if size else b""
        if not size or len(body) < size:
            self._ended = True
            status = self._reap()
            raise WriterDied(f"the log writer process ended ({status})")
        reply: tuple[str, Any] = pickle.loads(body)
        return reply

    # -- ending -------------------------------------------------------------------

    def close(self) -> None:
        """End the child after every part is published."""
        if not self._ended:
            self.call(_CLOSE, 0)
            self._ended = True
        self._reap()

    def abort(self) -> None:
        """Stop the child, which removes every part it has not published,
        and wait until it has. Never raises; each part's writer then checks
        its own file (the child may have been killed before removing it)."""
        if self._commands is not None:
            with contextlib.suppress(OSError):
                os.close(self._commands)
            self._commands = None
        if not self._ended:
            self._ended = True
            with contextlib.suppress(Exception):
                self._receive()  # "aborted", or an error already moot
        self._reap()

    def _reap(self) -> str:
        if self._unfreeze:
            gc.unfreeze()
            self._unfreeze = False
        if self._commands is not None:
            with contextlib.suppress(OSError):
                os.close(self._commands)
            self._commands = None
        with contextlib.suppress(OSError):
            os.close(self._replies)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return "already reaped"
        if os.WIFSIGNALED(status):
            return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exit status {os.waitstatus_to_exitcode(status)}"


class ForkedEvalLogWriter:
    """One part's `.eval` log, written by the run's `WriterProcess`
    (the `LogWriter` protocol of `bulk.log`)."""

    def __init__(
        self,
        process: WriterProcess,
        part: int,
        working: Path,
        eval_spec: EvalSpec,
        plan: EvalPlan,
        templates: SampleTemplates,
    ) -> None:
        self._process = process
        self._part = part
        self.partial = working.with_name(working.name + PARTIAL_SUFFIX)
        self.published: Path | None = None
        self.spooled = 0
        process.call(_START, part, pickle.dumps((working, eval_spec, plan, templates)))

    def add(self, parts: SampleParts) -> None:
        payload = pickle.dumps(parts.plain(), pickle.HIGHEST_PROTOCOL)
        self._process.send(_ADD, self._part, payload)
        self.spooled += len(payload)

    def suspend(self) -> None:
        self._process.send(_SUSPEND, self._part)

    def resume(self) -> None:
        self._process.send(_RESUME, self._part)

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        self._process.complete(self._part, header, reductions)

    def publish(self, location: Path) -> None:
        self._process.call(_PUBLISH, self._part, os.fsencode(location))
        self.published = location

    def abort(self) -> str | None:
        self._process.abort()
        # The child has removed its file, unless it was killed first.
        try:
            self.partial.unlink(missing_ok=True)
        except OSError:
            return str(self.partial)
        return None


def _read_exactly(fd: int, size: int) -> bytes:
    """`size` bytes, or fewer at end of file."""
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


# --- The child ---------------------------------------------------------------------


def _serve(commands: int, replies: int) -> None:
    """The child's whole life: write what the pipe says, then `_exit`."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    # Nothing of the parent's output: its buffers are never flushed here,
    # and whoever reads its stdout must not wait for this process to end.
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
    writers: dict[int, EvalLogWriter] = {}
    status = 1
    try:
        reader = os.fdopen(commands, "rb", buffering=1 << 20)
        with deflating_with_isal():
            served = _run(reader, writers, replies)
        if not served:
            _abort_all(writers)
            _reply(replies, ("aborted", None))
        status = 0
    except BaseException as error:  # sent back, raised in the main process
        if isinstance(error, MemoryError):
            # A fault of the machine, not of tracegrade: one line, as a
            # full disk is.
            error = WriterDied("the log writer process ran out of memory")
        _abort_all(writers)
        try:
            _reply(replies, ("error", error))
        except Exception:
            _reply(replies, ("error", WriterDied(repr(error))))
    finally:
        os._exit(status)  # never the parent's exit handlers or buffers


def _run(reader: IO[bytes], writers: dict[int, EvalLogWriter], replies: int) -> bool:
    """Serve messages until `_CLOSE` (True) or the end of input (False)."""
    while (message := _next(reader)) is not None:
        kind, part, payload = message
        if kind == _ADD:
            writers[part].add(pickle.loads(payload))
        elif kind == _START:
            working, eval_spec, plan, templates = pickle.loads(payload)
            writers[part] = EvalLogWriter(working, eval_spec, plan, templates)
            _reply(replies, ("ok", None))
        elif kind == _SUSPEND:
            writers[part].suspend()
        elif kind == _RESUME:
            writers[part].resume()
        elif kind == _COMPLETE:
            header, head = pickle.loads(payload)
            chunks = _chunks(reader)
            reductions = None if head is None else StreamedReductions(head, chunks)
            writers[part].complete(header, reductions)
            if head is not None:
                for _ in chunks:  # the end marker, if the writer stopped early
                    pass
        elif kind == _PUBLISH:
            writers[part].publish(Path(os.fsdecode(payload)))
            _reply(replies, ("ok", None))
        elif kind == _CLOSE:
            _reply(replies, ("ok", None))
            return True
        else:
            raise WriterDied(f"the log writer got an unknown message {kind}")
    return False


class _EndOfInput(Exception):
    """The pipe ended inside the reductions: the main process stopped."""


def _chunks(reader: IO[bytes]) -> Iterator[bytes]:
    while True:
        message = _next(reader)
        if message is None:
            raise _EndOfInput
        kind, _, payload = message
        if kind == _END:
            return
        yield payload


def _next(reader: IO[bytes]) -> tuple[int, int, bytes] | None:
    """The next message, or None at the end of input (even mid-message)."""
    header = reader.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    kind, part, size = _FRAME.unpack(header)
    payload = reader.read(size) if size else b""
    if len(payload) < size:
        return None
    return kind, part, payload


def _abort_all(writers: dict[int, EvalLogWriter]) -> None:
    for writer in writers.values():
        writer.abort()


def _reply(replies: int, reply: tuple[str, Any]) -> None:
    body = pickle.dumps(reply)
    data = struct.pack("<Q", len(body)) + body
    with contextlib.suppress(OSError):  # the main process may be gone
        while data:
            data = data[os.write(replies, data) :]
