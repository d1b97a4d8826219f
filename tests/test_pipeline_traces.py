"""`tracegrade import openinference` of Haystack's, LlamaIndex's and LangChain's traces
(tests/data/pipelines/README) held to each pipeline's own outputs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

from tests.commands import run_tracegrade

PIPELINES = Path(__file__).parent / "data" / "pipelines"
FRAMEWORKS = ("haystack", "llama_index", "langchain")
CONFIGURATIONS = ("top20", "top8")
# The steps each trace shows; LangChain's reranker is a RunnableLambda, a
# CHAIN span: not a step.
STEPS = {
    "haystack": ("retriever", "reranker"),
    "llama_index": ("retriever", "reranker"),
    "langchain": ("retriever",),
}


def lines(framework: str, configuration: str, name: str) -> dict[str, Any]:
    """The pipeline's own outputs (or gold lines), by question id."""
    text = (PIPELINES / framework / configuration / name).read_text()
    found = [json.loads(line) for line in text.splitlines()]
    return {line.get("question_id", line.get("key")): line for line in found}


def stage(output: dict[str, Any], line: dict[str, Any]) -> str:
    if any(doc not in output["prompt"] for doc in line["required"]):
        return "retrieval"
    return "pass" if line["correct"] else "generation"


def lost(doc: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Lost at the step after the last that held `doc` (the context after the
    last step); never held, at the first."""
    held = [n for n, step in enumerate(steps) if doc in step["ids"]]
    after = [*steps, {"name": "context"}][held[-1] + 1 if held else 0]["name"]
    last = steps[held[-1]] if held else None
    rank = last["ids"].index(doc) + 1 if last else None
    return {
        "id": doc,
        "lost_at": after,
        "last_step": last["name"] if last else None,
        "last_rank": rank,
    }


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_record_and_diagnosis_is_the_pipelines_own(
    tmp_path: Path, framework: str, configuration: str
) -> None:
    """Id the question's (--key), context the prompt's ids (not the reranker's
    output), question the user's text (not the root's JSON); stage, missing ids
    and where each was lost as the pipeline's outputs say."""
    recorded = PIPELINES / framework / configuration
    spans = gzip.decompress((recorded / "spans.jsonl.gz").read_bytes())
    (tmp_path / "spans.jsonl").write_bytes(spans)
    imported = run_tracegrade(
        *("import", "openinference", "spans.jsonl", "-o", "runs.jsonl"),
        *("--gold", str(recorded / "gold.jsonl"), "--key", "session.id"),
        # LangChain's instrumentor records no document.id, only metadata.
        *(("--id-in-metadata", "id") if framework == "langchain" else ()),
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    written = (tmp_path / "runs.jsonl").read_text().splitlines()
    records = {r["id"]: r["input"] for r in map(json.loads, written)}
    scored = run_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"),
        *("--out", "results.jsonl", "--no-progress"),
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    (log,) = (tmp_path / "logs").iterdir()
    scores = {
        str(sample.id): (sample.scores or {})["stage_diagnosis"]
        for sample in read_eval_log(str(log)).samples or []
    }
    found = lines(framework, configuration, "outputs.jsonl")
    needed = lines(framework, configuration, "gold.jsonl")
    assert list(records) == list(found) == [f"q{n:02d}" for n in range(1, 25)]
    assert sorted(scores) == sorted(found)
    for question, output in found.items():
        record, line = records[question], needed[question]
        held = {"retriever": output["retrieved"], "reranker": output["reranked"]}
        steps = [{"name": name, "ids": held[name]} for name in STEPS[framework]]
        assert record == {
            "required": line["required"],
            "context": output["prompt"],
            "steps": steps,
            "correct": line["correct"],
            "question": output["question"],
            "answer": output["answer"],
        }, question
        # The rules list missing ids sorted (all ASCII here: as JavaScript sorts).
        missing = sorted(doc for doc in line["required"] if doc not in output["prompt"])
        score = scores[question]
        assert score.value == stage(output, line), question
        assert (score.metadata or {})["result"]["missing"] == missing, question
        assert (score.metadata or {})["lost"] == [lost(d, steps) for d in missing]
    # LangChain's reranking lambda returned documents as a CHAIN span: named.
    assert ("rerank_by_priority" in imported.stderr) == (framework == "langchain")
