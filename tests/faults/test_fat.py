"""FAT through FUSE (no links, no modes): each command's outputs are written
there, and a name taken meanwhile is never replaced without --force."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from tests.commands import run_tracegrade
from tests.faults.conftest import write_stage_records
from tests.support import write_lines
from tracegrade.outputs import publish

TOOLS = shutil.which("fusefat") and shutil.which("mkfs.vfat")  # none on Windows
pytestmark = pytest.mark.skipif(
    not (TOOLS and os.geteuid() == 0),
    reason="needs root, fusefat and mkfs.vfat (Debian: fusefat, dosfstools)",
)

RACES = 600


@pytest.fixture(scope="module")
def fat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 64 MiB FAT file system mounted for the module."""
    root = tmp_path_factory.mktemp("fat")
    image, mounted = root / "fat.img", root / "mnt"
    mounted.mkdir()
    with image.open("wb") as out:
        out.truncate(64 * 2**20)
    for command in (["mkfs.vfat", image], ["fusefat", "-o", "rw+", image, mounted]):
        subprocess.run(command, check=True, capture_output=True)
    try:
        (mounted / "a").write_text("a")  # what the tests stand on:
        with pytest.raises(OSError):
            os.link(mounted / "a", mounted / "b")  # no links
        with pytest.raises(OSError):
            os.chmod(mounted / "a", 0o644)  # no modes
        (mounted / "a").unlink()
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], check=False)


@pytest.fixture()
def folder(fat: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    folder = fat / request.node.name[:40]
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_every_output_is_written_there(folder: Path, tmp_path: Path) -> None:
    """Results, labels, a labelled log and a report. Logs are written elsewhere
    (fusefat can't read a file removed while open, nor extend one after a write
    went back into it) and `labels apply` writes to --out (fusefat changes a
    file's time on a rename)."""

    def ok(*args: str) -> None:
        done = run_tracegrade(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr

    write_stage_records(tmp_path / "runs.jsonl", 200)
    log, labels = folder / "log.json", folder / "labels.jsonl"
    ok(
        *("score", "stage_diagnosis", "runs.jsonl", "--log-format", "json"),
        *("--log-dir", "logs", "--out", str(folder / "results.jsonl")),
    )
    shutil.copyfile(next((tmp_path / "logs").glob("*.json")), log)
    ok("labels", "export", str(log), "--out", str(labels))
    filled = [{**json.loads(line), "correct": True} for line in labels.open()]
    write_lines(tmp_path / "filled.jsonl", filled)
    ok("labels", "apply", str(log), "filled.jsonl", "--out", str(folder / "l.json"))
    ok("report", str(log), "--html", str(folder / "report.html"))
    assert len((folder / "results.jsonl").read_text().splitlines()) == 200
    results = read_eval_log(str(folder / "l.json")).results
    assert results is not None and len(results.scores) == 2
    assert "<html" in (folder / "report.html").read_text()
    written = "l.json labels.jsonl log.json report.html results.jsonl"
    assert sorted(path.name for path in folder.iterdir()) == written.split()


def test_a_name_taken_at_the_last_moment_is_never_replaced(folder: Path) -> None:
    """Another program creates the name as `publish` claims it: exactly one
    gets it (a check then a rename lost 5 to 14 races in 600)."""
    go = threading.Barrier(2)
    theirs: list[bool] = []
    final, temporary = folder / "out", folder / "out.partial"

    def other_program() -> None:
        for _ in range(RACES):
            go.wait()
            try:
                with open(final, "xb") as made:
                    made.write(b"theirs")
                theirs.append(True)
            except FileExistsError:
                theirs.append(False)
            go.wait()

    other = threading.Thread(target=other_program)
    other.start()
    ours: list[bool] = []
    try:
        for race in range(RACES):
            temporary.write_bytes(b"ours")
            go.wait()
            try:
                publish(str(temporary), str(final), replace=False)
                ours.append(True)
            except FileExistsError:
                ours.append(False)
            go.wait()
            # Whoever got the name holds it; an empty claim never stays.
            assert ours[race] != theirs[race], race
            assert final.read_bytes() == (b"ours" if ours[race] else b"theirs")
            final.unlink()
            temporary.unlink(missing_ok=True)
    finally:
        go.abort()
        other.join()
    assert 0 < sum(ours) < RACES  # each side won some: the races were real
