"""Pairing two runs' scores sample by sample, and what changed between them.

Pure: it sees `Observation`s and knows nothing of Inspect; the rules are
docs/compare.md's. Changed pairs go to `SortedSpool`s, so memory is flat.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from ..core.errors import quote
from ..report.runs import AllRuns, ExactSum, Undiagnosed, undiagnosed
from .spool import SortedSpool
from .stats import (
    DEFAULT_ALPHA,
    FigureTest,
    PairedTest,
    Verdict,
    figure_test,
    paired_test,
)

STAGE: Final = "stage_diagnosis"
EXTRACTION: Final = "ordered_extraction"
KINDS: Final = (STAGE, EXTRACTION)

DATA_ERROR: Final = "data error"
NO_SCORE: Final = "no score"
DIAGNOSED: Final = ("retrieval", "generation", "pass", "unresolved")
GRADED: Final = ("pass", "order fail", "membership fail")
STATES: Final = {
    STAGE: (*DIAGNOSED, DATA_ERROR, NO_SCORE),
    EXTRACTION: (*GRADED, DATA_ERROR, NO_SCORE),
}
RESULTS: Final = {STAGE: DIAGNOSED, EXTRACTION: GRADED}
"""The states that are a result: a stage, a grade."""
NOT_IN_NEW: Final = "not in NEW"
"""The NEW side of a lost run that NEW does not hold at all."""
FIGURES_OVER_ALL_RUNS: Final = {
    STAGE: ("pass", "context_recall", "context_precision"),
    EXTRACTION: ("membership", "order"),
}
REGRESSED_TO: Final = ("retrieval", "generation")
FIGURES: Final = ("recall", "precision")
"""The per-run figures of a stage score compared pair by pair."""
PASS_GATE: Final = "pass"
"""The default gate: the outcomes a regression is defined on."""
GATES: Final = {"context_recall": "recall", "context_precision": "precision"}
"""Gate names of the figures; a step's recall is gated by its own name."""

SampleId = int | str
SampleKey = tuple[SampleId, int]


class CompareError(ValueError):
    """Two runs that cannot be compared; the message says why."""


class UnknownKind(CompareError):
    """A score kind or state that is not tracegrade's."""


class DuplicateRun(CompareError):
    """A sample-epoch scored twice under one score name in one run."""


class NothingInCommon(CompareError):
    """No score name, or no sample-epoch, in both runs."""


@dataclass(frozen=True, slots=True)
class Run:
    """One sample-epoch's outcome under one score, as read from `log`. BASE's
    runs are held, one per sample-epoch: a field more is megabytes more at a
    million runs."""

    state: str
    missing: tuple[str, ...] | None = None
    explanation: str | None = None
    log: str = ""
    recall: float | None = None
    precision: float | None = None
    step_recall: tuple[tuple[str, float], ...] | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """A run of `sample_id`, `epoch` under the score `score` of kind `kind`;
    `why` says why a run has no result, counted as read, not held."""

    score: str
    kind: str
    sample_id: SampleId
    epoch: int
    run: Run
    why: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in STATES:
            raise UnknownKind(f"no tracegrade scorer {self.kind!r}; there are {KINDS}")
        if self.run.state not in STATES[self.kind]:
            raise UnknownKind(
                f"no {self.kind} state {self.run.state!r}; there are "
                f"{STATES[self.kind]}"
            )


@dataclass(frozen=True)
class SampleRef:
    """A sample-epoch present in one run only, and the log that holds it."""

    id: SampleId
    epoch: int
    log: str


@dataclass(frozen=True)
class Side:
    """One run's side of a changed pair."""

    state: str
    missing: list[str] | None
    explanation: str | None
    log: str


@dataclass(frozen=True)
class Change:
    """A pair whose outcome changed, with both runs' reasons."""

    id: SampleId
    epoch: int
    base: Side
    new: Side


@dataclass(frozen=True)
class IdCount:
    """An ID and the number of pairs it newly went missing (or was newly
    found) in."""

    id: str
    count: int


