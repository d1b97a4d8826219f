"""Every run counted: why a run got no result, and figures over all runs."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

SAMPLE_ERROR: Final = "sample-error"
NO_SCORE: Final = "no-score"
NOT_RUN: Final = "not-run"


@dataclass(frozen=True)
class Undiagnosed:
    """Runs that got no stage (or no grade), and why."""

    why: str
    count: int


def plural(count: int, one: str) -> str:
    """`1 run`, `2 runs`: a count with its noun."""
    return f"{count} {one}{'s' * (count != 1)}"


def ranked(counts: Counter[Any]) -> list[tuple[Any, int]]:
    """Most first; ties in key order (code point order for text): a stable list."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def undiagnosed(counts: Counter[str]) -> list[Undiagnosed]:
    return [Undiagnosed(why, count) for why, count in ranked(counts) if count]


def why_text(items: list[Undiagnosed]) -> str:
    """ "12 sample errors, 1 answer-label data error, 16 not run ..."."""
    said = {NOT_RUN: "not run (the eval stopped)", NO_SCORE: "logged without the score"}
    parts = []
    for item in items:
        if item.why in said:
            parts.append(f"{item.count} {said[item.why]}")
        else:
            kind = "sample" if item.why == SAMPLE_ERROR else f"{item.why} data"
            parts.append(plural(item.count, f"{kind} error"))
    return ", ".join(parts)


class ExactSum:
    """An exact sum (Shewchuk's partials, as `math.fsum`) without the floats."""

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
        # The exact sum rounded once: the double `math.fsum` of every value gives.
        return math.fsum(self.partials)

    def mean(self, count: int) -> float | None:
        return self.total / count if count else None


@dataclass
class AllRuns:
    """One score's runs, outcomes and figure sums, counted as read."""

    runs: int = 0
    diagnosed: int = 0
    why: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
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
        """One run; a run not diagnosed that lacks a figure counts 0."""
        self.runs += 1
        self.diagnosed += diagnosed
        if not diagnosed:
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

    def none(self, errored: int, unscored: int, not_run: int) -> None:
        """Runs with no score at all, counted by why."""
        runs = {SAMPLE_ERROR: errored, NO_SCORE: unscored, NOT_RUN: not_run}
        total = sum(runs.values())
        self.runs += total
        self.why.update(runs)
        self.without_recall += total
        self.without_precision += total

    def figures(self, names: tuple[str, ...]) -> dict[str, float | None]:
        """The figures over all runs `--fail-under` checks, of `names`."""
        return {name: self._figure(name) for name in names}

    def _figure(self, name: str) -> float | None:
        if name == "context_recall":
            return self.recall.mean(self.recall.count + self.without_recall)
        if name == "context_precision":
            return self.precision.mean(self.precision.count + self.without_precision)
        return self.outcomes[name] / self.runs if self.runs else None
