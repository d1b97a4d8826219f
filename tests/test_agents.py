"""An agent's context read from its transcript, checked against its searches rerun."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ContentImage,
    ContentText,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.model._call_tools import truncate_tool_output
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from tests.commands import run_inspect
from tests.test_label_scorer import documented_score
from tests.test_scorers import task_state
from tests.test_tasks import evaluated
from tracegrade import stage_diagnosis_scorer
from tracegrade.scorers.transcript import read_tool_context

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
import agent_rag  # noqa: E402
import rag_task  # noqa: E402

QUESTIONS = rag_task.packaged_lines("rag_questions.jsonl")
MAX_TOOL_OUTPUT = 1500
# Long searches whose results Inspect truncates at MAX_TOOL_OUTPUT: for
# Q-007 a required document's entry is cut partway, for Q-004 one is cut
# out whole; Q-015 searches twice more.
LONG_SEARCHES = {"Q-004": 8, "Q-007": 8, "Q-015": 9}


def searches(position: int, question: dict[str, Any]) -> list[dict[str, Any]]:
    """One to three searches per question, by its place in the dataset."""
    words = question["question"].split()
    queries = [question["question"], " ".join(words[:4]), " ".join(words[-4:])]
    calls = [{"query": query, "k": 3} for query in queries[: 1 + position % 3]]
    calls[0]["k"] = LONG_SEARCHES.get(question["id"], 3)
    return calls


PLANS = {q["id"]: searches(position, q) for position, q in enumerate(QUESTIONS)}
ANSWERS = {
    q["id"]: q["answer"] if position % 2 == 0 else "I do not know."
    for position, q in enumerate(QUESTIONS)
}


@pytest.fixture(scope="module")
def agent_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """mockllm playing the agent: its question's searches, then `submit`."""

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        asked = next(m for m in messages if m.role == "user").text
        (question,) = [q for q in QUESTIONS if q["question"] in asked]
        done = sum(isinstance(m, ChatMessageTool) for m in messages)
        plan = PLANS[question["id"]]
        output = (
            ModelOutput.for_tool_call("mockllm/model", "search", plan[done])
            if done < len(plan)
            else ModelOutput.for_tool_call(
                "mockllm/model", "submit", {"answer": ANSWERS[question["id"]]}
            )
        )
        output.usage = ModelUsage(input_tokens=400, output_tokens=10, total_tokens=410)
        return output

    return evaluated(
        agent_rag.agent_rag(),
        tmp_path_factory.mktemp("agent") / "logs",
        model=get_model("mockllm/model", custom_outputs=reply),
        max_tool_output=MAX_TOOL_OUTPUT,
    )


def expected(sample: EvalSample, index: Any) -> dict[str, Any]:
    """Stage, missing, and each missing ID's last call and rank."""
    arguments = {
        call.id: call.arguments
        for message in sample.messages
        if isinstance(message, ChatMessageAssistant)
        for call in message.tool_calls or ()
    }
    context: list[str] = []
    shown_in: dict[str, tuple[str, int]] = {}
    truncated = 0
    calls = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    searched = [m for m in calls if m.function == "search"]
    for number, message in enumerate(searched, 1):
        found = index.search(**arguments[message.tool_call_id])
        received = message.text
        truncated += "was too long to be displayed" in received
        shown = []
        for document in found:
            entry = json.dumps(document._asdict())
            if entry in received:
                context.append(document.id)
            if entry in received or f'{{"id": "{document.id}"' in received:
                shown.append(document.id)
        for rank, item in enumerate(shown, 1):
            shown_in[item] = (f"search#{number}", rank)
    required = sample.metadata["required"]
    missing = [item for item in dict.fromkeys(required) if item not in context]
    correct = ANSWERS[str(sample.id)] != "I do not know."
    stage = "retrieval" if missing else "pass" if correct else "generation"
    return {
        "stage": stage,
        "missing": missing,
        "context": context,
        "last": [shown_in.get(item, (None, None)) for item in missing],
        "calls": len(searched),
        "truncated": truncated,
    }


