"""Where a RAG solver records the context IDs it actually supplied.

Only the solver knows the context a run really used; the store is written
to the log, so `inspect score` sees it later.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.util import Store, StoreModel
from pydantic import Field


class RetrievalTrace(StoreModel):
    """The context IDs a run supplied to the model and, optionally, each
    pipeline step's output IDs (docs/scores.md, docs/pipeline-steps.md).

    `None` means nothing was recorded, which is invalid input, never an
    empty context; the field is strict, so a bad value fails in the solver.
    """

    context: list[str] | None = Field(default=None, strict=True)
    steps: list[dict[str, Any]] | None = Field(default=None)


def context_store_key() -> str:
    """The store key `RetrievalTrace.context` lives under, read directly:
    the model would write its default back and coerce what it finds, and
    the contract check belongs to the core."""
    return f"{RetrievalTrace.__name__}:context"


def steps_store_key() -> str:
    """The store key `RetrievalTrace.steps` lives under (see `context_store_key`)."""
    return f"{RetrievalTrace.__name__}:steps"


def recorded_context(store: Store) -> Any:
    """The raw recorded context, or `None` when nothing was recorded."""
    return store.get(context_store_key(), None)


def record_context(store: Store, context: Any) -> None:
    """Record `context` exactly as given, valid or not, so that the scorer
    reports a replayed run's out-of-contract context."""
    store.set(context_store_key(), context)


def record_steps(store: Store, steps: Any) -> None:
    """Record a run's steps exactly as given, as `record_context` does."""
    store.set(steps_store_key(), steps)


__all__ = [
    "RetrievalTrace",
    "context_store_key",
    "record_context",
    "record_steps",
    "recorded_context",
    "steps_store_key",
]
