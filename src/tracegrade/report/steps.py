"""Where missing documents were lost: per step and at the prompt's cut."""

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
# IDs lost this near below the cut are counted apart: a larger k would keep them.
NEAR_THE_CUT: Final = 5

_CALL = re.compile(r"(.+)#[1-9][0-9]*")


def tool_of(step: str) -> str:
    """`search#2`: `search`; an agent's calls of one tool are one step."""
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
class PipelineTally:
    """Runs with steps, counted as read; only sums and cut ranks kept."""

    runs: int = 0
    missing: int = 0
    lost_at: Counter[str] = field(default_factory=Counter)
    # Each step's sums of recall, reciprocal rank and nDCG.
    sums: dict[str, tuple[ExactSum, ExactSum, ExactSum]] = field(default_factory=dict)
    cut_ranks: array[int] = field(default_factory=lambda: array("q"))
    near_the_cut: int = 0

    def add(
        self,
        required: Sequence[str],
        cut: int,
        steps: Sequence[Step],
        lost: Sequence[LostID] | None,
    ) -> None:
        """Count one diagnosed run with steps; `cut` is its context size."""
        self.runs += 1
        merged: dict[str, dict[str, None]] = {}
        for step in steps:
            merged.setdefault(tool_of(step.name), {}).update(dict.fromkeys(step.ids))
        # One set for every step: work in proportion to the steps' IDs.
        wanted = frozenset(required)
        for name, ids in merged.items():
            sums = self.sums.setdefault(name, (ExactSum(), ExactSum(), ExactSum()))
            if wanted:
                ranked = list(ids)
                sums[0].add(len(wanted.intersection(ranked)) / len(wanted))
                sums[1].add(reciprocal_rank(wanted, ranked))
                sums[2].add(ndcg_at(wanted, ranked, NDCG_DEPTH))
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

        steps = [
            StepFigures(
                name, n, recall.mean(n), rr.mean(n), ndcg.mean(n), lost, share(lost)
            )
            for name, (recall, rr, ndcg) in self.sums.items()
            for n, lost in [(recall.count, self.lost_at[name])]
        ]
        ranks = self.cut_ranks
        median = float(statistics.median(ranks)) if ranks else None
        cut = self.lost_at[CONTEXT]
        context = LostAtTheCut(cut, share(cut), median, NEAR_THE_CUT, self.near_the_cut)
        return PipelineLosses(self.runs, self.missing, NDCG_DEPTH, steps, context)
