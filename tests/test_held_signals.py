"""A signal while a log is put back under its name waits for the claim's end
(`signals_held`), so that no name is left half claimed; a SIGINT ignored at
the start stays ignored. The handlers are the commands' own, the signals real."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tracegrade.cli._failures import Terminated, signals_as_exceptions, signals_held
from tracegrade.outputs import AtomicFile, file_state

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="SIGUSR1 is POSIX; Windows has SIGINT alone"
)


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
