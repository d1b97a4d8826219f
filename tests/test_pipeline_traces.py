"""`tracegrade import openinference` of Haystack's, LlamaIndex's and LangChain's traces
(tests/data/pipelines/README) held to each pipeline's own outputs."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log
from scipy.stats import binomtest

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


class Imported:
    """One configuration's spans imported and scored as a user would."""

    def __init__(self, framework: str, configuration: str, folder: Path) -> None:
        recorded = PIPELINES / framework / configuration
        with gzip.open(recorded / "spans.jsonl.gz", "rb") as spans:
            (folder / "spans.jsonl").write_bytes(spans.read())
        self.imported = run_tracegrade(
            *("import", "openinference", "spans.jsonl"),
            *("--gold", str(recorded / "gold.jsonl"), "--key", "session.id"),
            # LangChain's instrumentor records no document.id, only metadata.
            *(("--id-in-metadata", "id") if framework == "langchain" else ()),
            *("-o", "runs.jsonl"),
            cwd=folder,
        )
        assert self.imported.returncode == 0, self.imported.stderr
        written = (folder / "runs.jsonl").read_text().splitlines()
        self.records = {r["id"]: r["input"] for r in map(json.loads, written)}
        scored = run_tracegrade(
            *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"),
            *("--out", "results.jsonl", "--no-progress"),
            cwd=folder,
        )
        assert scored.returncode == 0, scored.stderr
        (self.log,) = (folder / "logs").iterdir()
        self.scores = {
            str(sample.id): (sample.scores or {})["stage_diagnosis"]
            for sample in read_eval_log(str(self.log)).samples or []
        }


@pytest.fixture(scope="module")
def imported(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, str], Imported]:
    @cache
    def made(framework: str, configuration: str) -> Imported:
        folder = tmp_path_factory.mktemp(f"{framework}-{configuration}")
        return Imported(framework, configuration, folder)

    return made


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
    imported: Callable[[str, str], Imported], framework: str, configuration: str
) -> None:
    """Id the question's (--key), context the prompt's ids (not the reranker's
    output), question the user's text (not the root's JSON); stage, missing ids
    and where each was lost as the pipeline's outputs say."""
    run = imported(framework, configuration)
    found = lines(framework, configuration, "outputs.jsonl")
    needed = lines(framework, configuration, "gold.jsonl")
    assert list(run.records) == list(found) == [f"q{n:02d}" for n in range(1, 25)]
    assert sorted(run.scores) == sorted(found)
    for question, output in found.items():
        record, line = run.records[question], needed[question]
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
        score = run.scores[question]
        assert score.value == stage(output, line), question
        assert (score.metadata or {})["result"]["missing"] == missing, question
        assert (score.metadata or {})["lost"] == [lost(d, steps) for d in missing]
    # LangChain's reranking lambda returned documents as a CHAIN span: named.
    assert ("rerank_by_priority" in run.imported.stderr) == (framework == "langchain")


@pytest.mark.parametrize("gate", ["pass", "context_recall"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_gate_agrees_with_the_pipelines_paired_count(
    imported: Callable[[str, str], Imported], framework: str, gate: str, tmp_path: Path
) -> None:
    """Top 20 to top 8: --fail-on-regression exits 3 exactly when the sign test on
    the pipelines' own falls and rises of pass (or of recall) says worse at 0.05."""

    def figure(configuration: str, question: str) -> float:
        output = lines(framework, configuration, "outputs.jsonl")[question]
        line = lines(framework, configuration, "gold.jsonl")[question]
        if gate == "pass":
            return float(stage(output, line) == "pass")
        held = [doc for doc in line["required"] if doc in output["prompt"]]
        return len(held) / len(line["required"])

    questions = lines(framework, "top20", "outputs.jsonl")
    moves = [figure("top8", q) - figure("top20", q) for q in questions]
    worse, better = sum(move < 0 for move in moves), sum(move > 0 for move in moves)
    p_value = binomtest(worse, worse + better).pvalue if worse + better else 1.0
    base, new = (imported(framework, c).log for c in CONFIGURATIONS)
    gated = [] if gate == "pass" else ["--gate", gate]
    result = run_tracegrade(
        *("compare", str(base), str(new), "--fail-on-regression", *gated, "--json"),
        cwd=tmp_path,
    )
    # The recall gate counts a p-value of exactly 0.05 as significant.
    significant = p_value < 0.05 or (gate != "pass" and p_value == 0.05)
    expected = 3 if significant and worse > better else 0
    assert result.returncode == expected, result.stderr
    (pair,) = json.loads(result.stdout)["pairs"]
    (stages,) = pair["stage_diagnosis"]
    if gate == "pass":
        counts = (stages["pairs"], stages["worse"], stages["better"])
    else:
        (recall,) = (f for f in stages["figures"] if f["figure"] == "recall")
        counts = (recall["pairs"], recall["fell"], recall["rose"])
    assert counts == (24, worse, better)
