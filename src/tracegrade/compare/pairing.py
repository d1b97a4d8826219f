"""Two runs paired by sample id and epoch, and what changed (docs/compare.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from ..core.errors import quote
from ..report.runs import AllRuns, plural, ranked, undiagnosed
from .spool import Spools
from .stats import Tally

STAGE: Final = "stage_diagnosis"
EXTRACTION: Final = "ordered_extraction"
DATA_ERROR: Final = "data error"
NO_SCORE: Final = "no score"
NOT_IN_NEW: Final = "not in NEW"
PASS_GATE: Final = "pass"
# The states that are a result: a stage, a grade.
RESULTS: Final = {
    STAGE: ("retrieval", "generation", "pass", "unresolved"),
    EXTRACTION: ("pass", "order fail", "membership fail"),
}
# Each outcome: the states that have it, and whether higher is better. A rise
# in retrieval failures among runs that failed anyway is reported, not gated.
_OUTCOMES: Final[dict[str, dict[str, tuple[tuple[str, ...], bool]]]] = {
    STAGE: {"pass": (("pass",), True), "retrieval failure": (("retrieval",), False)},
    EXTRACTION: {
        "membership": (("pass", "order fail"), True),
        "order": (("pass",), True),
    },
}
_UNGATED: Final = "retrieval failure"
_OVER_ALL_RUNS: Final = {
    STAGE: ("pass", "context_recall", "context_precision"),
    EXTRACTION: ("membership", "order"),
}
# The lists of changed pairs, besides lost runs.
LISTS: Final = {
    STAGE: ["regressions", "fixes"],
    EXTRACTION: ["lost_membership", "gained_membership", "lost_order", "gained_order"],
}
SampleKey = tuple[int | str, int]


class CompareError(ValueError):
    """Two runs that cannot be compared; the message says why."""


class NothingInCommon(CompareError):
    """No score name, or no sample-epoch, in both runs."""


@dataclass(frozen=True, slots=True)
class Run:
    """One sample-epoch under one score: BASE holds one per run."""

    state: str
    missing: tuple[str, ...] | None = None
    explanation: str | None = None
    log: str = ""
    recall: float | None = None
    precision: float | None = None
    step_recall: tuple[tuple[str, float], ...] | None = None

    def figure(self, name: str) -> float | None:
        if name in ("recall", "precision"):
            return self.recall if name == "recall" else self.precision
        return dict(self.step_recall or ()).get(name.removesuffix("_recall"))


# One run: score name, kind, sample id, epoch, run, why it has no result.
Observation = tuple[str, str, int | str, int, Run, str | None]


def gate_name(figure: str) -> str:
    """`context_recall` for `recall`; a step's `retriever_recall` as it is."""
    return f"context_{figure}" if figure in ("recall", "precision") else figure


