"""Where in the pipeline the missing documents were lost, over many runs:
per step, and at the prompt's cut (docs/report.md)."""

from __future__ import annotations

import re
import statistics
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from ..core.steps import CONTEXT, Step, ndcg_at, reciprocal_rank
from ..schema import LostID
from .runs import ExactSum

NDCG_DEPTH: Final = 10  # trec_eval's `ndcg_cut.10`
# IDs lost at the cut within this many ranks below it are counted apart: a
# k larger by at most this would have kept them.
NEAR_THE_CUT: Final = 5

_CALL = re.compile(r"(.+)#[1-9][0-9]*")


def by_tool(steps: Sequence[Step]) -> list[Step]:
    """Each tool's calls (`search#1`, `search#2`) as one step `search`, its
    IDs in the order received, each once; other steps as they are."""
    merged: dict[str, dict[str, None]] = {}
    for step in steps:
        merged.setdefault(tool_of(step.name), {}).update(dict.fromkeys(step.ids))
    return [Step(name, list(ids)) for name, ids in merged.items()]


def tool_of(step: str) -> str:
    """The tool of a call's step name (`search#2`: `search`), else the name."""
    call = _CALL.fullmatch(step)
    return call.group(1) if call else step


@dataclass(frozen=True)
class StepFigures:
    step: str
    runs: int
    recall: float | None
    mrr: float | None
    ndcg: float | None
    lost: int
    lost_share: float | None


@dataclass(frozen=True)
class LostAtTheCut:
    lost: int
    share: float | None
    median_last_rank: float | None
    near: int
    near_the_cut: int


@dataclass(frozen=True)
class PipelineLosses:
    runs: int
    missing: int
    ndcg_depth: int
    steps: list[StepFigures]
    context: LostAtTheCut


@dataclass
class _StepSums:
    recall: ExactSum = field(default_factory=ExactSum)
    rr: ExactSum = field(default_factory=ExactSum)
    ndcg: ExactSum = field(default_factory=ExactSum)


@dataclass
class PipelineTally:
    """Counts a report's runs with steps as they are read; only sums and
    the last ranks of IDs lost at the cut are kept."""

    runs: int = 0
    missing: int = 0
    lost_at: Counter[str] = field(default_factory=Counter)
    sums: dict[str, _StepSums] = field(default_factory=dict)
    cut_ranks: array[int] = field(default_factory=lambda: array("q"))
    near_the_cut: int = 0

    def add(
        self,
        required: Sequence[str],
        cut: int,
        steps: Sequence[Step],
        lost: Sequence[LostID] | None,
    ) -> None:
        """Count one diagnosed run with steps, as its score gives them
        (`tracegrade.schema.StageScore`): `cut` is the IDs its prompt held."""
        self.runs += 1
        steps = by_tool(steps)
        for step in steps:
            self.sums.setdefault(step.name, _StepSums())
        if required:
            # One set for every step: work in proportion to the steps' IDs.
            wanted = frozenset(required)
            for step in steps:
                sums = self.sums[step.name]
                sums.recall.add(len(wanted.intersection(step.ids)) / len(wanted))
                sums.rr.add(reciprocal_rank(wanted, step.ids))
                sums.ndcg.add(ndcg_at(wanted, step.ids, NDCG_DEPTH))
        for document in lost or ():
            self.missing += 1
            self.lost_at[tool_of(document.lost_at)] += 1
            if document.lost_at == CONTEXT and document.last_rank is not None:
                self.cut_ranks.append(document.last_rank)
                self.near_the_cut += document.last_rank <= cut + NEAR_THE_CUT

    def summary(self) -> PipelineLosses | None:
        """The figures, or None when no run had steps."""
        if not self.runs:
            return None

        def share(count: int) -> float | None:
            return count / self.missing if self.missing else None

        steps = []
        for name, sums in self.sums.items():
            runs = sums.recall.count
            steps.append(
                StepFigures(
                    step=name,
                    runs=runs,
                    recall=sums.recall.mean(runs),
                    mrr=sums.rr.mean(runs),
                    ndcg=sums.ndcg.mean(runs),
                    lost=self.lost_at[name],
                    lost_share=share(self.lost_at[name]),
                )
            )
        at_the_cut = self.lost_at[CONTEXT]
        return PipelineLosses(
            runs=self.runs,
            missing=self.missing,
            ndcg_depth=NDCG_DEPTH,
            steps=steps,
            context=LostAtTheCut(
                lost=at_the_cut,
                share=share(at_the_cut),
                median_last_rank=(
                    float(statistics.median(self.cut_ranks)) if self.cut_ranks else None
                ),
                near=NEAR_THE_CUT,
                near_the_cut=self.near_the_cut,
            ),
        )
