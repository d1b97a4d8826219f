"""A sorted list whose items wait on disk, not in memory: at most `chunk`
in memory, sorted runs in a temporary file merged as read, so a million
changed pairs cost flat memory (docs/compare.md, "Long lists").
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")

CHUNK_ENVIRONMENT = "TRACEGRADE_COMPARE_CHUNK"
"""The environment variable that sets how many items of one list are held
in memory before they are sorted to the temporary file (`DEFAULT_CHUNK`)."""

DEFAULT_CHUNK = 20_000
_BLOCK = 1 << 16
"""Bytes read at a time from each run when merging."""

SortKey = tuple[Any, ...]
_first_item = itemgetter(0)


def default_chunk() -> int:
    """`DEFAULT_CHUNK`, or the positive integer `CHUNK_ENVIRONMENT` gives."""
    given = os.environ.get(CHUNK_ENVIRONMENT)
    if given is None:
        return DEFAULT_CHUNK
    try:
        chunk = int(given)
    except ValueError:
        chunk = 0
    if chunk < 1:
        raise ValueError(
            f"{CHUNK_ENVIRONMENT} must be a positive integer, got {given!r}"
        )
    return chunk


def _json(value: Any) -> str:
    # ASCII, so no raw newline, tab or lone surrogate is ever in a line.
    return json.dumps(value, ensure_ascii=True, allow_nan=False)


class SortedSpool(Generic[T]):
    """Items of type `T` in the order of their sort keys; `encode` makes an
    item JSON-ready, `decode` makes it again. Keys are JSON-ready tuples."""

    def __init__(
        self,
        encode: Callable[[T], Any],
        decode: Callable[[Any], T],
        *,
        chunk: int | None = None,
    ) -> None:
        self._encode = encode
        self._decode = decode
        self._chunk = default_chunk() if chunk is None else chunk
        if self._chunk < 1:
            raise ValueError(f"chunk must be at least 1, got {self._chunk}")
        self._buffer: list[tuple[SortKey, str]] = []
        self._sorted = True
        self._file: IO[bytes] | None = None
        self._runs: list[tuple[int, int]] = []
        """Each run's start and end offset in `_file`."""
        self._size = 0
        self._length = 0

    def add(self, key: SortKey, item: T) -> None:
        """Take `item`, to be listed by `key`; its JSON is made now."""
        if self._buffer and self._sorted and key < self._buffer[-1][0]:
            self._sorted = False
        self._buffer.append((key, _json(self._encode(item))))
        self._length += 1
        if len(self._buffer) >= self._chunk:
            self._spill()

    def _spill(self) -> None:
        self._sort_buffer()
        if self._file is None:
            # Unnamed: it vanishes with the process, whatever happens.
            self._file = tempfile.TemporaryFile()  # noqa: SIM115
        data = "".join(
            f"{_json(list(key))}\t{text}\n" for key, text in self._buffer
        ).encode("ascii")
        self._file.seek(self._size)
        self._file.write(data)
        self._file.flush()
        self._runs.append((self._size, self._size + len(data)))
        self._size += len(data)
        self._buffer = []

    def _sort_buffer(self) -> None:
        if not self._sorted:
            self._buffer.sort(key=_first_item)
            self._sorted = True

    @property
    def spilled(self) -> int:
        """How many runs are on disk (0: every item is in memory)."""
        return len(self._runs)

    def __len__(self) -> int:
        return self._length

    def _entries(self) -> Iterator[tuple[SortKey, str]]:
        self._sort_buffer()
        if not self._runs:
            return iter(list(self._buffer))
        assert self._file is not None
        descriptor = self._file.fileno()
        sources = [_run_entries(descriptor, start, end) for start, end in self._runs]
        sources.append(iter(list(self._buffer)))
        return heapq.merge(*sources, key=_first_item)

    def json_items(self) -> Iterator[str]:
        """Each item's JSON text (one line, ASCII), in order."""
        for _, text in self._entries():
            yield text

    def __iter__(self) -> Iterator[T]:
        for text in self.json_items():
            yield self._decode(json.loads(text))

    def close(self) -> None:
        """Free the temporary file; the spool is empty afterwards."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._runs = []
        self._buffer = []
        self._size = self._length = 0

    def __eq__(self, other: object) -> bool:
        # As a list compares: the items, in order.
        if isinstance(other, SortedSpool):
            return len(self) == len(other) and list(self) == list(other)
        if isinstance(other, list):
            return len(self) == len(other) and list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SortedSpool({len(self)} items, {self.spilled} runs on disk)"


def _read_at(descriptor: int, size: int, position: int) -> bytes:
    """`os.pread`, or where there is none (Windows) a seek and a read: the
    runs are read in turn, by one thread."""
    if hasattr(os, "pread"):
        return os.pread(descriptor, size, position)
    os.lseek(descriptor, position, os.SEEK_SET)
    return os.read(descriptor, size)


def _run_entries(
    descriptor: int, start: int, end: int
) -> Iterator[tuple[SortKey, str]]:
    """The entries of one run, read a block at a time at its own position
    (`_read_at`), so that runs read side by side share no file position."""
    position = start
    pending = b""
    while position < end:
        block = _read_at(descriptor, min(_BLOCK, end - position), position)
        if not block:
            raise OSError(f"the compare spool ended early at byte {position}")
        position += len(block)
        lines = (pending + block).split(b"\n")
        pending = lines.pop()
        for line in lines:
            key, _, text = line.decode("ascii").partition("\t")
            yield tuple(json.loads(key)), text
    if pending:
        raise OSError("the compare spool's last line is incomplete")


__all__ = [
    "CHUNK_ENVIRONMENT",
    "DEFAULT_CHUNK",
    "SortedSpool",
    "default_chunk",
]
