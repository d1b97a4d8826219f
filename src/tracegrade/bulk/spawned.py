"""The `.eval` writer in a process of its own, so a large run uses two cores.

Building, serialising and summarising a sample hold the GIL, and cost
about as much as reading and scoring it: on a thread (`bulk.threaded`) the
two take turns on one core. A second interpreter runs them beside the
main one. It is a fresh interpreter running this module (`subprocess`),
not a fork, so it behaves alike on Linux, macOS and Windows; nor is it
`multiprocessing`'s spawn, which runs the caller's main module again in
the child. It imports Inspect afresh, which is worth it only for a large
input (`WRITER_PROCESS_FROM`), so smaller runs keep the thread.

The main process sends each sample's parts down the child's standard
input, pickled, in batches, and goes on to the next line; the child runs
the thread's own message loop (`threaded.serve`) on the same
`EvalLogWriter`s, so what is written is the same, and answers on its
standard output.

The fault guarantees:
- The child runs in a session (a process group, on Windows) of its own,
  so a terminal's Ctrl-C reaches the main process only, which stops the
  child by closing its input.
- End of input, whole or mid-message, means abort: the child removes its
  `.partial` files and exits. So a main process killed outright leaves no
  partial log behind it either.
- An error in the child (a full disk) is sent back and raised in the main
  process as the same exception at the next exchange; the child has
  removed its files by then. Running out of memory, or a child that dies,
  comes back as `WriterDied`, one line like any fault.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
from collections import deque
from typing import IO, Any, Final, NoReturn

from .threaded import _CLOSE, Message, WriterDied, WriterServer, serve

WRITER_PROCESS_FROM: Final = 1 << 20
"""Input bytes from which a run writes `.eval` in a process of its own:
below it, the second interpreter's start-up costs about what it saves
(`docs/speed.md`)."""
_BATCH: Final = 64
"""Messages sent at once: fewer, larger writes down the pipe."""
_LENGTH: Final = struct.Struct("<Q")
_DONE: Final = "done"
_CHILD: Final = """\
import sys
if {root!r} not in sys.path:
    sys.path.insert(0, {root!r})
try:
    from tracegrade.bulk.spawned import serve_standard_streams
except BaseException:
    sys.exit(3)  # the parent says the writer could not start
serve_standard_streams()
"""
"""The child's program: this very `tracegrade` (the parent may have found
it through a path set at run time), then the loop."""


def writes_in_a_process(dataset_path: str) -> bool:
    """Whether the input is a regular file large enough for `WriterProcess`
    (and there is an interpreter to start: not so in some embedded ones)."""
    if dataset_path == "-" or not sys.executable:
        return False
    try:
        return os.stat(dataset_path).st_size >= WRITER_PROCESS_FROM
    except OSError:
        return False


class WriterProcess(WriterServer):
    """The child process holding every part's `EvalLogWriter` of one run."""

    def __init__(self) -> None:
        own_group: dict[str, Any]
        if sys.platform == "win32":
            own_group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        else:
            own_group = {"start_new_session": True}
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _CHILD.format(root=_package_root())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                **own_group,
            )
        except OSError as error:
            raise WriterDied(
                f"the log writer process could not start ({error.strerror})"
            ) from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._to_child: IO[bytes] = self._process.stdin
        self._from_child: IO[bytes] = self._process.stdout
        self._pending: list[Message] = []
        self._ended = False

    def send(self, kind: int, part: int, payload: Any = None) -> None:
        if self._ended:
            raise WriterDied("the log writer process has ended")
        self._pending.append((kind, part, payload))
        if len(self._pending) >= _BATCH:
            self._flush()

    def call(self, kind: int, part: int, payload: Any = None) -> Any:
        self.send(kind, part, payload)
        self._flush()
        answer = self._answer()
        if answer == _DONE:
            return None
        self._fail(answer)

    def spooled(self, part: int) -> int:
        """Not known in this process: only `.json` logs are split by size."""
        return 0

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            _write_frame(self._to_child, batch)
        except OSError:
            # The child has ended: it said why, if it could.
            self._fail(self._answer())

    def _answer(self) -> Any:
        """The child's next answer; None if it has ended without one."""
        try:
            return _read_frame(self._from_child)
        except Exception:  # an error that does not unpickle here
            return None

    def _fail(self, answer: Any) -> NoReturn:
        self._end()
        if isinstance(answer, BaseException):
            raise answer
        code = self._process.returncode
        raise WriterDied(
            "the log writer process could not start"
            if code == 3
            else f"the log writer process has ended (exit code {code})"
        )

    def _end(self) -> None:
        """Close the child's input (an abort, unless it was told to close)
        and wait until it has exited, its files removed."""
        self._ended = True
        for stream in (self._to_child, self._from_child):
            # A pipe the child has left: nothing more to send.
            with contextlib.suppress(OSError):
                stream.close()
        self._process.wait()

    def close(self) -> None:
        if not self._ended:
            self.call(_CLOSE, 0)
        self._end()

    def abort(self) -> None:
        if not self._ended:
            self._pending = []
            self._end()


def _package_root() -> str:
    """The directory this `tracegrade` was imported from."""
    return os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> Any:
    """The next value, or None at end of input, whole or mid-frame."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    if len(data) < length:
        return None
    return pickle.loads(data)


def serve_standard_streams() -> None:
    """The child's whole life: serve messages from standard input until
    `_CLOSE`, abort at end of input or on any error, and send the error
    back on standard output, where the parent raises it."""
    received: deque[Message] = deque()
    source = sys.stdin.buffer
    # Answers go down the original standard output alone: anything a
    # library prints goes to standard error instead.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def next_message() -> Message | None:
        while not received:
            batch = _read_frame(source)
            if batch is None:
                return None
            received.extend(batch)
        return received.popleft()

    error = serve(next_message, lambda: _write_frame(answers, _DONE), {}, "process")
    if error is not None:  # sent back, raised in the main process
        try:
            try:
                _write_frame(answers, error)
            except (pickle.PicklingError, TypeError, AttributeError):
                _write_frame(answers, WriterDied(f"the log writer failed: {error}"))
        except OSError:
            pass  # the parent has gone: nothing to tell
