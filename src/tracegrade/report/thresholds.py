"""`--fail-under NAME=VALUE` over every run (docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Final

from ..core.errors import quote
from ..schema import EXTRACTION_SCORER, STAGE_SCORER

# Each metric `--fail-under` takes, and the scorer whose runs it is of.
METRICS: Final = {
    **dict.fromkeys(("pass", "context_recall", "context_precision"), STAGE_SCORER),
    **dict.fromkeys(("membership", "order"), EXTRACTION_SCORER),
}
OVER_ALL_RUNS: Final = (
    "over all runs: runs not diagnosed (sample errors, data errors, runs without the "
    "score or never run) count as not passing; context recall and precision are means "
    "over the runs with the figure and the runs not diagnosed, which count 0"
)


class InvalidThreshold(ValueError):
    """Not NAME=VALUE in [0, 1], or a metric of no eval read."""


@dataclass(frozen=True)
class Threshold:
    metric: str
    minimum: float
    text: str


@dataclass(frozen=True)
class ThresholdCheck:
    metric: str
    threshold: float
    value: float | None
    met: bool
    eval: str
    task: str
    model: str
    score: str
    runs: int


@dataclass(frozen=True)
class Target:
    eval: str
    task: str
    model: str
    score: str
    kind: str
    runs: int
    over_all_runs: Mapping[str, float | None]


def parse_threshold(text: str) -> Threshold:
    """`pass=0.8` as a `Threshold`; `InvalidThreshold` quoting what is wrong."""
    name, equals, value = (part.strip() for part in text.partition("="))
    metrics = ", ".join(METRICS)
    if not equals:
        raise InvalidThreshold(
            f"{quote(text)} is not NAME=VALUE (such as pass=0.8); NAME is one "
            f"of {metrics}"
        )
    if name not in METRICS:
        raise InvalidThreshold(f"no metric {quote(name)}; --fail-under takes {metrics}")
    try:
        exact = Decimal(value)
    except InvalidOperation:
        exact = Decimal("NaN")
    if not exact.is_finite() or not 0 <= exact <= 1:
        what = "be a number" if exact.is_nan() else "lie"
        raise InvalidThreshold(
            f"{name}: the threshold must {what} in [0, 1] (a share, 0.8 for 80%), "
            f"got {quote(value)}"
        )
    minimum = float(exact)
    # A double drops digits silently: 0.50000000000000001 would pass by 0.5.
    if Decimal(repr(minimum)) != exact:
        raise InvalidThreshold(
            f"{name}: the threshold {quote(value)} has more digits than a share "
            f"is compared with, as a double it is {minimum!r}: give a number of "
            "at most 15 significant digits"
        )
    return Threshold(name, minimum, value)


def check_thresholds(
    thresholds: Sequence[Threshold], targets: Sequence[Target]
) -> list[ThresholdCheck]:
    """Each threshold against every target of its scorer."""
    checks: list[ThresholdCheck] = []
    for threshold in thresholds:
        kind = METRICS[threshold.metric]
        found = [target for target in targets if target.kind == kind]
        if not found:
            raise InvalidThreshold(
                f"--fail-under {threshold.metric}={threshold.text}: no "
                f"{kind} score was read to check it against"
            )
        for target in found:
            value = target.over_all_runs.get(threshold.metric)
            met = value is not None and value >= threshold.minimum
            where = target.eval, target.task, target.model, target.score, target.runs
            checks.append(
                ThresholdCheck(threshold.metric, threshold.minimum, value, met, *where)
            )
    return checks


def threshold_line(check: ThresholdCheck) -> str:
    """ "pass 0.4333 < 0.8 in E1 (task, model), stage_diagnosis, over all 30 runs"."""
    value = "none (no runs)" if check.value is None else f"{check.value:.4f}"
    threshold = f"{check.threshold:g}"
    if float(threshold) != check.threshold:
        threshold = repr(check.threshold)
    if check.value is not None and (float(value) >= check.threshold) != check.met:
        value = repr(check.value)  # four decimals would read as the other side
    relation = "is not >=" if check.value is None else ">=" if check.met else "<"
    return (
        f"{check.metric} {value} {relation} {threshold} in {check.eval} "
        f"({check.task}, {check.model}), {check.score}, over all {check.runs} runs"
    )
