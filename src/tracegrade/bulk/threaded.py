"""The `.eval` writer on a thread of its own, and the loop every writer runs.

A sample's member is built, serialised, summarised and deflated; the
deflating (ISA-L, or zlib) and the file writes run without the GIL, so on
a thread they overlap the main thread's reading and scoring, but the
rest takes turns with it. A small input's run writes here: no `fork`
(which macOS does not support safely once Inspect is imported, and
Windows lacks), and no second interpreter to start. A large input's run
writes in a process of its own (`bulk.spawned`), which runs the same loop
(`serve`) on the same messages; `docs/speed.md` has the figures of the
choice.

The main thread hands each sample's parts (`samples.SampleParts`) to the
writer through a bounded queue and goes on to the next line; the writer
thread holds the run's `EvalLogWriter`s, one per part. What is written is
what the in-process writer writes: the same `EvalLogWriter` on the same
parts.

The fault guarantees:
- Signals reach the main thread only. It stops the writer (`abort`), which
  removes every `.partial` file of the run before the command reports. A
  signal waits for the end of an exchange through a queue (`_held`), so
  that it never leaves a queue's lock taken.
- An error on the writer thread (a full disk) is raised in the main thread
  as the same exception at the next exchange; the writer has removed its
  files by then. Running out of memory there comes back as `WriterDied`,
  one line like any fault.
- A process killed outright (SIGKILL) leaves its logs under their
  `.partial` names, which no reader lists, as every output of tracegrade.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from inspect_ai.log import EvalLog, EvalPlan, EvalSpec

from .._held import EXCHANGE
from ..outputs import PARTIAL_SUFFIX, OutputError
from .evallog import EvalLogWriter, StreamedReductions, deflating_with_isal
from .samples import SampleParts, SampleTemplates

_START, _ADD, _SUSPEND, _RESUME, _COMPLETE, _CHUNK, _END, _PUBLISH, _CLOSE = range(9)
_STOP: Final = (-1, 0, None)
"""Wakes a writer waiting for work when the run is aborted."""
_QUEUED: Final = 128
"""Messages the main thread may run ahead of the writer by: enough to
keep both busy, few enough that what waits (samples, chunks of
reductions) is no weight beside the run."""
_REDUCTIONS_CHUNK: Final = 1 << 14
_WAIT: Final = 0.5
"""Seconds between looks at whether the writer has failed, while the main
thread waits for it (a wait that never ends could not be interrupted
on every platform)."""


class WriterDied(OutputError):
    """The writer ran out of memory or stopped without saying why: the log
    cannot be written, as when its file cannot."""


Message = tuple[int, int, Any]


class WriterServer:
    """What the main thread asks of the run's writer, a thread
    (`WriterThread`) or a process (`spawned.WriterProcess`)."""

    def send(self, kind: int, part: int, payload: Any = None) -> None:
        """Hand one message over, first raising any error the writer met."""
        raise NotImplementedError

    def call(self, kind: int, part: int, payload: Any = None) -> Any:
        """Send one message and wait for the writer's answer."""
        raise NotImplementedError

    def spooled(self, part: int) -> int:
        """Bytes of the part's samples written so far, where known here."""
        raise NotImplementedError

    def close(self) -> None:
        """End the writer after every part is published."""
        raise NotImplementedError

    def abort(self) -> None:
        """Stop the writer, which removes every part it has not published,
        and wait until it has. Never raises."""
        raise NotImplementedError

    def complete(
        self, part: int, header: EvalLog, reductions: StreamedReductions | None
    ) -> None:
        """Hand the part's header and reductions over, without waiting: the
        writer completes the part (its summaries compressed, its directory
        written) while this thread works out the next part's metrics. An
        error comes back at the next exchange, `publish`'s at the latest."""
        head = None if reductions is None else reductions.head
        self.send(_COMPLETE, part, (header, head))
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