class _Score:
    """One score: BASE's runs held, NEW's counted as read, changed pairs listed."""

    def __init__(self, kind: str, clustered: bool, spools: Spools) -> None:
        self.kind, self.clustered, self.outcomes = kind, clustered, _OUTCOMES[kind]
        self.held: dict[SampleKey, Run] = {}
        self.base_runs, self.new_runs = AllRuns(), AllRuns()
        self.transitions: Counter[tuple[str, str]] = Counter()
        self.lost_from: Counter[tuple[str, str]] = Counter()
        self.newly_missing, self.newly_found = Counter[str](), Counter[str]()
        self.worse = self.better = self.ids_compared = 0
        lists = ["only_in_base", "only_in_new", "lost_runs", *LISTS[kind]]
        self.lists = {name: spools.new() for name in lists}
        # The outcomes, then (stage) context recall, precision and each step.
        names = [*self.outcomes, *(["recall", "precision"] if kind == STAGE else [])]
        self.tallies = {name: Tally(clustered) for name in names}

    def measure(self, run: Run, name: str) -> float | None:
        if name not in self.outcomes:
            return run.figure(name)
        if run.state not in RESULTS[self.kind]:
            return None
        return run.state in self.outcomes[name][0]

    def listed(self, name: str, key: SampleKey, base: Run, new: Run) -> None:
        if name == "lost_runs":
            self.lost_from[base.state, new.state] += 1
        keys = ("state", "missing", "explanation", "log")
        sides = [{k: getattr(run, k) for k in keys} for run in (base, new)]
        item = {"id": key[0], "epoch": key[1], "base": sides[0], "new": sides[1]}
        self.lists[name].add(*key, item)

    def add(self, key: SampleKey, base: Run, new: Run) -> None:
        self.transitions[base.state, new.state] += 1
        has = new.state in RESULTS[self.kind]
        if base.state in RESULTS[self.kind] and not has:
            self.listed("lost_runs", key, base, new)
        # A step is compared from the first pair whose BASE run has it.
        for step, _ in base.step_recall or ():
            self.tallies.setdefault(f"{step}_recall", Tally(self.clustered))
        moves = {}
        for name, tally in self.tallies.items():
            before, after = self.measure(base, name), self.measure(new, name)
            moves[name] = tally.add(key[0], before, after, has)
        if self.kind == EXTRACTION:
            # A pair that lost (or gained) membership, order or both.
            for name, move in moves.items():
                change = "lost" if move < 0 else "gained"
                if move:
                    self.listed(f"{change}_{name}", key, base, new)
            self.worse += any(move < 0 for move in moves.values())
            self.better += any(move > 0 for move in moves.values())
        elif base.state == "pass" and new.state in ("retrieval", "generation"):
            self.worse += 1
            self.listed("regressions", key, base, new)
        elif new.state == "pass" and base.state != "pass":
            self.better += 1
            self.listed("fixes", key, base, new)
        if base.missing is not None and new.missing is not None:
            self.ids_compared += 1
            self.newly_missing.update(set(new.missing) - set(base.missing))
            self.newly_found.update(set(base.missing) - set(new.missing))

    def compared(self, score: str, alpha: float) -> dict[str, Any]:
        tests, figures = [], []
        for name, tally in self.tallies.items():
            if name in self.outcomes:
                tests.append(tally.paired_test(name, self.outcomes[name][1], alpha))
            else:
                figures.append(tally.figure_test(name, alpha))
        states = (*RESULTS[self.kind], DATA_ERROR, NO_SCORE)
        lost_from = ranked(self.lost_from)
        result: dict[str, Any] = {
            "score": score,
            "kind": self.kind,
            "pairs": self.transitions.total(),
            "states": list(states),
            "transitions": [[self.transitions[r, c] for c in states] for r in states],
            "worse": self.worse,
            "better": self.better,
            "lost": self.lost_from.total(),
            "lost_from": [{"base": b, "new": n, "count": c} for (b, n), c in lost_from],
            "base_runs": _runs(self.base_runs, self.kind),
            "new_runs": _runs(self.new_runs, self.kind),
            "only_in_base": self.lists.pop("only_in_base"),
            "only_in_new": self.lists.pop("only_in_new"),
            "tests": tests,
            "lost_runs": self.lists.pop("lost_runs"),
        }
        if self.kind == EXTRACTION:
            return result | self.lists
        found = (ranked(ids) for ids in (self.newly_missing, self.newly_found))
        missing, found_again = ([{"id": i, "count": n} for i, n in f] for f in found)
        return result | {
            "figures": figures,
            **self.lists,
            "ids_compared": self.ids_compared,
            "newly_missing": missing,
            "newly_found": found_again,
        }


def _runs(counted: AllRuns, kind: str) -> dict[str, Any]:
    return {
        "runs": counted.runs,
        "diagnosed": counted.diagnosed,
        "not_diagnosed": [asdict(item) for item in undiagnosed(counted.why)],
        "over_all_runs": counted.figures(_OVER_ALL_RUNS[kind]),
    }


def _count(counted: AllRuns, kind: str, run: Run, why: str | None) -> None:
    outcomes = _OUTCOMES[kind].items()
    had = tuple(n for n, (has, _) in outcomes if run.state in has and n != _UNGATED)
    counted.add(run.state in RESULTS[kind], why, had, run.recall, run.precision)


def _duplicate(side: str, score: str, key: SampleKey, first: str, log: str) -> str:
    twice = (
        f"in {first!r} and again in {log!r}" if first != log else f"twice in {first!r}"
    )
    return (
        f"{side}: sample {quote(key[0])} epoch {key[1]} has two {quote(score)} "
        f"scores, {twice}; compare one run with one run (the parts of a split "
        "run hold each sample once)"
    )


