"""Where missing documents were lost, held to ir-measures and a recount."""

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
from inspect_ai import eval
from inspect_ai.log import read_eval_log

from tracegrade import stage_diagnosis
from tracegrade.cli import main
from tracegrade.core.steps import read_steps
from tracegrade.report.steps import NDCG_DEPTH, NEAR_THE_CUT, PipelineTally
from tracegrade.schema import InvalidScore, read_stage
from tracegrade.tasks.recorded import stage_input_score

IDS = [f"D{number}" for number in range(16)]
EXAMPLE = (
    Path(__file__).resolve().parent.parent / "examples" / "pipeline" / "runs.jsonl"
)
STEP_NAMES = ["retriever", "reranker"]


@st.composite
def runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Runs of a two-step pipeline, the context a prefix of the last step."""
    records = []
    for _ in range(draw(st.integers(1, 8))):
        retrieved = draw(st.permutations(IDS))[: draw(st.integers(0, 16))]
        reranked = [item for item in retrieved if draw(st.booleans())]
        cut = draw(st.integers(0, len(reranked)))
        required = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=5))
        steps = [("retriever", retrieved), ("reranker", reranked)]
        records.append(
            {
                "required": required,
                "context": reranked[:cut],
                "correct": draw(st.booleans()),
                "steps": [{"name": name, "ids": ids} for name, ids in steps],
            }
        )
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
@given(records=runs())
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
def pipeline_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    log_dir = tmp_path_factory.mktemp("pipeline")
    (log,) = eval(
        stage_diagnosis(dataset=str(EXAMPLE)),
        display="none",
        log_dir=str(log_dir),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return log_dir


def report_of(*args: str) -> str:
    result = CliRunner().invoke(main, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_report_says_where_the_examples_missing_documents_were_lost(
    pipeline_log: Path,
) -> None:
    (path,) = pipeline_log.glob("*.eval")
    samples = read_eval_log(str(path)).samples or []
    metadata = [
        (sample.scores or {})["stage_diagnosis"].metadata or {} for sample in samples
    ]
    lost = [entry for each in metadata for entry in each.get("lost", [])]
    reported = json.loads(report_of(str(pipeline_log), "--json"))
    (summary,) = reported["stage_diagnosis"]
    pipeline = summary["pipeline"]
    assert pipeline["runs"] == len(samples)
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
    page = (EXAMPLE.parent.parent.parent / "docs" / "pipeline-steps.md").read_text()
    markdown = report_of(str(pipeline_log), "--markdown")
    # The page's tables (and so its sentence of them) are the report's rows.
    shown = [line.strip() for line in page.splitlines() if line.startswith("  | E1 |")]
    assert len(shown) == 4
    for line in shown:
        assert line in markdown.splitlines(), line


def test_the_analysis_columns_say_where_each_was_lost_and_each_steps_recall(
    pipeline_log: Path,
) -> None:
    from inspect_ai.analysis import SampleSummary, samples_df

    from tracegrade.analysis import StageColumns, step_recall_columns

    (path,) = pipeline_log.glob("*.eval")
    expected = {
        sample.id: (sample.scores or {})["stage_diagnosis"].metadata
        for sample in read_eval_log(str(path)).samples or []
    }
    frame = samples_df(
        str(pipeline_log),
        columns=SampleSummary
        + StageColumns
        + step_recall_columns("retriever", "reranker"),
    )
    assert len(frame) == len(expected)
    for row in frame.itertuples():
        metadata = expected[row.id]
        assert list(row.stage_lost_at) == [
            entry["lost_at"] for entry in metadata["lost"]
        ]
        assert row.stage_retriever_recall == metadata["step_recall"]["retriever"]
        assert row.stage_reranker_recall == metadata["step_recall"]["reranker"]
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
