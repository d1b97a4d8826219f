"""The exact two-sided binomial test at 1/2 of what fell against what rose:
McNemar's test with one epoch, the sign test with the sample as the unit
with several (docs/compare.md, "Significance")."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from scipy.stats import binomtest  # type: ignore[import-untyped]

DEFAULT_ALPHA = 0.05
MCNEMAR = "exact McNemar test"
SIGN = "exact sign test on per-sample differences"
TOO_FEW = "too few to tell"


class InvalidAlpha(ValueError):
    """A significance level outside (0, 1)."""


def check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise InvalidAlpha(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def p_value(fell: int, rose: int) -> float:
    """Two-sided exact p of `fell` against `rose`; 1.0 when nothing moved."""
    total = fell + rose
    return float(binomtest(fell, total, 0.5).pvalue) if total else 1.0


@cache
def discordant_needed(alpha: float) -> int:
    """The fewest moves whose most lopsided split can reach `alpha`."""
    # 2 * 0.5**m is about alpha at m = 1 - log2(alpha): start below, count up.
    needed = max(1, math.floor(1 - math.log2(alpha)) - 1)
    while p_value(0, needed) > alpha:
        needed += 1
    return needed


def format_p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _tested(
    head: dict[str, Any], higher: bool, moved: str, needed: str, nothing: list[str]
) -> dict[str, Any]:
    """`head` and the test of its `fell` against its `rose`, the verdict said
    in one sentence: `moved` what was weighed; `nothing`, why there is none
    with pairs and without."""
    fell, rose, alpha = head["fell"], head["rose"], head["alpha"]
    changed = fell + rose
    if not changed:
        moved = nothing[0] if head["pairs"] else nothing[1]
    least = discordant_needed(alpha)
    p = p_value(fell, rose) if changed else None
    if p is None or changed < least:
        verdict = TOO_FEW
        note = (
            f"Too few to tell: {moved}; even a {changed} to 0 split would give "
            f"p = {format_p(p_value(0, changed))} > alpha = {alpha}{needed}."
        )
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
        "note": f"Too few to tell: {moved}" if not changed else note,
    }


_PAIRED = "outcome higher_is_better alpha test pairs samples base_count new_count"
_PAIRED += " b c fell rose p_value difference"
_FIGURE = "figure alpha test pairs samples base_mean new_mean difference fell rose"


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
    samples, fell, rose = (pairs, b, c) if clusters is None else clusters
    if clusters is None:
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
    nothing = [
        f"none of the {pairs} pairs changed {outcome}, so the test has nothing "
        "to weigh.",
        f"no pair was tested for {outcome}.",
    ]
    # p_value is filled in by `_tested`; difference, here.
    values = (outcome, higher_is_better, alpha, name, pairs, samples, *counts[1:])
    head = dict(zip(_PAIRED.split(), (*values, fell, rose, None, None), strict=True))
    head["difference"] = (c - b) / pairs if pairs else None
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
    """A figure's means over the pairs that have it, and the sign test of
    the samples that fell against those that rose; `moves` are fell, rose
    and the pairs that lost the figure."""
    (base, new), (fell, rose, lost) = means, moves
    difference = None if base is None or new is None else new - base
    name = "exact sign test on per-sample mean differences"
    values = (figure, alpha, name, pairs, samples, base, new, difference, fell, rose)
    moved = (
        f"of {samples} samples ({pairs} paired runs with {figure} on both "
        f"sides), {figure} fell in {fell} and rose in {rose} (exact sign test "
        "on per-sample mean differences)"
    )
    nothing = [
        f"{figure} moved in none of the {samples} samples ({pairs} paired "
        "runs), so the test has nothing to weigh.",
        f"no pair has {figure} on both sides.",
    ]
    head = dict(zip(_FIGURE.split(), values, strict=True))
    return _tested(head, True, moved, "", nothing) | {"lost": lost}
