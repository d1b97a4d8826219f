"""The paired test of one binary outcome or figure, and what it can tell:
exact binomial tests at 1/2 (McNemar's, or the sign test with the sample
as the unit). Why these tests: docs/compare.md, "Significance".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import cache

from scipy.stats import binomtest  # type: ignore[import-untyped]

DEFAULT_ALPHA = 0.05


class Verdict(str, Enum):
    """What one test says about NEW against BASE."""

    WORSE = "worse"
    BETTER = "better"
    NOT_SIGNIFICANT = "not significant"
    TOO_FEW = "too few to tell"


class InvalidCounts(ValueError):
    """Paired counts that cannot be: negative, or more discordant pairs than
    pairs."""


class InvalidAlpha(ValueError):
    """A significance level outside (0, 1)."""


def check_alpha(alpha: float) -> float:
    """`alpha`, if it lies strictly between 0 and 1."""
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise InvalidAlpha(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def mcnemar_p_value(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value of `b` against `c` discordant
    pairs; 1.0 when there are none (nothing contradicts no change)."""
    if b < 0 or c < 0:
        raise InvalidCounts(f"discordant counts must be >= 0, got b={b!r}, c={c!r}")
    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


def smallest_p_value(discordant: int) -> float:
    """The p-value of the most lopsided split of `discordant` pairs, the
    smallest any split of them can give."""
    return mcnemar_p_value(0, discordant)


@cache
def discordant_needed(alpha: float) -> int:
    """The fewest discordant pairs whose most lopsided split is significant
    at `alpha`: below it the test cannot reject, whatever the data."""
    alpha = check_alpha(alpha)
    # 2 * 0.5**m is about alpha at m = log2(2 / alpha) = 1 - log2(alpha)
    # (written so, since 2 / alpha overflows for the smallest alphas):
    # start just below and let the test itself decide, so it is exact.
    needed = max(1, math.floor(1 - math.log2(alpha)) - 1)
    while smallest_p_value(needed) > alpha:
        needed += 1
    return needed


def _sign_test(
    fell: int, rose: int, alpha: float, higher_is_better: bool
) -> tuple[float | None, float | None, int, Verdict]:
    """The p-value of `fell` against `rose`, the smallest any split of them
    could give, the changes needed to tell, and the verdict."""
    changed = fell + rose
    needed = discordant_needed(alpha)
    if not changed:
        return None, None, needed, Verdict.TOO_FEW
    p_value = mcnemar_p_value(fell, rose)
    if changed < needed:
        verdict = Verdict.TOO_FEW
    elif p_value > alpha:
        verdict = Verdict.NOT_SIGNIFICANT
    elif (rose > fell) == higher_is_better:
        verdict = Verdict.BETTER
    else:
        verdict = Verdict.WORSE
    return p_value, smallest_p_value(changed), needed, verdict


MCNEMAR = "exact McNemar test"
SIGN = "exact sign test on per-sample differences"


@dataclass(frozen=True)
class PairedTest:
    """One outcome tested over `pairs` paired runs of `samples` samples; `b`
    and `c` its runs in BASE only and NEW only, `fell` and `rose` the samples
    whose share fell or rose (docs/compare.md)."""

    outcome: str
    higher_is_better: bool
    alpha: float
    test: str
    pairs: int
    samples: int
    base_count: int
    new_count: int
    b: int
    c: int
    fell: int
    rose: int
    p_value: float | None
    difference: float | None
    smallest_p_value: float | None
    discordant_needed: int
    significant: bool
    verdict: Verdict
    note: str

    @property
    def worse(self) -> bool:
        """NEW is significantly worse on this outcome."""
        return self.verdict is Verdict.WORSE