@dataclass(frozen=True)
class LostCount:
    """Lost runs of one kind: `count` runs in state `base` in BASE and
    `new` in NEW (`data error`, `no score`, or `not in NEW`)."""

    base: str
    new: str
    count: int


@dataclass(frozen=True)
class RunCount:
    """One side's runs of one score: all, those with a result, the rest by
    why, and the shares over all runs `--fail-under` checks."""

    runs: int
    diagnosed: int
    not_diagnosed: list[Undiagnosed]
    over_all_runs: dict[str, float | None]


@dataclass(frozen=True, kw_only=True)
class ScoreComparison:
    """What both kinds share: the pairs, the transition matrix (`states`
    BASE by NEW), the worse, better and lost pairs, each side's runs, the
    tests. The lists are `SortedSpool`s."""

    score: str
    kind: str
    pairs: int
    states: list[str]
    transitions: list[list[int]]
    worse: int
    better: int
    lost: int
    lost_from: list[LostCount]
    base_runs: RunCount
    new_runs: RunCount
    only_in_base: SortedSpool[SampleRef]
    only_in_new: SortedSpool[SampleRef]
    tests: list[PairedTest]
    lost_runs: SortedSpool[Change]


@dataclass(frozen=True, kw_only=True)
class StageComparison(ScoreComparison):
    """Stage diagnosis: the figures, regressions, fixes, and the document IDs
    newly missing and newly found over `ids_compared` pairs."""

    figures: list[FigureTest]
    regressions: SortedSpool[Change]
    fixes: SortedSpool[Change]
    ids_compared: int
    newly_missing: list[IdCount]
    newly_found: list[IdCount]


@dataclass(frozen=True, kw_only=True)
class ExtractionComparison(ScoreComparison):
    """Ordered extraction: the graded pairs that lost or gained each
    criterion."""

    lost_membership: SortedSpool[Change]
    gained_membership: SortedSpool[Change]
    lost_order: SortedSpool[Change]
    gained_order: SortedSpool[Change]


@dataclass(frozen=True)
class Gate:
    """What `--fail-on-regression` decides on: `fails` the default gate (a
    significant regression, or a lost result gated), `fails_strict` the
    `--strict` one (docs/compare.md, "What the gate counts")."""

    alpha: float
    outcomes: list[str]
    regressions: int
    regressed: list[str]
    significant: list[str]
    lost: int
    lost_results: list[str]
    failed_evals: list[str]
    missing_evals: list[str]
    lost_gated: bool
    fails: bool
    fails_strict: bool


def gate_name(figure: FigureTest) -> str:
    """The name a gate gives `figure`: `context_recall`, `retriever_recall`."""
    return next(
        (name for name, f in GATES.items() if f == figure.figure), figure.figure
    )


def gate_names(compared: StageComparison) -> list[str]:
    """The figures of `compared` a gate can name: those some pair had in
    BASE (context recall first, then each step's recall)."""
    return [gate_name(f) for f in compared.figures if f.pairs or f.lost]


@dataclass(frozen=True)
class Paired:
    """Every score compared, and the score names found in one run only
    with their number of runs."""

    stage_diagnosis: list[StageComparison]
    ordered_extraction: list[ExtractionComparison]
    scores_only_in_base: dict[str, int]
    scores_only_in_new: dict[str, int]
    gate: Gate


@dataclass(frozen=True)
class _Outcome:
    """A binary outcome tested on the pairs in its population."""

    name: str
    has: tuple[str, ...]
    population: tuple[str, ...]
    higher_is_better: bool
    gates: bool


# The gate tests the outcomes a regression is defined on; a rise in
# retrieval failures among runs that failed anyway is reported, not gated.
_OUTCOMES: Final = {
    STAGE: (
        _Outcome("pass", ("pass",), DIAGNOSED, True, True),
        _Outcome("retrieval failure", ("retrieval",), DIAGNOSED, False, False),
    ),
    EXTRACTION: (
        _Outcome("membership", ("pass", "order fail"), GRADED, True, True),
        _Outcome("order", ("pass",), GRADED, True, True),
    ),
}

_Pair = tuple[SampleKey, Run, Run]


