"""Epochs are clusters: `tracegrade compare` keeps its false-positive rate.

Pairing sample-epochs as if they were independent turns four changed
questions run for three epochs into twelve changed "pairs": p = 0.125
becomes 0.00049 and the gate fails, though no information was added. The
sample is the unit: these tests show it on real logs of that case, and
by simulation under the null, with epochs that mostly agree.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from click.testing import CliRunner
from inspect_ai import eval, task_with

from tests.support import write_lines
from tests.test_compare_pairing import paired, stage
from tracegrade import stage_diagnosis
from tracegrade.cli import main
from tracegrade.compare.pairing import Observation

OK = {"required": ["D1"], "context": ["D1"], "correct": True}
WRONG = {"required": ["D1"], "context": ["D1"], "correct": False}
QUESTIONS = [f"q{index:02d}" for index in range(1, 11)]
CHANGED = QUESTIONS[:4]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], str]:
    """BASE passes every question; NEW fails the same four, in every epoch
    (a replay answers alike each time). Each run with 1 and 3 epochs."""
    directory = tmp_path_factory.mktemp("clusters")
    files = {
        "base": {question: OK for question in QUESTIONS},
        "new": {q: WRONG if q in CHANGED else OK for q in QUESTIONS},
    }
    tasks = {}
    for name, cases in files.items():
        dataset = write_lines(
            directory / f"{name}.jsonl",
            [{"id": q, "input": record} for q, record in cases.items()],
        )
        for epochs in (1, 3):
            tasks[name, epochs] = task_with(
                stage_diagnosis(dataset=dataset), epochs=epochs
            )
    # One eval of the four runs, each task with its own epochs; Inspect
    # returns their logs in the order of the tasks.
    # Nothing watches these evals live: the buffer of each sample's events
    # that `inspect view` reads while one runs would be cost alone.
    evaluated = eval(
        list(tasks.values()),
        display="none",
        log_dir=str(directory),
        log_realtime=False,
    )
    logs = {}
    for key, log in zip(tasks, evaluated, strict=True):
        assert log.status == "success", log.error
        assert log.eval.config.epochs == key[1]
        logs[key] = log.location
    return logs


@pytest.mark.parametrize("epochs", [1, 3])
def test_more_epochs_of_the_same_answers_add_no_significance(
    runs: dict[tuple[str, int], str], epochs: int
) -> None:
    result = CliRunner().invoke(
        main,
        [
            "compare",
            runs["base", epochs],
            runs["new", epochs],
            "--json",
            "--fail-on-regression",
        ],
    )

    assert result.exit_code == 0, result.output
    (pair,) = json.loads(result.stdout)["pairs"]
    passed: dict[str, Any] = pair["stage_diagnosis"][0]["tests"][0]
    assert (passed["b"], passed["c"]) == (4 * epochs, 0)
    assert (passed["samples"], passed["fell"], passed["rose"]) == (10, 4, 0)
    assert passed["p_value"] == 0.125
    assert passed["verdict"] == "too few to tell"
    if epochs == 1:
        assert passed["test"] == "exact McNemar test"
    else:
        assert passed["test"] == "exact sign test on per-sample differences"
        assert "of 10 samples (30 paired epochs), 4 had pass" in passed["note"]


def simulated_side(
    rng: random.Random, chances: list[float], epochs: int, agreeing: float, log: str
) -> list[Observation]:
    """One run under the null: each sample passes with its own chance, and
    with probability `agreeing` all its epochs take one draw (a question the
    model reliably gets or misses), else each epoch its own."""
    observations = []
    for index, chance in enumerate(chances):
        shared = rng.random() < chance
        together = rng.random() < agreeing
        for epoch in range(1, epochs + 1):
            passed = shared if together else rng.random() < chance
            state = "pass" if passed else "generation"
            observations.append(stage(f"s{index}", state, epoch, log=log))
    return observations


def false_positive_rates(clustered: bool, comparisons: int) -> tuple[float, float]:
    """Under the null: the share of comparisons whose pass test is
    significant, and of those whose gate fails (significantly worse)."""
    significant = failed = 0
    for seed in range(comparisons):
        rng = random.Random(seed)
        chances = [rng.uniform(0.05, 0.95) for _ in range(30)]
        base = simulated_side(rng, chances, epochs=3, agreeing=0.9, log="base")
        new = simulated_side(rng, chances, epochs=3, agreeing=0.9, log="new")
        pair = paired(base, new, clustered=clustered)
        significant += pair["stage_diagnosis"][0]["tests"][0]["significant"]
        failed += pair["gate"]["fails"]
    return significant / comparisons, failed / comparisons


def test_the_sample_as_the_unit_holds_the_false_positive_rate() -> None:
    """Under the null, 1,000 comparisons of 30 samples by 3 strongly
    correlated epochs: at alpha = 0.05 at most 6% are significant. The
    test is two-sided and the gate fails on "worse" alone, one tail: at
    most alpha / 2 = 2.5% fail it (docs/compare.md), with this many
    comparisons' error allowed for."""
    significant, failed = false_positive_rates(clustered=True, comparisons=1_000)
    assert significant <= 0.06
    assert failed <= 0.035
    assert failed <= significant


def test_sample_epochs_as_independent_pairs_would_not() -> None:
    """The same simulation with every sample-epoch its own pair, as before
    epochs were clusters: the rate is several times alpha. Its first 300
    comparisons are enough to show it, the margin being that wide."""
    assert false_positive_rates(clustered=False, comparisons=300)[0] > 0.06
