"""A warning, once, for a source in no sample: a typo would unscore every run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import quote

if TYPE_CHECKING:
    from inspect_ai.solver import TaskState

logger = logging.getLogger(__name__)

SHOWN_KEYS = 10


def listed_keys(keys: Iterable[object]) -> str:
    """`"a", "b" and 3 more`, sorted; `none` for no keys."""
    shown = sorted((quote(key, 60) for key in keys), key=str)
    more = len(shown) - SHOWN_KEYS
    listed = ", ".join(shown[:SHOWN_KEYS]) or "none"
    return f"{listed} and {more} more" if more > 0 else listed


class KeyWatch:
    """Which sources some scored run of `scorer` has had; warns once for each
    that none has, with what a run without it gets (`without`, by role)."""

    def __init__(self, scorer: str, without: Callable[[str], str]) -> None:
        self.scorer, self.without = scorer, without
        self.found: set[str] = set()
        self.warned: set[str] = set()

    def note(self, source: str, present: bool, warning: Callable[[], str]) -> None:
        """Record whether this run had `source`; `warning` is built only if due."""
        if present:
            self.found.add(source)
        elif source not in self.found | self.warned:
            self.warned.add(source)
            logger.warning("%s", warning())

    def read_key(
        self, state: TaskState, record: dict[str, Any], role: str, key: str
    ) -> None:
        """Copy metadata `key` (given as `{role}_key`) into the record's `role`,
        noting whether this run has it."""
        argument, metadata = f"{role}_key", state.metadata
        self.note(
            role,
            key in metadata,
            lambda: (
                f"{self.scorer}: sample {quote(state.sample_id)} has no metadata key "
                f"{quote(key)} ({argument}={quote(key)}), and no run scored before "
                f"it had one. Its metadata keys: {listed_keys(metadata)}. "
                f"{self.without(role)} If no sample has the key, check {argument}."
            ),
        )
        if key in metadata:
            record[role] = metadata[key]
