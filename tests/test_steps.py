"""Where in the pipeline each missing document was lost (issue 30), held to
an independent statement of each rule; the report's step recall, RR and nDCG
to ir-measures and a recount."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import ir_measures
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai import Task, eval
from inspect_ai.analysis import SampleSummary, samples_df
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tracegrade import diagnose_stage, stage_diagnosis
from tracegrade.analysis import StageColumns, step_recall_columns
from tracegrade.cli import main
from tracegrade.core import canonical_json
from tracegrade.core.steps import Step, read_steps, step_recalls
from tracegrade.report.steps import NDCG_DEPTH, NEAR_THE_CUT, PipelineTally
from tracegrade.schema import InvalidScore, read_stage
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
    return {"required": required, "context": context,
            "correct": draw(st.booleans()), "steps": steps}  # fmt: skip


def lost_as_stated(document: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's rule, word for word, with no shared code."""
    having = [step for step in steps if document in step["ids"]]
    if not having:
        first = steps[0]["name"]
        return {"id": document, "lost_at": first, "last_step": None, "last_rank": None}
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

    # Without steps, the seed's result; with them, only the steps' own keys added.
    without = {key: value for key, value in record.items() if key != "steps"}
    plain = stage_input_score(without)
    plain_metadata = plain.metadata or {}
    assert canonical_json(plain_metadata["result"]) == canonical_json(
        diagnose_stage(without)
    )
    assert score.value == plain.value
    where = {"record", "read_from"}
    assert {k: v for k, v in metadata.items() if k not in where} == {
        k: v for k, v in plain_metadata.items() if k not in where
    } | {key: metadata[key] for key in ("lost", "step_recall") if key in metadata}


RETRIEVED = [f"D{n}" for n in (2, 8, 3, 5, 7, 1, 9, 10, 11, 12, 13, 14, 15, 19)]


@pytest.mark.parametrize(
    ("steps", "required", "context", "said"),
    [
        (
            [{"name": "retriever", "ids": RETRIEVED},
             {"name": "reranker", "ids": ["D2", "D8", "D3", "D7", "D5"]}],
            ["D19", "D40", "D7"],
            ["D2", "D8", "D3"],
            ["D19: retrieved at rank 14 by retriever, dropped by reranker (which "
             "kept 5).",
             "D40: never retrieved; retriever did not return it (it returned 14).",
             "D7: kept at rank 4 by reranker and dropped by no later step, but not "
             "among the 3 that reached the model."],
        ),
        # Hybrid search: both retrievers feed one reranker; what either
        # returned and the reranker dropped is lost at the reranker.
        (
            [{"name": "retriever", "ids": ["D1", "D3"]},
             {"name": "retriever-2", "ids": ["D7", "D1"], "inputs": []},
             {"name": "reranker", "ids": ["D1"],
              "inputs": ["retriever", "retriever-2"]}],
            ["D3", "D7", "D9", "X1", "X2", "X3"],
            [],
            ["D3: retrieved at rank 2 by retriever, dropped by reranker",
             "D7: retrieved at rank 1 by retriever-2, dropped by reranker",
             "D9: never retrieved; no retriever returned it (retriever returned "
             "2, retriever-2 returned 2).", "And 1 more, in the score's `lost`."],
        ),
    ],
    ids=["retriever-reranker", "fan-in"],
)  # fmt: skip
def test_the_explanation_says_where_each_missing_id_was_lost(
    steps: list[dict[str, Any]],
    required: list[str],
    context: list[str],
    said: list[str],
) -> None:
    """(Where each was lost: the property test above.)"""
    record = {"required": required, "context": context, "correct": False}
    score = stage_input_score({**record, "steps": steps})
    for sentence in said:
        assert sentence in (score.explanation or "")
    assert (score.metadata or {})["read_from"]["steps"] == "store RetrievalTrace:steps"


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


# --- through Inspect: steps from a metadata key (the store: test_rag_example) -----