def change_spool() -> SortedSpool[Change]:
    """An empty list of changed pairs, by sample id and epoch."""
    return SortedSpool(asdict, _decode_change)


def ref_spool() -> SortedSpool[SampleRef]:
    """An empty list of sample-epochs in one run only."""
    return SortedSpool(asdict, lambda data: SampleRef(**data))


def _decode_change(data: dict[str, Any]) -> Change:
    return Change(data["id"], data["epoch"], Side(**data["base"]), Side(**data["new"]))


def _add_change(spool: SortedSpool[Change], pair: _Pair) -> None:
    key, base_run, new_run = pair
    spool.add(_key_order(key), Change(key[0], key[1], _side(base_run), _side(new_run)))


def _add_ref(spool: SortedSpool[SampleRef], ref: SampleRef) -> None:
    spool.add(_key_order((ref.id, ref.epoch)), ref)


@dataclass
class _OutcomeTally:
    """The 2x2 table of one outcome and its discordant pairs; `by_sample`,
    kept with several epochs, each sample's NEW minus BASE count."""

    outcome: _Outcome
    by_sample: dict[SampleId, int] | None = None
    listed: bool = False
    pairs: int = 0
    base: int = 0
    new: int = 0
    b: int = 0
    c: int = 0
    lost: SortedSpool[Change] = field(default_factory=change_spool)
    gained: SortedSpool[Change] = field(default_factory=change_spool)

    def add(self, pair: _Pair) -> int:
        """Count the pair; -1 if it lost the outcome, 1 if it gained it."""
        key, base_run, new_run = pair
        population = self.outcome.population
        if base_run.state not in population or new_run.state not in population:
            return 0
        in_base = base_run.state in self.outcome.has
        in_new = new_run.state in self.outcome.has
        self.pairs += 1
        self.base += in_base
        self.new += in_new
        if self.by_sample is not None:
            sample = key[0]
            self.by_sample[sample] = self.by_sample.get(sample, 0) + in_new - in_base
        if in_base and not in_new:
            self.b += 1
            if self.listed:
                _add_change(self.lost, pair)
            return -1
        if in_new and not in_base:
            self.c += 1
            if self.listed:
                _add_change(self.gained, pair)
            return 1
        return 0

    def test(self, alpha: float) -> PairedTest:
        clusters = self.by_sample
        return paired_test(
            self.outcome.name,
            pairs=self.pairs,
            base_count=self.base,
            new_count=self.new,
            b=self.b,
            c=self.c,
            alpha=alpha,
            higher_is_better=self.outcome.higher_is_better,
            samples=None if clusters is None else len(clusters),
            fell=None if clusters is None else sum(d < 0 for d in clusters.values()),
            rose=None if clusters is None else sum(d > 0 for d in clusters.values()),
        )


@lru_cache(maxsize=1 << 12)
def _share(value: float) -> Fraction:
    """The share of two integers that `value` is the double of, exactly
    (denominators below 2**24), so that moves that cancel do cancel."""
    return Fraction(value).limit_denominator(1 << 24)


def _step_share(run: Run, step: str) -> float | None:
    for name, share in run.step_recall or ():
        if name == step:
            return share
    return None


@dataclass
class _FigureTally:
    """One figure over the pairs that have it on both sides: each side's
    exact sum, and the samples that fell or rose (exact fractions with
    several epochs)."""

    figure: str
    by_sample: dict[SampleId, Fraction] | None = None
    step: str | None = None
    pairs: int = 0
    fell: int = 0
    rose: int = 0
    lost: int = 0
    base_sum: ExactSum = field(default_factory=ExactSum)
    new_sum: ExactSum = field(default_factory=ExactSum)

    def add(self, pair: _Pair) -> None:
        key, base_run, new_run = pair
        if self.step is None:
            base = getattr(base_run, self.figure)
            new = getattr(new_run, self.figure)
        else:
            base = _step_share(base_run, self.step)
            new = _step_share(new_run, self.step)
        if base is not None and new is None and new_run.state in DIAGNOSED:
            # A run that lost its result is lost already, as a run.
            self.lost += 1
        if base is None or new is None:
            return
        self.pairs += 1
        self.base_sum.add(base)
        self.new_sum.add(new)
        if self.by_sample is None:
            self.fell += new < base
            self.rose += new > base
            return
        sample = key[0]
        moved = _share(new) - _share(base)
        self.by_sample[sample] = self.by_sample.get(sample, Fraction(0)) + moved

    def test(self, alpha: float) -> FigureTest:
        fell, rose, samples = self.fell, self.rose, self.pairs
        if self.by_sample is not None:
            samples = len(self.by_sample)
            fell = sum(moved < 0 for moved in self.by_sample.values())
            rose = sum(moved > 0 for moved in self.by_sample.values())
        return figure_test(
            self.figure,
            pairs=self.pairs,
            samples=samples,
            base_mean=self.base_sum.mean(self.pairs),
            new_mean=self.new_sum.mean(self.pairs),
            fell=fell,
            rose=rose,
            alpha=alpha,
            lost=self.lost,
        )


