"""From two sets of Inspect logs to a `Comparison`.

Logs are found and read the way `tracegrade report` reads them
(`report.build.find_logs`, `read_log`: a sample at a time, `.eval` or
`.json`); the logs of one side are pooled, so the parts of a run that
`tracegrade score` split are one run here too, with the report's warning
when a part is missing. Each tracegrade score becomes an `Observation`
for `pairing.pair_runs`, which holds BASE's runs and pairs NEW's as they
are read.

A sample that is in a log but has no tracegrade score (it errored before
scoring) is a `no score` run under every tracegrade score name of its log,
so a run that passed in BASE and crashed in NEW shows in the matrix
rather than as a sample missing from NEW.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from ..report.build import (
    COUNTING_UNIT,
    LogRead,
    LogScores,
    LogSummary,
    ReportError,
    find_logs,
    part_warnings,
    read_log,
)
from ..report.samples import ScoreRead, UnreadableLog
from .pairing import (
    DATA_ERROR,
    DIAGNOSED,
    EXTRACTION,
    NO_SCORE,
    STAGE,
    CompareError,
    ExtractionComparison,
    Gate,
    NothingInCommon,
    Observation,
    Paired,
    Run,
    StageComparison,
    pair_runs,
)
from .stats import DEFAULT_ALPHA, check_alpha

JSON_FORMAT: Final = 1
TEST: Final = (
    "exact McNemar test: two-sided binomial test (scipy.stats.binomtest) of b "
    "against b + c discordant pairs, p = 0.5; significant when p <= alpha"
)
EFFECT_SIZE: Final = (
    "difference in proportions: (c - b) / pairs = NEW share - BASE share"
)
SIDES: Final = ("BASE", "NEW")

_STAGES: Final = {stage: stage for stage in DIAGNOSED}
_NO_SCORE_ERRORED: Final = "The sample errored before it was scored."
_NO_SCORE: Final = "The sample is in the log without this score."


class UnreadableScore(CompareError):
    """A tracegrade score whose value or metadata is not one tracegrade
    writes."""


@dataclass(frozen=True)
class SideSummary:
    """What was read for one side: the path given, the logs found under it,
    and the tasks and models they ran."""

    path: str
    logs: list[LogSummary]
    tasks: list[str]
    models: list[str]


@dataclass(frozen=True)
class Comparison:
    """Everything `tracegrade compare` shows, in every output form.

    `warnings` are said in every form: a missing part, a log that did not
    finish, a log with no tracegrade score, runs of different tasks.
    """

    format: int
    unit: str
    alpha: float
    test: str
    effect_size: str
    base: SideSummary
    new: SideSummary
    warnings: list[str]
    stage_diagnosis: list[StageComparison]
    ordered_extraction: list[ExtractionComparison]
    scores_only_in_base: dict[str, int]
    scores_only_in_new: dict[str, int]
    gate: Gate

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def compare_logs(
    base: str,
    new: str,
    *,
    alpha: float = DEFAULT_ALPHA,
    on_log_read: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare the logs at or under `base` with those at or under `new`.

    Raises `ReportError` for a log that cannot be read (or a directory with
    none), `CompareError` when the runs cannot be compared.
    """
    alpha = check_alpha(alpha)
    paths = {"BASE": find_logs([base]), "NEW": find_logs([new])}
    logs: dict[str, list[LogSummary]] = {"BASE": [], "NEW": []}
    observations = {
        side: _side_observations(side, paths[side], logs[side], on_log_read)
        for side in SIDES
    }
    try:
        paired = pair_runs(observations["BASE"], observations["NEW"], alpha=alpha)
    except NothingInCommon:
        for side in SIDES:
            # A side with no tracegrade score at all says more than "nothing
            # in common". NEW may be unread when BASE is the one refused.
            if logs[side] and not any(log.tracegrade_scores for log in logs[side]):
                raise CompareError(_nothing_found(side, logs[side])) from None
        raise
    sides = {
        side: SideSummary(
            path=given,
            logs=logs[side],
            tasks=sorted({log.task for log in logs[side]}),
            models=sorted({log.model for log in logs[side]}),
        )
        for side, given in zip(SIDES, (base, new), strict=True)
    }
    return Comparison(
        format=JSON_FORMAT,
        unit=COUNTING_UNIT,
        alpha=alpha,
        test=TEST,
        effect_size=EFFECT_SIZE,
        base=sides["BASE"],
        new=sides["NEW"],
        warnings=_warnings(sides["BASE"], sides["NEW"], paired),
        stage_diagnosis=paired.stage_diagnosis,
        ordered_extraction=paired.ordered_extraction,
        scores_only_in_base=paired.scores_only_in_base,
        scores_only_in_new=paired.scores_only_in_new,
        gate=paired.gate,
    )


