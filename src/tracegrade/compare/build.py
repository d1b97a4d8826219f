"""Two sets of Inspect logs to the comparison document: evals paired, gated."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, replace
from itertools import chain
from typing import IO, Any, Final

from ..core.errors import quote
from ..logs import evals as log_evals
from ..logs.evals import EvalRun, Evals
from ..logs.samples import ScoreRead, UnreadableLog
from ..logs.scores import LogError, LogScores, LogSummary, nothing_found
from ..report import runs as counts
from ..report import thresholds as limits
from ..schema import InvalidScore, read_extraction, read_stage
from . import pairing
from .pairing import EXTRACTION, NO_SCORE, STAGE, CompareError, Run, gate_name
from .spool import Spool, Spools

TEST: Final = (
    "two-sided exact binomial test at 1/2 (scipy.stats.binomtest): McNemar's "
    "test of b against c when every sample has one epoch; with several, the "
    "sign test of the samples whose share of epochs with the outcome fell "
    "against those whose share rose (the sample as the cluster); significant "
    "when p <= alpha"
)
EFFECT_SIZE: Final = (
    "difference in proportions: (c - b) / pairs = NEW share - BASE share"
)
FIGURE_TEST: Final = (
    "context recall and precision over the pairs where both runs have the "
    "figure: the mean of each side, NEW minus BASE, and the two-sided exact "
    "sign test (scipy.stats.binomtest at 1/2) of the samples whose mean "
    "figure over their paired epochs fell against those whose rose; gated "
    "only when --gate names the figure"
)
SIDES: Final = ("BASE", "NEW")
OnRead = Callable[[str], None] | None  # told each log's path once it is read
_ERRORED: Final = {True: counts.SAMPLE_ERROR, False: counts.NO_SCORE}
_NO_SCORE: Final = {
    counts.SAMPLE_ERROR: "The sample errored before it was scored.",
    counts.NO_SCORE: "The sample is in the log without this score.",
    counts.NOT_RUN: "The eval stopped before it ran the sample.",
}


class UnknownGate(ValueError):
    """A `--gate` naming no measure the compared runs have: a usage error."""


class UnreadableScore(CompareError):
    """A tracegrade score whose value or metadata tracegrade never writes."""


class Comparison(dict[str, Any]):
    """The JSON document (docs/compare.md); its long lists are `Spool`s."""

    spools: Spools

    def write_json(self, out: IO[str]) -> None:
        """`json.dumps(indent=2)`; a long list's items a line each, read as written."""
        spools: list[Spool] = []
        token = secrets.token_hex(8)

        def marked(spool: Spool) -> str:
            spools.append(spool)
            return f"{token}{len(spools) - 1}"

        text = json.dumps(self, indent=2, allow_nan=False, default=marked)
        before, *parts = re.split(f'"{token}(\\d+)"', text)
        out.write(before)
        for number, after in zip(parts[::2], parts[1::2], strict=True):
            line = before.rsplit("\n", 1)[-1]
            indent = "\n" + " " * (len(line) - len(line.lstrip(" ")))
            separator = "["
            for item in spools[int(number)].json_items():
                out.write(f"{separator}{indent}  {item}")
                separator = ","
            out.write(("[]" if separator == "[" else f"{indent}]") + after)
            before = after
        out.write("\n")

    def close(self) -> None:
        self.spools.close()


def compare_logs(base: str, new: str, **options: Any) -> Comparison:
    """Compare the evals at or under `base` with those under `new`."""
    read = log_evals.read_evals
    return compare_evals(base, read([base]), new, read([new]), **options)


