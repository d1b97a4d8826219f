"""Context recall and precision compared pair by pair (`pairing.pair_runs`).

Pure: observations made here, no logs. Checked: the pairs counted are
those where both runs have the figure, labelled or not; the means are
`math.fsum` means of those pairs; the test is the exact sign test on
per-sample mean differences, exact for a sample whose epochs' moves
cancel; and the figures never move the gate.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy.stats import binomtest  # type: ignore[import-untyped]

from tracegrade.compare.pairing import (
    DATA_ERROR,
    FIGURES,
    STAGE,
    Observation,
    Run,
    pair_runs,
)
from tracegrade.compare.stats import FIGURE_TEST, InvalidCounts, Verdict, figure_test


def observation(
    sample: Any,
    state: str = "pass",
    *,
    epoch: int = 1,
    recall: float | None = None,
    precision: float | None = None,
) -> Observation:
    missing = () if state in ("pass", "generation") else None
    if state == "retrieval":
        missing = ("D1",)
    run = Run(state, missing, None, "log", recall=recall, precision=precision)
    return Observation(STAGE, STAGE, sample, epoch, run)


def figures(base: list[Observation], new: list[Observation], **kw: Any) -> Any:
    paired = pair_runs(base, new, **kw)
    (compared,) = paired.stage_diagnosis
    assert [f.figure for f in compared.figures] == list(FIGURES)
    return paired, {f.figure: f for f in compared.figures}


def test_only_pairs_with_the_figure_on_both_sides_count() -> None:
    base = [
        observation("a", recall=1.0, precision=0.5),
        observation("b", recall=0.5, precision=None),
        observation("c", DATA_ERROR, recall=1.0, precision=1.0),  # unlabelled
        observation("d", "unresolved", recall=None, precision=0.0),
    ]
    new = [
        observation("a", "retrieval", recall=0.5, precision=0.5),
        observation("b", recall=1.0, precision=1.0),
        observation("c", DATA_ERROR, recall=1.0, precision=1 / 3),
        observation("d", "unresolved", recall=None, precision=0.25),
    ]
    _, found = figures(base, new)
    recall, precision = found["recall"], found["precision"]
    assert (recall.pairs, recall.samples) == (3, 3)
    assert recall.base_mean == math.fsum([1.0, 0.5, 1.0]) / 3
    assert recall.new_mean == math.fsum([0.5, 1.0, 1.0]) / 3
    assert recall.difference == recall.new_mean - recall.base_mean
    assert (recall.fell, recall.rose) == (1, 1)
    assert (precision.pairs, precision.fell, precision.rose) == (3, 1, 1)
    assert precision.base_mean == math.fsum([0.5, 1.0, 0.0]) / 3
    assert precision.test == FIGURE_TEST
    assert precision.verdict is Verdict.TOO_FEW


def test_no_pair_with_the_figure_is_too_few_to_tell() -> None:
    _, found = figures([observation("a")], [observation("a")])
    for figure in found.values():
        assert (figure.pairs, figure.base_mean, figure.difference) == (0, None, None)
        assert figure.p_value is None and figure.verdict is Verdict.TOO_FEW
        assert "no pair has" in figure.note


def test_the_sign_test_is_binomtest_and_a_fall_is_worse_but_not_gated() -> None:
    # 9 samples lose recall (1 -> 1/2) while passing on both sides, one gains.
    base = [observation(i, recall=1.0 if i < 9 else 0.5) for i in range(10)]
    new = [observation(i, recall=0.5 if i < 9 else 1.0) for i in range(10)]
    paired, found = figures(base, new)
    recall = found["recall"]
    assert (recall.fell, recall.rose) == (9, 1)
    assert recall.p_value == binomtest(9, 10, 0.5).pvalue
    assert recall.significant and recall.verdict is Verdict.WORSE
    assert "fell in 9 and rose in 1" in recall.note
    # The gate is on pass (unchanged here), never on a figure.
    assert paired.gate.significant == [] and not paired.gate.fails
    assert paired.gate.outcomes == ["stage_diagnosis: pass"]


def test_a_sample_whose_epochs_cancel_out_did_not_move() -> None:
    """Two epochs: 1/3 -> 1/2 and 1/6 -> 0 sum to no move, though the
    doubles' differences sum to 2.8e-17. Another sample moves for real."""
    assert (0.5 - 1 / 3) + (0.0 - 1 / 6) != 0  # the premise
    base = [
        observation("s", epoch=1, recall=1 / 3),
        observation("s", epoch=2, recall=1 / 6),
        observation("t", epoch=1, recall=1.0),
        observation("t", epoch=2, recall=1.0),
    ]
    new = [
        observation("s", epoch=1, recall=0.5),
        observation("s", epoch=2, recall=0.0),
        observation("t", epoch=1, recall=0.5),
        observation("t", epoch=2, recall=1.0),
    ]
    _, found = figures(base, new, clustered=True)
    recall = found["recall"]
    assert (recall.pairs, recall.samples, recall.fell, recall.rose) == (4, 2, 1, 0)


def test_with_one_epoch_a_pair_is_a_sample() -> None:
    base = [observation(i, recall=k / 7) for i, k in enumerate(range(8))]
    new = [observation(i, recall=(7 - k) / 7) for i, k in enumerate(range(8))]
    _, found = figures(base, new)
    recall = found["recall"]
    assert (recall.samples, recall.fell, recall.rose) == (8, 4, 4)
    assert recall.base_mean == recall.new_mean == math.fsum(k / 7 for k in range(8)) / 8
    assert recall.difference == 0.0


@pytest.mark.parametrize(
    "counts",
    [
        {"pairs": 2, "samples": 3, "fell": 1, "rose": 1},
        {"pairs": 3, "samples": 3, "fell": 2, "rose": 2},
        {"pairs": 3, "samples": 3, "fell": -1, "rose": 0},
    ],
)
def test_figure_test_refuses_impossible_counts(counts: dict[str, int]) -> None:
    with pytest.raises(InvalidCounts):
        figure_test("recall", base_mean=0.5, new_mean=0.5, **counts)


def test_figure_test_needs_means_exactly_when_there_are_pairs() -> None:
    with pytest.raises(InvalidCounts):
        figure_test(
            "recall", pairs=0, samples=0, base_mean=0.5, new_mean=0.5, fell=0, rose=0
        )
    with pytest.raises(InvalidCounts):
        figure_test(
            "recall", pairs=1, samples=1, base_mean=None, new_mean=0.5, fell=0, rose=0
        )
