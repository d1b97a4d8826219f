"""From two sets of Inspect logs to a `Comparison`: evals paired by task
and model, each tracegrade score an `Observation` for `pair_runs`, the
JSON streamed as it is made. The rules are docs/compare.md's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import chain as _chain
from typing import IO, Any, Final, TypeVar, cast

from ..core.errors import quote
from ..logs.evals import (
    EvalRun,
    Evals,
    Superseded,
    missing_parts_text,
    read_evals,
    superseded_note,
    unused_reducer,
)
from ..logs.samples import ScoreRead, UnreadableLog
from ..logs.scores import LogError, LogRead, LogScores, LogSummary
from ..report.aggregate import EvalInfo
from ..report.runs import NO_SCORE as NO_SCORE_WHY
from ..report.runs import NOT_RUN, SAMPLE_ERROR
from ..report.thresholds import (
    OVER_ALL_RUNS,
    Target,
    Threshold,
    ThresholdCheck,
    check_thresholds,
    threshold_line,
)
from ..schema import ExtractionScore, InvalidScore, read_extraction, read_stage
from .pairing import (
    DATA_ERROR,
    DIAGNOSED,
    EXTRACTION,
    NO_SCORE,
    PASS_GATE,
    STAGE,
    CompareError,
    ExtractionComparison,
    Gate,
    NothingInCommon,
    Observation,
    Paired,
    Run,
    StageComparison,
    gate_names,
    pair_runs,
)
from .spool import SortedSpool
from .stats import DEFAULT_ALPHA, check_alpha

JSON_FORMAT: Final = 3
UNIT: Final = "sample-epoch"
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

_STAGES: Final = {stage: stage for stage in DIAGNOSED}
_NO_SCORE_ERRORED: Final = "The sample errored before it was scored."
_NO_SCORE: Final = "The sample is in the log without this score."
_NOT_RUN: Final = "The eval stopped before it ran the sample."


class UnknownGate(ValueError):
    """A `--gate` naming no measure the compared runs have: a usage error."""


class UnreadableScore(CompareError):
    """A tracegrade score whose value or metadata is not one tracegrade
    writes."""


@dataclass(frozen=True)
class SideSummary:
    """What was found for one side: the path given, its evals (after
    --task and --model), and the logs superseded by a retry."""

    path: str
    evals: list[EvalInfo]
    superseded: list[Superseded]


@dataclass(frozen=True)
class EvalPair:
    """One eval of BASE against one of NEW, and everything compared; `logs`
    BASE's first, `warnings` said in every output form."""

    name: str
    base: EvalInfo
    new: EvalInfo
    logs: list[LogSummary]
    warnings: list[str]
    stage_diagnosis: list[StageComparison]
    ordered_extraction: list[ExtractionComparison]
    scores_only_in_base: dict[str, int]
    scores_only_in_new: dict[str, int]
    gate: Gate