def compare_evals(
    base_path: str,
    base: Evals,
    new_path: str,
    new: Evals,
    *,
    alpha: float = 0.05,
    task: str | None = None,
    model: str | None = None,
    gates: Sequence[str] = (pairing.PASS_GATE,),
    allow_lost: bool = False,
    thresholds: Sequence[limits.Threshold] = (),
    asked: Sequence[str] = (),
    on_log_read: OnRead = None,
) -> Comparison:
    """`asked`: the gate's options as given. Raises `LogError`, `CompareError`,
    `UnknownGate` or `InvalidThreshold`."""
    sides = (base, new)
    selected = [_selected(s, e, task, model) for s, e in zip(SIDES, sides, strict=True)]
    matched, only_base, only_new = _pair_evals(*selected)
    spools = Spools()
    try:
        pairs = [_compare_pair(b, n, alpha, spools, on_log_read) for b, n in matched]
        checks = _checked(pairs, gates, thresholds)
    except BaseException:
        spools.close()
        raise
    for pair in pairs:
        pair["gate"] = pairing.gate([pair], alpha, gates, not allow_lost)
    counted = "not gated (--allow-lost)" if allow_lost else "lost in NEW"
    notes = [
        (side, log_evals.superseded_note(e.superseded))
        for side, e in zip(SIDES, sides, strict=True)
    ]
    warnings = [f"{side}: {note}" for side, note in notes if note]
    alone = [("BASE", "NEW", only_base, f", and its results count as {counted}")]
    warnings += [
        f"{side}: {_described(run)} has no eval of the same task and model in "
        f"{other}; it is not compared{tail}."
        for side, other, runs, tail in [*alone, ("NEW", "BASE", only_new, "")]
        for run in runs
    ]
    failed = [
        f"NEW: {_described(run)} has status {run.status!r}"
        for run in selected[1]
        if run.status != "success"
    ]
    missing = [f"BASE: {_described(run)} has no NEW eval" for run in only_base]
    gate = pairing.gate(pairs, alpha, gates, not allow_lost, failed, missing)
    comparison = Comparison(
        format=3,
        unit="sample-epoch",
        alpha=alpha,
        test=TEST,
        effect_size=EFFECT_SIZE,
        figure_test=FIGURE_TEST,
        base=_side(base_path, selected[0], base),
        new=_side(new_path, selected[1], new),
        pairs=pairs,
        only_in_base=[_eval(run) for run in only_base],
        only_in_new=[_eval(run) for run in only_new],
        warnings=warnings,
        gate=gate,
        thresholds=[asdict(check) for check in checks],
        verdict=_verdict(gate, checks, list(asked)),
    )
    comparison.spools = spools
    return comparison


def _checked(
    pairs: list[dict[str, Any]],
    gates: Sequence[str],
    thresholds: Sequence[limits.Threshold],
) -> list[limits.ThresholdCheck]:
    # The figures a `--gate` can name: those some pair had in BASE.
    figures = [f for p in pairs for c in p[STAGE] for f in c["figures"]]
    named = (gate_name(f["figure"]) for f in figures if f["pairs"] or f["lost"])
    found = [pairing.PASS_GATE, *dict.fromkeys(named)]
    if unknown := [name for name in gates if name not in found]:
        raise UnknownGate(
            f"--gate {quote(unknown[0])}: no such measure in these runs; they "
            f"have {', '.join(found)}"
        )
    targets = []
    for p in pairs:
        new = p["new"]
        for c in [*p[STAGE], *p[EXTRACTION]]:
            where = (f"NEW {new['name']}", new["task"], new["model"], c["score"])
            runs = (c["new_runs"]["runs"], c["new_runs"]["over_all_runs"])
            targets.append(limits.Target(*where, c["kind"], *runs))
    return limits.check_thresholds(thresholds, targets)


def _side(path: str, runs: list[EvalRun], evals: Evals) -> dict[str, Any]:
    superseded = [asdict(s) for s in evals.superseded]
    return {"path": path, "evals": [_eval(r) for r in runs], "superseded": superseded}


def _eval(run: EvalRun) -> dict[str, Any]:
    fields = ("key", "name", "task", "model", "created", "status", "epochs")
    logs = [log.path for log in run.logs]
    return {key: getattr(run, key) for key in fields} | {"logs": logs}


def lost_entries(gate: dict[str, Any]) -> list[str]:
    """What the gate counts as lost: lost results, evals unfinished or missing."""
    lost = [f"lost results: {entry}" for entry in gate["lost_results"]]
    return [*lost, *gate["failed_evals"], *gate["missing_evals"]]


def _verdict(
    gate: dict[str, Any], checks: list[limits.ThresholdCheck], asked: list[str]
) -> dict[str, Any]:
    failing, checked = [], []
    if "--fail-on-regression" in asked:
        alpha, lost = gate["alpha"], lost_entries(gate)
        if gate["significant"]:
            worse = "; ".join(gate["significant"])
            failing.append(f"significantly worse at alpha = {alpha}: {worse}")
        else:
            tested = f"(tested: {'; '.join(gate['outcomes'])})"
            checked.append(
                f"no outcome significantly worse at alpha = {alpha} {tested}"
            )
        if "--strict" in asked and gate["regressions"]:
            failing.append(f"regressions (--strict): {'; '.join(gate['regressed'])}")
        elif "--strict" in asked:
            checked.append("no regression (--strict)")
        if lost and gate["lost_gated"]:
            failing += lost
        else:
            ungated = [f"not gated (--allow-lost): {entry}" for entry in lost]
            checked += ungated or ["no result lost"]
    for check in checks:
        met = "threshold met" if check.met else "threshold not met"
        line = f"{met}: {limits.threshold_line(check)}"
        (checked if check.met else failing).append(line)
    checked += [f"thresholds are {limits.OVER_ALL_RUNS}"] if checks else []
    if not asked:
        checked.append(
            "no gate asked (--fail-on-regression, --fail-under): the "
            "comparison is reported, not gated"
        )
    return dict(asked=asked, failed=bool(failing), failed_on=failing, checked=checked)


