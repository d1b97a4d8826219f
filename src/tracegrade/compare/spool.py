"""Long lists kept on disk, not in memory: past a batch of items, each
item's JSON goes to a temporary SQLite database and is read back by sample
id and epoch, so that a million changed pairs cost flat memory
(docs/compare.md, "Long lists")."""

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
    """The lists of one comparison, in one unnamed database, made when a
    list first holds `batch` items (20,000, or `CHUNK` in the environment);
    SQLite deletes it when it is closed."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self.count = 0
        given = os.environ.get(CHUNK, "20000")
        self.batch = int(given) if given.isdigit() and int(given) > 0 else 0
        if not self.batch:
            raise InvalidChunk(f"{CHUNK} must be a positive integer, got {given!r}")

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect("")
            self._db.execute(f"CREATE TABLE item ({_COLUMNS}, json)")
            self._db.execute(f"CREATE INDEX ordered ON item ({_COLUMNS})")
        return self._db

    def new(self) -> Spool:
        self.count += 1
        return Spool(self, self.count)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class Spool:
    """One list, ordered by sample id (integers first) and epoch."""

    def __init__(self, spools: Spools, number: int) -> None:
        self._spools = spools
        self._number = number
        self._pending: list[tuple[Any, ...]] = []
        self._length = 0

    def add(self, sample_id: int | str, epoch: int, item: dict[str, Any]) -> None:
        if isinstance(sample_id, int):
            # Past SQLite's 64-bit integers, compared as a double.
            big = not -(2**63) <= sample_id < 2**63
            key = (0, float(sample_id) if big else sample_id, b"")
        else:
            key = (1, 0, sample_id.encode("utf-32-be", "surrogatepass"))
        text = json.dumps(item, ensure_ascii=True, allow_nan=False)
        self._pending.append((self._number, *key, epoch, text))
        self._length += 1
        if len(self._pending) >= self._spools.batch:
            self._flush()

    def _flush(self) -> None:
        self._spools.db.executemany(
            "INSERT INTO item VALUES (?, ?, ?, ?, ?, ?)", self._pending
        )
        self._pending = []

    def __len__(self) -> int:
        return self._length

    def json_items(self) -> Iterator[str]:
        """Each item's JSON on one line, in order."""
        if len(self._pending) == self._length:
            # Never past a batch: sorted here, as SQLite would.
            yield from (item[-1] for item in sorted(self._pending))
            return
        self._flush()
        query = f"SELECT json FROM item WHERE list = ? ORDER BY {_COLUMNS}"
        for (text,) in self._spools.db.execute(query, (self._number,)):
            yield text

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(json.loads, self.json_items())
