"""`tracegrade import openinference` on real frameworks' traces, held to what
each pipeline itself did (tests/data/pipelines, its README says how made).

Haystack, LlamaIndex and LangChain pipelines retrieve, rerank to 5, and put
only the first 3 documents in the prompt; their spans were recorded by
OpenInference's own instrumentors. The truth here is each pipeline's own
outputs: the context is the ids the rendered prompt held, never a span's
documents, and the gate's verdict is an exact sign test on their pairs.
"""

from __future__ import annotations

import gzip
import json
import shutil
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
KEY = "session.id"
ALPHA = 0.05
STEPS = {
    "haystack": ("retriever", "reranker"),
    "llama_index": ("retriever", "reranker"),
    # LangChain's reranker is a RunnableLambda, a CHAIN span: not a step.
    "langchain": ("retriever",),
}
"""The steps each trace shows, named as the importer names them."""


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def outputs(framework: str, configuration: str) -> dict[str, dict[str, Any]]:
    """The pipeline's own outputs, by question id."""
    found = lines(PIPELINES / framework / configuration / "outputs.jsonl")
    return {output["question_id"]: output for output in found}


def gold(framework: str, configuration: str) -> dict[str, dict[str, Any]]:
    found = lines(PIPELINES / framework / configuration / "gold.jsonl")
    return {line["key"]: line for line in found}


class Imported:
    """One configuration's spans imported and scored as a user would."""

    def __init__(self, framework: str, configuration: str, folder: Path) -> None:
        recorded = PIPELINES / framework / configuration
        with gzip.open(recorded / "spans.jsonl.gz", "rb") as spans:
            (folder / "spans.jsonl").write_bytes(spans.read())
        shutil.copy(recorded / "gold.jsonl", folder / "gold.jsonl")
        self.folder = folder
        self.imported = run_tracegrade(
            *("import", "openinference", "spans.jsonl", "--gold", "gold.jsonl"),
            *("--key", KEY, "-o", "runs.jsonl"),
            # LangChain's instrumentor records no document.id, only metadata.
            *(("--id-in-metadata", "id") if framework == "langchain" else ()),
            cwd=folder,
        )
        assert self.imported.returncode == 0, self.imported.stderr
        self.records = {record["id"]: record for record in lines(folder / "runs.jsonl")}
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


# --- the truth, from the pipelines' own outputs ------------------------------------


def pipeline_steps(framework: str, output: dict[str, Any]) -> list[dict[str, Any]]:
    held = {"retriever": output["retrieved"], "reranker": output["reranked"]}
    return [{"name": name, "ids": held[name]} for name in STEPS[framework]]


def stage(output: dict[str, Any], line: dict[str, Any]) -> str:
    if any(doc not in output["prompt"] for doc in line["required"]):
        return "retrieval"
    return "pass" if line["correct"] else "generation"


