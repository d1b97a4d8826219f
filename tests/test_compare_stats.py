"""The paired tests of `tracegrade compare`, against scipy and by hand.

The p-value is scipy's two-sided binomial test; here it is also summed
exactly in rational arithmetic (every outcome no more likely than the one
observed), so "exact" is shown, not assumed.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from scipy.stats import binomtest

from tracegrade.compare.stats import (
    InvalidAlpha,
    InvalidCounts,
    Verdict,
    check_alpha,
    discordant_needed,
    mcnemar_p_value,
    paired_test,
    smallest_p_value,
)


def exact_two_sided(b: int, c: int) -> Fraction:
    """The two-sided binomial p-value of `b` in `b + c` at p = 1/2, exactly:
    the probability of every split no more likely than the observed one."""
    n = b + c
    observed = comb(n, b)
    total = sum(comb(n, k) for k in range(n + 1) if comb(n, k) <= observed)
    return min(Fraction(1), Fraction(total, 2**n))


def test_twelve_to_none_is_two_halves_to_the_twelfth() -> None:
    assert mcnemar_p_value(12, 0) == 2 * 0.5**12 == 0.00048828125
    assert mcnemar_p_value(0, 12) == binomtest(0, 12, 0.5).pvalue


@pytest.mark.parametrize("b", range(0, 16))
@pytest.mark.parametrize("c", [0, 1, 2, 5, 9, 15, 30])
def test_p_value_is_scipys_and_the_exact_sum(b: int, c: int) -> None:
    if b + c == 0:
        assert mcnemar_p_value(b, c) == 1.0
        return
    p_value = mcnemar_p_value(b, c)
    assert p_value == binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert p_value == pytest.approx(float(exact_two_sided(b, c)), rel=1e-12)


def test_the_most_lopsided_split_is_the_smallest_p() -> None:
    for discordant in range(1, 25):
        lowest = smallest_p_value(discordant)
        assert lowest == min(1.0, 2 * 0.5**discordant)
        assert all(
            mcnemar_p_value(b, discordant - b) >= lowest for b in range(discordant + 1)
        )


@pytest.mark.parametrize(
    ("alpha", "needed"),
    [(0.05, 6), (0.01, 8), (0.001, 11), (0.0625, 5), (0.0624, 6), (0.5, 2), (0.99, 2)],
)
def test_discordant_needed_is_the_exact_threshold(alpha: float, needed: int) -> None:
    assert discordant_needed(alpha) == needed
    assert smallest_p_value(needed) <= alpha
    # One fewer cannot reach alpha, whatever the split (1 pair: p = 1).
    assert smallest_p_value(needed - 1) > alpha


def test_a_significant_loss_is_worse() -> None:
    test = paired_test("pass", pairs=17, base_count=14, new_count=2, b=12, c=0)

    assert test.p_value == 2 * 0.5**12
    assert test.significant and test.worse
    assert test.verdict is Verdict.WORSE
    assert test.difference == pytest.approx(-12 / 17)
    assert test.difference == pytest.approx(2 / 17 - 14 / 17)
    assert test.note == (
        "Worse in NEW: 12 of 17 pairs had pass in BASE only and 0 in NEW only "
        "(exact McNemar test); p = 0.00049 <= alpha = 0.05."
    )


def test_a_significant_gain_is_better() -> None:
    test = paired_test("pass", pairs=12, base_count=0, new_count=12, b=0, c=12)
    assert test.verdict is Verdict.BETTER and not test.worse


def test_more_of_a_failure_is_worse() -> None:
    test = paired_test(
        "retrieval failure",
        pairs=20,
        base_count=1,
        new_count=9,
        b=1,
        c=9,
        higher_is_better=False,
    )
    assert test.p_value == binomtest(1, 10, 0.5).pvalue
    assert test.p_value is not None and test.p_value < 0.05
    assert test.verdict is Verdict.WORSE


def test_three_changed_pairs_are_too_few_to_tell() -> None:
    test = paired_test("pass", pairs=20, base_count=16, new_count=15, b=2, c=1)

    assert test.p_value == 1.0
    assert test.smallest_p_value == 0.25
    assert test.discordant_needed == 6
    assert test.verdict is Verdict.TOO_FEW and not test.significant
    assert test.note == (
        "Too few to tell: 2 of 20 pairs had pass in BASE only and 1 in NEW only "
        "(exact McNemar test); even a 3 to 0 split would give p = 0.25 > alpha = "
        "0.05, and at least 6 changed pairs are needed."
    )


def test_no_discordant_pair_is_too_few_to_tell() -> None:
    test = paired_test("order", pairs=9, base_count=4, new_count=4, b=0, c=0)

    assert test.p_value is None and test.smallest_p_value is None
    assert test.difference == 0
    assert test.verdict is Verdict.TOO_FEW
    assert "none of the 9 pairs changed order" in test.note
    assert (test.test, test.samples, test.fell, test.rose) == (
        "exact McNemar test",
        9,
        0,
        0,
    )


def test_no_pairs_at_all() -> None:
    test = paired_test("order", pairs=0, base_count=0, new_count=0, b=0, c=0)
    assert test.difference is None and test.verdict is Verdict.TOO_FEW


def test_enough_pairs_but_balanced_is_not_significant() -> None:
    test = paired_test("membership", pairs=30, base_count=20, new_count=16, b=6, c=2)

    assert test.p_value == binomtest(6, 8, 0.5).pvalue
    assert test.verdict is Verdict.NOT_SIGNIFICANT
    assert test.note.startswith("Not significant: 6 of 30 pairs")


def test_a_p_value_equal_to_alpha_is_significant() -> None:
    test = paired_test(
        "pass", pairs=5, base_count=5, new_count=0, b=5, c=0, alpha=0.0625
    )
    assert test.p_value == 0.0625 and test.significant and test.worse


@pytest.mark.parametrize(
    "counts",
    [
        {"pairs": 3, "base_count": 1, "new_count": 1, "b": -1, "c": 0},
        {"pairs": 3, "base_count": 1, "new_count": 1, "b": 2, "c": 2},
        {"pairs": 3, "base_count": 4, "new_count": 4, "b": 0, "c": 0},
        {"pairs": 5, "base_count": 3, "new_count": 1, "b": 1, "c": 1},
    ],
)
def test_impossible_counts_are_refused_and_quoted(counts: dict[str, int]) -> None:
    with pytest.raises(InvalidCounts, match=r"got \{'pairs'"):
        paired_test("pass", **counts)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan")])
def test_alpha_must_lie_strictly_between_0_and_1(alpha: float) -> None:
    with pytest.raises(InvalidAlpha, match=f"got {alpha!r}"):
        check_alpha(alpha)


def test_with_one_pair_a_sample_the_sign_test_is_mcnemars() -> None:
    counts = {"pairs": 17, "base_count": 14, "new_count": 2, "b": 12, "c": 0}
    mcnemar = paired_test("pass", **counts)
    sign = paired_test("pass", **counts, samples=17, fell=12, rose=0)

    assert (sign.p_value, sign.verdict) == (mcnemar.p_value, mcnemar.verdict)
    assert sign.test == "exact sign test on per-sample differences"


def test_the_sign_test_weighs_samples_not_epochs() -> None:
    """Four questions lost in each of three epochs are four changed samples:
    p = 0.125, too few to tell, as with one epoch; not twelve pairs."""
    test = paired_test(
        "pass",
        pairs=90,
        base_count=30,
        new_count=18,
        b=12,
        c=0,
        samples=30,
        fell=4,
        rose=0,
    )
    assert test.p_value == binomtest(4, 4, 0.5).pvalue == 0.125
    assert test.verdict is Verdict.TOO_FEW
    assert test.note == (
        "Too few to tell: of 30 samples (90 paired epochs), 4 had pass in fewer "
        "of their epochs in NEW and 0 in more (exact sign test, the sample as the "
        "unit: a sample's epochs are not independent evidence); even a 4 to 0 "
        "split would give p = 0.12 > alpha = 0.05, and at least 6 changed "
        "samples are needed."
    )


@pytest.mark.parametrize(
    ("samples", "fell", "rose"),
    [(30, 13, 0), (30, 0, 1), (5, 3, 3), (100, 1, 0)],
    ids=[
        "fell above b",
        "rose above c",
        "more changed than samples",
        "samples above pairs",
    ],
)
def test_impossible_sample_counts_are_refused(
    samples: int, fell: int, rose: int
) -> None:
    with pytest.raises(InvalidCounts, match="fell and rose count samples"):
        paired_test(
            "pass",
            pairs=90,
            base_count=30,
            new_count=18,
            b=12,
            c=0,
            samples=samples,
            fell=fell,
            rose=rose,
        )
