"""Pairing runs and testing them, on runs made here (docs/compare.md): the
matrix, the lists, the exact tests, the figures, the gate, the refusals."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest

from tracegrade.compare.build import Comparison
from tracegrade.compare.pairing import CompareError, Observation, Run, gate, pair_runs
from tracegrade.compare.spool import InvalidChunk, Spools
from tracegrade.compare.stats import discordant_needed, p_value

STAGE, EXTRACTION = "stage_diagnosis", "ordered_extraction"
MISSING = {"retrieval": ("D1",), "generation": (), "pass": ()}


def stage(
    sample: int | str, state: str, epoch: int = 1, score: str = STAGE, **fields: Any
) -> Observation:
    """A run of `state`; `fields` are Run's: its log, its figures."""
    fields = {"log": "log"} | fields
    run = Run(state, MISSING.get(state), f"{state} because", **fields)
    return score, STAGE, sample, epoch, run, None


def extraction(sample: str, state: str) -> Observation:
    return EXTRACTION, EXTRACTION, sample, 1, Run(state, None, state, "x.eval"), None


def paired(
    base: list[Observation],
    new: list[Observation],
    *,
    clustered: bool = False,
    gates: tuple[str, ...] = ("pass",),
    gate_lost: bool = True,
) -> dict[str, Any]:
    """The pair's JSON, its lists read back, and its gate."""
    spools = Spools()
    try:
        options = dict(alpha=0.05, new_epochs=9, new_complete=True)
        pair = pair_runs(base, new, spools, clustered=clustered, **options)
        pair["gate"] = gate([pair], 0.05, gates, gate_lost)
        written = io.StringIO()
        Comparison(pair).write_json(written)
        return json.loads(written.getvalue())  # type: ignore[no-any-return]
    finally:
        spools.close()


def test_scores_pair_by_name_and_a_score_new_lacks_is_lost() -> None:
    base = [stage("a", "pass"), stage("a", "pass", score="stage_diagnosis1")]
    new = [stage("a", "generation"), extraction("a", "pass"), extraction("b", "pass")]
    result = paired(base, new)
    common, lost = result[STAGE]
    assert [common["pairs"], lost["pairs"], lost["lost"]] == [1, 0, 1]
    assert result["scores_only_in_base"] == {"stage_diagnosis1": 1}
    assert result["scores_only_in_new"] == {EXTRACTION: 2}
    said = "stage_diagnosis1: lost 1 (1 pass \u2192 not in NEW)"
    assert result["gate"]["lost_results"] == [said]


def test_a_sample_scored_twice_in_a_run_is_refused() -> None:
    twice = 'sample "a" epoch 1 has two "stage_diagnosis" scores, '
    with pytest.raises(CompareError, match=f"^BASE: {twice}in '1' and again in '2'"):
        paired([stage("a", "pass", log="1"), stage("a", "pass", log="2")], [])
    with pytest.raises(CompareError, match=f"^NEW: {twice}twice in 'log'"):
        paired([stage("a", "pass")], [stage("a", "pass")] * 2)


@pytest.mark.parametrize(
    ("alpha", "needed"),
    [(0.05, 6), (0.01, 8), (0.0625, 5), (0.0624, 6), (0.99, 2), (1e-320, 1065)],
)
def test_discordant_needed_is_the_exact_threshold(alpha: float, needed: int) -> None:
    assert discordant_needed(alpha) == needed
    assert p_value(0, needed) <= alpha < p_value(0, needed - 1)


def test_with_epochs_the_sample_is_the_unit() -> None:
    """Four samples lost in three epochs each are four moves, not twelve;
    a sample that lost one epoch and gained another did not move."""
    epochs = [(s, e) for s in range(10) for e in (1, 2, 3)]
    base = [stage(s, "pass", e) for s, e in epochs]
    new = [stage(s, "pass" if s > 3 else "generation", e) for s, e in epochs]
    base += [stage("a", "pass", 1), stage("a", "generation", 2)]
    new += [stage("a", "generation", 1), stage("a", "pass", 2)]
    passed = paired(base, new, clustered=True)[STAGE][0]["tests"][0]
    assert (passed["b"], passed["c"]) == (13, 1)
    assert (passed["samples"], passed["fell"], passed["rose"]) == (11, 4, 0)
    assert passed["p_value"] == 0.125 and passed["verdict"] == "too few to tell"
    assert passed["note"] == (
        "Too few to tell: of 11 samples (32 paired epochs), 4 had pass in fewer "
        "of their epochs in NEW and 0 in more (exact sign test, the sample as the "
        "unit: a sample's epochs are not independent evidence); even a 4 to 0 "
        "split would give p = 0.12 > alpha = 0.05, and at least 6 changed "
        "samples are needed."
    )


