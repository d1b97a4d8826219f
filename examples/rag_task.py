"""A RAG task diagnosed by tracegrade: BM25 retrieval, one answer, a stage.

Copy this file to start your own: replace the corpus, the questions and the
retriever, and keep the lines that matter to tracegrade, marked below: the
solver records the IDs of the documents it actually put in the prompt, and
BM25's ranked output as the pipeline's one step (`bm25`), so that each
missing document's score says whether BM25 never ranked it in its top
`depth` or ranked it below the cut of `top_k`; and the scorer is
`stage_diagnosis_scorer(label_scorer=match())`.

The corpus is tracegrade's packaged example (46 short documents about a
fictional company, 30 questions, each listing the document IDs an answer
needs and quoting each as `evidence`). Some questions are worded unlike
their documents, so BM25 misses a required document now and then: the
retrieval failures the stage diagnosis reports.

Run it (the retriever is the `bm25s` package: `pip install "tracegrade[rag]"`):

    export OPENAI_API_KEY=...
    inspect eval examples/rag_task.py --model openai/gpt-4o-mini
    inspect eval examples/rag_task.py -T top_k=5 --model openai/gpt-4o-mini
    inspect eval examples/rag_task.py -T depth=40 --model openai/gpt-4o-mini

Every run is diagnosed in the one pass: `match()` judges each answer
against the sample's reference answer (CORRECT or INCORRECT becomes the
label), and the stage follows. Its verdict and explanation are kept in
each stage score's metadata (`grader`). A string match is a rough
judge of free-text answers; for human-judged labels, export the answers,
have staff label them and join the labels onto the log, which adds a
stage score by the staff's labels (`stage_diagnosis1`) beside match()'s:

    tracegrade labels export LOG > labels.jsonl
    # staff set "correct" to true or false on each line
    tracegrade labels apply LOG labels.jsonl

Offline, `--model mockllm/model` does not work from the command line:
without a preset token count in its outputs, mockllm downloads a tokenizer.
`tests/test_rag_example.py` runs this task with `eval()` and a
`get_model("mockllm/model", custom_outputs=...)` whose outputs carry one.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any, NamedTuple

import bm25s  # type: ignore[import-untyped]
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from tracegrade import RetrievalTrace, stage_diagnosis_scorer

PROMPT = """\
Answer the question using only the documents below. If they do not hold
the answer, say that you do not know.

{documents}

Question: {question}
"""


# A NamedTuple, not a dataclass: Inspect loads a task file without adding
# it to sys.modules, where a dataclass looks its module up.
class Document(NamedTuple):
    id: str
    title: str
    text: str


def packaged_lines(name: str) -> list[dict[str, Any]]:
    """The JSON Lines of a data file shipped in `tracegrade/data`."""
    text = (files("tracegrade") / "data" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


class BM25Index:
    """BM25 over title and text, English stopwords removed."""

    def __init__(self, documents: list[Document]) -> None:
        self.documents = documents
        self.retriever = bm25s.BM25()
        self.retriever.index(
            self._tokens([f"{d.title}\n{d.text}" for d in documents]),
            show_progress=False,
        )

    @staticmethod
    def _tokens(texts: list[str]) -> Any:
        return bm25s.tokenize(texts, stopwords="en", show_progress=False)

    def search(self, query: str, k: int) -> list[Document]:
        k = min(k, len(self.documents))
        indices, _scores = self.retriever.retrieve(
            self._tokens([query]), k=k, show_progress=False
        )
        return [self.documents[int(i)] for i in indices[0]]


@solver
def retrieve_then_prompt(index: BM25Index, top_k: int = 3, depth: int = 20) -> Solver:
    """Rank `depth` documents for the question and put the first `top_k` in
    the prompt."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        question = state.input_text
        ranked = index.search(question, max(depth, top_k))
        documents = ranked[:top_k]
        # tracegrade: record the pipeline's steps (here one, BM25's ranking)
        # and the context actually supplied, in the order given.
        trace = state.store_as(RetrievalTrace)
        trace.steps = [{"name": "bm25", "ids": [d.id for d in ranked]}]
        trace.context = [d.id for d in documents]
        state.user_prompt.text = PROMPT.format(
            documents="\n\n".join(
                f'<document id="{d.id}" title="{d.title}">\n{d.text}\n</document>'
                for d in documents
            ),
            question=question,
        )
        return state

    return solve


def questions_dataset() -> MemoryDataset:
    """One sample per question; `required` in metadata, the reference
    answer as the target, for the grader (and staff) to compare against."""
    return MemoryDataset(
        [
            Sample(
                id=q["id"],
                input=q["question"],
                target=q["answer"],
                metadata={"required": q["required"]},
            )
            for q in packaged_lines("rag_questions.jsonl")
        ],
        name="rag_questions",
    )


@task
def rag_qa(top_k: int = 3, depth: int = 20) -> Task:
    """Answer questions about Brindlewick Logistics from BM25-retrieved documents.

    Args:
        top_k: How many documents to put in the prompt: the cut.
        depth: How many documents BM25 ranks, recorded as the step `bm25`.
    """
    index = BM25Index([Document(**d) for d in packaged_lines("rag_corpus.jsonl")])
    return Task(
        dataset=questions_dataset(),
        solver=[retrieve_then_prompt(index, top_k, depth), generate()],
        # tracegrade: required IDs from metadata, the context and steps from
        # RetrievalTrace, the label from match() against the target.
        scorer=stage_diagnosis_scorer(label_scorer=match()),
    )