def test_the_agents_context_is_what_its_searches_returned_whole(
    agent_log: EvalLog,
) -> None:
    corpus = rag_task.packaged_lines("rag_corpus.jsonl")
    index = rag_task.BM25Index([rag_task.Document(**d) for d in corpus])
    assert agent_log.samples is not None
    assert len(agent_log.samples) == len(QUESTIONS)
    seen_cut = never = truncated = 0
    for sample in agent_log.samples:
        want = expected(sample, index)
        score = sample.scores["stage_diagnosis"]  # type: ignore[index]
        metadata = score.metadata or {}
        assert score.value == want["stage"], (sample.id, score.explanation)
        assert metadata["record"]["context"] == want["context"]
        assert metadata["read_from"]["context"] == "tool results search"
        steps = metadata["record"]["steps"]
        assert [step["name"] for step in steps] == [
            f"search#{n}" for n in range(1, want["calls"] + 1)
        ]
        assert 1 <= len(steps) <= 3
        if want["stage"] == "retrieval":
            assert metadata["result"]["missing"] == want["missing"]
            lost = metadata["lost"]
            assert [d["id"] for d in lost] == want["missing"]
            assert [(d["last_step"], d["last_rank"]) for d in lost] == want["last"]
            for document in lost:
                if document["last_step"] is None:
                    never += 1
                    assert document["lost_at"] == "search#1"
                    assert f"No call returned {document['id']}" in score.explanation
                else:
                    seen_cut += 1
                    assert (
                        f"{document['id']} was in {document['last_step']}'s result, "
                        "but its entry was cut by Inspect's truncation"
                    ) in (score.explanation or "")
                    if document["last_step"] == steps[-1]["name"]:
                        assert document["lost_at"] == "context"
        if want["truncated"]:
            truncated += 1
            assert "Inspect truncated search#" in (score.explanation or "")
    # The run holds each case the test is for.
    assert truncated >= 1 and seen_cut >= 1 and never >= 1


