"""A RAG agent diagnosed by tracegrade from its transcript alone.

A `react()` agent searches the packaged corpus (the BM25 index of
`rag_task.py`, beside this file) with a `search` tool as often as it
likes, then submits an answer. Nothing in the agent records anything for
tracegrade: the scorer reads what `search` returned to the model from the
sample's messages (`context_tools="search"`), each call a step
(`search#1`, `search#2`), and only the documents whose whole entry reached
the model count, after Inspect's truncation of long tool output
(`max_tool_output`). See docs/agents.md.

Run it with any model that calls tools (`pip install "tracegrade[rag]"`):

    inspect eval examples/agent_rag.py --model openai/gpt-4o-mini
    inspect eval examples/agent_rag.py --model openai/gpt-4o-mini --max-tool-output 2000

Diagnose an agent log after the fact, this one or any other whose tool
returns a documented shape:

    inspect score LOG --scorer tracegrade/stage_diagnosis \\
        -S context_tools=search -S label_scorer=match --action append --overwrite

Offline, `tests/test_agents.py` runs it on `mockllm/model` with outputs
made by `ModelOutput.for_tool_call`: one to three searches, then `submit`.
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.scorer import match
from inspect_ai.tool import Tool, tool
from rag_task import BM25Index, Document, packaged_lines, questions_dataset

from tracegrade import stage_diagnosis_scorer


@tool
def search(index: BM25Index) -> Tool:
    async def execute(query: str, k: int = 3) -> str:
        """Search the company's documents.

        Args:
            query: What to search for, in words the documents may use.
            k: How many documents to return, best first.
        """
        # tracegrade: a JSON array of objects with an "id", one shape it reads.
        return json.dumps([d._asdict() for d in index.search(query, k)])

    return execute


@task
def agent_rag() -> Task:
    """Answer questions about Brindlewick Logistics by searching its documents."""
    index = BM25Index([Document(**d) for d in packaged_lines("rag_corpus.jsonl")])
    return Task(
        dataset=questions_dataset(),
        solver=react(tools=[search(index)]),
        # tracegrade: the context is what `search` returned to the model.
        scorer=stage_diagnosis_scorer(context_tools="search", label_scorer=match()),
    )
