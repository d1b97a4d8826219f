"""How a command stops on a fault: one line on stderr, an exit code, no traceback.

A fault the user can cause (a signal, a full disk, a path that cannot be
written, a memory limit) is never shown as a traceback. The command that meets it cleans
up, then raises `CommandStopped` with one line saying what happened and
what was left; the `tracegrade` group prints that line and exits with its
code. A traceback is left only for a bug in tracegrade itself.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from .._held import EXCHANGE
from ..outputs import OutputError, describe_os_error

# The exit codes a shell gives a process killed by the signal.
SIGINT_EXIT = 128 + signal.SIGINT
SIGPIPE_EXIT = 128 + getattr(signal, "SIGPIPE", 13)
"""What a pipeline expects of a writer whose reader stopped (13 is SIGPIPE
where it exists; Windows has none)."""
FILE_SYSTEM_EXIT = 2

TERMINATING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name)
    for name in (
        "SIGTERM",
        "SIGHUP",
        "SIGQUIT",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGXCPU",
        "SIGIO",
        "SIGPWR",
    )
    if hasattr(signal, name)
)
"""Every signal whose default action ends the process and that can be
caught, but SIGINT (Python's KeyboardInterrupt). Not among them: SIGKILL
(it cannot be caught: what it leaves is under `.partial` names), SIGSTOP
and SIGTSTP (they pause), the faults of the process itself (SIGSEGV,
SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP: a crash of the
interpreter), SIGPIPE (Python ignores it: a closed pipe is an `OSError`)
and SIGXFSZ (Python ignores it: a file too large is an `OSError`)."""
_BLOCKED = {signal.SIGINT, *TERMINATING}


class Terminated(BaseException):
    """A terminating signal, raised where the process is, like
    KeyboardInterrupt, so that cleanup runs; Python's default would exit on
    the spot, leaving what was begun."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class CommandStopped(Exception):
    """A command stopped by a fault; `message` is the whole story, one line."""

    def __init__(self, message: str, exit_code: int) -> None:
        self.message = message
        self.exit_code = exit_code
        super().__init__(message)


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    if not EXCHANGE.notes(signum):
        raise Terminated(signum)


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    if not EXCHANGE.notes(signum):
        raise KeyboardInterrupt


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Turn the `TERMINATING` signals into `Terminated`, and SIGINT into
    KeyboardInterrupt as Python does (unless the process was started with
    it ignored, as a background job is), while the block runs; either
    waits for the end of an exchange with a thread (`_held`)."""
    previous = {
        signum: signal.signal(signum, _raise_terminated) for signum in TERMINATING
    }
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and the `TERMINATING` signals until cleanup is done, so
    a second signal cannot cut it short; they are delivered when the block
    ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows
        with _signals_noted() as noted:
            yield
        if noted:
            signal.raise_signal(noted[0])
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _BLOCKED)


@contextmanager
def _signals_noted() -> Iterator[list[int]]:
    """Where signals cannot be blocked (Windows has no signal mask), each
    one that comes in the block is noted instead of handled; the list
    holds them, in order, once the block ends."""
    noted: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        noted.append(signum)

    previous = {signum: signal.signal(signum, note) for signum in _BLOCKED}
    try:
        yield noted
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _block_further_signals() -> None:
    """From now on, SIGINT and the `TERMINATING` signals wait (or, where
    there is no signal mask, are ignored): the process is ending."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    else:
        for signum in _BLOCKED:
            signal.signal(signum, signal.SIG_IGN)


@contextmanager
def exit_on_signal(
    message: Callable[[str], str], cleanup: Callable[[], None] = lambda: None
) -> Iterator[None]:
    """End the process at once on SIGINT or a `TERMINATING` signal while the
    block runs: `cleanup`, then `message(signal name)` on stderr, then exit.

    For work inside Inspect's event loop and its worker threads (`score`,
    `write_eval_log`): an exception raised there may be caught by asyncio,
    so the work goes on, or leave a worker thread that keeps the process
    alive. Nothing of the command is published until the block ends, so
    `cleanup` removing what was begun is all there is to undo.
    """

    def stop(signum: int, _frame: FrameType | None) -> None:
        _block_further_signals()  # no second one
        try:
            cleanup()
        finally:
            name = signal.Signals(signum).name
            os.write(2, (message(name) + "\n").encode("utf-8", "replace"))
            os._exit(128 + signum)

    previous = {signum: signal.signal(signum, stop) for signum in _BLOCKED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def stop_at_once_on_signal(message: Callable[[str], str]) -> None:
    """From now until the process ends, SIGINT or a `TERMINATING` signal
    ends it at once: `message("stopped by NAME")` on stderr, exit 128+N.

    For the moments after a command has returned, while the program ends:
    no exception could be caught there any more, and the default action
    would end it without a word of what it had written.
    """

    def stop(signum: int, _frame: FrameType | None) -> None:
        _block_further_signals()
        name = signal.Signals(signum).name
        os.write(2, (message(f"stopped by {name}") + "\n").encode("utf-8", "replace"))
        os._exit(128 + signum)

    for signum in _BLOCKED:
        signal.signal(signum, stop)


def fault(error: BaseException) -> tuple[str, int] | None:
    """What stopped a command, in words, and its exit code; None for a bug."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT)", SIGINT_EXIT
    if isinstance(error, Terminated):
        return f"stopped by {signal.Signals(error.signum).name}", 128 + error.signum
    if isinstance(error, OSError):
        return describe_os_error(error), FILE_SYSTEM_EXIT
    if isinstance(error, OutputError):
        return str(error), FILE_SYSTEM_EXIT
    # Loaded only with Inspect, which `--help` must not load.
    internals = sys.modules.get("tracegrade._inspect_internals")
    if internals is not None and isinstance(error, internals.InspectTooOld):
        return str(error), FILE_SYSTEM_EXIT
    if isinstance(error, MemoryError):
        # A limit of the machine (`ulimit -v`, a container's), not a bug.
        return "out of memory", FILE_SYSTEM_EXIT
    return None
