"""A signal that comes while a command puts a log back under its name waits
for the claim's end (`cli._failures.signals_held`), so that no name is left
half claimed; outside that, it is raised where it comes.

In-process: the handlers are the commands' own (`signals_as_exceptions`),
and the signals real ones, raised in this process.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tracegrade.cli._failures import (
    Terminated,
    signals_as_exceptions,
    signals_held,
)
from tracegrade.outputs import AtomicFile, file_state

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="SIGUSR1 is POSIX; Windows has SIGINT alone"
)


def test_a_signal_outside_a_held_block_is_raised_where_it_comes() -> None:
    with signals_as_exceptions(), pytest.raises(Terminated) as raised:
        signal.raise_signal(signal.SIGUSR1)
        pytest.fail("the signal did not stop the block")
    assert raised.value.signum == signal.SIGUSR1


def test_a_signal_during_the_final_claim_waits_for_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.eval"
    log.write_text("as read")
    rewrite = AtomicFile(str(log), unless_changed=file_state(str(log)))
    rewrite.handle.write("relabelled")
    renames: list[str] = []
    real_replace = os.replace

    def signalled_replace(source: str, target: str) -> None:
        if not renames:  # the log moved aside: the claim has begun
            signal.raise_signal(signal.SIGUSR1)
        renames.append(target)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", signalled_replace)
    with signals_as_exceptions(), pytest.raises(Terminated) as raised, signals_held():
        rewrite.commit()
    monkeypatch.undo()
    assert raised.value.signum == signal.SIGUSR1
    assert renames, "the claim never moved the log aside"
    assert log.read_text() == "relabelled"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run.eval"]


def test_sigint_inside_a_held_block_is_a_keyboard_interrupt_at_its_end() -> None:
    done = []
    with signals_as_exceptions(), pytest.raises(KeyboardInterrupt):
        with signals_held():
            signal.raise_signal(signal.SIGINT)
            done.append("claimed")
        pytest.fail("SIGINT was not raised at the block's end")
    assert done == ["claimed"]


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
