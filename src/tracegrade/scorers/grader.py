"""Labels from a grader: any Inspect scorer's verdict, read one documented way.

The stage scorer takes a label from a grader in two ways: it runs one on
the same state and target (`stage_diagnosis_scorer(label_scorer=match())`),
or it reads the score an earlier scorer of the same sample already gave
(`label_from="model_graded_qa"`), so a model judge is called once. Either
way the score's value becomes the label the rules need by this table, and
nothing else:

| grader value | label |
|---|---|
| `CORRECT` (`"C"`), `True`, `1`, `1.0` | `true` |
| `INCORRECT` (`"I"`), `False`, `0`, `0.0` | `false` |
| `PARTIAL` (`"P"`), `NOANSWER` (`"N"`) | none |
| any other number (`0.5`, `2`, `-1`), NaN or infinity | none |
| any other string: `"1"`, `"0"`, `"c"`, `"true"`, `"yes"`, `"correct"` | none |
| a list or a dict | none |
| the grader returns no score (`None`); no earlier score of that name | none |

Numbers are read by value and type together: `True`, `1` and `1.0` are
the same verdict however the grader spells it, but a string is a label
only as Inspect's own constants spell it, exactly. This is stricter than
Inspect's `value_to_float`, which counts `NOANSWER` as 0, `"yes"` as 1
and `"0.5"` as 0.5: for an accuracy those are fair defaults, but a label
decides between `pass` and `generation`, and a label is never guessed.

"None" means the run has no label: its stage score is the `answer-label`
data error, and the explanation quotes what the grader gave. The grader's
own score (`value`, `answer`, `explanation`, `reason`, `metadata`) is kept
in the stage score's metadata under `grader`, whatever it was.

A grader that raises is not in the table: its error is the sample's, as
any scorer's is in Inspect. The sample is an error in the log, with its
traceback, and `inspect eval-retry` scores it again; a label is not lost
to a passing outage, nor a stage given without one.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Literal, cast

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_create, registry_info

from .._inspect_internals import PrerequisiteError
from ..core.errors import quote

LABEL_SOURCE: Literal["scorer"] = "scorer"
"""`read_from["correct"]` is `"scorer NAME"` for a label from a grader."""

GIVEN_SOURCE: Literal["score"] = "score"
"""`read_from["correct"]` is `"score NAME"` for a label from a score an
earlier scorer gave (`label_from`)."""


class LabelScorerError(PrerequisiteError):
    """A `label_scorer` or `label_from` argument that names or is no usable
    grader, or more than one label source.

    Not a `ValueError`, like `LabelsError` and for the same reason: Inspect's
    scorer loader (`inspect score --scorer ... -S label_scorer=...`) replaces
    a `ValueError` raised while building a scorer with "couldn't be
    loaded", hiding the value to fix. A `PrerequisiteError`, so Inspect's
    CLI prints the message alone, with no traceback.
    """

    def __init__(self, message: str) -> None:
        self.message = message
        Exception.__init__(self, message)


def label_from_value(value: Any) -> bool | None:
    """The label a grader's score value gives, or None; see the module table."""
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
    """The grader itself, from a scorer or its registry name.

    A name is what `inspect score -S label_scorer=match` passes; it is made
    with no arguments through Inspect's registry, as `--scorer` would make
    it. A scorer made without `@scorer` is refused: the log records a grader
    by its registry name, and `inspect score` and `eval-retry` rebuild it
    from there.
    """
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
