"""Pairing two runs, without Inspect: the matrix, the lists, the gate."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from tracegrade.compare.pairing import (
    NOT_IN_NEW,
    DuplicateRun,
    LostCount,
    NothingInCommon,
    Observation,
    Run,
    SampleRef,
    UnknownKind,
    pair_runs,
)
from tracegrade.compare.stats import Verdict

STAGE_MISSING = {"retrieval": ("D1",), "generation": (), "pass": ()}


def stage(
    sample_id: int | str,
    state: str,
    *,
    epoch: int = 1,
    missing: tuple[str, ...] | None = None,
    log: str = "log",
    score: str = "stage_diagnosis",
) -> Observation:
    if missing is None:
        missing = STAGE_MISSING.get(state)
    return Observation(
        score,
        "stage_diagnosis",
        sample_id,
        epoch,
        Run(state, missing, f"{state} because", log),
    )


def extraction(sample_id: int | str, state: str, *, epoch: int = 1) -> Observation:
    return Observation(
        "ordered_extraction",
        "ordered_extraction",
        sample_id,
        epoch,
        Run(state, None, state, "x.eval"),
    )


def test_the_matrix_counts_every_pair_base_rows_new_columns() -> None:
    base = [stage("a", "pass"), stage("b", "pass"), stage("c", "data error")]
    new = [stage("a", "generation"), stage("b", "pass"), stage("c", "no score")]
    (compared,) = pair_runs(base, new).stage_diagnosis

    states = compared.states
    assert states == [
        "retrieval",
        "generation",
        "pass",
        "unresolved",
        "data error",
        "no score",
    ]
    cell = {
        (states[row], states[column]): count
        for row, counts in enumerate(compared.transitions)
        for column, count in enumerate(counts)
        if count
    }
    assert cell == {
        ("pass", "generation"): 1,
        ("pass", "pass"): 1,
        ("data error", "no score"): 1,
    }
    assert compared.pairs == 3


def test_regressions_are_pass_to_retrieval_or_generation_fixes_anything_to_pass() -> (
    None
):
    base = [
        stage("r", "pass"),
        stage("g", "pass"),
        stage("u", "pass"),
        stage("f1", "generation"),
        stage("f2", "data error"),
        stage("f3", "retrieval"),
    ]
    new = [
        stage("r", "retrieval"),
        stage("g", "generation"),
        stage("u", "unresolved"),
        stage("f1", "pass"),
        stage("f2", "pass"),
        stage("f3", "pass"),
    ]
    (compared,) = pair_runs(base, new).stage_diagnosis

    assert [(c.id, c.base.state, c.new.state) for c in compared.regressions] == [
        ("g", "pass", "generation"),
        ("r", "pass", "retrieval"),
    ]
    assert [c.id for c in compared.fixes] == ["f1", "f2", "f3"]
    regression = list(compared.regressions)[1]
    assert regression.base.missing == [] and regression.new.missing == ["D1"]
    assert regression.base.explanation == "pass because"
    assert regression.new.explanation == "retrieval because"


def test_the_tests_take_only_pairs_with_a_stage_on_both_sides() -> None:
    base = [stage(i, "pass") for i in range(12)] + [
        stage("e", "pass"),
        stage("n", "pass"),
        stage("fixed", "data error"),
    ]
    new = [stage(i, "generation") for i in range(12)] + [
        stage("e", "data error"),
        stage("n", "no score"),
        stage("fixed", "pass"),
    ]
    (compared,) = pair_runs(base, new).stage_diagnosis
    passed, retrieval = compared.tests

    assert (passed.outcome, passed.pairs, passed.b, passed.c) == ("pass", 12, 12, 0)
    assert passed.p_value == 2 * 0.5**12
    assert passed.verdict is Verdict.WORSE
    assert (retrieval.outcome, retrieval.b, retrieval.c) == ("retrieval failure", 0, 0)
    assert retrieval.verdict is Verdict.TOO_FEW
    # Listed though not tested: the data error became a pass.
    assert [c.id for c in compared.fixes] == ["fixed"]


def test_retrieval_failure_counts_the_pairs_that_entered_or_left_retrieval() -> None:
    base = [stage(i, "generation") for i in range(7)] + [stage("x", "retrieval")]
    new = [stage(i, "retrieval") for i in range(7)] + [stage("x", "pass")]
    (compared,) = pair_runs(base, new).stage_diagnosis
    _, retrieval = compared.tests

    assert (retrieval.b, retrieval.c, retrieval.pairs) == (1, 7, 8)
    assert retrieval.p_value == binomtest(1, 8, 0.5).pvalue
    assert retrieval.verdict is Verdict.NOT_SIGNIFICANT
    assert retrieval.difference == pytest.approx(6 / 8)


def test_newly_missing_and_found_ids_are_counted_over_diagnosed_pairs() -> None:
    base = [
        stage("a", "retrieval", missing=("D2",)),
        stage("b", "pass"),
        stage("c", "retrieval", missing=("D1", "D2")),
        stage("d", "unresolved"),
    ]
    new = [
        stage("a", "retrieval", missing=("D1",)),
        stage("b", "retrieval", missing=("D1",)),
        stage("c", "generation"),
        stage("d", "retrieval", missing=("D9",)),
    ]
    (compared,) = pair_runs(base, new).stage_diagnosis

    assert compared.ids_compared == 3
    assert [(i.id, i.count) for i in compared.newly_missing] == [("D1", 2)]
    assert [(i.id, i.count) for i in compared.newly_found] == [("D2", 2), ("D1", 1)]


def test_samples_in_one_run_only_are_listed_with_their_log() -> None:
    base = [stage(2, "pass"), stage(10, "pass"), stage("z", "pass", log="b.eval")]
    new = [stage(2, "pass"), stage(2, "pass", epoch=2), stage("new", "pass")]
    (compared,) = pair_runs(base, new).stage_diagnosis

    assert compared.pairs == 1
    assert compared.only_in_base == [
        SampleRef(10, 1, "log"),
        SampleRef("z", 1, "b.eval"),
    ]
    assert compared.only_in_new == [SampleRef(2, 2, "log"), SampleRef("new", 1, "log")]


def test_extraction_lists_who_lost_and_gained_each_criterion() -> None:
    base = [
        extraction("x1", "pass"),
        extraction("x2", "membership fail"),
        extraction("x3", "pass"),
        extraction("x4", "order fail"),
        extraction("x5", "membership fail"),
        extraction("x6", "data error"),
    ]
    new = [
        extraction("x1", "order fail"),
        extraction("x2", "pass"),
        extraction("x3", "pass"),
        extraction("x4", "membership fail"),
        extraction("x5", "pass"),
        extraction("x6", "pass"),
    ]
    paired = pair_runs(base, new)
    (compared,) = paired.ordered_extraction

    assert [c.id for c in compared.lost_membership] == ["x4"]
    assert [c.id for c in compared.gained_membership] == ["x2", "x5"]
    assert [c.id for c in compared.lost_order] == ["x1"]
    assert [c.id for c in compared.gained_order] == ["x2", "x5"]
    membership, order = compared.tests
    assert (membership.pairs, membership.base_count, membership.new_count) == (5, 3, 4)
    assert (order.pairs, order.b, order.c) == (5, 1, 2)
    assert paired.gate.regressions == 2
    assert paired.gate.outcomes == [
        "ordered_extraction: membership",
        "ordered_extraction: order",
    ]


def test_the_gate_fails_on_a_significant_regression_only_unless_strict() -> None:
    base = [stage(i, "pass") for i in range(12)]
    significant = pair_runs(base, [stage(i, "generation") for i in range(12)]).gate
    slight = pair_runs(
        base, [stage(0, "generation"), *(stage(i, "pass") for i in range(1, 12))]
    ).gate
    none = pair_runs(base, base).gate

    assert significant.significant == ["stage_diagnosis: pass"]
    assert (significant.fails, significant.fails_strict) == (True, True)
    assert significant.regressions == 12
    assert (slight.regressions, slight.fails, slight.fails_strict) == (1, False, True)
    assert (none.regressions, none.fails, none.fails_strict) == (0, False, False)


def test_a_significant_gain_in_retrieval_failures_does_not_gate() -> None:
    base = [stage(i, "generation") for i in range(10)]
    new = [stage(i, "retrieval") for i in range(10)]
    paired = pair_runs(base, new)

    assert paired.stage_diagnosis[0].tests[1].verdict is Verdict.WORSE
    assert not paired.gate.fails and not paired.gate.fails_strict


def test_scores_are_paired_by_name() -> None:
    base = [stage("a", "pass"), stage("a", "pass", score="stage_diagnosis1")]
    new = [
        stage("a", "generation"),
        extraction("a", "pass"),
        extraction("b", "pass"),
    ]
    paired = pair_runs(base, new)

    # A score NEW lacks is compared too: each of its results is lost.
    common, lost = paired.stage_diagnosis
    assert (common.score, common.pairs, common.lost) == ("stage_diagnosis", 1, 0)
    assert (lost.score, lost.pairs, lost.lost) == ("stage_diagnosis1", 0, 1)
    assert lost.lost_from == [LostCount("pass", NOT_IN_NEW, 1)]
    assert paired.ordered_extraction == []
    assert paired.scores_only_in_base == {"stage_diagnosis1": 1}
    assert paired.scores_only_in_new == {"ordered_extraction": 2}
    assert paired.gate.lost_results == [
        "stage_diagnosis1: lost 1 (1 pass \u2192 not in NEW)"
    ]


def test_no_common_score_is_refused_naming_both() -> None:
    with pytest.raises(
        NothingInCommon,
        match=r"BASE has 'stage_diagnosis', NEW has 'ordered_extraction'",
    ):
        pair_runs([stage("a", "pass")], [extraction("a", "pass")])


def test_no_common_sample_is_refused() -> None:
    with pytest.raises(NothingInCommon, match="1 in BASE only, 2 in NEW only"):
        pair_runs([stage("a", "pass")], [stage("b", "pass"), stage("c", "pass")])


@pytest.mark.parametrize("side", ["BASE", "NEW"])
def test_a_sample_scored_twice_in_one_run_is_refused(side: str) -> None:
    twice = [stage("a", "pass", log="1.eval"), stage("a", "pass", log="2.eval")]
    once = [stage("a", "pass")]
    base, new = (twice, once) if side == "BASE" else (once, twice)

    with pytest.raises(
        DuplicateRun,
        match=rf'^{side}: sample "a" epoch 1 has two "stage_diagnosis" scores, '
        r"in '1\.eval' and again in '2\.eval'",
    ):
        pair_runs(base, new)


def test_an_unknown_state_is_refused_and_quoted() -> None:
    with pytest.raises(UnknownKind, match="no stage_diagnosis state 'passed'"):
        stage("a", "passed")