class WriterThread(WriterServer):
    """The thread holding every part's `EvalLogWriter` of one run."""

    def __init__(self) -> None:
        self._commands: queue.Queue[Message] = queue.Queue(_QUEUED)
        self._replies: queue.Queue[Any] = queue.Queue()
        self._error: BaseException | None = None
        self.writers: dict[int, EvalLogWriter] = {}
        """Each part's writer, used on the writer thread only."""
        self._aborting = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._serve, name="tracegrade .eval writer", daemon=True
        )
        self._thread.start()

    # -- the main thread ---------------------------------------------------------

    def send(self, kind: int, part: int, payload: Any = None) -> None:
        """Queue one message, first raising any error the writer met."""
        message = (kind, part, payload)
        while True:
            self._raise_if_failed()
            try:
                with EXCHANGE:
                    self._commands.put(message, timeout=_WAIT)
                return
            except queue.Full:
                continue

    def call(self, kind: int, part: int, payload: Any = None) -> Any:
        """Send one message and wait for the writer's answer."""
        self.send(kind, part, payload)
        while True:
            try:
                with EXCHANGE:
                    return self._replies.get(timeout=_WAIT)
            except queue.Empty:
                self._raise_if_failed()

    def spooled(self, part: int) -> int:
        # A count the writer only ever raises, read across threads.
        return self.writers[part].spooled

    def _raise_if_failed(self) -> None:
        if self._ended or not self._thread.is_alive():
            self._ended = True
            self._thread.join()
            if self._error is not None:
                raise self._error
            raise WriterDied("the log writer has ended")

    def close(self) -> None:
        """End the writer after every part is published."""
        if not self._ended:
            self.call(_CLOSE, 0)
        self._ended = True
        self._thread.join()

    def abort(self) -> None:
        """Stop the writer, which removes every part it has not published,
        and wait until it has. Never raises."""
        self._aborting = True
        # A full queue means a busy writer, which looks at `_aborting`
        # before each message.
        with contextlib.suppress(queue.Full):
            self._commands.put_nowait(_STOP)
        self._ended = True
        self._thread.join()

    # -- the writer thread -------------------------------------------------------

    def _serve(self) -> None:
        # Raised in the main thread.
        self._error = serve(
            self._next, lambda: self._replies.put(None), self.writers, "thread"
        )

    def _next(self) -> Message | None:
        """The next message, or None once the run is aborted."""
        if self._aborting:
            return None
        message = self._commands.get()
        return None if message is _STOP or self._aborting else message


def serve(
    next_message: Callable[[], Message | None],
    reply: Callable[[], None],
    writers: dict[int, EvalLogWriter],
    where: str,
) -> BaseException | None:
    """The writer's whole work, on a thread or in a process of its own
    (`bulk.spawned`, `where` says which): serve messages until `_CLOSE`.
    An abort (`next_message` giving None) or any error removes every part
    not published; the error is returned, for the main thread to raise."""
    try:
        with deflating_with_isal():
            if not _serve_messages(next_message, reply, writers):
                _abort_all(writers)
    except BaseException as error:
        _abort_all(writers)
        if isinstance(error, MemoryError):
            # A fault of the machine, not of tracegrade: one line, as a
            # full disk is.
            return WriterDied(f"the log writer {where} ran out of memory")
        return error
    return None


def _serve_messages(
    next_message: Callable[[], Message | None],
    reply: Callable[[], None],
    writers: dict[int, EvalLogWriter],
) -> bool:
    """Serve messages until `_CLOSE` (True) or an abort (False)."""
    while (message := next_message()) is not None:
        kind, part, payload = message
        if kind == _ADD:
            writers[part].add(payload)
        elif kind == _START:
            writers[part] = EvalLogWriter(*payload)
            reply()
        elif kind == _SUSPEND:
            writers[part].suspend()
        elif kind == _RESUME:
            writers[part].resume()
        elif kind == _COMPLETE:
            header, head = payload
            chunks = _chunks(next_message)
            reductions = None if head is None else StreamedReductions(head, chunks)
            writers[part].complete(header, reductions)
            if head is not None:
                for _ in chunks:  # the end marker, if the writer stopped early
                    pass
        elif kind == _PUBLISH:
            writers[part].publish(payload)
            reply()
        elif kind == _CLOSE:
            reply()
            return True
        else:
            raise WriterDied(f"the log writer got an unknown message {kind}")
    return False


def _chunks(next_message: Callable[[], Message | None]) -> Iterator[bytes]:
    while True:
        message = next_message()
        if message is None:
            raise _Aborted
        kind, _, payload = message
        if kind == _END:
            return
        yield payload


class _Aborted(Exception):
    """The run was aborted inside the reductions."""


def _abort_all(writers: dict[int, EvalLogWriter]) -> None:
    for writer in writers.values():
        writer.abort()


class ServedEvalLogWriter:
    """One part's `.eval` log, written by the run's writer, a thread or a
    process (the `LogWriter` protocol of `bulk.log`)."""

    def __init__(
        self,
        writer: WriterServer,
        part: int,
        working: Path,
        eval_spec: EvalSpec,
        plan: EvalPlan,
        templates: SampleTemplates,
    ) -> None:
        self._writer = writer
        self._part = part
        self.partial = working.with_name(working.name + PARTIAL_SUFFIX)
        self.published: Path | None = None
        writer.call(_START, part, (working, eval_spec, plan, templates))

    def add(self, parts: SampleParts) -> None:
        self._writer.send(_ADD, self._part, parts)

    @property
    def spooled(self) -> int:
        """Bytes of samples written so far, where the writer can say."""
        return self._writer.spooled(self._part)

    def suspend(self) -> None:
        self._writer.send(_SUSPEND, self._part)

    def resume(self) -> None:
        self._writer.send(_RESUME, self._part)

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        self._writer.complete(self._part, header, reductions)

    def publish(self, location: Path) -> None:
        self._writer.call(_PUBLISH, self._part, location)
        self.published = location

    def abort(self) -> str | None:
        self._writer.abort()
        # The writer has removed its file.
        try:
            self.partial.unlink(missing_ok=True)
        except OSError:
            return str(self.partial)
        return None