def paired_test(
    outcome: str,
    *,
    pairs: int,
    base_count: int,
    new_count: int,
    b: int,
    c: int,
    alpha: float = DEFAULT_ALPHA,
    higher_is_better: bool = True,
    samples: int | None = None,
    fell: int | None = None,
    rose: int | None = None,
) -> PairedTest:
    """Test whether `outcome` changed, and say so in one sentence: McNemar's
    test of `b` against `c`, or with `samples`, the sign test of `fell`
    against `rose`."""
    alpha = check_alpha(alpha)
    counts = {"pairs": pairs, "base_count": base_count, "new_count": new_count}
    counts |= {"b": b, "c": c}
    if any(value < 0 for value in counts.values()):
        raise InvalidCounts(f"counts must be >= 0, got {counts}")
    if b > base_count or c > new_count or base_count > pairs or new_count > pairs:
        raise InvalidCounts(
            f"b and c cannot exceed the runs with the outcome, nor those the "
            f"pairs, got {counts}"
        )
    if base_count - b != new_count - c:
        raise InvalidCounts(
            f"the runs with the outcome in both must agree: base_count - b = "
            f"{base_count - b}, new_count - c = {new_count - c}, got {counts}"
        )
    if samples is None:
        test, samples, fell, rose = MCNEMAR, pairs, b, c
    else:
        if fell is None or rose is None:
            raise InvalidCounts("a sign test needs fell and rose with samples")
        if not (0 <= fell <= b and 0 <= rose <= c and fell + rose <= samples <= pairs):
            raise InvalidCounts(
                "fell and rose count samples with a discordant pair, of at most "
                f"{samples} samples in {pairs} pairs; got fell={fell} (b={b}), "
                f"rose={rose} (c={c})"
            )
        test = SIGN
    p_value, lowest, needed, verdict = _sign_test(fell, rose, alpha, higher_is_better)
    if pairs == 0:
        note = f"Too few to tell: no pair was tested for {outcome}."
    elif p_value is None:
        note = (
            f"Too few to tell: none of the {pairs} pairs changed {outcome}, so "
            "the test has nothing to weigh."
        )
    else:
        what = "changed pairs" if test == MCNEMAR else "changed samples"
        moved = _note(outcome, test, pairs, samples, (b, c, fell, rose))
        at_least = f", and at least {needed} {what} are needed"
        note = _sentence(verdict, moved, p_value, alpha, fell + rose, at_least)
    return PairedTest(
        outcome=outcome,
        higher_is_better=higher_is_better,
        alpha=alpha,
        test=test,
        pairs=pairs,
        samples=samples,
        base_count=base_count,
        new_count=new_count,
        b=b,
        c=c,
        fell=fell,
        rose=rose,
        p_value=p_value,
        difference=(c - b) / pairs if pairs else None,
        smallest_p_value=lowest,
        discordant_needed=needed,
        significant=p_value is not None and p_value <= alpha,
        verdict=verdict,
        note=note,
    )


FIGURE_TEST = "exact sign test on per-sample mean differences"


@dataclass(frozen=True)
class FigureTest:
    """A per-run figure (context recall, precision, a step's recall) compared
    over the paired runs that have it on both sides, by the sign test of the
    samples that `fell` and `rose`; `lost` counts runs that lost it."""

    figure: str
    alpha: float
    test: str
    pairs: int
    samples: int
    base_mean: float | None
    new_mean: float | None
    difference: float | None
    fell: int
    rose: int
    p_value: float | None
    smallest_p_value: float | None
    discordant_needed: int
    significant: bool
    verdict: Verdict
    note: str
    lost: int = 0


