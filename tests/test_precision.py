"""ID recall and precision beside the stage: definitions, trec_eval, metrics."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Final, cast

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.scorer import MetricProtocol, SampleScore, Score

from tests.test_recall import (
    ID,
    READ_FROM,
    TREC_ID,
    generated_pairs,
    is_trec_id,
    our_recall,
    ragas_recall,
    trec_inputs,
)
from tracegrade.core import diagnose_stage, id_recall, stage_precision, stage_recall
from tracegrade.scorers import context_precision, context_recall
from tracegrade.scorers.stage import diagnosis_score
from tracegrade.tasks.recorded import stage_input_score

# A judged document no generated context holds: a query whose required
# set is empty is judged on it (relevance 0), so trec_eval evaluates the
# query, as it does a TREC query with nothing relevant.
JUDGED_NOT_RELEVANT: Final = "judged-not-relevant"


def our_precision(required: list[str], context: list[str]) -> float | None:
    record = {"required": required, "context": context, "correct": True}
    score = diagnosis_score(record, READ_FROM, context_recorded=True)
    assert score.metadata is not None
    precision = score.metadata["precision"]
    assert precision is None or type(precision) is float
    return cast("float | None", precision)


# Record: (recall, precision), as the core gives them and as every stage
# score carries them, whatever the stage or error.
SHARES: Final[list[tuple[dict[str, Any], float | None, float | None]]] = [
    ({"required": ["A", "B"], "context": ["A", "B"], "correct": True}, 1.0, 1.0),
    ({"required": ["A"], "context": ["B", "A"], "correct": False}, 1.0, 0.5),
    ({"required": ["A", "B"], "context": [], "correct": False}, 0.0, None),
    ({"required": [], "context": ["A"], "correct": True}, None, 0.0),
    ({"required": [], "context": []}, None, None),
    # answer-label: the shares need no label
    ({"required": ["A"], "context": ["A", "X"]}, 1.0, 0.5),
    # required absent or null, context never recorded or null, no ID lists
    ({"context": ["A"], "correct": True}, None, None),
    ({"required": ["A"], "correct": True}, None, None),
    ({"required": ["A"], "context": "A", "correct": True}, None, None),
    ({"required": ["A", 1], "context": ["A"]}, None, None),
]


@pytest.mark.parametrize(("record", "recall", "precision"), SHARES, ids=repr)
def test_every_stage_score_has_recall_and_precision_of_its_record(
    record: dict[str, Any], recall: float | None, precision: float | None
) -> None:
    score = stage_input_score(record)
    assert score.metadata is not None
    for found, expected in (
        (stage_recall(record), recall),
        (score.metadata["recall"], recall),
        (stage_precision(record), precision),
        (score.metadata["precision"], precision),
    ):
        assert found == expected and type(found) is type(expected)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    required=st.lists(ID, max_size=12),
    context=st.lists(ID, max_size=12),
    label=st.sampled_from([False, True, None, "yes"]),
)
def test_recall_and_precision_are_ragas_id_measures_and_leave_the_rest_alone(
    required: list[str], context: list[str], label: Any
) -> None:
    record: dict[str, Any] = {"required": required, "context": context}
    if label is not None:
        record["correct"] = label
    before = diagnose_stage(dict(record))
    score = diagnosis_score(dict(record), READ_FROM, context_recorded=True)
    assert score.metadata is not None
    # Beside the result, never instead of it.
    assert score.metadata["result"] == before
    recall, precision = score.metadata["recall"], score.metadata["precision"]
    # Exactly, not approximately: each is one division of the same ints.
    if not required:
        assert recall is None
        assert before == {"stage": "unresolved"}
    else:
        assert recall == ragas_recall(required, context)
    if not context:
        assert precision is None
    else:
        # Ragas' `IDBasedContextPrecision` for string IDs, as its source has it.
        retrieved = set(context)
        assert precision == len(retrieved & set(required)) / len(retrieved)
    if "missing" in before and required:
        # The missing-based forms, where the rules report `missing`.
        assert recall == id_recall(required, before["missing"])
        assert (recall == 1.0) == (before["stage"] != "retrieval")
        found = len(set(required)) - len(before["missing"])
        if context:
            assert precision == found / len(set(context))
    elif required:
        assert before == {"error": "answer-label"}


def trec_precisions(
    pairs: Sequence[tuple[list[str], list[str]]], *, deduplicated: bool = False
) -> dict[int, float]:
    """ir-measures' `P@k` of each pair with a context (k: its unique IDs), by
    index. A document judged not relevant (0) that no context holds makes a
    query requiring nothing judged, as in TREC. One call per cut-off."""
    for required, context in pairs:
        for doc in (*required, *context):
            assert is_trec_id(doc), f"not an ID pytrec_eval can take: {doc!r}"
    by_k: dict[int, tuple[list[Any], list[Any]]] = {}
    for index, (required, context) in enumerate(pairs):
        if not context:
            continue
        query = f"q{index}"
        qrels, run = by_k.setdefault(len(set(context)), ([], []))
        qrels.extend(ir_measures.Qrel(query, doc, 1) for doc in dict.fromkeys(required))
        qrels.append(ir_measures.Qrel(query, JUDGED_NOT_RELEVANT, 0))
        # Repeats included unless deduplicated, first highest.
        ranked = list(dict.fromkeys(context)) if deduplicated else context
        run.extend(
            ir_measures.ScoredDoc(query, doc, float(len(ranked) - rank))
            for rank, doc in enumerate(ranked)
        )
    found: dict[int, float] = {}
    for k, (qrels, run) in by_k.items():
        for metric in ir_measures.pytrec_eval.iter_calc(
            [ir_measures.P @ k], qrels, run
        ):
            found[int(metric.query_id[1:])] = metric.value
    return found


def test_precision_is_trec_precision_on_thousands_of_generated_pairs() -> None:
    pairs = generated_pairs(seed=20240612, count=5_000)
    # Empty required sets too: judged, nothing relevant.
    generator = random.Random(5)
    pairs += [([], context) for _, context in generator.sample(pairs, 200)]
    # The premise: the pairs hold what the test claims to cover.
    assert sum(len(set(c)) < len(c) for _, c in pairs) > 1_000
    assert sum(not c for _, c in pairs) > 50
    assert any("A" in c and "\u0410" in r for r, c in pairs)
    ours = [our_precision(required, context) for required, context in pairs]
    theirs = trec_precisions(pairs)
    # An empty context has no precision here; ir-measures never sees it.
    assert [i for i, p in enumerate(ours) if p is None] == [
        i for i, (_, context) in enumerate(pairs) if not context
    ]
    assert sorted(theirs) == [i for i, p in enumerate(ours) if p is not None]
    # Per query, exactly: trec_eval divides the same two integers. The
    # ranking with repeats dropped gives the very same figures.
    assert {i: ours[i] for i in theirs} == theirs
    assert trec_precisions(pairs, deduplicated=True) == theirs
    assert len(set(theirs.values())) > 30
    assert sum(p == 0.0 for p in theirs.values()) > 200
    # The metric: the mean of the queries ir-measures evaluated.
    scores = [
        SampleScore(
            sample_id=str(i),
            score=diagnosis_score(
                {"required": r, "context": c, "correct": True},
                READ_FROM,
                context_recorded=True,
            ),
        )
        for i, (r, c) in enumerate(pairs)
    ]
    assert share_metric("precision", scores) == math.fsum(theirs.values()) / len(theirs)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    pairs=st.lists(
        st.tuples(st.lists(TREC_ID, max_size=8), st.lists(TREC_ID, max_size=10)),
        min_size=1,
        max_size=12,
    )
)
def test_recall_and_precision_are_trec_evals_on_hypothesis_pairs(
    pairs: list[tuple[list[str], list[str]]],
) -> None:
    """One draw for both measures: drawing the IDs is the cost."""
    theirs = trec_precisions(pairs)
    ours = {i: our_precision(r, c) for i, (r, c) in enumerate(pairs) if c}
    assert ours == theirs
    # Recall is defined where something is required.
    required = [(r, c) for r, c in pairs if r]
    if required:
        qrels, run, k = trec_inputs(required)
        measure = ir_measures.R @ k
        recalls = {
            metric.query_id: metric.value
            for metric in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)
        }
        assert [recalls[f"q{i}"] for i in range(len(required))] == [
            our_recall(r, c) for r, c in required
        ]


METRICS: Final = {"recall": context_recall, "precision": context_precision}


def share_metric(share: str, scores: Sequence[Any]) -> Any:
    return cast(MetricProtocol, METRICS[share]())(list(scores))


def scored_with(share: str, value: Any) -> SampleScore:
    return SampleScore(
        sample_id="s", score=Score(value="pass", metadata={share: value})
    )


@pytest.mark.parametrize("share", list(METRICS))
def test_the_metric_averages_runs_with_a_share_and_refuses_any_other(
    share: str,
) -> None:
    scores = [scored_with(share, v) for v in (1.0, 0.5, None, 0.0, None)]
    assert share_metric(share, scores) == 0.5
    assert math.isnan(share_metric(share, [scored_with(share, None)]))
    assert math.isnan(share_metric(share, []))
    for bad in ("0.5", True, 1.5, math.nan):
        with pytest.raises(ValueError, match=f"{share} must be null or a share"):
            share_metric(share, [scored_with(share, bad)])
    # A score no tracegrade scorer made.
    foreign = SampleScore(sample_id="s", score=Score(value="pass", metadata={}))
    with pytest.raises(ValueError, match=f"has no '{share}'"):
        share_metric(share, [foreign])
