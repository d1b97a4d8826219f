"""Where a RAG solver records the context IDs it actually supplied.

The stage diagnosis needs the context a run really used, not the one it
was supposed to use, and only the solver knows it. A solver records it
through `RetrievalTrace`; the scorer reads it back from the sample store,
which Inspect also writes to the log, so `inspect score` sees the same
context later.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.util import Store, StoreModel
from pydantic import Field


class RetrievalTrace(StoreModel):
    """The context document IDs a run supplied to the model, and, where the
    pipeline has several, the IDs each of its steps output.

    `None` (the default) means the retrieval step never recorded anything,
    which the stage scorer reports as invalid input: a run with no
    recorded context cannot be diagnosed, and is not guessed to be empty.
    The field is strict, so a tuple or a non-string ID fails where the
    solver sets it rather than later in the scorer.

    Example, in a RAG solver:

    ```python
    @solver
    def retrieve(index: MyIndex) -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            documents = index.search(state.input_text)
            state.store_as(RetrievalTrace).context = [d.id for d in documents]
            ...  # put the documents into the prompt
            return state

        return solve
    ```

    `steps` is optional: the pipeline's steps in order, each the IDs it
    output in rank order, as `{"name": "retriever", "ids": [...]}`. With
    them the stage score says where each missing document was lost
    (`tracegrade.core.steps`); `context` stays what reached the model:

    ```python
    trace = state.store_as(RetrievalTrace)
    trace.steps = [
        {"name": "retriever", "ids": retrieved},  # top 20
        {"name": "reranker", "ids": reranked},  # top 5 of those
    ]
    trace.context = reranked[:3]  # what the prompt holds
    ```
    """

    context: list[str] | None = Field(default=None, strict=True)
    steps: list[dict[str, Any]] | None = Field(default=None)


def context_store_key() -> str:
    """The store key `RetrievalTrace.context` lives under.

    `StoreModel` keys fields as `ClassName:field`; the scorer reads that key
    directly because reading through the model would write the default
    back into the store and quietly coerce what it finds (a tuple becomes
    a list), and the contract check belongs to the core, not to pydantic.
    """
    return f"{RetrievalTrace.__name__}:context"


def steps_store_key() -> str:
    """The store key `RetrievalTrace.steps` lives under (see `context_store_key`)."""
    return f"{RetrievalTrace.__name__}:steps"


def recorded_context(store: Store) -> Any:
    """The raw recorded context, or `None` when nothing was recorded."""
    return store.get(context_store_key(), None)


def record_context(store: Store, context: Any) -> None:
    """Record `context` exactly as given, valid or not.

    Replaying a recorded run must reproduce its out-of-contract contexts
    too, so that the scorer, not this setter, is what reports them.
    """
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
