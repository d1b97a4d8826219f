"""A signal that comes while the main thread exchanges with the `.eval`
writer thread waits for the exchange's end (`tracegrade._held`), so that
its exception never leaves a queue's lock taken; outside one, it is
raised where it comes, as before.

In-process: the handlers are the commands' own (`signals_as_exceptions`),
and the signals real ones, raised in this process.
"""

from __future__ import annotations

import queue
import signal
import sys

import pytest

from tracegrade._held import EXCHANGE
from tracegrade.cli._failures import Terminated, signals_as_exceptions

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="SIGUSR1 is POSIX; Windows has SIGINT alone"
)


def test_a_signal_outside_an_exchange_is_raised_where_it_comes() -> None:
    with signals_as_exceptions(), pytest.raises(Terminated) as raised:
        signal.raise_signal(signal.SIGUSR1)
        pytest.fail("the signal did not stop the block")
    assert raised.value.signum == signal.SIGUSR1


def test_a_signal_inside_an_exchange_waits_for_its_end() -> None:
    waiting: queue.Queue[int] = queue.Queue(1)
    done = []
    with signals_as_exceptions(), pytest.raises(Terminated) as raised:
        with EXCHANGE:
            signal.raise_signal(signal.SIGUSR1)
            waiting.put(1)  # the queue's lock is taken and released whole
            done.append("put")
        pytest.fail("the noted signal was not raised at the exchange's end")
    assert raised.value.signum == signal.SIGUSR1
    assert done == ["put"]
    # Nothing is left taken: the queue serves another thread's turn at once.
    assert waiting.get_nowait() == 1
    waiting.put_nowait(2)


def test_sigint_inside_an_exchange_is_a_keyboard_interrupt_at_its_end() -> None:
    with signals_as_exceptions(), pytest.raises(KeyboardInterrupt):
        with EXCHANGE:
            signal.raise_signal(signal.SIGINT)
        pytest.fail("SIGINT was not raised at the exchange's end")


def test_sigint_ignored_at_start_stays_ignored() -> None:
    """A background job starts with SIGINT ignored; the command keeps it so."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with signals_as_exceptions():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