def _side_observations(
    side: str,
    paths: Sequence[str],
    logs: list[LogSummary],
    on_log_read: Callable[[str], None] | None,
) -> Iterator[Observation]:
    """The observations of every log of one side, a log at a time; each
    log's summary is appended to `logs` once it has been read."""
    # One copy of each explanation text: most runs of a stage share theirs.
    texts: dict[str, str] = {}
    for path in paths:
        log = read_log(path)
        try:
            yield from _log_observations(log, logs, texts)
        except (UnreadableLog, OSError) as error:
            raise ReportError(
                f"{side}: cannot read {path!r} as an Inspect log ({error})"
            ) from error
        if on_log_read is not None:
            on_log_read(path)


def _log_observations(
    log: LogRead, logs: list[LogSummary], texts: dict[str, str]
) -> Iterator[Observation]:
    scores = LogScores(log, keep_scoreless=True)
    for sample, name, kind, score in scores:
        try:
            run = _run(kind, score, log.path, texts)
        except UnreadableScore as error:
            raise UnreadableScore(
                f"{log.path}: sample {sample.id!r} epoch {sample.epoch}, "
                f"score {name!r}: {error}"
            ) from None
        yield Observation(name, kind, sample.id, sample.epoch, run)
    assert scores.scoreless is not None
    for name, kind in scores.scorers.items():
        for sample_id, epoch, errored in scores.scoreless:
            explanation = _NO_SCORE_ERRORED if errored else _NO_SCORE
            yield Observation(
                name, kind, sample_id, epoch, Run(NO_SCORE, None, explanation, log.path)
            )
    logs.append(scores.summary())


def _run(kind: str, score: ScoreRead, path: str, texts: dict[str, str]) -> Run:
    """The state of one tracegrade score, checked as `tracegrade report`
    checks it; `UnreadableScore` says what is wrong, the caller where."""
    metadata: dict[str, Any] = score.metadata
    explanation = score.explanation
    if explanation is not None:
        explanation = texts.setdefault(explanation, explanation)
    error = metadata["error"]
    if error is not None and (
        not isinstance(error, dict) or error.get("side") not in ("data", "answer")
    ):
        raise UnreadableScore(
            f"metadata error must be null or have a side, got {error!r}"
        )
    if error is not None and error["side"] == "data":
        return Run(DATA_ERROR, None, explanation, path)
    if kind == STAGE:
        return _stage_run(score.value, metadata, explanation, path)
    if kind == EXTRACTION:
        return _extraction_run(score.value, explanation, path)
    raise UnreadableScore(f"no tracegrade scorer {kind!r}")


def _stage_run(
    value: Any, metadata: dict[str, Any], explanation: str | None, path: str
) -> Run:
    stage = _STAGES.get(value) if isinstance(value, str) else None
    if stage is None:
        raise UnreadableScore(
            f"the value must be one of {', '.join(DIAGNOSED)}, got {value!r}"
        )
    if stage == "unresolved":
        return Run(stage, None, explanation, path)
    result = metadata["result"]
    missing = result.get("missing") if isinstance(result, dict) else None
    if not isinstance(missing, list) or not all(isinstance(i, str) for i in missing):
        raise UnreadableScore(
            f"a diagnosed score needs the ID list result.missing, got {missing!r}"
        )
    return Run(stage, tuple(missing), explanation, path)


def _extraction_run(value: Any, explanation: str | None, path: str) -> Run:
    if (
        not isinstance(value, dict)
        or type(value.get("membership")) is not bool
        or type(value.get("order")) is not bool
    ):
        raise UnreadableScore(
            f"the value must be {{'membership': bool, 'order': bool}}, got {value!r}"
        )
    if value["order"] and not value["membership"]:
        raise UnreadableScore(
            "order passes without membership, which the grading rules never give"
        )
    if value["order"]:
        return Run("pass", None, explanation, path)
    if value["membership"]:
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


def _warnings(base: SideSummary, new: SideSummary, paired: Paired) -> list[str]:
    warnings: list[str] = []
    for side, summary in zip(SIDES, (base, new), strict=True):
        warnings.extend(f"{side}: {w}" for w in part_warnings(summary.logs))
        for log in summary.logs:
            if log.status != "success":
                warnings.append(
                    f"{side}: {log.path} has status {log.status!r}; only its "
                    "logged samples are compared."
                )
            if not log.tracegrade_scores:
                warnings.append(
                    f"{side}: {log.path} holds no tracegrade score; its "
                    f"{log.samples} samples are not compared."
                )
    for side, scores in (
        ("BASE", paired.scores_only_in_base),
        ("NEW", paired.scores_only_in_new),
    ):
        for score, runs in scores.items():
            warnings.append(
                f"score {score!r} is in {side} only ({runs} runs); it is not compared."
            )
    if base.tasks != new.tasks:
        warnings.append(
            f"BASE ran {', '.join(base.tasks)} and NEW ran {', '.join(new.tasks)}: "
            "samples are paired by sample id and epoch alone."
        )
    return warnings


__all__ = [
    "EFFECT_SIZE",
    "JSON_FORMAT",
    "TEST",
    "Comparison",
    "SideSummary",
    "UnreadableScore",
    "compare_logs",
]
