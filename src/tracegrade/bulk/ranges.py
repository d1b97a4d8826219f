"""A file cut into ranges of whole lines, each numbered as the whole file
would number it (line ends as `lines.read_lines`'s), one range a worker."""

from __future__ import annotations

import io
import itertools
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from ..lines import RawLine

_BLOCK = 1 << 20


@dataclass(frozen=True)
class LineRange:
    start: int
    end: int
    first_line: int
    lines: int


def plan_ranges(path: str, ranges: int, max_lines: int) -> list[LineRange]:
    """At least `ranges` ranges of about equal bytes, none of more than
    `max_lines` lines (more ranges, where lines are uneven)."""
    size = os.path.getsize(path)
    with open(path, "rb") as binary:
        planned = _cut(binary, size, ranges)
        # A file of more lines than `ranges` parts may hold is cut again.
        needed = math.ceil(sum(part.lines for part in planned) / max_lines)
        if needed > ranges:
            ranges = needed
            planned = _cut(binary, size, ranges)
        while any(part.lines > max_lines for part in planned):
            ranges *= 2
            planned = _cut(binary, size, ranges)
        return planned


def _cut(binary: IO[bytes], size: int, ranges: int) -> list[LineRange]:
    cuts = sorted({_next_line(binary, size * k // ranges, size) for k in range(ranges)})
    planned: list[LineRange] = []
    first_line = 1
    for start, end in zip(cuts, [*cuts[1:], size], strict=True):
        if start == end:
            continue
        lines = _line_ends(binary, start, end)
        binary.seek(end - 1)
        if end == size and binary.read(1) not in (b"\n", b"\r"):
            lines += 1  # the last line, without an end
        planned.append(LineRange(start, end, first_line, lines))
        first_line += lines
    return planned


def _next_line(binary: IO[bytes], offset: int, size: int) -> int:
    """Where the first line after a "\\n" at or past `offset` starts."""
    if offset == 0:
        return 0
    binary.seek(offset - 1)
    while block := binary.read(_BLOCK):
        found = block.find(b"\n")
        if found >= 0:
            return binary.tell() - len(block) + found + 1
    return size


def _line_ends(binary: IO[bytes], start: int, end: int) -> int:
    """Line ends between `start` and `end`: "\\n", "\\r\\n" and lone "\\r"."""
    binary.seek(start)
    count = 0
    last = b""
    left = end - start
    while left > 0 and (block := binary.read(min(_BLOCK, left))):
        left -= len(block)
        count += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
        if last == b"\r" and block[:1] == b"\n":
            count -= 1  # one "\r\n" across two blocks
        last = block[-1:]
    return count


def read_range(path: str, lines: LineRange) -> Iterator[RawLine]:
    """The range's lines, as `lines.read_lines` reads them from the file."""
    with open(path, "rb") as binary:
        binary.seek(lines.start)
        text = io.TextIOWrapper(
            binary, encoding="utf-8", errors="surrogateescape", newline=None
        )
        read = itertools.islice(text, lines.lines)
        for number, line in enumerate(read, start=lines.first_line):
            yield RawLine(number, line[:-1] if line.endswith("\n") else line, None)
