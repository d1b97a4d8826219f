"""Where a RAG solver records the context IDs it supplied, in the logged store."""

from __future__ import annotations

from typing import Any

from inspect_ai.util import StoreModel
from pydantic import Field


class RetrievalTrace(StoreModel):
    """The context IDs a run supplied to the model (None: not recorded) and each
    pipeline step's output IDs (docs/scores.md, docs/pipeline-steps.md)."""

    context: list[str] | None = Field(default=None, strict=True)
    steps: list[dict[str, Any]] | None = Field(default=None)


# The keys are read raw: the model would coerce what it finds, and the
# contract check belongs to the core.
def context_store_key() -> str:
    return f"{RetrievalTrace.__name__}:context"


def steps_store_key() -> str:
    return f"{RetrievalTrace.__name__}:steps"
