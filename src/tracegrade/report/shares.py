"""Shares of runs and their Wilson intervals, with the sample as the
cluster when it ran several epochs (docs/report.md, "Intervals").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

CONFIDENCE: Final = 0.95
INTERVAL_METHOD: Final = "wilson"

Cluster = tuple[int, int]
"""One sample's runs: how many had the outcome, of how many."""


def wilson_interval(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval for `successes` out of `trials`."""
    if trials <= 0:
        raise ValueError(f"a proportion needs at least one trial, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in 0..{trials}, got {successes}")
    return effective_wilson_interval(successes / trials, trials, confidence)


def effective_wilson_interval(
    share: float, trials: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of `share` over a fractional number of
    `trials`, the formula `wilson_interval` applies to whole ones."""
    if trials <= 0:
        raise ValueError(f"a proportion needs trials, got {trials}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2_n = z * z / trials
    centre = (share + z2_n / 2) / (1 + z2_n)
    half = (
        z / (1 + z2_n) * math.sqrt(share * (1 - share) / trials + z2_n / (4 * trials))
    )
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_trials(clusters: Sequence[Cluster]) -> float:
    """The number of independent runs the clustered runs are worth."""
    runs = sum(size for _, size in clusters)
    count = sum(had for had, _ in clusters)
    samples = len(clusters)
    if runs == 0:
        raise ValueError("no runs to count")
    share = count / runs
    if samples < 2 or count in (0, runs):
        return float(samples)
    deviations = math.fsum((had - size * share) ** 2 for had, size in clusters)
    clustered = deviations * samples / (samples - 1) / runs**2
    independent = share * (1 - share) / (runs - 1)
    return min(float(runs), max(float(samples), runs * independent / clustered))


@dataclass(frozen=True)
class Proportion:
    """`count` of `total` runs, with its share and Wilson interval (None with
    no runs); `effective_total` the independent runs it rests on when
    clustered."""

    count: int
    total: int
    share: float | None
    low: float | None
    high: float | None
    effective_total: float | None = None

    @classmethod
    def of(
        cls, count: int, total: int, clusters: Sequence[Cluster] | None = None
    ) -> Proportion:
        """The share; `clusters`, one per sample with its runs in `total`,
        when a sample may have run more than once."""
        if total == 0:
            return cls(count, 0, None, None, None)
        if clusters is None or all(size == 1 for _, size in clusters):
            low, high = wilson_interval(count, total)
            return cls(count, total, count / total, low, high)
        if sum(size for _, size in clusters) != total:
            raise ValueError("the clusters must hold the runs counted, no more")
        effective = effective_trials(clusters)
        low, high = effective_wilson_interval(count / total, effective)
        return cls(count, total, count / total, low, high, effective)


__all__ = [
    "CONFIDENCE",
    "INTERVAL_METHOD",
    "Cluster",
    "Proportion",
    "effective_trials",
    "effective_wilson_interval",
    "wilson_interval",
]