@solver
def context_only(context: list[str]) -> Solver:
    """The context in the store, and no steps there."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trace = state.store_as(RetrievalTrace)
        trace.steps = None
        trace.context = context
        return state

    return solve


STEPS = [
    {"name": "retriever", "ids": ["D1", "D2", "D3", "D4"]},
    {"name": "reranker", "ids": ["D2", "D1"]},
]


def test_the_scorer_reads_steps_from_a_metadata_key() -> None:
    metadata = {"required": ["D1", "D3"], "correct": True, "pipeline": STEPS}
    task = Task(
        dataset=[Sample(input="q", metadata=metadata)],
        solver=context_only(["D2"]),
        scorer=stage_diagnosis_scorer(steps_key="pipeline"),
    )
    (log,) = eval(
        task, model="mockllm/model", display="none", log_dir=None, log_realtime=False
    )
    assert log.status == "success", log.error
    (sample,) = log.samples or []
    score = (sample.scores or {})["stage_diagnosis"]
    metadata_out = score.metadata or {}
    assert [entry["lost_at"] for entry in metadata_out["lost"]] == [
        "context",
        "reranker",
    ]
    assert metadata_out["read_from"]["steps"] == 'metadata["pipeline"]'
    assert json.loads(json.dumps(metadata_out["record"]["steps"])) == STEPS


# --- the report's pipeline figures, against ir-measures and a recount ---------

REPORT_IDS = [f"D{number}" for number in range(16)]
STEP_NAMES = ["retriever", "reranker"]


@st.composite
def two_step_runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Runs of a two-step pipeline, the context a prefix of the last step."""
    records = []
    for _ in range(draw(st.integers(1, 8))):
        retrieved = draw(st.permutations(REPORT_IDS))[: draw(st.integers(0, 16))]
        reranked = [item for item in retrieved if draw(st.booleans())]
        cut = draw(st.integers(0, len(reranked)))
        required = draw(st.lists(st.sampled_from(REPORT_IDS), min_size=1, max_size=5))
        steps = [("retriever", retrieved), ("reranker", reranked)]
        made = [{"name": name, "ids": ids} for name, ids in steps]
        records.append({"required": required, "context": reranked[:cut],
                        "correct": draw(st.booleans()), "steps": made})  # fmt: skip
    return records


def tallied(records: list[dict[str, Any]]) -> PipelineTally:
    """The records' scores counted as the report reads them: through the schema."""
    tally = PipelineTally()
    for record in records:
        score = stage_input_score(record)
        staged = read_stage(score.value, score.metadata)
        assert staged.required is not None and staged.steps is not None
        assert staged.steps == read_steps(record)
        assert staged.context_size == len(record["context"])
        tally.add(staged.required, staged.context_size, staged.steps, staged.lost)
    return tally


def trec_eval(records: list[dict[str, Any]], step: int) -> dict[str, float]:
    qrels = [
        ir_measures.Qrel(str(query), document, 1)
        for query, record in enumerate(records)
        for document in dict.fromkeys(record["required"])
    ]
    ranked = [
        ir_measures.ScoredDoc(str(query), document, float(100 - rank))
        for query, record in enumerate(records)
        for rank, document in enumerate(record["steps"][step]["ids"])
    ]
    # A query with an empty ranking still counts, as a 0: one unjudged
    # document below every other keeps it in trec_eval's mean.
    ranked += [
        ir_measures.ScoredDoc(str(query), "none", 0.0) for query in range(len(records))
    ]
    measures = [ir_measures.RR, ir_measures.nDCG @ NDCG_DEPTH, ir_measures.R @ 1000]
    figures = ir_measures.calc_aggregate(measures, qrels, ranked)
    return {str(measure): value for measure, value in figures.items()}


@settings(max_examples=60, deadline=None)
@given(records=two_step_runs())
def test_the_figures_are_trec_evals_and_the_losses_a_recount(
    records: list[dict[str, Any]],
) -> None:
    summary = tallied(records).summary()
    assert summary is not None
    assert [figures.step for figures in summary.steps] == STEP_NAMES
    for index, figures in enumerate(summary.steps):
        expected = trec_eval(records, index)
        assert figures.runs == len(records)
        got = figures.mrr, figures.ndcg, figures.recall
        want = expected["RR"], expected[f"nDCG@{NDCG_DEPTH}"], expected["R@1000"]
        assert got == pytest.approx(want, abs=1e-12)
    lost_at: Counter[str] = Counter()
    cut_ranks: list[int] = []
    near = 0
    for record in records:
        # The rule as the issue states it, recounted from the IDs.
        required = dict.fromkeys(record["required"])
        missing = [item for item in required if item not in record["context"]]
        retrieved, reranked = (step["ids"] for step in record["steps"])
        for item in missing:
            if item not in retrieved:
                lost_at["retriever"] += 1
            elif item not in reranked:
                lost_at["reranker"] += 1
            else:
                lost_at["context"] += 1
                cut_ranks.append(reranked.index(item) + 1)
                near += cut_ranks[-1] <= len(record["context"]) + NEAR_THE_CUT
    total = lost_at.total()
    assert summary.missing == total
    assert {figures.step: figures.lost for figures in summary.steps} == {
        name: lost_at[name] for name in STEP_NAMES
    }
    assert (summary.context.lost, summary.context.near_the_cut) == (
        lost_at["context"],
        near,
    )
    if total:
        shares = [figures.lost_share for figures in summary.steps]
        assert math.isclose(sum(shares) + (summary.context.share or 0.0), 1.0)
    else:
        assert summary.context.share is None
    median = statistics.median(cut_ranks) if cut_ranks else None
    assert summary.context.median_last_rank == median