def pair_runs(
    base: Iterable[Observation],
    new: Iterable[Observation],
    spools: Spools,
    *,
    alpha: float,
    clustered: bool,
    new_epochs: int,
    new_complete: bool,
) -> dict[str, Any]:
    """Pair BASE's runs (held) with NEW's (as they come) and compare each score;
    `NothingInCommon` when NEW is complete and shares no score or sample-epoch."""
    scores: dict[str, _Score] = {}
    for score, kind, sample_id, epoch, run, why in base:
        if score not in scores:
            scores[score] = _Score(kind, clustered, spools)
        held, key = scores[score].held, (sample_id, epoch)
        _count(scores[score].base_runs, kind, run, why)
        if key in held:
            raise CompareError(_duplicate("BASE", score, key, held[key].log, run.log))
        held[key] = run
    # Each NEW score's sample-epochs, and the log of each.
    seen: dict[str, dict[SampleKey, str]] = {}
    for score, kind, sample_id, epoch, run, why in new:
        key, logged = (sample_id, epoch), seen.setdefault(score, {})
        if key in logged:
            raise CompareError(_duplicate("NEW", score, key, logged[key], run.log))
        logged[key] = run.log
        if (tally := scores.get(score)) is None:
            continue
        _count(tally.new_runs, kind, run, why)
        if (base_run := tally.held.get(key)) is None:
            only = {"id": sample_id, "epoch": epoch, "log": run.log}
            tally.lists["only_in_new"].add(*key, only)
        else:
            tally.add(key, base_run, run)
    new_only = {score: len(seen[score]) for score in sorted(seen.keys() - scores)}
    if new_complete and not scores.keys() & seen.keys():
        names = [", ".join(map(repr, sorted(s))) or "none" for s in (scores, seen)]
        raise NothingInCommon(
            f"no tracegrade score is in both runs: BASE has {names[0]}, "
            f"NEW has {names[1]}"
        )
    compared: dict[str, list[dict[str, Any]]] = {STAGE: [], EXTRACTION: []}
    for score, tally in sorted(scores.items()):
        # NEW lacking the score: every BASE run of it with a result is lost.
        for key, run in tally.held.items():
            if key in seen.get(score, {}):
                continue
            only = {"id": key[0], "epoch": key[1], "log": run.log}
            tally.lists["only_in_base"].add(*key, only)
            if key[1] <= new_epochs and run.state in RESULTS[tally.kind]:
                tally.listed("lost_runs", key, run, Run(NOT_IN_NEW))
        compared[tally.kind].append(tally.compared(score, alpha))
    every = [*compared[STAGE], *compared[EXTRACTION]]
    if new_complete and not any(c["pairs"] for c in every):
        counts = "; ".join(
            f"{c['score']}: {len(c['only_in_base'])} in BASE only, "
            f"{len(c['only_in_new'])} in NEW only"
            for c in every
        )
        raise NothingInCommon(
            f"no sample-epoch (sample id and epoch) is in both runs ({counts}); "
            "are they runs of the same dataset?"
        )
    base_only = {s: len(t.held) for s, t in sorted(scores.items()) if s not in seen}
    return compared | {"scores_only_in_base": base_only, "scores_only_in_new": new_only}


def lost_text(lost_from: list[dict[str, Any]]) -> str:
    """ "13 (12 pass → data error, 1 generation → no score)"."""
    total = sum(item["count"] for item in lost_from)
    kinds = ", ".join(f"{i['count']} {i['base']} \u2192 {i['new']}" for i in lost_from)
    return f"{total} ({kinds})" if total else "0"


def gate(
    pairs: list[dict[str, Any]],
    alpha: float,
    gates: Iterable[str],
    gate_lost: bool,
    failed: Sequence[str] = (),
    missing: Sequence[str] = (),
) -> dict[str, Any]:
    """What `--fail-on-regression` decides over `pairs`, each entry named by
    its pair when there are several; `failed` and `missing` are NEW evals
    that did not finish and BASE evals with no NEW eval."""
    tests, lost_results, regressed = [], [], []
    regressions = lost = 0
    for pair in pairs:
        named = f"{pair['name']}: " if len(pairs) > 1 else ""
        for c in [*pair[STAGE], *pair[EXTRACTION]]:
            score, worse = f"{named}{c['score']}: ", c["worse"]
            if PASS_GATE in gates:
                gated = [t for t in c["tests"] if t["outcome"] != _UNGATED]
                tests += [(score + t["outcome"], t) for t in gated]
            named_figures = ((gate_name(f["figure"]), f) for f in c.get("figures", []))
            figures = [(score + name, f) for name, f in named_figures if name in gates]
            tests += figures
            regressions += worse
            lost += c["lost"] + sum(f["lost"] for _, f in figures)
            if worse:
                regressed.append(f"{score}{plural(worse, 'regression')}")
            if c["lost"]:
                lost_results.append(f"{score}lost {lost_text(c['lost_from'])}")
            lost_results += [
                f"{name} lost in {plural(f['lost'], 'pair')} (a "
                "result in NEW without it)"
                for name, f in figures
                if f["lost"]
            ]
    significant = [name for name, test in tests if test["verdict"] == "worse"]
    fails = bool(significant) or (gate_lost and bool(lost or failed or missing))
    return {
        "alpha": alpha,
        "outcomes": [name for name, _ in tests],
        "regressions": regressions,
        "regressed": regressed,
        "significant": significant,
        "lost": lost,
        "lost_results": lost_results,
        "failed_evals": failed,
        "missing_evals": missing,
        "lost_gated": gate_lost,
        "fails": fails,
        "fails_strict": fails or regressions > 0,
    }
