"""A warning when a key the scorer reads seems to be in no sample at all.

A typo in `required_key` gives a run that is 100% `unresolved`, one in
`correct_key` a run that is 100% `answer-label`, and one in the extraction
scorer's `source_key` or `answer_key` a run that is 100% `invalid-input`,
with nothing said: each score is right for its own sample. So both scorers
watch each source they read (a metadata key, the recorded context, a
labels file). The first time a run lacks one while no run scored before
it had it, the scorer logs one warning, naming the key, the sample and the
keys that sample does have.

The warning is logged while the sample is scored, as Inspect's own
`target_perplexity` warns of a missing metadata key: Inspect prints it in
the terminal and records it in that sample's transcript in the log, where
`inspect view` shows it. Inspect gives a scorer no moment after the last
sample (metrics are also computed for the progress display, over the
samples done so far), so "no run before it" is the most a scorer can know
of "no run at all". With a typo the warning always comes; in a run where
only some samples lack the key, it comes only if one of those is scored
first, and says as much. `tracegrade check` says the same of a whole file.

Each source warns at most once per scorer instance, so a run of 100,000
samples with a typo prints one line, not 100,000.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..core.errors import quote

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


def absent_metadata_key(
    scorer: str,
    sample: str,
    *,
    key: str,
    argument: str,
    keys: Iterable[str],
    consequence: str,
) -> str:
    """The warning for a metadata key the first runs lack."""
    return (
        f"{scorer}: sample {sample} has no metadata key {quote(key)} "
        f"({argument}={quote(key)}), and no run scored before it had one. "
        f"Its metadata keys: {listed_keys(keys)}. {consequence} "
        f"If no sample has the key, check {argument}."
    )


__all__ = ["KeyWatch", "absent_metadata_key", "listed_keys"]