def test_steps_are_listed_in_first_seen_order_and_counted_where_present() -> None:
    first = {"required": ["A"], "context": [], "correct": True}
    first["steps"] = [{"name": "bm25", "ids": ["B", "A"]}]
    second = {"required": ["A"], "context": ["A"], "correct": True}
    second["steps"] = [{"name": "dense", "ids": ["A"]}, {"name": "bm25", "ids": ["A"]}]
    summary = tallied([first, second]).summary()
    assert summary is not None
    assert [(s.step, s.runs, s.recall, s.mrr) for s in summary.steps] == [
        ("bm25", 2, 1.0, 0.75),
        ("dense", 1, 1.0, 1.0),
    ]
    assert PipelineTally().summary() is None  # no run with steps
    # First run: A was at bm25's rank 2, the context empty: lost at the cut.
    cut = summary.context
    assert (cut.lost, cut.median_last_rank, cut.near_the_cut) == (1, 2.0, 1)


# --- through a real eval and `tracegrade report` ---------------------------------


@pytest.fixture(scope="module")
def pipeline_log(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[dict[str, Any]]]:
    """The worked example's `inspect eval` log directory, and each sample's
    score metadata."""
    log_dir = tmp_path_factory.mktemp("pipeline")
    (log,) = eval(
        stage_diagnosis(dataset=str(ROOT / "examples" / "pipeline" / "runs.jsonl")),
        display="none",
        log_dir=str(log_dir),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    scores = [(sample.scores or {})["stage_diagnosis"] for sample in log.samples or []]
    return log_dir, [score.metadata or {} for score in scores]


def test_the_report_says_where_the_examples_missing_documents_were_lost(
    pipeline_log: tuple[Path, list[dict[str, Any]]],
) -> None:
    log_dir, metadata = pipeline_log
    lost = [entry for each in metadata for entry in each.get("lost", [])]
    result = CliRunner().invoke(main, ["report", str(log_dir), "--json"])
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.output)["stage_diagnosis"]
    pipeline = summary["pipeline"]
    assert pipeline["runs"] == len(metadata)
    assert pipeline["missing"] == len(lost) > 0
    for step in pipeline["steps"]:
        assert step["lost"] == sum(entry["lost_at"] == step["step"] for entry in lost)
        assert step["recall"] == pytest.approx(
            statistics.fmean(each["step_recall"][step["step"]] for each in metadata)
        )
    at_the_cut = [entry for entry in lost if entry["lost_at"] == "context"]
    assert pipeline["context"]["lost"] == len(at_the_cut) > 0
    assert pipeline["context"]["median_last_rank"] == statistics.median(
        entry["last_rank"] for entry in at_the_cut
    )


def test_the_analysis_columns_say_where_each_was_lost_and_each_steps_recall(
    pipeline_log: tuple[Path, list[dict[str, Any]]],
) -> None:
    log_dir, metadata = pipeline_log
    steps = step_recall_columns("retriever", "reranker")
    frame = samples_df(str(log_dir), columns=SampleSummary + StageColumns + steps)
    assert frame["stage_lost_at"].map(list).tolist() == [
        [entry["lost_at"] for entry in each["lost"]] for each in metadata
    ]
    for step in ("retriever", "reranker"):
        recalls = [each["step_recall"][step] for each in metadata]
        assert frame[f"stage_{step}_recall"].tolist() == recalls
    with pytest.raises(ValueError, match="at least one step"):
        step_recall_columns()


def test_a_score_whose_steps_and_lost_disagree_is_refused_by_name() -> None:
    record = {"required": ["A"], "context": [], "correct": True}
    record["steps"] = [{"name": "bm25", "ids": ["A"]}]
    score = stage_input_score(record)
    metadata = dict(score.metadata or {})
    with pytest.raises(InvalidScore, match=r"lost and record\.steps go together"):
        read_stage(score.value, {**metadata, "lost": None})
    broken = {**metadata, "record": {**record, "steps": [{"name": "bm25"}]}}
    with pytest.raises(InvalidScore, match=r"record\.field 'steps\[0\]'"):
        read_stage(score.value, broken)