@dataclass(frozen=True)
class GateOptions:
    """What the gate was asked (`--fail-on-regression`, `--strict`,
    `--allow-lost`, `--fail-under`); `gates` names what the paired tests
    gate: `pass`, or a figure."""

    fail_on_regression: bool = False
    strict: bool = False
    allow_lost: bool = False
    thresholds: Sequence[Threshold] = ()
    gates: Sequence[str] = (PASS_GATE,)

    def asked(self) -> list[str]:
        """The options, as given on the command line."""
        options = ["--fail-on-regression"] if self.fail_on_regression else []
        if tuple(self.gates) != (PASS_GATE,):
            options += [f"--gate {name}" for name in self.gates]
        options += ["--strict"] if self.strict else []
        options += ["--allow-lost"] if self.allow_lost else []
        options += [f"--fail-under {t.metric}={t.text}" for t in self.thresholds]
        return options


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided: `asked`, the gate's options; `failed`, the
    command exits 3; `failed_on`, each thing that failed it; `checked`,
    what it checked and found right, and how thresholds are counted."""

    asked: list[str]
    failed: bool
    failed_on: list[str]
    checked: list[str]


@dataclass(frozen=True)
class Comparison:
    """Everything `tracegrade compare` shows, in every output form; `gate` is
    over every pair, and `verdict` what it decided."""

    format: int
    unit: str
    alpha: float
    test: str
    effect_size: str
    figure_test: str
    base: SideSummary
    new: SideSummary
    pairs: list[EvalPair]
    only_in_base: list[EvalInfo]
    only_in_new: list[EvalInfo]
    warnings: list[str]
    gate: Gate
    thresholds: list[ThresholdCheck]
    verdict: GateDecision

    def to_json(self) -> dict[str, Any]:
        """The whole comparison as JSON-ready data, every list in memory
        (`write_json` streams the same document instead)."""
        data = json.loads("".join(_json_chunks(self, 0)))
        assert isinstance(data, dict)
        return data

    def write_json(self, out: IO[str]) -> None:
        """Write the comparison as indented JSON to `out`, the long lists
        item by item as they are read back (one line an item)."""
        pending: list[str] = []
        size = 0
        for chunk in _json_chunks(self, 0):
            pending.append(chunk)
            size += len(chunk)
            if size >= 1 << 16:
                out.write("".join(pending))
                pending, size = [], 0
        out.write("".join(pending) + "\n")

    def close(self) -> None:
        """Free the temporary files of every list."""
        _close(self.pairs)


_INDENT: Final = "  "


def _json_chunks(value: Any, level: int) -> Iterator[str]:
    """JSON text of `value` (dataclasses as objects, `SortedSpool`s as
    lists of their items' JSON), indented as `json.dumps(indent=2)`."""
    if isinstance(value, SortedSpool):
        yield from _json_block("[]", ([text] for text in value.json_items()), level)
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        items: Iterator[Iterable[str]] = (
            _chain([f"{json.dumps(str(key))}: "], _json_chunks(item, level + 1))
            for key, item in value.items()
        )
        yield from _json_block("{}", items, level)
    elif isinstance(value, (list, tuple)):
        items = (_json_chunks(item, level + 1) for item in value)
        yield from _json_block("[]", items, level)
    else:
        plain = value.value if isinstance(value, Enum) else value
        yield json.dumps(plain, allow_nan=False)


def _json_block(
    brackets: str, items: Iterator[Iterable[str]], level: int
) -> Iterator[str]:
    """Items between `brackets`, one a line, indented one level in."""
    separator = brackets[0]
    for item in items:
        yield separator + "\n" + _INDENT * (level + 1)
        yield from item
        separator = ","
    yield brackets if separator == brackets[0] else "\n" + _INDENT * level + brackets[1]


def compare_logs(
    base: str,
    new: str,
    *,
    alpha: float = DEFAULT_ALPHA,
    task: str | None = None,
    model: str | None = None,
    options: GateOptions | None = None,
    on_log_read: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare the evals at or under `base` with those at or under `new`.
    Raises `LogError`, `CompareError`, or `InvalidThreshold` for a threshold
    of a metric no compared score has."""
    return compare_evals(
        base,
        read_evals([base]),
        new,
        read_evals([new]),
        alpha=alpha,
        task=task,
        model=model,
        options=options,
        on_log_read=on_log_read,
    )


def compare_evals(
    base_path: str,
    base: Evals,
    new_path: str,
    new: Evals,
    *,
    alpha: float = DEFAULT_ALPHA,
    task: str | None = None,
    model: str | None = None,
    options: GateOptions | None = None,
    on_log_read: Callable[[str], None] | None = None,
) -> Comparison:
    """`compare_logs` of evals already found."""
    alpha = check_alpha(alpha)
    options = options or GateOptions()
    sides = {
        "BASE": _selected("BASE", base.runs, task, model),
        "NEW": _selected("NEW", new.runs, task, model),
    }
    matched, only_in_base, only_in_new = _pair_evals(sides["BASE"], sides["NEW"])
    pairs = [
        _compare_pair(base_run, new_run, alpha, options, on_log_read)
        for base_run, new_run in matched
    ]
    _check_gates(options.gates, pairs)
    warnings = [
        f"{side}: {note}"
        for side, evals in (("BASE", base), ("NEW", new))
        if (note := superseded_note(evals.superseded))
    ]
    counted = "not gated (--allow-lost)" if options.allow_lost else "lost in NEW"
    warnings += [
        f"BASE: {_described(run)} has no eval of the same task and model in "
        f"NEW; it is not compared, and its results count as {counted}."
        for run in only_in_base
    ]
    warnings += [
        f"NEW: {_described(run)} has no eval of the same task and model in "
        "BASE; it is not compared."
        for run in only_in_new
    ]
    failed_evals = [
        f"NEW: {_described(run)} has status {run.status!r}"
        for run in sides["NEW"]
        if run.status != "success"
    ]
    missing_evals = [f"BASE: {_described(run)} has no NEW eval" for run in only_in_base]
    gate = _overall_gate(
        pairs, alpha, failed_evals, missing_evals, gate_lost=not options.allow_lost
    )
    thresholds = (
        check_thresholds(options.thresholds, _new_targets(pairs))
        if options.thresholds
        else []
    )
    return Comparison(
        format=JSON_FORMAT,
        unit=UNIT,
        alpha=alpha,
        test=TEST,
        effect_size=EFFECT_SIZE,
        figure_test=FIGURE_TEST,
        base=SideSummary(
            base_path, [EvalInfo.of(run) for run in sides["BASE"]], base.superseded
        ),
        new=SideSummary(
            new_path, [EvalInfo.of(run) for run in sides["NEW"]], new.superseded
        ),
        pairs=pairs,
        only_in_base=[EvalInfo.of(run) for run in only_in_base],
        only_in_new=[EvalInfo.of(run) for run in only_in_new],
        warnings=warnings,
        gate=gate,
        thresholds=thresholds,
        verdict=_verdict(gate, thresholds, options),
    )


def _check_gates(gates: Sequence[str], pairs: Sequence[EvalPair]) -> None:
    """Refuse a gate that names no measure of these runs, freeing the pairs'
    lists first."""
    found = [PASS_GATE]
    for pair in pairs:
        for staged in pair.stage_diagnosis:
            found += [name for name in gate_names(staged) if name not in found]
    unknown = [name for name in gates if name not in found]
    if unknown:
        _close(pairs)
        raise UnknownGate(
            f"--gate {quote(unknown[0])}: no such measure in these runs; they "
            f"have {', '.join(found)}"
        )


def _close(pairs: Sequence[EvalPair]) -> None:
    """Free the temporary files of every pair's lists."""
    for pair in pairs:
        for compared in [*pair.stage_diagnosis, *pair.ordered_extraction]:
            for item in dataclasses.fields(compared):
                value = getattr(compared, item.name)
                if isinstance(value, SortedSpool):
                    value.close()


def _new_targets(pairs: Sequence[EvalPair]) -> Iterator[Target]:
    """Each NEW eval's scores, for `--fail-under`."""
    for pair in pairs:
        compared: list[StageComparison | ExtractionComparison] = [
            *pair.stage_diagnosis,
            *pair.ordered_extraction,
        ]
        for c in compared:
            yield Target(
                eval=f"NEW {pair.new.name}",
                task=pair.new.task,
                model=pair.new.model,
                score=c.score,
                kind=c.kind,
                runs=c.new_runs.runs,
                over_all_runs=c.new_runs.over_all_runs,
            )


def _verdict(
    gate: Gate, thresholds: Sequence[ThresholdCheck], options: GateOptions
) -> GateDecision:
    """What the gate decided, and why, in plain sentences."""
    failing: list[str] = []
    checked: list[str] = []
    if options.fail_on_regression:
        if gate.significant:
            failing.append(
                f"significantly worse at alpha = {gate.alpha}: "
                f"{'; '.join(gate.significant)}"
            )
        else:
            checked.append(
                f"no outcome significantly worse at alpha = {gate.alpha} "
                f"(tested: {'; '.join(gate.outcomes)})"
            )
        if options.strict:
            if gate.regressions:
                failing.append(f"regressions (--strict): {'; '.join(gate.regressed)}")
            else:
                checked.append("no regression (--strict)")
        lost = [
            *(f"lost results: {entry}" for entry in gate.lost_results),
            *gate.failed_evals,
            *gate.missing_evals,
        ]
        if lost and gate.lost_gated:
            failing.extend(lost)
        elif lost:
            checked.extend(f"not gated (--allow-lost): {entry}" for entry in lost)
        else:
            checked.append("no result lost")
    for check in thresholds:
        line = threshold_line(check)
        (checked if check.met else failing).append(
            f"{'threshold met' if check.met else 'threshold not met'}: {line}"
        )
    if thresholds:
        checked.append(f"thresholds are {OVER_ALL_RUNS}")
    if not (options.fail_on_regression or thresholds):
        checked.append(
            "no gate asked (--fail-on-regression, --fail-under): the "
            "comparison is reported, not gated"
        )
    return GateDecision(
        asked=options.asked(), failed=bool(failing), failed_on=failing, checked=checked
    )


def _matches(run: EvalRun, task: str | None, model: str | None) -> bool:
    # A task is named as logged ("tracegrade/stage_diagnosis") or by its
    # own name alone ("stage_diagnosis").
    task_ok = task is None or task in (run.task, run.task.rsplit("/", 1)[-1])
    return task_ok and (model is None or model == run.model)


def _selected(
    side: str, runs: Sequence[EvalRun], task: str | None, model: str | None
) -> list[EvalRun]:
    selected = [run for run in runs if _matches(run, task, model)]
    if not selected:
        asked = " and ".join(
            f"{what} {quote(value)}"
            for what, value in (("task", task), ("model", model))
            if value is not None
        )
        found = "; ".join(sorted({f"{run.task} ({run.model})" for run in runs}))
        raise CompareError(f"{side} has no eval of {asked}; it has {found}")
    return selected


def _described(run: EvalRun) -> str:
    return f"{run.name} ({run.task}, {run.model})"


def _pair_evals(
    base: list[EvalRun], new: list[EvalRun]
) -> tuple[list[tuple[EvalRun, EvalRun]], list[EvalRun], list[EvalRun]]:
    """BASE's evals paired with NEW's, and those on one side only."""
    if len(base) == 1 and len(new) == 1:
        return [(base[0], new[0])], [], []
    by_key = {"BASE": _by_task_and_model(base), "NEW": _by_task_and_model(new)}
    common = [key for key in by_key["BASE"] if key in by_key["NEW"]]
    for key in common:
        for side in SIDES:
            found = by_key[side][key]
            if len(found) > 1:
                raise CompareError(
                    f"{side} holds {len(found)} evals of task {key[0]!r} and model "
                    f"{key[1]!r} ({', '.join(run.name for run in found)}): which "
                    "to pair is unclear; give each side one eval of it (a log or "
                    "a directory of its own)"
                )
    if not common:
        raise NothingInCommon(
            "no eval of the same task and model is on both sides: BASE has "
            f"{_listed(base)}; NEW has {_listed(new)} (--task and --model select)"
        )
    pairs = [(by_key["BASE"][key][0], by_key["NEW"][key][0]) for key in common]
    only_base = [
        run
        for key, runs in by_key["BASE"].items()
        if key not in by_key["NEW"]
        for run in runs
    ]
    only_new = [
        run
        for key, runs in by_key["NEW"].items()
        if key not in by_key["BASE"]
        for run in runs
    ]
    return pairs, only_base, only_new


def _by_task_and_model(runs: list[EvalRun]) -> dict[tuple[str, str], list[EvalRun]]:
    grouped: dict[tuple[str, str], list[EvalRun]] = {}
    for run in runs:
        grouped.setdefault((run.task, run.model), []).append(run)
    return grouped


def _listed(runs: Sequence[EvalRun]) -> str:
    return ", ".join(f"{run.task} ({run.model})" for run in runs)


def _compare_pair(
    base: EvalRun,
    new: EvalRun,
    alpha: float,
    options: GateOptions,
    on_log_read: Callable[[str], None] | None,
) -> EvalPair:
    logs: dict[str, list[LogSummary]] = {"BASE": [], "NEW": []}
    observations = {
        side: _eval_observations(side, run, logs[side], on_log_read)
        for side, run in zip(SIDES, (base, new), strict=True)
    }
    try:
        paired = pair_runs(
            observations["BASE"],
            observations["NEW"],
            alpha=alpha,
            clustered=base.epochs > 1 or new.epochs > 1,
            new_epochs=new.epochs,
            new_complete=new.complete,
            gate_lost=not options.allow_lost,
            gates=options.gates,
        )
    except NothingInCommon as error:
        for side in SIDES:
            # A side with no tracegrade score at all says more than "nothing
            # in common". NEW may be unread when BASE is the one refused.
            if logs[side] and not any(log.tracegrade_scores for log in logs[side]):
                raise CompareError(_nothing_found(side, logs[side])) from None
        raise CompareError(f"{_pair_name(base, new)}: {error}") from None
    name = _pair_name(base, new)
    return EvalPair(
        name=name,
        base=EvalInfo.of(base),
        new=EvalInfo.of(new),
        logs=[*logs["BASE"], *logs["NEW"]],
        warnings=_warnings(base, new, logs, paired),
        stage_diagnosis=paired.stage_diagnosis,
        ordered_extraction=paired.ordered_extraction,
        scores_only_in_base=paired.scores_only_in_base,
        scores_only_in_new=paired.scores_only_in_new,
        gate=paired.gate,
    )


def _pair_name(base: EvalRun, new: EvalRun) -> str:
    if (base.task, base.model) == (new.task, new.model):
        return f"{new.task} ({new.model})"
    return f"{base.task} ({base.model}) vs {new.task} ({new.model})"


def _eval_observations(
    side: str,
    run: EvalRun,
    logs: list[LogSummary],
    on_log_read: Callable[[str], None] | None,
) -> Iterator[Observation]:
    """The observations of every log of one eval, a log at a time; each
    log's summary is appended to `logs` once it has been read."""
    # One copy of each explanation text: most runs of a stage share theirs;
    # and of each recall and precision, a few fractions, and of each
    # step-recall tuple.
    texts: dict[str, str] = {}
    shares: dict[Any, Any] = {}
    for log in run.reads():
        try:
            yield from _log_observations(log, logs, texts, shares)
        except (UnreadableLog, OSError) as error:
            raise LogError(
                f"{side}: cannot read {log.path!r} as an Inspect log ({error})"
            ) from error
        if on_log_read is not None:
            on_log_read(log.path)


def _log_observations(
    log: LogRead,
    logs: list[LogSummary],
    texts: dict[str, str],
    shares: dict[Any, Any],
) -> Iterator[Observation]:
    scores = LogScores(log, keep_scoreless=True)
    for sample, name, kind, score in scores:
        try:
            run, why = _run(kind, score, log.path, texts, shares)
        except InvalidScore as error:
            raise UnreadableScore(
                f"{log.path}: sample {quote(sample.id)} epoch {sample.epoch}, "
                f"score {quote(name)}: {error}"
            ) from None
        yield Observation(name, kind, sample.id, sample.epoch, run, why)
    assert scores.scoreless is not None
    for name, kind in scores.score_names().items():
        for sample_id, epoch, errored in scores.scoreless:
            explanation = _NO_SCORE_ERRORED if errored else _NO_SCORE
            why = SAMPLE_ERROR if errored else NO_SCORE_WHY
            run = Run(NO_SCORE, None, explanation, log.path)
            yield Observation(name, kind, sample_id, epoch, run, why)
        # A sample the eval never ran got no result either.
        for sample_id, epoch in scores.not_run_keys():
            run = Run(NO_SCORE, None, _NOT_RUN, log.path)
            yield Observation(name, kind, sample_id, epoch, run, NOT_RUN)
    logs.append(scores.summary())


def _run(
    kind: str,
    score: ScoreRead,
    path: str,
    texts: dict[str, str],
    shares: dict[Any, Any],
) -> tuple[Run, str | None]:
    """The state of one tracegrade score, read as `report` reads it, and why
    it gives no result (None for a result); `InvalidScore` says what is wrong."""
    explanation = score.explanation
    if explanation is not None:
        explanation = texts.setdefault(explanation, explanation)
    why: str | None = None
    if kind == STAGE:
        staged = read_stage(score.value, score.metadata)
        error = staged.error
    else:
        graded = read_extraction(score.value, score.metadata)
        error = graded.error
    if error is not None and error.unscored:
        # A run-side error: the sample errored, and was scored only to say so.
        state = DATA_ERROR if error.side == "data" else NO_SCORE
        run = Run(state, None, explanation, path)
        why = texts.setdefault(error.kind, error.kind)
    elif kind == STAGE:
        assert staged.stage is not None
        missing = None if staged.missing is None else tuple(staged.missing)
        run = Run(_STAGES[staged.stage], missing, explanation, path)
    else:
        return _extraction_run(graded, explanation, path), None
    if kind != STAGE:
        return run, why
    # A run with no stage still had its context: an unscored run keeps its
    # recall and precision too.
    recall = _shared(staged.recall, shares)
    precision = _shared(staged.precision, shares)
    steps = staged.step_recall
    step_recall = None if steps is None else _shared(tuple(steps.items()), shares)
    if recall is None and precision is None and step_recall is None:
        return run, why
    return dataclasses.replace(
        run, recall=recall, precision=precision, step_recall=step_recall
    ), why


_SHARED_FIGURES: Final = 1 << 12

_T = TypeVar("_T")


def _shared(value: _T, shares: dict[Any, Any]) -> _T:
    """One object for each of the first few distinct figures or step
    tuples: most runs share a few."""
    if value is None:
        return value
    if len(shares) < _SHARED_FIGURES:
        return cast(_T, shares.setdefault(value, value))
    return cast(_T, shares.get(value, value))


def _extraction_run(score: ExtractionScore, explanation: str | None, path: str) -> Run:
    if score.order:
        return Run("pass", None, explanation, path)
    if score.membership:
        return Run("order fail", None, explanation, path)
    return Run("membership fail", None, explanation, path)


def _nothing_found(side: str, logs: Sequence[LogSummary]) -> str:
    other = sorted({name for log in logs for name in log.other_scorers})
    found = f"; scores found: {', '.join(other)}" if other else "; no scores at all"
    read = ", ".join(repr(log.path) for log in logs[:3])
    more = f" and {len(logs) - 3} more" if len(logs) > 3 else ""
    return (
        f"{side} holds no tracegrade score ({STAGE}, {EXTRACTION}) in "
        f"{len(logs)} log{'s' if len(logs) != 1 else ''} ({read}{more}){found}"
    )


def _warnings(
    base: EvalRun, new: EvalRun, logs: dict[str, list[LogSummary]], paired: Paired
) -> list[str]:
    warnings: list[str] = []
    staged = bool(paired.stage_diagnosis)
    if base.key == new.key:
        # One task id: the same log, a copy of it, or its eval-retry.
        warnings.append(
            f"BASE and NEW are the same eval ({base.name}): NEW is the same "
            "log as BASE, a copy or a retry of it, not a new run; pairs can "
            "differ only where a retry ran samples again."
        )
    for side, run in zip(SIDES, (base, new), strict=True):
        if run.missing_count:
            missing = missing_parts_text(run.missing_parts, run.missing_count)
            warnings.append(
                f"{side}: {run.name} is missing {missing}; only the parts read "
                "are compared."
            )
        elif run.status != "success":
            never = sum(log.not_run for log in logs[side])
            warnings.append(
                f"{side}: {run.name} has status {run.status!r}; its samples "
                "with no result"
                + (f" ({never} sample-epochs it never ran among them)" if never else "")
                + (" count as lost where BASE had a result." if side == "NEW" else ".")
            )
        for log in logs[side]:
            if not log.tracegrade_scores:
                warnings.append(
                    f"{side}: {log.path} holds no tracegrade score; its "
                    f"{log.samples} samples are not compared."
                )
        unused = unused_reducer(run.name, run.epochs_reducer)
        if unused and staged:
            warnings.append(f"{side}: {unused}")
    for score, runs in paired.scores_only_in_base.items():
        warnings.append(
            f"score {quote(score)} is in BASE only ({runs} runs): NEW has none of "
            "its results, and those BASE had count as lost."
        )
    for score, runs in paired.scores_only_in_new.items():
        warnings.append(
            f"score {quote(score)} is in NEW only ({runs} runs); it is not compared."
        )
    if base.epochs != new.epochs:
        fewer, more = sorted((base.epochs, new.epochs))
        side = "NEW" if new.epochs > base.epochs else "BASE"
        warnings.append(
            f"BASE ran {_epochs(base.epochs)} and NEW {_epochs(new.epochs)}: "
            f"samples pair by epoch, so only epochs 1 to {fewer} are compared; "
            f"{side}'s epochs {fewer + 1} to {more} are in one run only"
            + (", not counted as lost." if side == "BASE" else ".")
        )
    if base.task != new.task:
        warnings.append(
            f"BASE ran {base.task} and NEW ran {new.task}: samples are paired by "
            "sample id and epoch alone."
        )
    return warnings


def _epochs(count: int) -> str:
    return f"{count} epoch{'s' if count != 1 else ''}"


def _overall_gate(
    pairs: Sequence[EvalPair],
    alpha: float,
    failed_evals: list[str],
    missing_evals: list[str],
    *,
    gate_lost: bool,
) -> Gate:
    """The gate over every pair, and the NEW evals that did not finish or
    are missing; each entry is named by its pair when there are several."""

    def named(pair: EvalPair, entry: str) -> str:
        return entry if len(pairs) == 1 else f"{pair.name}: {entry}"

    def entries(field: str) -> list[str]:
        return [named(p, entry) for p in pairs for entry in getattr(p.gate, field)]

    significant = entries("significant")
    regressions = sum(p.gate.regressions for p in pairs)
    lost = sum(p.gate.lost for p in pairs)
    fails = bool(significant) or (
        gate_lost and bool(lost or failed_evals or missing_evals)
    )
    return Gate(
        alpha=alpha,
        outcomes=entries("outcomes"),
        regressions=regressions,
        regressed=entries("regressed"),
        significant=significant,
        lost=lost,
        lost_results=entries("lost_results"),
        failed_evals=failed_evals,
        missing_evals=missing_evals,
        lost_gated=gate_lost,
        fails=fails,
        fails_strict=fails or regressions > 0,
    )


__all__ = [
    "EFFECT_SIZE",
    "FIGURE_TEST",
    "JSON_FORMAT",
    "TEST",
    "Comparison",
    "EvalPair",
    "GateDecision",
    "GateOptions",
    "SideSummary",
    "UnknownGate",
    "UnreadableScore",
    "compare_evals",
    "compare_logs",
]
