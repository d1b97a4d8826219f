"""The `tracegrade` program: how it ends (a bug, a signal) and its outputs' files."""

from __future__ import annotations

import errno
import importlib
import os
import select
import signal
import sys
from pathlib import Path

import pytest

from tests.commands import run_tracegrade, start_tracegrade
from tests.support import write_lines
from tracegrade.cli._failures import Terminated, signals_as_exceptions, signals_held
from tracegrade.outputs import AtomicFile, OutputAppeared, file_state, publish

# On a command's PYTHONPATH: its first import of click says so on the fifo
# READY, then waits on its silent stdin until a signal ends the wait.
_HELD_IMPORT = """
import os, sys

class HoldClick:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            os.write(os.open(READY, os.O_WRONLY), b"importing")
            os.read(0, 1)
        return None

sys.meta_path.insert(0, HoldClick())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the hold is a fifo")
def test_ctrl_c_while_the_commands_are_imported_is_one_line(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    hook = tmp_path / "hook"
    hook.mkdir()
    held = _HELD_IMPORT.replace("READY", repr(str(ready)))
    (hook / "sitecustomize.py").write_text(held, encoding="utf-8")
    reading = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
    silent_stdin, keeps_it_open = os.pipe()
    try:
        command = start_tracegrade(
            "score",
            "stage_diagnosis",
            "runs.jsonl",
            cwd=tmp_path,
            env={"PYTHONPATH": str(hook)},
            stdin=silent_stdin,
        )
        arrived, _, _ = select.select([reading], [], [], 120)
        assert arrived, command.stderr_so_far()
        assert os.read(reading, 16) == b"importing"
        command.send_signal(signal.SIGINT)
        _, stderr = command.communicate(timeout=120)
    finally:
        for descriptor in (reading, silent_stdin, keeps_it_open):
            os.close(descriptor)

    assert stderr == "tracegrade: interrupted (SIGINT)\n"
    assert command.returncode == 130


RECORD = {"required": ["D1"], "context": ["D1"], "correct": True}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    write_lines(
        tmp_path / "runs.jsonl", [{"id": "r1", "input": RECORD}, {"id": "r2"}, "{"]
    )
    return tmp_path


def test_in_process_a_command_ends_as_in_a_fresh_interpreter(work: Path) -> None:
    args = ("check", "stage_diagnosis", "runs.jsonl")
    in_process = run_tracegrade(*args, cwd=work)
    fresh = start_tracegrade(*args, cwd=work).to_its_end()
    assert in_process.returncode == fresh.returncode == 1
    assert (in_process.stdout, in_process.stderr) == (fresh.stdout, fresh.stderr)


def test_a_bug_is_a_traceback_and_exit_code_1_as_the_interpreter_prints_it(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    # The module, which the group's `check` command hides by its name.
    check = importlib.import_module("tracegrade.cli.check")
    monkeypatch.setattr(check, "_print_summary", broken)
    done = run_tracegrade("check", "stage_diagnosis", "runs.jsonl", cwd=work)

    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1] == "ZeroDivisionError: a bug"


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


def test_a_claim_whose_rename_fails_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without links (FAT) the name is claimed by an exclusive create; the
    rename over it fails (a directory cannot replace a file): the claim goes."""
    monkeypatch.setattr(os, "link", no_link)
    (tmp_path / "out.partial").mkdir()
    with pytest.raises(NotADirectoryError):
        publish(str(tmp_path / "out.partial"), str(tmp_path / "out"), replace=False)
    assert [path.name for path in tmp_path.iterdir()] == ["out.partial"]


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
