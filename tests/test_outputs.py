"""An output's file: the user's usual mode, and its name never taken from a
file that appeared meanwhile, with hard links or without (FAT has none)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tracegrade.outputs import AtomicFile, OutputAppeared


@pytest.fixture(params=["links", "no links"])
def file_system(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "no links":

        def no_link(*_args: object, **_kwargs: object) -> None:
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    return str(request.param)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_output_has_the_mode_of_any_new_file(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        AtomicFile.write_text(str(tmp_path / "out.txt"), "whole")
    finally:
        os.umask(previous)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_file_that_appeared_is_kept_and_the_output_too(
    tmp_path: Path, file_system: str
) -> None:
    out = tmp_path / "out.txt"
    written = AtomicFile(str(out))
    written.handle.write("ours")
    out.write_text("theirs")

    with pytest.raises(OutputAppeared) as appeared:
        written.commit()

    assert out.read_text() == "theirs"
    assert Path(appeared.value.kept).read_text() == "ours"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out.txt", Path(appeared.value.kept).name]
    )


def test_an_output_appears_whole_and_alone(tmp_path: Path, file_system: str) -> None:
    out = tmp_path / "out.txt"
    written = AtomicFile(str(out))
    written.handle.write("whole")
    assert not out.exists()

    written.commit()

    assert out.read_text() == "whole"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_force_replaces_a_file_that_appeared(tmp_path: Path, file_system: str) -> None:
    out = tmp_path / "out.txt"
    written = AtomicFile(str(out), replace=True)
    written.handle.write("ours")
    out.write_text("theirs")

    written.commit()

    assert out.read_text() == "ours"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