def count_run(counted: AllRuns, observation: Observation) -> None:
    """Count one run among its side's runs of its score."""
    kind, run = observation.kind, observation.run
    state = run.state
    if kind == STAGE:
        outcomes: tuple[str, ...] = ("pass",) if state == "pass" else ()
    elif state == "pass":
        outcomes = ("membership", "order")
    else:
        outcomes = ("membership",) if state == "order fail" else ()
    counted.add(
        state in RESULTS[kind], observation.why, outcomes, run.recall, run.precision
    )


def run_count(counted: AllRuns, kind: str) -> RunCount:
    return RunCount(
        runs=counted.runs,
        diagnosed=counted.diagnosed,
        not_diagnosed=undiagnosed(counted.why),
        over_all_runs=counted.figures(FIGURES_OVER_ALL_RUNS[kind]),
    )


@dataclass
class _ScoreTally:
    """Everything counted for one score name while NEW is read; nothing
    that grows with the changed pairs is held (see `SortedSpool`)."""

    kind: str
    clustered: bool
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)
    only_in_new: SortedSpool[SampleRef] = field(default_factory=ref_spool)
    regressions: SortedSpool[Change] = field(default_factory=change_spool)
    fixes: SortedSpool[Change] = field(default_factory=change_spool)
    lost_runs: SortedSpool[Change] = field(default_factory=change_spool)
    lost_from: Counter[tuple[str, str]] = field(default_factory=Counter)
    new_runs: AllRuns = field(default_factory=AllRuns)
    worse: int = 0
    better: int = 0
    ids_compared: int = 0
    newly_missing: Counter[str] = field(default_factory=Counter)
    newly_found: Counter[str] = field(default_factory=Counter)
    outcomes: list[_OutcomeTally] = field(default_factory=list)
    figures: list[_FigureTally] = field(default_factory=list)
    step_figures: dict[str, _FigureTally] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.outcomes = [
            _OutcomeTally(
                outcome, {} if self.clustered else None, listed=self.kind != STAGE
            )
            for outcome in _OUTCOMES[self.kind]
        ]
        if self.kind == STAGE:
            self.figures = [
                _FigureTally(figure, {} if self.clustered else None)
                for figure in FIGURES
            ]

    def add(self, pair: _Pair) -> None:
        _, base_run, new_run = pair
        self.transitions[base_run.state, new_run.state] += 1
        results = RESULTS[self.kind]
        if base_run.state in results and new_run.state not in results:
            self.lost_from[base_run.state, new_run.state] += 1
            _add_change(self.lost_runs, pair)
        moves = [outcome.add(pair) for outcome in self.outcomes]
        if self.kind != STAGE:
            # A pair that lost (or gained) membership, order or both.
            self.worse += -1 in moves
            self.better += 1 in moves
            return
        for figure in self.figures:
            figure.add(pair)
        if base_run.step_recall is not None:
            self._add_steps(pair)
        if base_run.state == "pass" and new_run.state in REGRESSED_TO:
            self.worse += 1
            _add_change(self.regressions, pair)
        elif new_run.state == "pass" and base_run.state != "pass":
            self.better += 1
            _add_change(self.fixes, pair)
        if base_run.missing is not None and new_run.missing is not None:
            self.ids_compared += 1
            base_missing, new_missing = set(base_run.missing), set(new_run.missing)
            self.newly_missing.update(new_missing - base_missing)
            self.newly_found.update(base_missing - new_missing)

    def _add_steps(self, pair: _Pair) -> None:
        """Pair each step's recall; a step is compared from the first pair
        whose BASE run has it, after the figures of the score itself, in
        the order steps first appear."""
        _, base_run, _ = pair
        assert base_run.step_recall is not None
        for name, _ in base_run.step_recall:
            if name not in self.step_figures:
                tally = _FigureTally(
                    f"{name}_recall", {} if self.clustered else None, step=name
                )
                self.step_figures[name] = tally
                self.figures.append(tally)
                tally.add(pair)


