"""An output's file: the usual mode, never over a file that appeared meanwhile
(hard links or none), its claim whole under a signal; an ignored SIGINT stays so."""

from __future__ import annotations

import errno
import os
import signal
import sys
from pathlib import Path

import pytest

from tracegrade.cli._failures import Terminated, signals_as_exceptions, signals_held
from tracegrade.outputs import AtomicFile, OutputAppeared, file_state

POSIX_SIGNALS = pytest.mark.skipif(
    sys.platform == "win32", reason="SIGUSR1 is POSIX; Windows has SIGINT alone"
)


def no_link(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.EPERM, "Operation not permitted")


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_an_output_has_the_mode_of_any_new_file(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        AtomicFile.write_text(str(tmp_path / "out.txt"), "whole")
    finally:
        os.umask(previous)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("links", "force"), [(True, False), (False, False), (True, True)]
)
def test_a_name_taken_meanwhile_is_replaced_only_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: bool, force: bool
) -> None:
    if not links:  # as on FAT
        monkeypatch.setattr(os, "link", no_link)
    out = tmp_path / "out.txt"
    written = AtomicFile(str(out), replace=force)
    written.handle.write("ours")
    assert not out.exists()
    out.write_text("theirs")
    if force:
        written.commit()
        assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [
            ("out.txt", "ours")
        ]
        return
    with pytest.raises(OutputAppeared) as appeared:
        written.commit()
    assert out.read_text() == "theirs"
    (kept,) = [path for path in tmp_path.iterdir() if path != out]
    assert kept.read_text() == "ours"
    assert f"what was written is kept as {str(kept)!r}" in str(appeared.value)


@POSIX_SIGNALS
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


@POSIX_SIGNALS
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
