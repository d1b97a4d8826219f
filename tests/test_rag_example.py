"""`examples/rag_task.py`: a real BM25 retriever feeding the stage scorer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessage, Model, ModelOutput, ModelUsage, get_model

from tests.test_tasks import evaluated

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rag_task.py"
sys.path.insert(0, str(EXAMPLE.parent))
import rag_task as rag  # noqa: E402

QUESTIONS = rag.packaged_lines("rag_questions.jsonl")


def answering_model(answers: dict[str, list[str]] | None = None) -> Model:
    """mockllm answering each question with the next of `answers[id]` (by
    default "I do not know.")."""
    calls: dict[str, int] = {}

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        prompt = messages[-1].text
        (question_id,) = [q["id"] for q in QUESTIONS if q["question"] in prompt]
        count = calls.get(question_id, 0)
        calls[question_id] = count + 1
        text = (answers or {}).get(question_id, ["I do not know."] * 9)[count]
        output = ModelOutput.from_content(model="mockllm/model", content=text)
        output.usage = ModelUsage(input_tokens=400, output_tokens=10, total_tokens=410)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


@pytest.fixture(scope="module")
def index() -> Any:
    corpus = rag.packaged_lines("rag_corpus.jsonl")
    return rag.BM25Index([rag.Document(**d) for d in corpus])


TOP_K = 2


@pytest.fixture(scope="module")
def fresh_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """As `inspect eval examples/rag_task.py -T top_k=2` does."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(EXAMPLE.parents[1])
        log = evaluated(
            "examples/rag_task.py",
            tmp_path_factory.mktemp("rag"),
            task_args={"top_k": TOP_K},
            model=answering_model(),
        )
    assert log.eval.task == "rag_qa"
    return log


def test_every_question_runs_with_its_context_recorded_and_a_stage(
    fresh_log: EvalLog, index: Any
) -> None:
    """match() labels every answer, so every run has a stage."""
    assert fresh_log.samples is not None
    assert len(fresh_log.samples) == len(QUESTIONS)
    by_id = {q["id"]: q for q in QUESTIONS}
    for sample in fresh_log.samples:
        question = by_id[str(sample.id)]
        ranked = [d.id for d in index.search(question["question"], 20)]
        context = ranked[:TOP_K]
        steps = [{"name": "bm25", "ids": ranked}]
        assert sample.store["RetrievalTrace:context"] == context
        assert sample.store["RetrievalTrace:steps"] == steps
        # The prompt holds the retrieved documents and the question.
        (user,) = [m for m in sample.messages if m.role == "user"]
        assert user.text.endswith(f"Question: {question['question']}\n")
        for document_id in context:
            assert f'<document id="{document_id}"' in user.text
        assert sample.metadata == {"required": question["required"]}
        assert sample.target == question["answer"]
        score = (sample.scores or {})["stage_diagnosis"]
        metadata = score.metadata or {}
        missed = set(question["required"]) - set(context)
        assert score.value == ("retrieval" if missed else "generation")
        assert metadata["record"] == {
            "required": question["required"],
            "context": context,
            "steps": steps,
            "correct": False,
        }
        assert metadata["read_from"] == {
            "required": 'metadata["required"]',
            "context": "store RetrievalTrace:context",
            "correct": "scorer match",
            "steps": "store RetrievalTrace:steps",
        }
        # Each missing document: below the cut (kept by BM25) or never ranked.
        assert metadata["lost"] == [
            {
                "id": document,
                "lost_at": "context" if document in ranked else "bm25",
                "last_step": "bm25" if document in ranked else None,
                "last_rank": ranked.index(document) + 1 if document in ranked else None,
            }
            for document in sorted(missed)
        ]
        assert metadata["grader"] == {
            "name": "match",
            "value": "I",
            "answer": "I do not know.",
            "explanation": "I do not know.",
            "reason": None,
            "metadata": None,
        }