def pair_runs(
    base: Iterable[Observation],
    new: Iterable[Observation],
    *,
    alpha: float = DEFAULT_ALPHA,
    clustered: bool = False,
    new_epochs: int | None = None,
    new_complete: bool = True,
    gate_lost: bool = True,
    gates: Iterable[str] = (PASS_GATE,),
) -> Paired:
    """Pair BASE's observations (held) with NEW's (consumed as they come) and
    compare every common score (docs/compare.md). Raises `DuplicateRun`, and
    `NothingInCommon` when NEW is complete and shares no score or sample."""
    base_runs, base_counted, kinds = _held(base)
    tallies, new_seen, only_in_new_scores = _paired(new, base_runs, clustered)
    only_in_base_scores = {
        score: len(runs) for score, runs in base_runs.items() if score not in tallies
    }
    if not tallies and new_complete:
        raise NothingInCommon(
            "no tracegrade score is in both runs: BASE has "
            f"{_names(base_runs)}, NEW has {_names(only_in_new_scores)}"
        )
    for score in only_in_base_scores:
        # NEW lacks the score: every BASE run of it with a result is lost.
        tallies[score] = _ScoreTally(kinds[score], clustered)
    stage: list[StageComparison] = []
    extraction: list[ExtractionComparison] = []
    for score in sorted(tallies):
        tally = tallies[score]
        only_in_base = _not_in_new(
            tally, base_runs[score], new_seen.get(score, {}), new_epochs
        )
        compared = _compared(score, tally, only_in_base, base_counted[score], alpha)
        if isinstance(compared, StageComparison):
            stage.append(compared)
        else:
            extraction.append(compared)
    if new_complete and not any(c.pairs for c in [*stage, *extraction]):
        counts = "; ".join(
            f"{c.score}: {len(c.only_in_base)} in BASE only, "
            f"{len(c.only_in_new)} in NEW only"
            for c in [*stage, *extraction]
        )
        raise NothingInCommon(
            f"no sample-epoch (sample id and epoch) is in both runs ({counts}); "
            "are they runs of the same dataset?"
        )
    return Paired(
        stage_diagnosis=stage,
        ordered_extraction=extraction,
        scores_only_in_base=dict(sorted(only_in_base_scores.items())),
        scores_only_in_new=dict(sorted(only_in_new_scores.items())),
        gate=_gate(stage, extraction, alpha, gate_lost=gate_lost, gates=gates),
    )


def _held(
    base: Iterable[Observation],
) -> tuple[dict[str, dict[SampleKey, Run]], dict[str, AllRuns], dict[str, str]]:
    """BASE's runs by score and sample-epoch, each score's runs counted, and
    its kind."""
    runs_by_score: dict[str, dict[SampleKey, Run]] = {}
    counted: dict[str, AllRuns] = {}
    kinds: dict[str, str] = {}
    for observation in base:
        runs = runs_by_score.setdefault(observation.score, {})
        kinds[observation.score] = observation.kind
        count_run(counted.setdefault(observation.score, AllRuns()), observation)
        key = (observation.sample_id, observation.epoch)
        if key in runs:
            raise _duplicate("BASE", observation, runs[key].log)
        runs[key] = observation.run
    return runs_by_score, counted, kinds