def _selected(
    side: str, evals: Evals, task: str | None, model: str | None
) -> list[EvalRun]:
    # A task is named as logged ("tracegrade/stage_diagnosis") or by its own
    # name alone ("stage_diagnosis").
    selected = [
        run
        for run in evals.runs
        if (task is None or task in (run.task, run.task.rsplit("/", 1)[-1]))
        and (model is None or model == run.model)
    ]
    if not selected:
        given = (("task", task), ("model", model))
        asked = [f"{what} {quote(value)}" for what, value in given if value is not None]
        found = "; ".join(sorted({f"{run.task} ({run.model})" for run in evals.runs}))
        raise CompareError(
            f"{side} has no eval of {' and '.join(asked)}; it has {found}"
        )
    return selected


def _described(run: EvalRun) -> str:
    return f"{run.name} ({run.task}, {run.model})"


def _pair_evals(
    base: list[EvalRun], new: list[EvalRun]
) -> tuple[list[tuple[EvalRun, EvalRun]], list[EvalRun], list[EvalRun]]:
    """Paired by task and model (one eval each side whatever it ran), and the rest."""
    if len(base) == 1 and len(new) == 1:
        return [(base[0], new[0])], [], []
    grouped: list[dict[tuple[str, str], list[EvalRun]]] = [{}, {}]
    for runs, by_key in zip((base, new), grouped, strict=True):
        for run in runs:
            by_key.setdefault((run.task, run.model), []).append(run)
    common = [key for key in grouped[0] if key in grouped[1]]
    for key in common:
        for side, by_key in zip(SIDES, grouped, strict=True):
            if len(found := by_key[key]) > 1:
                raise CompareError(
                    f"{side} holds {len(found)} evals of task {key[0]!r} and model "
                    f"{key[1]!r} ({', '.join(run.name for run in found)}): which "
                    "to pair is unclear; give each side one eval of it (a log or "
                    "a directory of its own)"
                )
    if not common:
        listed = [", ".join(f"{r.task} ({r.model})" for r in rs) for rs in (base, new)]
        raise CompareError(
            "no eval of the same task and model is on both sides: BASE has "
            f"{listed[0]}; NEW has {listed[1]} (--task and --model select)"
        )
    alone = [
        [run for key, runs in mine.items() if key not in theirs for run in runs]
        for mine, theirs in (grouped, grouped[::-1])
    ]
    return [(grouped[0][k][0], grouped[1][k][0]) for k in common], alone[0], alone[1]


def _pair_name(base: EvalRun, new: EvalRun) -> str:
    if (base.task, base.model) == (new.task, new.model):
        return f"{new.task} ({new.model})"
    return f"{base.task} ({base.model}) vs {new.task} ({new.model})"


def _compare_pair(
    base: EvalRun, new: EvalRun, alpha: float, spools: Spools, on_log_read: OnRead
) -> dict[str, Any]:
    logs: dict[str, list[LogSummary]] = {"BASE": [], "NEW": []}
    try:
        paired = pairing.pair_runs(
            _observations("BASE", base, logs["BASE"], on_log_read),
            _observations("NEW", new, logs["NEW"], on_log_read),
            spools,
            alpha=alpha,
            clustered=base.epochs > 1 or new.epochs > 1,
            new_epochs=new.epochs,
            new_complete=new.complete,
        )
    except pairing.NothingInCommon as error:
        for side in SIDES:
            # A side with no tracegrade score at all says more; NEW may be
            # unread when BASE is the one refused.
            if logs[side] and not any(log.tracegrade_scores for log in logs[side]):
                what = f"{side} holds no tracegrade score"
                raise CompareError(nothing_found(what, logs[side], repr)) from None
        raise CompareError(f"{_pair_name(base, new)}: {error}") from None
    return {
        "name": _pair_name(base, new),
        "base": _eval(base),
        "new": _eval(new),
        "logs": [asdict(log) for log in [*logs["BASE"], *logs["NEW"]]],
        "warnings": _warnings(base, new, logs, paired),
        **paired,
    }