def test_inspect_score_of_the_agents_log_gives_the_same_scores(
    agent_log: EvalLog, tmp_path: Path
) -> None:
    """docs/agents.md's `inspect score` command, run as written on a copy."""
    log_file = str(shutil.copy(agent_log.location, tmp_path))
    done = run_inspect(*documented_score("", log_file, "agents.md"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = read_eval_log(log_file)
    assert log.samples is not None and agent_log.samples is not None
    for before, after in zip(agent_log.samples, log.samples, strict=True):
        old = before.scores["stage_diagnosis"]  # type: ignore[index]
        new = after.scores["stage_diagnosis1"]  # type: ignore[index]
        assert (new.value, new.explanation) == (old.value, old.explanation)
        assert new.metadata == old.metadata


RESULTS: dict[str, Any] = {
    "strings": '["D1", "D2"]',
    "objects": '[{"id": "D1", "text": "a"}, {"id": "D3"}]',
    "documents": '{"query": "q", "documents": ["D1", "D2"]}',
    "results": '{"results": [{"id": "D2"}, {"id": "D1"}]}',
    "one text part": [ContentText(text='["D2"]')],
    "errored": ToolCallError("unknown", "the index is down"),
    "two text parts": [ContentText(text='["D1"]'), ContentText(text='["D2"]')],
    "an image part": [ContentImage(image="https://example.com/D1.png")],
    "python repr": "[{'id': 'D1'}]",
    "no documents key": '{"hits": ["D1"]}',
    "mixed": '["D1", {"id": "D2"}]',
    "documents not last": '{"documents": ["D1"], "total": 1}',
    "both keys": '{"documents": [], "results": []}',
    "a number": "3",
}


def shape_score(name: str) -> Score:
    """The stage score of a run whose one search returned `RESULTS[name]`
    (after a fetch, another tool, whose result is no context)."""
    state = task_state({"required": ["D1", "D2"], "correct": False})
    if name in RESULTS:
        failed = isinstance(RESULTS[name], ToolCallError)
        call = ToolCall(id="c1", function="search", arguments={"query": name})
        state.messages = [
            ChatMessageTool(content="D9", tool_call_id="c0", function="fetch"),
            ChatMessageAssistant(content="", tool_calls=[call]),
            ChatMessageTool(
                content="" if failed else RESULTS[name],
                tool_call_id="c1",
                function="search",
                error=RESULTS[name] if failed else None,
            ),
        ]
    scorer = stage_diagnosis_scorer(context_tools=["search"])
    return asyncio.run(scorer(state, state.target))


def test_each_documented_shape_is_read_and_every_other_refused() -> None:
    scores = {name: shape_score(name) for name in [*RESULTS, "no call"]}
    contexts = {
        name: (scores[name].metadata or {})["record"].get("context")
        for name in list(RESULTS)[:6]
    }
    assert contexts == {
        "strings": ["D1", "D2"],
        "objects": ["D1", "D3"],
        "documents": ["D1", "D2"],
        "results": ["D2", "D1"],
        "one text part": ["D2"],
        "errored": [],
    }
    no_call = scores["no call"]
    record = {"required": ["D1", "D2"], "context": [], "correct": False}
    assert (no_call.metadata or {})["record"] == record
    assert no_call.value == "retrieval"
    assert "The model made no call to search." in (no_call.explanation or "")
    errored = scores["errored"].explanation or ""
    assert "search#1 failed (unknown: the index is down)" in errored
    assert "returned nothing to the model" in errored
    assert scores["objects"].value == "retrieval"
    for name in list(RESULTS)[6:]:  # each shape after "errored"
        score = scores[name]
        metadata = score.metadata or {}
        assert metadata["error"]["kind"] == "invalid-input", name
        assert metadata["error"]["field"] == "context"
        assert "tool call search#1 (id " in metadata["error"]["message"]
        assert "call 1 to search" in (score.explanation or "")
    for name in ("two text parts", "an image part"):
        assert "is not one text" in (scores[name].explanation or "")


EDGES = ["", "é", "漢", '"q', ", 1]", "\\", "}", '\\"']


def whole_entries(text: str, entries: list[Any], limit: int) -> list[str]:
    """The IDs of the entries wholly in what Inspect keeps of `text`."""
    encoded = text.encode()
    head, tail = limit // 2, len(encoded) - (limit - limit // 2)
    survived = []
    for entry in entries:
        shown = json.dumps(entry, ensure_ascii=False).encode()
        start = encoded.index(shown)
        if start + len(shown) <= head or start >= tail:
            survived.append(entry if isinstance(entry, str) else entry["doc_id"])
    return survived


def random_result(rng: random.Random, shape: int) -> tuple[str, list[Any]]:
    """A result in one of the three shapes, and its entries (IDs at `doc_id`)."""
    texts = [
        rng.choice(EDGES) + "x" * rng.randrange(60) + rng.choice(EDGES)
        for _ in range(rng.randrange(2, 12))
    ]
    entries: list[Any] = (
        [f"D{n}{text}" for n, text in enumerate(texts)]
        if shape == 2
        else [{"doc_id": f"D{n}", "text": text} for n, text in enumerate(texts)]
    )
    array = ", ".join(json.dumps(e, ensure_ascii=False) for e in entries)
    if shape == 1:
        return f'{{"query": "q", "results": [{array}]}}', entries
    return f"[{array}]", entries


def test_a_truncated_result_counts_the_entries_that_survived_whole() -> None:
    """Random results cut by Inspect at random limits: each reading is the
    entries whose whole text survived, or a refusal, never another reading."""
    rng = random.Random(42)
    read = refused = 0
    for trial in range(450):
        text, entries = random_result(rng, trial % 3)
        limit = rng.randrange(20, max(21, len(text.encode())))
        truncated = truncate_tool_output("search", text, limit)
        if truncated is None:
            continue
        message = ChatMessageTool(
            content=truncated.output, function="search", tool_call_id="c1"
        )
        context = read_tool_context([message], ("search",), "doc_id")
        if context.problem is not None:
            refused += 1
            assert "cannot be told" in str(context.problem) or "before its" in str(
                context.problem
            )
            continue
        read += 1
        survived = whole_entries(text, entries, limit)
        assert context.record()["context"] == survived, truncated.output
    assert read > refused