def _paired(
    new: Iterable[Observation],
    base_runs: dict[str, dict[SampleKey, Run]],
    clustered: bool,
) -> tuple[dict[str, _ScoreTally], dict[str, dict[SampleKey, str]], Counter[str]]:
    """NEW's runs counted as they come, each paired with BASE's: the tally of
    each score, the sample-epochs seen (with their logs), and the runs of
    the scores BASE lacks."""
    tallies: dict[str, _ScoreTally] = {}
    seen_by_score: dict[str, dict[SampleKey, str]] = {}
    only_in_new: Counter[str] = Counter()
    for observation in new:
        key = (observation.sample_id, observation.epoch)
        seen = seen_by_score.setdefault(observation.score, {})
        if key in seen:
            raise _duplicate("NEW", observation, seen[key])
        seen[key] = observation.run.log
        paired_with = base_runs.get(observation.score)
        if paired_with is None:
            only_in_new[observation.score] += 1
            continue
        tally = tallies.get(observation.score)
        if tally is None:
            tally = tallies[observation.score] = _ScoreTally(
                observation.kind, clustered
            )
        count_run(tally.new_runs, observation)
        base_run = paired_with.get(key)
        if base_run is None:
            _add_ref(tally.only_in_new, SampleRef(*key, observation.run.log))
        else:
            tally.add((key, base_run, observation.run))
    return tallies, seen_by_score, only_in_new


def _not_in_new(
    tally: _ScoreTally,
    base_runs: dict[SampleKey, Run],
    seen: dict[SampleKey, str],
    new_epochs: int | None,
) -> SortedSpool[SampleRef]:
    """BASE's runs NEW does not hold; those with a result, of an epoch NEW
    ran, are lost."""
    only_in_base = ref_spool()
    for key, run in base_runs.items():
        if key in seen:
            continue
        _add_ref(only_in_base, SampleRef(*key, run.log))
        asked = new_epochs is None or key[1] <= new_epochs
        if asked and run.state in RESULTS[tally.kind]:
            tally.lost_from[run.state, NOT_IN_NEW] += 1
            missing = Side(NOT_IN_NEW, None, None, "")
            change = Change(key[0], key[1], _side(run), missing)
            tally.lost_runs.add(_key_order(key), change)
    return only_in_base


def _duplicate(side: str, observation: Observation, first_log: str) -> DuplicateRun:
    where = (
        f"in {first_log!r} and again in {observation.run.log!r}"
        if first_log != observation.run.log
        else f"twice in {first_log!r}"
    )
    return DuplicateRun(
        f"{side}: sample {quote(observation.sample_id)} epoch {observation.epoch} has "
        f"two {quote(observation.score)} scores, {where}; compare one run with one "
        "run (the parts of a split run hold each sample once)"
    )


def _names(scores: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in sorted(scores)) or "none"


def _key_order(key: SampleKey) -> tuple[int, int, str, int]:
    """Integer ids in numeric order, then string ids; then epoch."""
    sample_id, epoch = key
    if isinstance(sample_id, int):
        return (0, sample_id, "", epoch)
    return (1, 0, sample_id, epoch)


def _side(run: Run) -> Side:
    missing = None if run.missing is None else list(run.missing)
    return Side(run.state, missing, run.explanation, run.log)


def _ranked(counter: Counter[str]) -> list[IdCount]:
    """Most frequent first; ties in code point order, so the list is stable."""
    ordered = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    return [IdCount(document_id, count) for document_id, count in ordered]


