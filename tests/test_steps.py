"""Where in the pipeline each missing document was lost (issue 30), held to
an independent statement of each rule; step recall, RR and nDCG to ir-measures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import ir_measures
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tracegrade import diagnose_stage, stage_diagnosis
from tracegrade.cli import main
from tracegrade.core import canonical_json
from tracegrade.core.steps import (
    Step,
    ndcg_at,
    read_steps,
    reciprocal_rank,
    step_recalls,
)
from tracegrade.scorers import RetrievalTrace, stage_diagnosis_scorer
from tracegrade.tasks.recorded import stage_input_score

ROOT = Path(__file__).resolve().parent.parent
IDS = [f"D{number}" for number in range(12)]


@st.composite
def pipelines(draw: st.DrawFn) -> dict[str, Any]:
    """A record with random steps: each step a ranking of some of the IDs
    (not only a subset of the one before: a step may add IDs back), some
    taking the outputs of earlier steps it names."""
    required = draw(st.lists(st.sampled_from(IDS), max_size=6))
    names = draw(
        st.lists(
            st.sampled_from(["retriever", "filter", "reranker", "dedupe", "bm25"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    steps: list[dict[str, Any]] = []
    for position, name in enumerate(names):
        step = {
            "name": name,
            "ids": draw(st.permutations(IDS))[: draw(st.integers(0, 12))],
        }
        if position and draw(st.booleans()):
            step["inputs"] = draw(
                st.lists(st.sampled_from(names[:position]), unique=True)
            )
        steps.append(step)
    context = draw(st.lists(st.sampled_from(IDS), max_size=6))
    return {
        "required": required,
        "context": context,
        "correct": draw(st.booleans()),
        "steps": steps,
    }


def lost_as_stated(document: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's rule, word for word, with no shared code."""
    having = [step for step in steps if document in step["ids"]]
    if not having:
        lost_at = steps[0]["name"]
        return {
            "id": document,
            "lost_at": lost_at,
            "last_step": None,
            "last_rank": None,
        }
    last = having[-1]
    after = steps[steps.index(last) + 1 :]
    taking = [
        step["name"]
        for step in after
        if last["name"] in step.get("inputs", [])
        or ("inputs" not in step and steps[steps.index(step) - 1] is last)
    ]
    return {
        "id": document,
        "lost_at": taking[0] if taking else "context",
        "last_step": last["name"],
        "last_rank": last["ids"].index(document) + 1,
    }


@settings(max_examples=150)
@given(record=pipelines())
def test_steps_add_lost_and_step_recall_and_change_nothing_else(
    record: dict[str, Any],
) -> None:
    """One draw for the three checks: drawing pipelines is the cost."""
    score = stage_input_score(record)
    metadata = score.metadata or {}

    # `lost`: the rule as stated.
    result = diagnose_stage(record)
    if "missing" not in result:
        assert "lost" not in metadata
    else:
        assert metadata["lost"] == [
            lost_as_stated(document, record["steps"]) for document in result["missing"]
        ]

    # `step_recall`: each step's share of the required IDs; a step that
    # outputs the context has the context's recall.
    wanted = set(record["required"])
    if not wanted:
        assert "step_recall" not in metadata
    else:
        assert metadata["step_recall"] == {
            step["name"]: sum(1 for item in wanted if item in step["ids"]) / len(wanted)
            for step in record["steps"]
        }
        context_step = {"name": "prompt", "ids": list(dict.fromkeys(record["context"]))}
        steps = [*(read_steps(record) or []), Step(**context_step)]
        assert step_recalls(record["required"], steps)["prompt"] == metadata["recall"]

    # The seed's fields are the same with and without steps.
    without = {key: value for key, value in record.items() if key != "steps"}
    plain = stage_input_score(without)
    plain_metadata = plain.metadata or {}
    assert canonical_json(metadata["result"]) == canonical_json(
        plain_metadata["result"]
    )
    assert canonical_json(plain_metadata["result"]) == canonical_json(
        diagnose_stage(without)
    )
    assert score.value == plain.value
    assert metadata["recall"] == plain_metadata["recall"]
    # Nothing else differs: the steps' own keys aside, the metadata match.
    extra = {"lost", "step_recall"}
    where = {"record", "read_from"}
    assert {k: v for k, v in metadata.items() if k not in where | extra} == {
        k: v for k, v in plain_metadata.items() if k not in where
    }
    assert "lost" not in plain_metadata
    assert "step_recall" not in plain_metadata


