"""Every run counted: why a run got no result (a data error's kind,
`sample-error`, `no-score`, `not-run`), and the shares over all runs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

SAMPLE_ERROR: Final = "sample-error"
NO_SCORE: Final = "no-score"
NOT_RUN: Final = "not-run"


@dataclass(frozen=True)
class Undiagnosed:
    """Runs that got no stage (or no grade), and why: a data error's kind,
    `sample-error`, `no-score` or `not-run` (see the module)."""

    why: str
    count: int


def undiagnosed(counts: Counter[str]) -> list[Undiagnosed]:
    """Most first; ties by why, so the list is stable."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [Undiagnosed(why, count) for why, count in ranked if count]


def _plural(count: int, one: str) -> str:
    return f"{count} {one if count == 1 else one + 's'}"


def why_text(items: list[Undiagnosed]) -> str:
    """ "12 sample errors, 1 answer-label data error, 16 not run ..."."""
    parts = []
    for item in items:
        if item.why == SAMPLE_ERROR:
            parts.append(_plural(item.count, "sample error"))
        elif item.why == NOT_RUN:
            parts.append(f"{item.count} not run (the eval stopped)")
        elif item.why == NO_SCORE:
            parts.append(f"{item.count} logged without the score")
        else:
            parts.append(_plural(item.count, f"{item.why} data error"))
    return ", ".join(parts)


def share_of(count: int, runs: int) -> float | None:
    """`count` of every run; None with no run."""
    return count / runs if runs else None


def mean_over_all(total: float, count: int, without: int) -> float | None:
    """The mean of `count` figures summing to `total`, with `without` runs
    lacking the figure counted 0; None with neither."""
    return total / (count + without) if count + without else None


class ExactSum:
    """The exact sum of floats, added one at a time (Shewchuk's partials,
    as `math.fsum` keeps them), without holding the floats."""

    __slots__ = ("count", "partials")

    def __init__(self) -> None:
        self.partials: list[float] = []
        self.count = 0

    def add(self, value: float) -> None:
        self.count += 1
        kept = 0
        for partial in self.partials:
            if abs(value) < abs(partial):
                value, partial = partial, value
            high = value + partial
            low = partial - (high - value)
            if low:
                self.partials[kept] = low
                kept += 1
            value = high
        self.partials[kept:] = [value]

    @property
    def total(self) -> float:
        # `math.fsum` of the partials is their exact sum rounded once: the
        # same double as `math.fsum` of every value added.
        return math.fsum(self.partials)

    def mean(self, count: int) -> float | None:
        return self.total / count if count else None


@dataclass
class AllRuns:
    """One side's runs of one score, counted as they are read: every run,
    those with a result (a stage, a grade), the rest by why, and the sums
    of the figures over all runs. Nothing grows with the runs."""

    runs: int = 0
    diagnosed: int = 0
    why: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    """Runs with each outcome: `pass`; `membership`, `order`."""
    recall: ExactSum = field(default_factory=ExactSum)
    precision: ExactSum = field(default_factory=ExactSum)
    without_recall: int = 0
    without_precision: int = 0

    def add(
        self,
        diagnosed: bool,
        why: str | None,
        outcomes: tuple[str, ...] = (),
        recall: float | None = None,
        precision: float | None = None,
    ) -> None:
        """One run: its result, or why it has none; its outcomes and its
        figures. A run not diagnosed that lacks a figure counts 0."""
        self.runs += 1
        if diagnosed:
            self.diagnosed += 1
        else:
            self.why[why or NO_SCORE] += 1
        self.outcomes.update(outcomes)
        if recall is not None:
            self.recall.add(recall)
        elif not diagnosed:
            self.without_recall += 1
        if precision is not None:
            self.precision.add(precision)
        elif not diagnosed:
            self.without_precision += 1

    def figures(self, names: tuple[str, ...]) -> dict[str, float | None]:
        """The shares over all runs `--fail-under` checks, of `names`."""
        found: dict[str, float | None] = {}
        for name in names:
            if name == "context_recall":
                found[name] = mean_over_all(
                    self.recall.total, self.recall.count, self.without_recall
                )
            elif name == "context_precision":
                found[name] = mean_over_all(
                    self.precision.total, self.precision.count, self.without_precision
                )
            else:
                found[name] = share_of(self.outcomes[name], self.runs)
        return found


__all__ = [
    "NOT_RUN",
    "NO_SCORE",
    "SAMPLE_ERROR",
    "AllRuns",
    "ExactSum",
    "Undiagnosed",
    "mean_over_all",
    "share_of",
    "undiagnosed",
    "why_text",
]
