"""A fault the user can cause: cleanup, one line on stderr, an exit code."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any

from ..outputs import OutputError

SIGPIPE_EXIT = 128 + getattr(signal, "SIGPIPE", 13)  # Windows has no SIGPIPE
# Every catchable signal whose default action ends the process, but SIGINT.
_NAMES = "TERM HUP QUIT USR1 USR2 ALRM VTALRM PROF XCPU IO PWR"
TERMINATING = tuple(sig for sig in signal.Signals if sig.name[3:] in _NAMES.split())
_HANDLED = (signal.SIGINT, *TERMINATING)
Handler = Callable[[int, FrameType | None], None]
_noted: list[int] | None = None  # signals held by `signals_held`; None outside


class Terminated(BaseException):
    """A terminating signal raised like KeyboardInterrupt, so cleanup runs."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class CommandStopped(Exception):
    """`CommandStopped(message, exit_code)`: a fault, told in one line."""


def install(handler: Handler, signums: tuple[int, ...] = _HANDLED) -> dict[int, Any]:
    """`handler` for `signums` unless `signals_held` holds them; returns the
    handlers before."""

    def unless_held(signum: int, frame: FrameType | None) -> None:
        if _noted is None:
            handler(signum, frame)
        else:
            _noted.append(signum)

    return {signum: signal.signal(signum, unless_held) for signum in signums}


@contextmanager
def handling(handler: Handler, signums: tuple[int, ...] = _HANDLED) -> Iterator[None]:
    """`install`, until the block ends."""
    previous = install(handler, signums)
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def _raise_signal(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


def signals_as_exceptions() -> AbstractContextManager[None]:
    """Signals raise `Terminated` (SIGINT KeyboardInterrupt, unless ignored)."""
    sigint = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    return handling(_raise_signal, _HANDLED if sigint else TERMINATING)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold the handled signals until the block ends, then raise the first."""
    global _noted
    outer = _noted
    _noted = [] if outer is None else outer
    try:
        yield
    finally:
        noted, _noted = _noted, outer
        if outer is None and noted:
            signal.raise_signal(noted[0])


def exiting(message: Callable[[str], str], cleanup: Callable[[], object]) -> Handler:
    """A handler: `cleanup`, `message(NAME)` on stderr, exit (for where asyncio
    or threads could swallow an exception)."""

    def stop(signum: int, _frame: FrameType | None) -> None:
        for handled in _HANDLED:  # no second one during cleanup
            signal.signal(handled, signal.SIG_IGN)
        try:
            cleanup()
        finally:
            said = message(signal.Signals(signum).name) + "\n"
            os.write(2, said.encode("utf-8", "replace"))
            os._exit(128 + signum)

    return stop


def fault(error: BaseException) -> tuple[str, int] | None:
    """What stopped a command and its exit code; None for a bug."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT)", 128 + signal.SIGINT
    if isinstance(error, Terminated):
        return f"stopped by {signal.Signals(error.signum).name}", 128 + error.signum
    if isinstance(error, OSError):
        reason = error.strerror or str(error)
        if error.filename is not None:
            reason += f": {os.fsdecode(error.filename)!r}"
        return reason, 2
    # Loaded only with Inspect, which `--help` must not load.
    internals = sys.modules.get("tracegrade._inspect_internals")
    if isinstance(error, (OutputError, internals.InspectTooOld if internals else ())):
        return str(error), 2
    if isinstance(error, MemoryError):  # a limit of the machine, not a bug
        return "out of memory", 2
    return None
