"""Long lists on disk past a batch, in a temporary SQLite database (docs/compare.md)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

CHUNK = "TRACEGRADE_COMPARE_CHUNK"
_COLUMNS = "list, kind, id, text_id, epoch"


class InvalidChunk(ValueError):
    """A `CHUNK` that is not a positive integer."""


class Spools:
    """The lists of one comparison; their database, made when a list first
    fills a batch, is unnamed, so SQLite deletes it when it is closed."""

    def __init__(self) -> None:
        given = os.environ.get(CHUNK, "20000")
        if not (given.isascii() and given.isdigit() and int(given) > 0):
            raise InvalidChunk(f"{CHUNK} must be a positive integer, got {given!r}")
        self.batch, self.count = int(given), 0
        self.db: sqlite3.Connection | None = None

    def new(self) -> Spool:
        self.count += 1
        return Spool(self, self.count)

    def write(self, rows: list[tuple[Any, ...]]) -> sqlite3.Connection:
        if self.db is None:
            self.db = sqlite3.connect("")
            self.db.execute(f"CREATE TABLE item ({_COLUMNS}, json)")
            self.db.execute(f"CREATE INDEX ordered ON item ({_COLUMNS})")
        self.db.executemany("INSERT INTO item VALUES (?, ?, ?, ?, ?, ?)", rows)
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


class Spool:
    """One list, ordered by sample id (integers first) and epoch."""

    def __init__(self, spools: Spools, number: int) -> None:
        self.spools, self.number, self.length = spools, number, 0
        self.pending: list[tuple[Any, ...]] = []

    def add(self, sample_id: int | str, epoch: int, item: dict[str, Any]) -> None:
        if isinstance(sample_id, int):
            # Past SQLite's 64-bit integers, compared as a double.
            big = not -(2**63) <= sample_id < 2**63
            key = (0, float(sample_id) if big else sample_id, b"")
        else:
            key = (1, 0, sample_id.encode("utf-32-be", "surrogatepass"))
        text = json.dumps(item, ensure_ascii=True, allow_nan=False)
        self.pending.append((self.number, *key, epoch, text))
        self.length += 1
        if len(self.pending) >= self.spools.batch:
            self.spools.write(self.pending)
            self.pending = []

    def __len__(self) -> int:
        return self.length

    def json_items(self) -> Iterator[str]:
        """Each item's JSON on one line, in order."""
        if len(self.pending) == self.length:
            # Never past a batch: sorted here, as SQLite would.
            return (item[-1] for item in sorted(self.pending))
        db, self.pending = self.spools.write(self.pending), []
        query = f"SELECT json FROM item WHERE list = ? ORDER BY {_COLUMNS}"
        return (text for (text,) in db.execute(query, (self.number,)))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(json.loads, self.json_items())
