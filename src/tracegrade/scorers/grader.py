"""Where a stage run's label comes from: metadata, labels file, grader or score."""

from __future__ import annotations

import inspect
import math
from typing import Any, cast

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_create, registry_info

from ..core.errors import quote
from ..labels import StaffLabels
from .arguments import ArgumentError
from .key_warnings import KeyWatch, listed_keys
from .outcome import metadata_source

_GRADER_FIELDS = ("value", "answer", "explanation", "reason", "metadata")


class LabelScorerError(ArgumentError):
    """No usable `label_scorer` or `label_from`, or more than one label source."""


def label_from_value(value: Any) -> bool | None:
    """The label a grader's score value gives, or None (docs/scores.md's table)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {CORRECT: True, INCORRECT: False}.get(value)
    if isinstance(value, int | float) and value in (0, 1):  # never NaN
        return value == 1
    return None


class LabelSource:
    """The one label source a stage scorer was given, checked when built."""

    def __init__(
        self, correct_key: str, labels: Any, label_scorer: Any, label_from: Any
    ) -> None:
        _one_label_source(labels, label_scorer, label_from)
        self.key, self.label_from = correct_key, label_from
        self.staff = StaffLabels.read(labels) if labels is not None else None
        self.grader = None if label_scorer is None else _grader(label_scorer)
        self.name: str | None = label_from
        self.read_from = metadata_source(correct_key)
        if self.grader is not None:
            self.name = registry_info(self.grader).name.removeprefix("inspect_ai/")
            self.read_from = f"scorer {self.name}"
        elif label_from is not None:
            self.read_from = f"score {label_from}"
        elif self.staff is not None:
            self.read_from = f"labels file {self.staff.path}"

    async def read(
        self, state: TaskState, target: Target, record: dict[str, Any], watch: KeyWatch
    ) -> tuple[str | None, dict[str, Any] | None]:
        """Put the run's label in `record`; return why a grader or score gave
        none, and the stage score's `grader` metadata."""
        given: Score | None = None
        if self.staff is not None:
            found = self.staff.label_for(state.sample_id, state.epoch)
            watch.note("labels", found is not None, lambda: self._unlabelled(state))
            if found is not None:
                record["correct"] = found
        elif self.grader is not None:
            given = await self.grader(state, target)
        elif self.label_from is not None:
            given = (state.scores or {}).get(self.label_from)
            absent = lambda: self._no_given_score(state)  # noqa: E731
            watch.note("label_from", given is not None, absent)
        else:
            watch.read_key(state, record, "correct", self.key)
        label = None if given is None else label_from_value(given.value)
        if label is not None:
            record["correct"] = label
        if self.name is None:
            return None, None
        no_label = None if "correct" in record else self._why_no_label(given)
        grader = {field: getattr(given, field, None) for field in _GRADER_FIELDS}
        return no_label, {"name": self.name} | grader

    def _why_no_label(self, score: Score | None) -> str:
        name, from_score = self.name, self.grader is None
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
            f"The {'score' if from_score else 'grader'} {name} {what}, which is not "
            'a label (only CORRECT "C", true or 1 and INCORRECT "I", false or 0 '
            "are), so the answer cannot be called correct or incorrect."
        )

    def _unlabelled(self, state: TaskState) -> str:
        assert self.staff is not None
        return (
            f"stage_diagnosis: labels file {self.staff.path} has no label for sample "
            f"{quote(state.sample_id)} epoch {state.epoch}, nor for any run scored "
            f"before it. It labels ids {listed_keys(self.staff.ids())}. A run "
            "without a label is answer-label. If the file matches no sample, check "
            'its ids: they match sample ids exactly, type included ("1" is not 1).'
        )

    def _no_given_score(self, state: TaskState) -> str:
        name = quote(self.label_from)
        return (
            f"stage_diagnosis: sample {quote(state.sample_id)} has no score {name} "
            f"(label_from={name}), and no run scored before it had one. Its "
            f"scores: {listed_keys(state.scores or {})}. A run without it has no "
            "label: answer-label. The score must come from a scorer listed before "
            "stage_diagnosis, or from the log under inspect score --action append "
            "(--action overwrite scores without the log's scores). If no sample "
            "has it, check label_from."
        )


def _grader(grader: Any) -> Scorer:
    """A registered scorer (the log records it by name), or one made by name."""
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
    name = info.name.removeprefix("inspect_ai/")
    if info.type != "scorer":
        raise LabelScorerError(
            f"label_scorer {quote(info.name)} is a registered {info.type}, not a scorer"
        )
    # The `@scorer` function shares the registry entry of the scorer it makes.
    if not any(map(inspect.iscoroutinefunction, (grader, type(grader).__call__))):
        raise LabelScorerError(
            f"label_scorer {name} is the @scorer function, not a scorer; call it: "
            f"label_scorer={name}() (with any arguments it takes)"
        )
    return cast(Scorer, grader)


def _one_label_source(labels: Any, label_scorer: Any, label_from: Any) -> None:
    given = [
        f"{argument}={shown}"
        for argument, value, shown in (
            ("labels", labels, quote(labels)),
            ("label_scorer", label_scorer, _shown_grader(label_scorer)),
            ("label_from", label_from, quote(label_from)),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise LabelScorerError(
            f"{' and '.join(given)} were given, but a run's label has one "
            "source: a staff labels file (labels), a grader (label_scorer) or an "
            "earlier scorer's score (label_from); give one"
        )
    if label_from is not None and not (
        isinstance(label_from, str) and label_from.strip()
    ):
        raise LabelScorerError(
            f"label_from must name a score an earlier scorer gives, such as "
            f'"model_graded_qa", got {quote(label_from)}'
        )


def _shown_grader(grader: Any) -> str:
    """A grader as it was written: `"match"`, `match()`, `match`."""
    if isinstance(grader, str):
        return quote(grader)
    try:
        name = registry_info(grader).name.removeprefix("inspect_ai/")
    except ValueError:  # not registered
        return str(getattr(grader, "__name__", type(grader).__name__))
    return f"{name}()" if inspect.iscoroutinefunction(grader) else name
