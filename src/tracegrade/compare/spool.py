"""Long lists kept on disk, not in memory: each item's JSON in a temporary
SQLite database, read back by sample id and epoch, so that a million
changed pairs cost flat memory (docs/compare.md, "Long lists")."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

_BATCH = 5_000


class Spools:
    """The lists of one comparison, in one unnamed database that SQLite
    deletes when it is closed."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")
        self.db.execute("CREATE TABLE item (list, kind, id, text_id, epoch, json)")
        self.db.execute("CREATE INDEX ordered ON item (list, kind, id, text_id, epoch)")
        self.count = 0

    def new(self) -> Spool:
        self.count += 1
        return Spool(self, self.count)

    def close(self) -> None:
        self.db.close()


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
        if len(self._pending) >= _BATCH:
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
        self._flush()
        query = "SELECT json FROM item WHERE list = ? ORDER BY kind, id, text_id, epoch"
        for (text,) in self._spools.db.execute(query, (self._number,)):
            yield text

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(json.loads, self.json_items())
