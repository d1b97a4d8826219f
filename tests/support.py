"""Helpers shared by the tests: JSON Lines, part logs, zip members as stored."""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from inspect_ai.log import read_eval_log, write_eval_log

from tracegrade.bulk.evallog import DEFLATE_LEVEL

# No INSPECT_* settings, and a console wide enough not to wrap messages.
SUBPROCESS_ENV = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
SUBPROCESS_ENV["COLUMNS"] = "400"


class OfflineLogs(NamedTuple):
    """conftest's `offline_logs`: one epoch of each packaged task."""

    log_dir: Path
    stage: str
    extraction: str


def write_lines(path: Path, lines: list[Any], newline: str = "\n") -> str:
    """One line per item: strings as they are (malformed lines), else JSON."""
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("".join(t + newline for t in text), encoding="utf-8", newline="")
    return str(path)


def split_into_parts(source: str, out_dir: Path, count: int) -> list[str]:
    """The log `source` as `count` part logs, as `tracegrade score` splits one."""
    log = read_eval_log(source)
    samples = log.samples or []
    size = -(-len(samples) // count)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(1, count + 1):
        metadata = {"tracegrade_part": {"index": index, "count": count}}
        start = (index - 1) * size
        part = log.model_copy(update={"samples": samples[start : start + size]})
        part.eval = log.eval.model_copy(update={"metadata": metadata})
        paths.append(str(out_dir / f"{Path(source).stem}-part{index}of{count}.eval"))
        write_eval_log(part, paths[-1])
    return paths


def stored_member(path: Path, name: str) -> bytes:
    """A zip member's compressed bytes, which tell deflate implementations apart."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    with path.open("rb") as file:
        file.seek(info.header_offset + 26)
        lengths = file.read(4)  # of the local header's name and extra field
        file.seek(int.from_bytes(lengths[:2], "little"), os.SEEK_CUR)
        file.seek(int.from_bytes(lengths[2:], "little"), os.SEEK_CUR)
        return file.read(info.compress_size)


def deflated(data: bytes, library: Any = zlib) -> bytes:
    """`data` deflated by `library` (`zlib` or `isal_zlib`) as the writer does."""
    stream = library.compressobj(DEFLATE_LEVEL, library.DEFLATED, -15)
    return bytes(stream.compress(data) + stream.flush())


@contextmanager
def working_in(directory: Path) -> Iterator[None]:
    """`contextlib.chdir`, which Python 3.10 lacks."""
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)