def test_the_explanation_says_where_each_missing_id_was_lost() -> None:
    retrieved = [
        f"D{number}" for number in (2, 8, 3, 5, 7, 1, 9, 10, 11, 12, 13, 14, 15, 19)
    ]
    record = {
        "required": ["D19", "D40", "D7"],
        "context": ["D2", "D8", "D3"],
        "correct": False,
        "steps": [
            {"name": "retriever", "ids": retrieved},
            {"name": "reranker", "ids": ["D2", "D8", "D3", "D7", "D5"]},
        ],
    }
    score = stage_input_score(record)
    assert score.explanation is not None
    for said in (
        "D19: retrieved at rank 14 by retriever, dropped by reranker (which kept 5).",
        "D40: never retrieved; retriever did not return it (it returned 14).",
        "D7: kept at rank 4 by reranker and dropped by no later step, but not "
        "among the 3 that reached the model.",
    ):
        assert said in score.explanation
    assert (score.metadata or {})["read_from"]["steps"] == "store RetrievalTrace:steps"


@pytest.mark.parametrize(
    ("steps", "required", "found", "said"),
    [
        # The last step that held D1 is s3, and no step took its output: the
        # prompt's cut lost it; s2, which ran before s3, is never named.
        (
            [{"name": "s1", "ids": ["D1"]}, {"name": "s2", "ids": ["X"]},
             {"name": "s3", "ids": ["D1"]}],
            ["D1"],
            [("D1", "context", "s3", 1)],
            ["D1: kept at rank 1 by s3 and dropped by no later step"],
        ),
        # Hybrid search: both retrievers feed one reranker; what either
        # returned and the reranker dropped is lost at the reranker.
        (
            [{"name": "retriever", "ids": ["D1", "D3"]},
             {"name": "retriever-2", "ids": ["D7", "D1"], "inputs": []},
             {"name": "reranker", "ids": ["D1"],
              "inputs": ["retriever", "retriever-2"]}],
            ["D3", "D7", "D9"],
            [("D3", "reranker", "retriever", 2), ("D7", "reranker", "retriever-2", 1),
             ("D9", "retriever", None, None)],
            ["D3: retrieved at rank 2 by retriever, dropped by reranker",
             "D7: retrieved at rank 1 by retriever-2, dropped by reranker",
             "D9: never retrieved; no retriever returned it (retriever returned "
             "2, retriever-2 returned 2)."],
        ),
    ],
    ids=["held-again-later", "fan-in"],
)  # fmt: skip
def test_where_an_id_was_lost_follows_the_steps_inputs(
    steps: list[dict[str, Any]], required: list[str], found: list[Any], said: list[str]
) -> None:
    score = stage_input_score(
        {"required": required, "context": [], "correct": True, "steps": steps}
    )
    lost = (score.metadata or {})["lost"]
    assert [tuple(document.values()) for document in lost] == found
    for sentence in said:
        assert sentence in (score.explanation or "")
    assert "s2" not in (score.explanation or "")


R, S = {"name": "r", "ids": []}, {"name": "s", "ids": []}


