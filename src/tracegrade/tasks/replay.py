"""Replaying recorded runs, so the tasks need no model and no network.

The solver plays the parts a real pipeline would: the retrieval step
records the context it supplied, and the generation step leaves an output.
Both come from the sample's metadata, exactly as recorded, out-of-contract
values included, so that the scorer is what judges them.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ..core import canonical_json
from ..scorers.store import record_context, record_steps

REPLAY_MODEL = "tracegrade/replay"


def answer_text(answer: Any) -> str:
    """A recorded answer as the text a model would have given: a string as
    it is, a list of IDs (or any JSON) as compact JSON."""
    return answer if isinstance(answer, str) else canonical_json(answer)


def replayed_output(
    record: dict[str, Any], answer_key: str = "answer", output_key: str = "output"
) -> str | None:
    """The output text a replayed run shows: its recorded answer as text,
    else its recorded output as it is (when it is a text), else none."""
    if answer_key in record:
        return answer_text(record[answer_key])
    output = record.get(output_key)
    return output if isinstance(output, str) else None


@solver(name="replay")
def replay(
    context_key: str = "context",
    answer_key: str = "answer",
    output_key: str = "output",
    steps_key: str = "steps",
) -> Solver:
    """Replay a recorded run without calling a model.

    Args:
        context_key: Metadata key of the recorded context IDs; when present
            they are recorded in `RetrievalTrace`, as a RAG solver would.
            When absent, nothing is recorded, and the stage scorer reports
            the context as never recorded.
        answer_key: Metadata key of the recorded answer; when present it
            becomes the output (a list as its JSON text), for display and
            for scorers that grade the output.
        output_key: Metadata key of a recorded output text, which becomes
            the output as it is, when there is no recorded answer.
        steps_key: Metadata key of the recorded pipeline steps; when
            present they are recorded in `RetrievalTrace.steps`, as a RAG
            solver would.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if context_key in state.metadata:
            record_context(state.store, state.metadata[context_key])
        if steps_key in state.metadata:
            record_steps(state.store, state.metadata[steps_key])
        text = replayed_output(state.metadata, answer_key, output_key)
        if text is not None:
            state.output = ModelOutput.from_content(model=REPLAY_MODEL, content=text)
            state.messages.append(state.output.message)
        return state

    return solve
