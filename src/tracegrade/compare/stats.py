"""Exact two-sided binomial tests at 1/2 of what fell against what rose."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from scipy.stats import binomtest  # type: ignore[import-untyped]

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


def paired_test(
    outcome: str,
    higher_is_better: bool,
    alpha: float,
    counts: tuple[int, int, int, int, int],
    clusters: tuple[int, int, int] | None,
) -> dict[str, Any]:
    """`counts` are pairs, base_count, new_count, b and c; `clusters`, with
    several epochs, samples, fell and rose for the sign test."""
    pairs, _, _, b, c = counts
    if clusters is None:
        (samples, fell, rose), name, what = (pairs, b, c), MCNEMAR, "pairs"
        moved = f"{b} of {pairs} pairs had {outcome} in BASE only and {c} in NEW "
        moved += "only (exact McNemar test)"
    else:
        (samples, fell, rose), name, what = clusters, SIGN, "samples"
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
    values = [outcome, higher_is_better, alpha, name, pairs, samples, *counts[1:]]
    values += [fell, rose, None, difference]
    head = dict(zip(_PAIRED.split(), values, strict=True))
    needed = f", and at least {discordant_needed(alpha)} changed {what} are needed"
    return _tested(head, higher_is_better, moved, needed, nothing)


def figure_test(
    figure: str,
    alpha: float,
    pairs: int,
    samples: int,
    means: tuple[float | None, float | None],
    moves: tuple[int, int, int],
) -> dict[str, Any]:
    """A figure's means over the pairs that have it, and the sign test of its
    samples; `moves` are fell, rose and the pairs that lost the figure."""
    (base, new), (fell, rose, lost) = means, moves
    difference = None if base is None or new is None else new - base
    name = "exact sign test on per-sample mean differences"
    values = (figure, alpha, name, pairs, samples, base, new, difference, fell, rose)
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
    return _tested(head, True, moved, "", nothing) | {"lost": lost}