def lost(doc: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Where `doc` was lost: the step right after the last one that held it,
    or the context when that was the last step; never held, the first."""
    holders = [n for n, step in enumerate(steps) if doc in step["ids"]]
    if not holders:
        return {
            "id": doc,
            "lost_at": steps[0]["name"],
            "last_step": None,
            "last_rank": None,
        }
    last = holders[-1]
    after = steps[last + 1]["name"] if last + 1 < len(steps) else "context"
    rank = steps[last]["ids"].index(doc) + 1
    return {
        "id": doc,
        "lost_at": after,
        "last_step": steps[last]["name"],
        "last_rank": rank,
    }


RUNS = [(f, c) for f in FRAMEWORKS for c in CONFIGURATIONS]


# --- the fixtures hold what they are said to -----------------------------------------


@pytest.mark.parametrize(("framework", "configuration"), RUNS)
def test_the_pipelines_cut_where_the_fixtures_need(
    framework: str, configuration: str
) -> None:
    """The prompt holds the reranker's first 3, and the gold meets every loss
    the tests need: kept, cut by the prompt at rank 4 or 5, dropped by the
    reranker, never retrieved."""
    found = outputs(framework, configuration)
    needed = gold(framework, configuration)
    assert list(found) == list(needed) == [f"q{n:02d}" for n in range(1, 25)]
    kinds, cut_at = set(), set()
    for question, output in found.items():
        assert output["prompt"] == output["reranked"][:3], question
        assert set(output["reranked"]) <= set(output["retrieved"]), question
        for doc in needed[question]["required"]:
            if doc in output["prompt"]:
                kinds.add("prompt")
            elif doc in output["reranked"]:
                kinds.add("cut by the prompt")
                cut_at.add(output["reranked"].index(doc) + 1)
            else:
                kinds.add("reranker" if doc in output["retrieved"] else "never")
    assert kinds == {"prompt", "cut by the prompt", "reranker", "never"}
    assert cut_at == ({4, 5} if configuration == "top20" else {4})
    stages = {stage(found[q], needed[q]) for q in found}
    assert stages == {"pass", "generation", "retrieval"}


# --- the import, held to them --------------------------------------------------------


@pytest.mark.parametrize(("framework", "configuration"), RUNS)
def test_each_record_and_diagnosis_is_the_pipelines_own(
    imported: Callable[[str, str], Imported], framework: str, configuration: str
) -> None:
    """Sample id the question id (`--key`), context the prompt's ids, steps
    the pipeline's, answer the generator's text; stage, missing ids, and
    where each was lost with its last rank, as the pipeline's outputs say."""
    run = imported(framework, configuration)
    found = outputs(framework, configuration)
    needed = gold(framework, configuration)
    assert list(run.records) == list(found)
    assert sorted(run.scores) == sorted(found)
    for question, output in found.items():
        record, line = run.records[question]["input"], needed[question]
        steps = pipeline_steps(framework, output)
        assert record["context"] == output["prompt"], question
        assert record["steps"] == steps, question
        assert record["required"] == line["required"], question
        assert record["correct"] is line["correct"], question
        assert record["answer"] == output["answer"], question
        score = run.scores[question]
        # The rules list missing ids sorted (all ASCII here: as JavaScript sorts).
        missing = sorted(doc for doc in line["required"] if doc not in output["prompt"])
        assert score.value == stage(output, line), question
        assert (score.metadata or {})["result"]["missing"] == missing, question
        assert (score.metadata or {})["lost"] == [lost(d, steps) for d in missing]
    # LangChain's reranking lambda returned documents as a CHAIN span: named.
    assert ("rerank_by_priority" in run.imported.stderr) == (framework == "langchain")


# --- the gate --------------------------------------------------------------------


def paired_count(framework: str, gate: str) -> tuple[int, int]:
    """From top 20 to top 8, by question: regressions and fixes of `pass`, or
    falls and rises of context recall (the share of required documents the
    rendered prompt held)."""
    base, new = (outputs(framework, c) for c in CONFIGURATIONS)
    base_gold, new_gold = (gold(framework, c) for c in CONFIGURATIONS)

    def figure(output: dict[str, Any], line: dict[str, Any]) -> float:
        if gate == "pass":
            return float(stage(output, line) == "pass")
        held = [doc for doc in line["required"] if doc in output["prompt"]]
        return len(held) / len(line["required"])

    moves = [figure(new[q], new_gold[q]) - figure(base[q], base_gold[q]) for q in base]
    return sum(move < 0 for move in moves), sum(move > 0 for move in moves)


@pytest.mark.parametrize("gate", ["pass", "context_recall"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_gate_agrees_with_the_pipelines_paired_count(
    imported: Callable[[str, str], Imported], framework: str, gate: str, tmp_path: Path
) -> None:
    """The two configurations pair by question; `--fail-on-regression` exits
    3 exactly when the exact sign test on the pipelines' own regressions and
    fixes of `pass` (or falls and rises of the prompt's recall, under
    `--gate context_recall`) says worse at 0.05."""
    worse, better = paired_count(framework, gate)
    p_value = binomtest(worse, worse + better).pvalue if worse + better else 1.0
    base, new = (imported(framework, c).log for c in CONFIGURATIONS)
    gated = [] if gate == "pass" else ["--gate", gate]
    result = run_tracegrade(
        *("compare", str(base), str(new), "--fail-on-regression", *gated, "--json"),
        cwd=tmp_path,
    )
    # The recall gate counts a p-value of exactly ALPHA as significant.
    significant = p_value < ALPHA or (gate != "pass" and p_value == ALPHA)
    assert result.returncode == (3 if significant and worse > better else 0), (
        result.stderr
    )
    (pair,) = json.loads(result.stdout)["pairs"]
    (stages,) = pair["stage_diagnosis"]
    if gate == "pass":
        assert (stages["pairs"], stages["worse"], stages["better"]) == (
            24,
            worse,
            better,
        )
    else:
        (recall,) = (f for f in stages["figures"] if f["figure"] == "recall")
        assert (recall["pairs"], recall["fell"], recall["rose"]) == (24, worse, better)
