"""Where in the pipeline each missing document was lost (docs/pipeline-steps.md)."""

from __future__ import annotations

import math
from collections.abc import Container, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, TypedDict

from .errors import InvalidRecord
from .fields import id_list

CONTEXT = "context"  # lost_at of an ID no step dropped that missed the model


@dataclass(frozen=True)
class Step:
    """A step's output in rank order, and the steps it took (None: the one before)."""

    name: str
    ids: list[str]
    inputs: list[str] | None = None


class LostDocument(TypedDict):
    id: str
    lost_at: str
    last_step: str | None
    last_rank: int | None


_STEP_FORM = 'an object {"name": "...", "ids": [...], "inputs"?: [...]}'


def read_steps(record: Mapping[str, Any]) -> list[Step] | None:
    """The record's steps, checked; None when it has none (absent or null)."""
    steps = record.get("steps")
    if steps is None:
        return None
    if type(steps) is not list or not steps:
        problem = (
            f"must be an array of steps, each {_STEP_FORM}"
            if type(steps) is not list
            else "must list at least one step; leave it out when the pipeline's "
            "steps were not recorded"
        )
        raise InvalidRecord("steps", steps, problem)
    seen: dict[str, int] = {}
    for position, step in enumerate(steps):
        where = f"steps[{position}]"
        if type(step) is not dict or "name" not in step or "ids" not in step:
            raise InvalidRecord(where, step, f"must be {_STEP_FORM}")
        name = step["name"]
        if not isinstance(name, str) or not name:
            problem = "must be a non-empty string"
        elif name == CONTEXT:
            problem = 'is reserved: lost_at "context" means an ID no step dropped'
        elif name in seen:
            problem = f"names steps[{seen[name]}] too; a record's step names are unique"
        else:
            try:
                _check_step(step, seen)
            except InvalidRecord as invalid:
                field = f"{where}.{invalid.field}"
                problem = f"(step {name!r}) {invalid.problem}"
                raise InvalidRecord(field, invalid.value, problem) from None
            seen[name] = position
            continue
        raise InvalidRecord(f"{where}.name", name, problem)
    return [Step(step["name"], step["ids"], step.get("inputs")) for step in steps]


def _check_step(step: Mapping[str, Any], earlier: Container[str]) -> None:
    ids = id_list(step, "ids")
    inputs = [] if step.get("inputs") is None else id_list(step, "inputs")
    for position, item in enumerate(inputs):
        if item not in earlier or item in inputs[:position]:
            problem = "must name an earlier step, once"
            raise InvalidRecord(f"inputs[{position}]", item, problem)
    # A ranking holds a document once; which rank counts would be a guess.
    ranks: dict[str, int] = {}
    for rank, item in enumerate(ids if len(set(ids)) != len(ids) else (), 1):
        if item in ranks:
            problem = f"repeats rank {ranks[item]}; a step ranks each ID once"
            raise InvalidRecord(f"ids[{rank - 1}]", item, problem)
        ranks[item] = rank


def _takers(steps: Sequence[Step]) -> dict[str, str]:
    takers: dict[str, str] = {}
    for position, step in enumerate(steps):
        inputs = step.inputs
        if inputs is None:
            inputs = [steps[position - 1].name] if position else []
        for name in inputs:
            takers.setdefault(name, step.name)
    return takers


def lost_documents(missing: Sequence[str], steps: Sequence[Step]) -> list[LostDocument]:
    """Where each missing ID, in the order given, was lost."""
    ranks = [{item: rank for rank, item in enumerate(step.ids, 1)} for step in steps]
    takers = _takers(steps)
    lost: list[LostDocument] = []
    for item in missing:
        held = [
            (s.name, r[item]) for s, r in zip(steps, ranks, strict=True) if item in r
        ]
        last_step, last_rank = held[-1] if held else (None, None)
        lost_at = steps[0].name if last_step is None else takers.get(last_step, CONTEXT)
        lost.append(LostDocument(id=item, lost_at=lost_at, last_step=last_step,
                                 last_rank=last_rank))  # fmt: skip
    return lost


def first_steps(steps: Sequence[Step]) -> list[Step]:
    """The steps that took no other step's output: the retrievers."""
    return [
        step
        for position, step in enumerate(steps)
        if not (step.inputs if step.inputs is not None else position)
    ]


def step_recalls(required: Sequence[str], steps: Sequence[Step]) -> dict[str, float]:
    """Each step's share of the unique required IDs (at least one) in its output."""
    wanted = set(required)
    if not wanted:
        raise ValueError("recall needs at least one required ID")
    return {
        step.name: len(wanted.intersection(step.ids)) / len(wanted) for step in steps
    }


def reciprocal_rank(wanted: AbstractSet[str], ranked: Sequence[str]) -> float:
    """trec_eval's `recip_rank`: 1 over the rank of the first wanted ID, else 0.0."""
    return next((1 / rank for rank, i in enumerate(ranked, 1) if i in wanted), 0.0)


def ndcg_at(wanted: AbstractSet[str], ranked: Sequence[str], k: int) -> float:
    """trec_eval's `ndcg_cut.k`, the wanted (at least one) IDs each of gain 1."""
    if not wanted:
        raise ValueError("nDCG needs at least one required ID")
    gain = sum(
        1 / math.log2(rank + 1)
        for rank, item in enumerate(ranked[:k], 1)
        if item in wanted
    )
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(k, len(wanted)) + 1))
    return gain / ideal
