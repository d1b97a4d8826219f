"""ID recall: its definition and metric, and the helpers that hold it to
ir-measures' `R@k` (tests/test_precision.py). A context may repeat an ID, a
TREC run may not: the run given is the context deduplicated."""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Sequence
from typing import Any, Final, cast

import ir_measures
import pytest
from hypothesis import strategies as st
from inspect_ai.scorer import MetricProtocol, SampleScore, Score

from tracegrade.core import diagnose_stage, id_recall, stage_recall
from tracegrade.scorers import context_recall
from tracegrade.scorers.stage import diagnosis_score

READ_FROM = {"required": "r", "context": "c", "correct": "l"}

# IDs that collide only under some normalisation, which the rules never do.
# No lone surrogate or NUL: pytrec_eval crashes on the one and ends its C
# strings at the other (test_differential holds both against the reference).
LOOK_ALIKES: Final = (
    "A", "\u0410", "a", "\u00e9", "e\u0301", "\u00df", "ss", "SS", "\ufb01",
    "fi", "\u212a", "K", "\u212b", "\u00c5", "A\u030a", "\U0001d400",
    "\U0001f600", "\ue000", "", " ", "D1", "D1 ", "d1", "D1\u200b", "D10",
)  # fmt: skip


def ragas_recall(required: Sequence[str], context: Sequence[str]) -> float:
    """Ragas' `IDBasedContextRecall`, as its documentation defines it."""
    reference = set(required)
    return len(set(context) & reference) / len(reference)


def test_recall_counts_unique_ids_on_both_sides() -> None:
    record = {"required": ["A", "A", "B", "C"], "context": ["A", "A", "X"]}
    result = diagnose_stage({**record, "correct": True})
    assert result == {"stage": "retrieval", "missing": ["B", "C"]}
    # Three unique required IDs, one supplied (twice): 1/3, not 2/4 or 2/3.
    assert stage_recall(record) == 1 / 3
    assert id_recall(record["required"], result["missing"]) == 1 / 3


def test_recall_refuses_what_no_diagnosis_gives() -> None:
    with pytest.raises(ValueError, match="at least one required ID"):
        id_recall([], [])
    with pytest.raises(ValueError, match="cannot come from"):
        id_recall(["A"], ["A", "B"])


# Any ID our rules may meet, lone surrogates included (no codec); no NUL.
ID = st.sampled_from(LOOK_ALIKES) | st.text(
    st.characters(exclude_characters="\x00"), max_size=3
)
# The IDs a TREC file can hold, for the tests against pytrec_eval.
TREC_ID = st.sampled_from(LOOK_ALIKES) | st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), max_size=3
)


# --- the metric (with precision's, in tests/test_precision.py) --------------


def test_the_metric_does_not_depend_on_the_order_of_runs() -> None:
    # Values whose running float sum changes with the order: the metric's
    # must not, or `tracegrade score` and `inspect eval` could disagree.
    values = [1 / 3, 1 / 7, 2 / 3, 1 / 11, 10 / 13, 5 / 17] * 50
    shuffled = list(values)
    random.Random(3).shuffle(shuffled)
    assert sum(values) != sum(shuffled)  # the premise
    metric = cast(MetricProtocol, context_recall())
    for order in (values, shuffled):
        runs = [Score(value="pass", metadata={"recall": value}) for value in order]
        scores = [SampleScore(sample_id="s", score=score) for score in runs]
        assert metric(scores) == math.fsum(values) / len(values)


# --- against ir-measures: TREC's recall ---------------------------------------


def trec_inputs(
    pairs: Sequence[tuple[list[str], list[str]]],
) -> tuple[list[Any], list[Any], int]:
    """Qrels, run and cut-off k (the longest run), one query per pair: the
    run is the context deduplicated, scored n - rank; an empty one has no lines."""
    for required, context in pairs:
        for doc in (*required, *context):
            assert is_trec_id(doc), f"not an ID pytrec_eval can take: {doc!r}"
    qrels, run, k = [], [], 1
    for index, (required, context) in enumerate(pairs):
        query = f"q{index}"
        qrels.extend(ir_measures.Qrel(query, doc, 1) for doc in dict.fromkeys(required))
        ranked = list(dict.fromkeys(context))
        k = max(k, len(ranked))
        run.extend(
            ir_measures.ScoredDoc(query, doc, float(len(ranked) - rank))
            for rank, doc in enumerate(ranked)
        )
    return qrels, run, k


def is_trec_id(doc: str) -> bool:
    """Whether pytrec_eval can take `doc` (else it crashes): UTF-8, no NUL."""
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in doc


def our_recall(required: list[str], context: list[str]) -> float:
    record = {"required": required, "context": context, "correct": True}
    score = diagnosis_score(record, READ_FROM, context_recorded=True)
    assert score.metadata is not None
    recall = score.metadata["recall"]
    assert isinstance(recall, float)
    return recall


def generated_pairs(seed: int, count: int) -> list[tuple[list[str], list[str]]]:
    """Pairs with a non-empty required list, drawn from a small pool per
    pair so IDs collide: look-alikes, repeats on both sides, overlaps of
    every size, and empty contexts."""
    generator = random.Random(seed)
    pairs = []
    for _ in range(count):
        pool = generator.sample(LOOK_ALIKES, generator.randint(1, 10))
        pool += [
            unicodedata.normalize("NFD", i) for i in pool if generator.random() < 0.2
        ]
        pool += [
            f"doc-{generator.randrange(1000)}" for _ in range(generator.randint(0, 3))
        ]
        required = generator.choices(pool, k=generator.randint(1, 12))
        context = generator.choices(pool, k=generator.randint(0, 15))
        pairs.append((required, context))
    return pairs