def test_a_sample_whose_epochs_cancel_out_did_not_move() -> None:
    """1/3 -> 1/2 and 1/6 -> 0 cancel, though as doubles they sum to 2.8e-17."""
    assert (0.5 - 1 / 3) + (0.0 - 1 / 6) != 0
    recalls = [("s", 1, 1 / 3, 0.5), ("s", 2, 1 / 6, 0.0), ("t", 1, 1.0, 0.5)]
    base = [stage(s, "pass", e, recall=before) for s, e, before, _ in recalls]
    new = [stage(s, "pass", e, recall=after) for s, e, _, after in recalls]
    recall = paired(base, new, clustered=True)[STAGE][0]["figures"][0]
    assert [recall[k] for k in ("pairs", "samples", "fell", "rose")] == [3, 2, 1, 0]


def test_a_step_new_no_longer_has_is_lost_to_its_gate() -> None:
    steps = (("retriever", 1.0),)
    base = [stage(n, "pass", step_recall=steps) for n in range(3)]
    new = [stage(n, "pass") for n in range(3)]
    assert not paired(base, new)["gate"]["fails"]
    gate = paired(base, new, gates=("retriever_recall",))["gate"]
    assert (gate["fails"], gate["lost"], gate["significant"]) == (True, 3, [])
    said = "retriever_recall lost in 3 pairs (a result in NEW without it)"
    assert gate["lost_results"] == [f"stage_diagnosis: {said}"]
    allowed = paired(base, new, gates=("retriever_recall",), gate_lost=False)
    assert not allowed["gate"]["fails"]


def test_a_long_list_reads_back_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past 30 items on disk, as a million would be: numbers, then texts."""
    monkeypatch.setenv("TRACEGRADE_COMPARE_CHUNK", "30")
    spools = Spools()
    spool = spools.new()
    ids: list[int | str] = [*range(100), "b", "a", "\ud800", -(2**70)]
    keys = [(sample, epoch) for sample in ids for epoch in (2, 1)]
    for sample, epoch in random.Random(1).sample(keys, len(keys)):
        spool.add(sample, epoch, {"id": sample, "epoch": epoch})
    read = [(item["id"], item["epoch"]) for item in spool]
    spools.close()
    texts = [(i, e) for i in ("a", "b", "\ud800") for e in (1, 2)]
    assert read == [*sorted(k for k in keys if isinstance(k[0], int)), *texts]


@pytest.mark.parametrize("given", ["0", "-1", "1.5", "", "²", "٣"])
def test_a_batch_size_not_a_positive_ascii_integer_is_refused(
    monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """'²' is a digit to `str.isdigit` and no number to `int`; '٣' is read as 3."""
    monkeypatch.setenv("TRACEGRADE_COMPARE_CHUNK", given)
    with pytest.raises(InvalidChunk) as refused:
        Spools()
    assert str(refused.value).endswith(f"positive integer, got {given!r}")


def simulated_side(rng: random.Random, chances: list[float]) -> list[Observation]:
    """One run of 3 epochs under the null: each sample passes with its own
    chance; 9 times in 10 all its epochs take one draw, else one each."""
    observations = []
    for index, chance in enumerate(chances):
        shared, together = rng.random() < chance, rng.random() < 0.9
        for epoch in (1, 2, 3):
            passed = shared if together else rng.random() < chance
            state = "pass" if passed else "generation"
            observations.append(stage(f"s{index}", state, epoch))
    return observations


def test_the_sample_as_the_unit_holds_the_false_positive_rate() -> None:
    """Under the null, 1,000 comparisons of 30 samples: at most 6%
    significant, and at most 2.5% (one tail) plus error fail the gate."""
    significant = failed = 0
    for seed in range(1_000):
        rng = random.Random(seed)
        chances = [rng.uniform(0.05, 0.95) for _ in range(30)]
        base, new = simulated_side(rng, chances), simulated_side(rng, chances)
        pair = paired(base, new, clustered=True)
        significant += pair["stage_diagnosis"][0]["tests"][0]["significant"]
        failed += pair["gate"]["fails"]
    assert significant <= 60 and failed <= 35 and failed <= significant
