"""Signals that wait until the main thread's exchange with a thread is over.

The commands turn signals into exceptions (`cli._failures`), raised in the
main thread between any two of its bytecodes. One such point is just after
`with lock:` has taken a lock and before the block that releases it has
begun: the exception then leaves the lock held for good, and the next
`put` on the same queue, such as the one that stops the `.eval` writer
thread, waits forever. The main thread's exchanges with that thread run
inside `EXCHANGE`: a signal that comes meanwhile is noted, and raised
again, to be handled as usual, as soon as the exchange is over.
"""

from __future__ import annotations

import signal
from types import TracebackType


class Exchange:
    """A block no signal's exception interrupts; it waits for the block's end."""

    def __init__(self) -> None:
        self._depth = 0
        self._noted: list[int] = []

    def __enter__(self) -> None:
        self._depth += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0 and self._noted:
            signum = self._noted[0]
            self._noted.clear()
            signal.raise_signal(signum)

    def notes(self, signum: int) -> bool:
        """Note `signum` for the end of the block, if one is running (the
        handler then returns at once); False outside any."""
        if self._depth == 0:
            return False
        self._noted.append(signum)
        return True


EXCHANGE = Exchange()
"""The one block of the process: signals are handled in the main thread."""

__all__ = ["EXCHANGE", "Exchange"]