@pytest.mark.parametrize(
    ("steps", "field", "said"),
    [
        ("retriever", "steps", "must be an array of steps"),
        ([], "steps", "must list at least one step"),
        (["D1"], "steps[0]", 'must be an object {"name": "...", "ids": [...]'),
        ([{"name": "r"}], "steps[0]", "must be an object"),
        ([{**R, "name": ""}], "steps[0].name", "must be a non-empty string"),
        ([{**R, "name": 1}], "steps[0].name", "must be a non-empty string"),
        ([{**R, "name": "context"}], "steps[0].name", "is reserved"),
        ([R, R], "steps[1].name", "names steps[0] too"),
        ([{**R, "ids": "D1"}], "steps[0].ids", "(step 'r') must be an array"),
        ([{**R, "ids": ["D1", 2]}], "steps[0].ids[1]", "must be a string ID"),
        ([{**R, "ids": ["D1", "D1"]}], "steps[0].ids[1]", "(step 'r') repeats rank 1"),
        ([{**R, "inputs": ["r"]}], "steps[0].inputs[0]", "(step 'r') must name an"),
        ([R, {**S, "inputs": ["r", "r"]}], "steps[1].inputs[1]", "step, once"),
        ([{**R, "inputs": "q"}], "steps[0].inputs", "must be an array of strings"),
    ],
)  # fmt: skip
def test_steps_outside_the_contract_are_a_data_error_naming_the_step(
    steps: Any, field: str, said: str
) -> None:
    score = stage_input_score(
        {"required": ["D1"], "context": ["D1"], "correct": True, "steps": steps}
    )
    error = (score.metadata or {})["error"]
    assert score.reason == "invalid-input"
    assert error["field"] == field
    assert said in error["message"]


def test_null_steps_are_no_steps() -> None:
    score = stage_input_score(
        {"required": ["D1"], "context": [], "correct": True, "steps": None}
    )
    assert "lost" not in (score.metadata or {})
    assert "steps" not in (score.metadata or {})["read_from"]


# --- rank figures, against ir-measures --------------------------------------------


@settings(max_examples=200)
@given(
    required=st.lists(st.sampled_from(IDS), min_size=1, max_size=6),
    ranked=st.permutations(IDS).flatmap(
        lambda ids: st.integers(0, len(ids)).map(lambda k: ids[:k])
    ),
    cut=st.integers(1, 12),
)
def test_reciprocal_rank_and_ndcg_are_trec_evals(
    required: list[str], ranked: list[str], cut: int
) -> None:
    qrels = [ir_measures.Qrel("q", document, 1) for document in dict.fromkeys(required)]
    run = [
        ir_measures.ScoredDoc("q", document, float(len(ranked) - rank))
        for rank, document in enumerate(ranked)
    ]
    expected = {
        str(measure): value
        for measure, value in ir_measures.calc_aggregate(
            [ir_measures.RR, ir_measures.nDCG @ cut],
            qrels,
            run or [ir_measures.ScoredDoc("q", "none", 0.0)],
        ).items()
    }
    assert math.isclose(
        reciprocal_rank(required, ranked), expected["RR"], abs_tol=1e-12
    )
    assert math.isclose(
        ndcg_at(required, ranked, cut), expected[f"nDCG@{cut}"], abs_tol=1e-12
    )


# --- through Inspect: steps from the store and from metadata ----------------------


@solver
def pipeline(steps: list[dict[str, Any]], context: list[str]) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trace = state.store_as(RetrievalTrace)
        trace.steps = steps
        trace.context = context
        return state

    return solve


STEPS = [
    {"name": "retriever", "ids": ["D1", "D2", "D3", "D4"]},
    {"name": "reranker", "ids": ["D2", "D1"]},
]


