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
FIGURE_SIGN = "exact sign test on per-sample mean differences"
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
    fell: int, rose: int, alpha: float, higher_is_better: bool
) -> dict[str, Any]:
    """The test's fields after the counts, and `moved`, the changes weighed."""
    changed = fell + rose
    needed = discordant_needed(alpha)
    p = p_value(fell, rose) if changed else None
    if p is None or changed < needed:
        verdict = TOO_FEW
    elif p > alpha:
        verdict = "not significant"
    else:
        verdict = "better" if (rose > fell) == higher_is_better else "worse"
    return {
        "p_value": p,
        "smallest_p_value": p_value(0, changed) if changed else None,
        "discordant_needed": needed,
        "significant": p is not None and p <= alpha,
        "verdict": verdict,
    }


def _sentence(test: dict[str, Any], moved: str, alpha: float, needed: str) -> str:
    p, verdict = test["p_value"], test["verdict"]
    if verdict == TOO_FEW:
        changed = test["fell"] + test["rose"]
        lowest = format_p(test["smallest_p_value"])
        return (
            f"Too few to tell: {moved}; even a {changed} to 0 split would give "
            f"p = {lowest} > alpha = {alpha}{needed}."
        )
    if verdict == "not significant":
        return f"Not significant: {moved}; p = {format_p(p)} > alpha = {alpha}."
    return (
        f"{verdict.capitalize()} in NEW: {moved}; p = {format_p(p)} <= alpha = {alpha}."
    )


def paired_test(
    outcome: str,
    higher_is_better: bool,
    alpha: float,
    counts: tuple[int, int, int, int, int],
    clusters: tuple[int, int, int] | None = None,
) -> dict[str, Any]:
    """`counts` are pairs, base_count, new_count, b, c; `clusters` (several
    epochs) samples, fell, rose, for the sign test."""
    pairs, base_count, new_count, b, c = counts
    test_name, (samples, fell, rose) = (
        (MCNEMAR, (pairs, b, c)) if clusters is None else (SIGN, clusters)
    )
    test = {
        "outcome": outcome,
        "higher_is_better": higher_is_better,
        "alpha": alpha,
        "test": test_name,
        "pairs": pairs,
        "samples": samples,
        "base_count": base_count,
        "new_count": new_count,
        "b": b,
        "c": c,
        "fell": fell,
        "rose": rose,
    }
    tested = _tested(fell, rose, alpha, higher_is_better)
    test |= {"p_value": tested.pop("p_value")}
    test |= {"difference": (c - b) / pairs if pairs else None} | tested
    if not pairs:
        note = f"Too few to tell: no pair was tested for {outcome}."
    elif not fell + rose:
        note = (
            f"Too few to tell: none of the {pairs} pairs changed {outcome}, so "
            "the test has nothing to weigh."
        )
    elif clusters is None:
        moved = (
            f"{b} of {pairs} pairs had {outcome} in BASE only and {c} in NEW "
            "only (exact McNemar test)"
        )
        needed = f", and at least {test['discordant_needed']} changed pairs are needed"
        note = _sentence(test, moved, alpha, needed)
    else:
        moved = (
            f"of {samples} samples ({pairs} paired epochs), {fell} had {outcome} "
            f"in fewer of their epochs in NEW and {rose} in more (exact sign "
            "test, the sample as the unit: a sample's epochs are not independent "
            "evidence)"
        )
        needed = (
            f", and at least {test['discordant_needed']} changed samples are needed"
        )
        note = _sentence(test, moved, alpha, needed)
    return test | {"note": note}


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
    test = {
        "figure": figure,
        "alpha": alpha,
        "test": FIGURE_SIGN,
        "pairs": pairs,
        "samples": samples,
        "base_mean": base,
        "new_mean": new,
        "difference": None if base is None or new is None else new - base,
        "fell": fell,
        "rose": rose,
    }
    tested = _tested(fell, rose, alpha, True)
    test |= {"p_value": tested.pop("p_value")} | tested
    if not pairs:
        note = f"Too few to tell: no pair has {figure} on both sides."
    elif not fell + rose:
        note = (
            f"Too few to tell: {figure} moved in none of the {samples} samples "
            f"({pairs} paired runs), so the test has nothing to weigh."
        )
    else:
        moved = (
            f"of {samples} samples ({pairs} paired runs with {figure} on both "
            f"sides), {figure} fell in {fell} and rose in {rose} (exact sign test "
            "on per-sample mean differences)"
        )
        note = _sentence(test, moved, alpha, "")
    return test | {"note": note, "lost": lost}
