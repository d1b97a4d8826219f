"""Labels from a grader: any Inspect scorer's verdict, read one documented way.

A label decides between `pass` and `generation`, so only the values in
docs/scores.md's grader table are labels, stricter than Inspect's
`value_to_float`; a grader that raises fails the sample, as any scorer's error.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Literal, cast

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_create, registry_info

from ..core.errors import quote
from .arguments import ArgumentError

LABEL_SOURCE: Literal["scorer"] = "scorer"
"""`read_from["correct"]` is `"scorer NAME"` for a label from a grader."""

GIVEN_SOURCE: Literal["score"] = "score"
"""`read_from["correct"]` is `"score NAME"` for a label from a score an
earlier scorer gave (`label_from`)."""


class LabelScorerError(ArgumentError):
    """A `label_scorer` or `label_from` that is no usable grader, or more
    than one label source."""


def label_from_value(value: Any) -> bool | None:
    """The label a grader's score value gives, or None (docs/scores.md's table)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value == CORRECT:
            return True
        if value == INCORRECT:
            return False
        return None
    if isinstance(value, int | float):
        # NaN and infinity compare unequal to both, so they fall through.
        if value == 1:
            return True
        if value == 0:
            return False
    return None


def resolve_label_scorer(grader: Any) -> Scorer:
    """The grader itself, from a scorer or its registry name (made with no
    arguments); only a registered scorer, since the log records it by name."""
    if isinstance(grader, str):
        name = grader.strip()
        try:
            made = registry_create("scorer", name)
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
        grader = made
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
    if not _is_async_callable(grader):
        # The `@scorer` function and the scorer it makes share a registry
        # entry; only the scorer is awaited with a state and a target.
        name = info.name.removeprefix("inspect_ai/")
        raise LabelScorerError(
            f"label_scorer {name} is the @scorer function, not a scorer; call it: "
            f"label_scorer={name}() (with any arguments it takes)"
        )
    return cast(Scorer, grader)


def _is_async_callable(candidate: Any) -> bool:
    """Whether calling `candidate` gives a coroutine: an `async def`, or an
    object whose `__call__` is one."""
    # Only callables get here, and a callable's type has a `__call__`.
    return inspect.iscoroutinefunction(candidate) or inspect.iscoroutinefunction(
        type(candidate).__call__
    )


def grader_name(grader: Scorer) -> str:
    """The grader's registry name as Inspect logs it: `match`, not
    `inspect_ai/match`; a package's own keeps its prefix."""
    name = registry_info(grader).name
    return name.removeprefix("inspect_ai/")


@dataclass(frozen=True)
class Verdict:
    """What one run's grader gave, and the label it makes.

    `source` is `LABEL_SOURCE` for a grader run by the stage scorer and
    `GIVEN_SOURCE` for a score an earlier scorer gave; `score` is None when
    the grader returned none, or the sample has no score of that name.
    """

    source: Literal["scorer", "score"]
    grader: str
    label: bool | None
    score: Score | None = None

    def as_metadata(self) -> dict[str, Any]:
        """The stage score's `metadata["grader"]`: the grader's own score."""
        score = self.score
        return {
            "name": self.grader,
            # A score's value is JSON but for NaN and infinity, which
            # Inspect writes to the log as it writes an unscored value.
            "value": None if score is None else score.value,
            "answer": None if score is None else score.answer,
            "explanation": None if score is None else score.explanation,
            # No `Score.reason` before Inspect 0.3.261.
            "reason": None if score is None else getattr(score, "reason", None),
            "metadata": None if score is None else score.metadata,
        }

    def why_no_label(self) -> str:
        """Why this run has no label, quoting what the grader gave."""
        if self.score is None and self.source == GIVEN_SOURCE:
            return (
                f"No score {quote(self.grader)} was given to this run before the "
                f"stage diagnosis (label_from={quote(self.grader)}), so the answer "
                "cannot be called correct or incorrect."
            )
        if self.score is None:
            what = "returned no score"
        elif _is_nan(self.score.value):
            what = "left the run unscored (NaN)"
        else:
            what = f"gave {quote(self.score.value, 80)}"
        who = "grader" if self.source == LABEL_SOURCE else "score"
        return (
            f"The {who} {self.grader} {what}, which is not a label (only "
            'CORRECT "C", true or 1 and INCORRECT "I", false or 0 are), '
            "so the answer cannot be called correct or incorrect."
        )


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


async def grade(grader: Scorer, name: str, state: TaskState, target: Target) -> Verdict:
    """Run the grader on the run's state and target.

    What it raises goes up: the sample's error, as for any scorer.
    """
    score = await grader(state, target)
    return given_verdict(name, score, source="scorer")


def given_verdict(
    name: str, score: Score | None, *, source: Literal["scorer", "score"] = "score"
) -> Verdict:
    """The verdict of `score`, named `name`; None for no score."""
    if score is None:
        return Verdict(source, name, None)
    return Verdict(source, name, label_from_value(score.value), score=score)


__all__ = [
    "GIVEN_SOURCE",
    "LABEL_SOURCE",
    "LabelScorerError",
    "Verdict",
    "given_verdict",
    "grade",
    "grader_name",
    "label_from_value",
    "resolve_label_scorer",
]
