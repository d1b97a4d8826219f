"""A warning when a key the scorer reads seems to be in no sample at all.

A typo in a key gives a run that is silently all `unresolved`, all
`answer-label` or all `invalid-input`; docs/scores.md says when the
warning comes and why only once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import quote

if TYPE_CHECKING:
    from inspect_ai.solver import TaskState

logger = logging.getLogger(__name__)

SHOWN_KEYS = 10


def listed_keys(keys: Iterable[object]) -> str:
    """`"a", "b" and 3 more`, sorted; `none` for no keys."""
    shown = sorted((quote(key, 60) for key in keys), key=str)
    if not shown:
        return "none"
    more = len(shown) - SHOWN_KEYS
    listed = ", ".join(shown[:SHOWN_KEYS])
    return f"{listed} and {more} more" if more > 0 else listed


@dataclass
class _Source:
    found: bool = False
    warned: bool = False


@dataclass
class KeyWatch:
    """Which sources some scored run has had; warns once for each that none has."""

    _sources: dict[str, _Source] = field(default_factory=dict)

    def note(self, source: str, present: bool, warning: Callable[[], str]) -> None:
        """Record whether this run had `source`; `warning` is built only if due."""
        seen = self._sources.setdefault(source, _Source())
        if present:
            seen.found = True
        elif not seen.found and not seen.warned:
            seen.warned = True
            logger.warning("%s", warning())

    def note_key(
        self, scorer: str, state: TaskState, role: str, key: str, consequence: str
    ) -> None:
        """Note whether this run's metadata has `key`, given as `{role}_key`."""
        argument = f"{role}_key"
        self.note(
            role,
            key in state.metadata,
            lambda: (
                f"{scorer}: sample {quote(state.sample_id)} has no metadata key "
                f"{quote(key)} ({argument}={quote(key)}), and no run scored before "
                f"it had one. Its metadata keys: {listed_keys(state.metadata)}. "
                f"{consequence} If no sample has the key, check {argument}."
            ),
        )


__all__ = ["KeyWatch", "listed_keys"]
