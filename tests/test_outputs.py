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


@pytest.mark.parametrize(
    ("theirs", "force"), [(None, False), ("theirs", False), ("theirs", True)]
)
def test_a_name_taken_meanwhile_is_replaced_only_with_force(
    tmp_path: Path, file_system: str, theirs: str | None, force: bool
) -> None:
    out = tmp_path / "out.txt"
    written = AtomicFile(str(out), replace=force)
    written.handle.write("ours")
    assert not out.exists()
    if theirs is not None:
        out.write_text(theirs)

    if theirs is None or force:
        written.commit()
        assert out.read_text() == "ours"
        assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
        return
    with pytest.raises(OutputAppeared) as appeared:
        written.commit()
    assert out.read_text() == "theirs"
    assert Path(appeared.value.kept).read_text() == "ours"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out.txt", Path(appeared.value.kept).name]
    )
