"""Recorded runs replayed where a pipeline puts its values, invalid ones too."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ..core import canonical_json
from ..scorers.store import context_store_key, steps_store_key

REPLAY_MODEL = "tracegrade/replay"


def replayed_output(
    record: dict[str, Any], answer_key: str = "answer", output_key: str = "output"
) -> str | None:
    """A replayed run's output: its recorded answer as text (a list as its
    JSON), else its recorded output text, else none."""
    if answer_key in record:
        answer = record[answer_key]
        return answer if isinstance(answer, str) else canonical_json(answer)
    output = record.get(output_key)
    return output if isinstance(output, str) else None


@solver(name="replay")
def replay(
    context_key: str = "context",
    answer_key: str = "answer",
    output_key: str = "output",
    steps_key: str = "steps",
) -> Solver:
    """Replay a recorded run without a model: its context and steps go to
    `RetrievalTrace`, its answer or output text becomes the output."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        # Recorded as given, valid or not, so the scorer judges them.
        if context_key in state.metadata:
            state.store.set(context_store_key(), state.metadata[context_key])
        if steps_key in state.metadata:
            state.store.set(steps_store_key(), state.metadata[steps_key])
        text = replayed_output(state.metadata, answer_key, output_key)
        if text is not None:
            state.output = ModelOutput.from_content(model=REPLAY_MODEL, content=text)
            state.messages.append(state.output.message)
        return state

    return solve
