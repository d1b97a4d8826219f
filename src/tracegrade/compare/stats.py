"""Exact two-sided binomial tests at 1/2 of what fell against what rose."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from scipy.stats import binomtest  # type: ignore[import-untyped]

from ..report.runs import ExactSum

MCNEMAR = "exact McNemar test"
SIGN = "exact sign test on per-sample differences"
_PAIRED = "outcome higher_is_better alpha test pairs samples base_count new_count"
_PAIRED += " b c fell rose p_value difference"
_FIGURE = "figure alpha test pairs samples base_mean new_mean difference fell rose"


def p_value(fell: int, rose: int) -> float:
    """Two-sided exact p of `fell` against `rose`."""
    return float(binomtest(fell, fell + rose, 0.5).pvalue)


@cache
def discordant_needed(alpha: float) -> int:
    """The fewest moves whose most lopsided split can reach `alpha`."""
    # 2 * 0.5**m is about alpha at m = 1 - log2(alpha): start below, count up.
    needed = max(1, math.floor(1 - math.log2(alpha)) - 1)
    while p_value(0, needed) > alpha:
        needed += 1
    return needed


def format_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _tested(
    head: dict[str, Any], higher: bool, moved: str, needed: str, nothing: str
) -> dict[str, Any]:
    """`head` with the test of its `fell` against its `rose`, and the verdict
    in a sentence; `nothing` says why there is none."""
    fell, rose, alpha = head["fell"], head["rose"], head["alpha"]
    changed, least = fell + rose, discordant_needed(alpha)
    p = p_value(fell, rose) if changed else None
    if p is None or changed < least:
        verdict = "too few to tell"
        if p is not None:
            nothing = f"{moved}; even a {changed} to 0 split would give p = "
            nothing += f"{format_p(p_value(0, changed))} > alpha = {alpha}{needed}."
        note = f"Too few to tell: {nothing}"
    elif p > alpha:
        verdict = "not significant"
        note = f"Not significant: {moved}; p = {format_p(p)} > alpha = {alpha}."
    else:
        verdict = "better" if (rose > fell) == higher else "worse"
        note = f"{verdict.capitalize()} in NEW: {moved}; p = {format_p(p)} <= "
        note += f"alpha = {alpha}."
    return head | {
        "p_value": p,
        "smallest_p_value": p_value(0, changed) if changed else None,
        "discordant_needed": least,
        "significant": p is not None and p <= alpha,
        "verdict": verdict,
        "note": note,
    }


@lru_cache(maxsize=1 << 12)
def _share(value: float) -> Fraction:
    """The share of two small integers `value` is, so moves that cancel do."""
    return Fraction(value).limit_denominator(1 << 24)


class Tally:
    """An outcome or figure over the pairs with it on both sides, and its test;
    `clustered` (several epochs) makes the sample the unit."""

    def __init__(self, clustered: bool) -> None:
        self.clustered = clustered
        self.pairs = self.b = self.c = self.lost = 0
        self.base, self.new = ExactSum(), ExactSum()
        self.by_sample: defaultdict[int | str, Any] = defaultdict(int)

    def add(
        self, sample: int | str, before: float | None, after: float | None, has: bool
    ) -> Any:
        if before is None or after is None:
            # A run that lost its result is lost already, as a run.
            self.lost += before is not None and has
            return 0
        moved = _share(after) - _share(before) if self.clustered else after - before
        self.pairs += 1
        self.base.add(before)
        self.new.add(after)
        self.b += moved < 0
        self.c += moved > 0
        if self.clustered:
            self.by_sample[sample] += moved
        return moved

    def samples(self) -> tuple[int, int, int]:
        if not self.clustered:
            return self.pairs, self.b, self.c
        moves = self.by_sample.values()
        return len(moves), sum(m < 0 for m in moves), sum(m > 0 for m in moves)

    def paired_test(self, outcome: str, higher: bool, alpha: float) -> dict[str, Any]:
        """McNemar's test of b against c, or with epochs the sign test."""
        pairs, b, c = self.pairs, self.b, self.c
        samples, fell, rose = self.samples()
        if not self.clustered:
            name, what = MCNEMAR, "pairs"
            moved = f"{b} of {pairs} pairs had {outcome} in BASE only and {c} in NEW "
            moved += "only (exact McNemar test)"
        else:
            name, what = SIGN, "samples"
            moved = (
                f"of {samples} samples ({pairs} paired epochs), {fell} had {outcome} "
                f"in fewer of their epochs in NEW and {rose} in more (exact sign "
                "test, the sample as the unit: a sample's epochs are not independent "
                "evidence)"
            )
        if pairs:
            nothing = f"none of the {pairs} pairs changed {outcome}, so the test has "
            nothing += "nothing to weigh."
        else:
            nothing = f"no pair was tested for {outcome}."
        difference = (c - b) / pairs if pairs else None
        values = [outcome, higher, alpha, name, pairs, samples, int(self.base.total)]
        values += [int(self.new.total), b, c, fell, rose, None, difference]
        head = dict(zip(_PAIRED.split(), values, strict=True))
        needed = f", and at least {discordant_needed(alpha)} changed {what} are needed"
        return _tested(head, higher, moved, needed, nothing)

    def figure_test(self, figure: str, alpha: float) -> dict[str, Any]:
        """The figure's means on each side and the sign test of its samples."""
        pairs, (samples, fell, rose) = self.pairs, self.samples()
        base, new = self.base.mean(pairs), self.new.mean(pairs)
        difference = None if base is None or new is None else new - base
        name = "exact sign test on per-sample mean differences"
        values = [figure, alpha, name, pairs, samples, base, new, difference]
        values += [fell, rose]
        moved = (
            f"of {samples} samples ({pairs} paired runs with {figure} on both "
            f"sides), {figure} fell in {fell} and rose in {rose} (exact sign test "
            "on per-sample mean differences)"
        )
        if pairs:
            nothing = f"{figure} moved in none of the {samples} samples ({pairs} "
            nothing += "paired runs), so the test has nothing to weigh."
        else:
            nothing = f"no pair has {figure} on both sides."
        head = dict(zip(_FIGURE.split(), values, strict=True))
        return _tested(head, True, moved, "", nothing) | {"lost": self.lost}