def figure_test(
    figure: str,
    *,
    pairs: int,
    samples: int,
    base_mean: float | None,
    new_mean: float | None,
    fell: int,
    rose: int,
    alpha: float = DEFAULT_ALPHA,
    lost: int = 0,
) -> FigureTest:
    """Test whether a figure moved between BASE and NEW, and say so."""
    alpha = check_alpha(alpha)
    if (
        min(pairs, samples, fell, rose) < 0
        or fell + rose > samples
        or (samples > pairs)
    ):
        raise InvalidCounts(
            f"fell and rose count samples of at most {samples} samples in "
            f"{pairs} pairs; got fell={fell}, rose={rose}"
        )
    if (base_mean is None or new_mean is None) != (pairs == 0):
        raise InvalidCounts("the means are None exactly when there are no pairs")
    p_value, lowest, needed, verdict = _sign_test(fell, rose, alpha, True)
    difference = None if base_mean is None or new_mean is None else new_mean - base_mean
    nothing, moved = _figure_note(figure, samples, pairs, fell, rose, p_value)
    return FigureTest(
        figure=figure,
        alpha=alpha,
        test=FIGURE_TEST,
        pairs=pairs,
        samples=samples,
        base_mean=base_mean,
        new_mean=new_mean,
        difference=difference,
        fell=fell,
        rose=rose,
        p_value=p_value,
        smallest_p_value=lowest,
        discordant_needed=needed,
        significant=p_value is not None and p_value <= alpha,
        verdict=verdict,
        note=f"Too few to tell: {nothing}"
        if nothing
        else _sentence(verdict, moved, p_value or 0.0, alpha, fell + rose, ""),
        lost=lost,
    )


def _figure_note(
    figure: str, samples: int, pairs: int, fell: int, rose: int, p: float | None
) -> tuple[str, str]:
    """What a figure's test counted: when nothing, the whole sentence."""
    if pairs == 0:
        return f"no pair has {figure} on both sides.", ""
    if p is None:
        return (
            f"{figure} moved in none of the {samples} samples ({pairs} paired "
            "runs), so the test has nothing to weigh.",
            "",
        )
    return "", (
        f"of {samples} samples ({pairs} paired runs with {figure} on both "
        f"sides), {figure} fell in {fell} and rose in {rose} (exact sign test "
        "on per-sample mean differences)"
    )


def _note(
    outcome: str, test: str, pairs: int, samples: int, counts: tuple[int, ...]
) -> str:
    """What an outcome's test counted; `counts` are b, c, fell and rose."""
    b, c, fell, rose = counts
    if test == MCNEMAR:
        return (
            f"{b} of {pairs} pairs had {outcome} in BASE only and {c} in NEW "
            "only (exact McNemar test)"
        )
    return (
        f"of {samples} samples ({pairs} paired epochs), {fell} had {outcome} in "
        f"fewer of their epochs in NEW and {rose} in more (exact sign test, the "
        "sample as the unit: a sample's epochs are not independent evidence)"
    )


def _sentence(
    verdict: Verdict, moved: str, p: float, alpha: float, changed: int, needed: str
) -> str:
    """The verdict of a test of `changed` moves, said in one sentence."""
    if verdict is Verdict.TOO_FEW:
        return (
            f"Too few to tell: {moved}; even a {changed} to 0 split would give "
            f"p = {format_p(smallest_p_value(changed))} > alpha = {alpha}{needed}."
        )
    if verdict is Verdict.NOT_SIGNIFICANT:
        return f"Not significant: {moved}; p = {format_p(p)} > alpha = {alpha}."
    return (
        f"{verdict.value.capitalize()} in NEW: {moved}; p = {format_p(p)} "
        f"<= alpha = {alpha}."
    )


def format_p(p_value: float) -> str:
    """A p-value to 2 significant digits, small ones in scientific form."""
    return f"{p_value:.2g}" if p_value >= 1e-4 else f"{p_value:.1e}"


__all__ = [
    "DEFAULT_ALPHA",
    "FIGURE_TEST",
    "MCNEMAR",
    "SIGN",
    "FigureTest",
    "InvalidAlpha",
    "InvalidCounts",
    "PairedTest",
    "Verdict",
    "check_alpha",
    "discordant_needed",
    "figure_test",
    "format_p",
    "mcnemar_p_value",
    "paired_test",
    "smallest_p_value",
]