def _lost_from(counts: Counter[tuple[str, str]]) -> list[LostCount]:
    """Most first; ties by states, so the list is stable."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [LostCount(base, new, count) for (base, new), count in ordered]


def lost_text(lost: list[LostCount]) -> str:
    """ "13 (12 pass → data error, 1 generation → no score)"."""
    total = sum(item.count for item in lost)
    kinds = ", ".join(f"{i.count} {i.base} \u2192 {i.new}" for i in lost)
    return f"{total} ({kinds})" if total else "0"


def _compared(
    score: str,
    tally: _ScoreTally,
    only_in_base: SortedSpool[SampleRef],
    base_counted: AllRuns,
    alpha: float,
) -> StageComparison | ExtractionComparison:
    states = list(STATES[tally.kind])
    pairs = sum(tally.transitions.values())
    transitions = [
        [tally.transitions[row, column] for column in states] for row in states
    ]
    common: dict[str, Any] = {
        "score": score,
        "kind": tally.kind,
        "pairs": pairs,
        "states": states,
        "transitions": transitions,
        "worse": tally.worse,
        "better": tally.better,
        "lost": sum(tally.lost_from.values()),
        "lost_from": _lost_from(tally.lost_from),
        "base_runs": run_count(base_counted, tally.kind),
        "new_runs": run_count(tally.new_runs, tally.kind),
        "only_in_base": only_in_base,
        "only_in_new": tally.only_in_new,
        "tests": [outcome.test(alpha) for outcome in tally.outcomes],
        "lost_runs": tally.lost_runs,
    }
    if tally.kind == STAGE:
        return StageComparison(
            **common,
            figures=[figure.test(alpha) for figure in tally.figures],
            regressions=tally.regressions,
            fixes=tally.fixes,
            ids_compared=tally.ids_compared,
            newly_missing=_ranked(tally.newly_missing),
            newly_found=_ranked(tally.newly_found),
        )
    membership, order = tally.outcomes
    return ExtractionComparison(
        **common,
        lost_membership=membership.lost,
        gained_membership=membership.gained,
        lost_order=order.lost,
        gained_order=order.gained,
    )


def _gate(
    stage: list[StageComparison],
    extraction: list[ExtractionComparison],
    alpha: float,
    *,
    gate_lost: bool,
    gates: Iterable[str] = (PASS_GATE,),
) -> Gate:
    asked = set(gates)
    compared: list[StageComparison | ExtractionComparison] = [*stage, *extraction]
    # Each gated test, named `score: measure`, and whether it says worse.
    tests = [
        (f"{c.score}: {test.outcome}", test.worse)
        for c in compared
        if PASS_GATE in asked
        for test, outcome in zip(c.tests, _OUTCOMES[c.kind], strict=True)
        if outcome.gates
    ]
    figures = [
        (f"{c.score}: {gate_name(f)}", f)
        for c in stage
        for f in c.figures
        if gate_name(f) in asked
    ]
    tests += [(name, f.verdict is Verdict.WORSE) for name, f in figures]
    regressions = sum(c.worse for c in compared)
    lost = sum(c.lost for c in compared) + sum(f.lost for _, f in figures)
    significant = [name for name, worse in tests if worse]
    return Gate(
        alpha=alpha,
        outcomes=[name for name, _ in tests],
        regressions=regressions,
        regressed=[
            f"{c.score}: {c.worse} regression{'s' if c.worse != 1 else ''}"
            for c in compared
            if c.worse
        ],
        significant=significant,
        lost=lost,
        lost_results=[
            f"{c.score}: lost {lost_text(c.lost_from)}" for c in compared if c.lost
        ]
        + [
            f"{name} lost in {f.lost} pair{'s' if f.lost != 1 else ''} (a result "
            "in NEW without it)"
            for name, f in figures
            if f.lost
        ],
        failed_evals=[],
        missing_evals=[],
        lost_gated=gate_lost,
        fails=bool(significant) or (gate_lost and lost > 0),
        fails_strict=bool(significant) or (gate_lost and lost > 0) or regressions > 0,
    )


__all__ = [
    "DATA_ERROR",
    "DIAGNOSED",
    "EXTRACTION",
    "FIGURES",
    "GATES",
    "GRADED",
    "KINDS",
    "NOT_IN_NEW",
    "NO_SCORE",
    "PASS_GATE",
    "RESULTS",
    "STAGE",
    "STATES",
    "Change",
    "CompareError",
    "DuplicateRun",
    "ExtractionComparison",
    "Gate",
    "IdCount",
    "LostCount",
    "NothingInCommon",
    "Observation",
    "Paired",
    "Run",
    "RunCount",
    "SampleRef",
    "ScoreComparison",
    "Side",
    "StageComparison",
    "UnknownKind",
    "count_run",
    "gate_name",
    "gate_names",
    "lost_text",
    "pair_runs",
    "run_count",
]