def _observations(
    side: str, run: EvalRun, logs: list[LogSummary], on_log_read: OnRead
) -> Iterator[pairing.Observation]:
    """Every run of one eval; each log's summary goes to `logs` once read."""
    # One copy of each explanation and figure: most runs share a few.
    shared: dict[Any, Any] = {}
    for log in run.reads():
        try:
            scores = LogScores(log, keep_scoreless=True)
            for sample, name, kind, score in scores:
                try:
                    found, why = _run(kind, score, log.path, shared)
                except InvalidScore as error:
                    raise UnreadableScore(
                        f"{log.path}: sample {quote(sample.id)} epoch "
                        f"{sample.epoch}, score {quote(name)}: {error}"
                    ) from None
                yield name, kind, sample.id, sample.epoch, found, why
            assert scores.scoreless is not None
            # A sample that errored, or that the eval never ran, has no result.
            for name, kind in scores.score_names().items():
                errored = ((i, e, _ERRORED[r]) for i, e, r in scores.scoreless)
                never = ((i, e, counts.NOT_RUN) for i, e in scores.not_run_keys())
                for sample_id, epoch, why in chain(errored, never):
                    found = Run(NO_SCORE, None, _NO_SCORE[why], log.path)
                    yield name, kind, sample_id, epoch, found, why
        except (UnreadableLog, OSError) as error:
            raise LogError(
                f"{side}: cannot read {log.path!r} as an Inspect log ({error})"
            ) from error
        logs.append(scores.summary())
        if on_log_read is not None:
            on_log_read(log.path)


def _shared(value: Any, shared: dict[Any, Any]) -> Any:
    """One object for each of the first few distinct values."""
    if value is None or len(shared) >= 1 << 12:
        return shared.get(value, value)
    return shared.setdefault(value, value)


def _run(
    kind: str, score: ScoreRead, path: str, shared: dict[Any, Any]
) -> tuple[Run, str | None]:
    """One score as `report` reads it, and why it has no result (None: it has)."""
    explanation = _shared(score.explanation, shared)
    if kind == EXTRACTION:
        grade = read_extraction(score.value, score.metadata)
        passed = bool(grade.membership) + bool(grade.order)
        state = ("membership fail", "order fail", "pass")[passed]
        run, error = Run(state, None, explanation, path), grade.error
    else:
        staged = read_stage(score.value, score.metadata)
        missing = None if staged.missing is None else tuple(staged.missing)
        # A run with no stage still had its context: it keeps its figures.
        recall = staged.step_recall
        steps = None if recall is None else tuple(recall.items())
        figures = (_shared(f, shared) for f in (staged.recall, staged.precision, steps))
        run = Run(staged.stage or NO_SCORE, missing, explanation, path, *figures)
        error = staged.error
    if error is None or not error.unscored:
        return run, None
    state = pairing.DATA_ERROR if error.side == "data" else NO_SCORE
    return replace(run, state=state, missing=None), _shared(error.kind, shared)


def _warnings(
    base: EvalRun, new: EvalRun, logs: dict[str, list[LogSummary]], pair: dict[str, Any]
) -> list[str]:
    warnings: list[str] = []
    if base.key == new.key:
        # One task id: the same log, a copy of it, or its eval-retry.
        warnings.append(
            f"BASE and NEW are the same eval ({base.name}): NEW is the same "
            "log as BASE, a copy or a retry of it, not a new run; pairs can "
            "differ only where a retry ran samples again."
        )
    for side, run in zip(SIDES, (base, new), strict=True):
        if run.missing_count:
            missing = log_evals.missing_parts_text(run.missing_parts, run.missing_count)
            warnings.append(
                f"{side}: {run.name} is missing {missing}; only the parts read "
                "are compared."
            )
        elif run.status != "success":
            never = sum(log.not_run for log in logs[side])
            among = f" ({never} sample-epochs it never ran among them)" if never else ""
            lost = " count as lost where BASE had a result." if side == "NEW" else "."
            warnings.append(
                f"{side}: {run.name} has status {run.status!r}; its samples "
                f"with no result{among}{lost}"
            )
        warnings += [
            f"{side}: {log.path} holds no tracegrade score; its {log.samples} "
            "samples are not compared."
            for log in logs[side]
            if not log.tracegrade_scores
        ]
        unused = log_evals.unused_reducer(run.name, run.epochs_reducer)
        if unused and pair[STAGE]:
            warnings.append(f"{side}: {unused}")
    warnings += [
        f"score {quote(score)} is in BASE only ({runs} runs): NEW has none of "
        "its results, and those BASE had count as lost."
        for score, runs in pair["scores_only_in_base"].items()
    ]
    warnings += [
        f"score {quote(score)} is in NEW only ({runs} runs); it is not compared."
        for score, runs in pair["scores_only_in_new"].items()
    ]
    if base.epochs != new.epochs:
        fewer, more = sorted((base.epochs, new.epochs))
        side = "NEW" if new.epochs > base.epochs else "BASE"
        ran = [counts.plural(run.epochs, "epoch") for run in (base, new)]
        tail = ", not counted as lost." if side == "BASE" else "."
        warnings.append(
            f"BASE ran {ran[0]} and NEW {ran[1]}: samples pair by epoch, so only "
            f"epochs 1 to {fewer} are compared; {side}'s epochs {fewer + 1} to "
            f"{more} are in one run only{tail}"
        )
    if base.task != new.task:
        warnings.append(
            f"BASE ran {base.task} and NEW ran {new.task}: samples are paired by "
            "sample id and epoch alone."
        )
    return warnings