@pytest.mark.parametrize("source", ["store", "metadata"])
def test_the_scorer_reads_steps_from_the_store_or_a_metadata_key(source: str) -> None:
    metadata: dict[str, Any] = {"required": ["D1", "D3"], "correct": True}
    if source == "metadata":
        metadata["pipeline"] = STEPS
    task = Task(
        dataset=[Sample(input="q", metadata=metadata)],
        solver=pipeline(STEPS if source == "store" else [], ["D2"]),
        scorer=stage_diagnosis_scorer(
            steps_key="pipeline" if source == "metadata" else None
        ),
    )
    if source == "metadata":
        # An empty list in the store is not read: the key names the source.
        task = Task(
            dataset=task.dataset,
            solver=pipeline(None, ["D2"]),  # type: ignore[arg-type]
            scorer=task.scorer,
        )
    (log,) = eval(
        task, model="mockllm/model", display="none", log_dir=None, log_realtime=False
    )
    assert log.status == "success", log.error
    (sample,) = log.samples or []
    score = (sample.scores or {})["stage_diagnosis"]
    metadata_out = score.metadata or {}
    assert metadata_out["lost"] == [
        {"id": "D1", "lost_at": "context", "last_step": "reranker", "last_rank": 2},
        {"id": "D3", "lost_at": "reranker", "last_step": "retriever", "last_rank": 3},
    ]
    assert metadata_out["step_recall"] == {"retriever": 1.0, "reranker": 0.5}
    assert metadata_out["read_from"]["steps"] == (
        'metadata["pipeline"]' if source == "metadata" else "store RetrievalTrace:steps"
    )
    assert json.loads(json.dumps(metadata_out["record"]["steps"])) == STEPS


def test_the_worked_example_is_what_its_page_says(tmp_path: Path) -> None:
    """docs/pipeline-steps.md: the example's runs q03, q04 and q05."""
    page = (ROOT / "docs" / "pipeline-steps.md").read_text(encoding="utf-8")
    assert (
        "inspect eval tracegrade/stage_diagnosis -T "
        "dataset=examples/pipeline/runs.jsonl --log-dir logs/pipeline"
    ) in page
    (log,) = eval(
        stage_diagnosis(dataset=str(ROOT / "examples" / "pipeline" / "runs.jsonl")),
        display="none",
        log_dir=str(tmp_path),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    scores = {
        sample.id: (sample.scores or {})["stage_diagnosis"]
        for sample in log.samples or []
    }
    q04 = scores["q04"].metadata or {}
    assert {
        "value": scores["q04"].value,
        "lost": q04["lost"],
        "step_recall": q04["step_recall"],
    } == json.loads(page.split("Its score:\n\n```json\n")[1].split("```")[0])
    assert (scores["q03"].metadata or {})["lost"] == [
        {"id": "DOC-068", "lost_at": "context", "last_step": "reranker", "last_rank": 5}
    ]
    assert (scores["q05"].metadata or {})["lost"] == [
        {"id": "DOC-089", "lost_at": "retriever", "last_step": None, "last_rank": None}
    ]
    for sentence in page.split("\n> ")[1:]:
        said = sentence.split("\n")[0]
        assert any(said in (score.explanation or "") for score in scores.values()), said


def test_each_steps_recall_is_a_metric_named_after_it_in_eval_and_bulk_logs(
    tmp_path: Path,
) -> None:
    """`step_recall`: the mean of each step's recall, the same figure from
    `inspect eval` and from `tracegrade score` on the worked example."""
    dataset = ROOT / "examples" / "pipeline" / "runs.jsonl"
    records = [json.loads(line)["input"] for line in dataset.read_text().splitlines()]
    expected = {
        f"{name}_recall": math.fsum(
            step_recalls(record["required"], read_steps(record) or [])[name]
            for record in records
        )
        / len(records)
        for name in ("retriever", "reranker")
    }
    (log,) = eval(
        stage_diagnosis(dataset=str(dataset)),
        display="none",
        log_dir=str(tmp_path / "eval"),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    result = CliRunner().invoke(
        main,
        ["score", "stage_diagnosis", str(dataset), "--log-dir", str(tmp_path / "bulk")],
    )
    assert result.exit_code == 0, result.output
    (bulk_path,) = (tmp_path / "bulk").glob("*.eval")
    bulk = read_eval_log(str(bulk_path), header_only=True)
    for read in (log, bulk):
        assert read.results is not None
        metrics = {
            name: metric.value
            for score in read.results.scores
            for name, metric in score.metrics.items()
        }
        assert {name: metrics[name] for name in expected} == expected
        assert metrics["context_recall"] < expected["reranker_recall"]
