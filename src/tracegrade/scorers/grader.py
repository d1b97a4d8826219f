"""Labels from a grader: any Inspect scorer's verdict, read one documented way.

Only docs/scores.md's grader table makes a label, stricter than `value_to_float`."""

from __future__ import annotations

import inspect
import math
from typing import Any, cast

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer
from inspect_ai.util import registry_create, registry_info

from ..core.errors import quote
from .arguments import ArgumentError


class LabelScorerError(ArgumentError):
    """A `label_scorer` or `label_from` that is no usable grader, or more
    than one label source."""


def label_from_value(value: Any) -> bool | None:
    """The label a grader's score value gives, or None (docs/scores.md's table)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {CORRECT: True, INCORRECT: False}.get(value)
    if isinstance(value, int | float) and value in (0, 1):  # never NaN
        return value == 1
    return None


def resolve_label_scorer(grader: Any) -> Scorer:
    """The grader, from a scorer or its registry name (made with no arguments);
    only a registered scorer, since the log records it by name."""
    if isinstance(grader, str):
        try:
            grader = registry_create("scorer", grader.strip())
        except LookupError:
            raise LabelScorerError(
                f"label_scorer {quote(grader)} is not a registered Inspect scorer; "
                'give a scorer\'s registry name, such as "match", "includes" or '
                '"model_graded_qa" (a package\'s own as "package/name")'
            ) from None
        except TypeError as error:
            raise LabelScorerError(
                f"label_scorer {quote(grader)} cannot be made without arguments "
                f"({error}); pass the scorer itself from Python instead"
            ) from None
    if not callable(grader):
        raise LabelScorerError(
            f"label_scorer must be an Inspect scorer or its registry name, "
            f"got {quote(grader)}"
        )
    try:
        info = registry_info(grader)
    except ValueError:
        raise LabelScorerError(
            f"label_scorer {getattr(grader, '__name__', quote(grader))!s} was not "
            "made by a function decorated with @scorer; Inspect records a grader "
            "by its registry name, so only a registered scorer can be one"
        ) from None
    if info.type != "scorer":
        raise LabelScorerError(
            f"label_scorer {quote(info.name)} is a registered {info.type}, not a scorer"
        )
    # The `@scorer` function shares the registry entry of the scorer it makes.
    if not (
        inspect.iscoroutinefunction(grader)
        or inspect.iscoroutinefunction(type(grader).__call__)
    ):
        name = info.name.removeprefix("inspect_ai/")
        raise LabelScorerError(
            f"label_scorer {name} is the @scorer function, not a scorer; call it: "
            f"label_scorer={name}() (with any arguments it takes)"
        )
    return cast(Scorer, grader)


def grader_name(grader: Scorer) -> str:
    """The registry name Inspect logs: `match`, not `inspect_ai/match`."""
    return registry_info(grader).name.removeprefix("inspect_ai/")


def grader_metadata(name: str, score: Score | None) -> dict[str, Any]:
    """The stage score's `metadata["grader"]`: the grader's own score."""
    fields = ("value", "answer", "explanation", "reason", "metadata")
    return {"name": name} | {
        field: None if score is None else getattr(score, field, None)
        for field in fields
    }


def why_no_label(from_score: bool, name: str, score: Score | None) -> str:
    """Why a run has no label, quoting what the grader (or given score) gave."""
    if score is None and from_score:
        return (
            f"No score {quote(name)} was given to this run before the stage "
            f"diagnosis (label_from={quote(name)}), so the answer cannot be "
            "called correct or incorrect."
        )
    if score is None:
        what = "returned no score"
    elif isinstance(score.value, float) and math.isnan(score.value):
        what = "left the run unscored (NaN)"
    else:
        what = f"gave {quote(score.value, 80)}"
    return (
        f"The {'score' if from_score else 'grader'} {name} {what}, which is not a "
        'label (only CORRECT "C", true or 1 and INCORRECT "I", false or 0 are), '
        "so the answer cannot be called correct or incorrect."
    )
