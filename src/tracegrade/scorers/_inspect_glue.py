"""A scorer instance with metrics of its own (private Inspect symbols come
from `tracegrade._inspect_internals`).

A stage scorer given a labels file must fail the run if a label names no
sample, and the end of scoring is the first moment that is known. Inspect
calls a scorer's metrics exactly then, with no other hook, so such a
scorer carries its own metrics that check first. Giving one scorer
instance its own metrics is what Inspect's `precomputed_scores` and
`resolve_scorer_metrics` do, with these same internals; if a release moves
them, this module is what to update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, cast

from inspect_ai.scorer import Metric, MetricProtocol, SampleScore, Scorer, Value
from inspect_ai.util import registry_info

from .._inspect_internals import (
    REGISTRY_PARAMS,
    SCORER_METRICS,
    RegistryInfo,
    registry_name,
    registry_params,
    registry_tag,
    scorer_register,
    set_registry_info,
)

P = ParamSpec("P")


def register_scorer(
    factory: Callable[P, Scorer], name: str, metrics: Sequence[Metric]
) -> Callable[P, Scorer]:
    """Register `factory` as `<package>/<name>`, as `@scorer` would."""
    return scorer_register(
        factory,
        name=registry_name(factory, name),
        metadata={SCORER_METRICS: list(metrics)},
    )


def tag_scorer(
    factory: Callable[..., Scorer],
    scorer: Scorer,
    name: str,
    metrics: Sequence[Metric],
    **params: Any,
) -> Scorer:
    """Mark one scorer instance with its name, arguments and own metrics."""
    registry_tag(
        factory,
        scorer,
        RegistryInfo(
            type="scorer",
            name=registry_name(factory, name),
            metadata={SCORER_METRICS: list(metrics)},
        ),
        **params,
    )
    return scorer


def checked_first(metric: Metric, check: Callable[[list[SampleScore]], None]) -> Metric:
    """`metric`, running `check` on the scores before it computes anything.

    The copy keeps the metric's registry name and arguments, so the log
    records the plain metric and recomputing it later needs no check.
    """

    def checked(scores: list[SampleScore]) -> Value:
        check(scores)
        return cast(MetricProtocol, metric)(scores)

    set_registry_info(checked, registry_info(metric))
    setattr(checked, REGISTRY_PARAMS, registry_params(metric))
    return checked
