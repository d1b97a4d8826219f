"""ID recall beside the stage, and `context_recall` over runs.

What is checked:

- the definition: recall is a fact of the record alone, |set(context) &
  set(required)| / |set(required)| (Ragas' ID-based context recall), equal
  to (unique required - missing) / unique required wherever the rules
  report `missing`, and stage and missing are unchanged by it;
- a run without a label (`answer-label`) has it too; it is null where
  nothing is required or an ID list is not one, and what the metric makes
  of that (an unscored run never reaches it);
- a differential test against ir-measures' TREC recall (`R@k`, trec_eval's
  code through pytrec_eval) on thousands of generated (required, context)
  pairs with repeats and Unicode look-alikes;
- the bulk path (`tracegrade score`) gives the very metric `inspect eval`
  gives, from a column of doubles rather than a dict a sample.

The one definitional difference with TREC: a TREC run cannot rank one
document twice for a query (trec_eval refuses "duplicate docs"), while a
context may supply one twice. A supplied ID counts once either way, so the
run given to ir-measures is the context with repeats dropped, each ID at
its first rank. Likewise a qrels file judges a document once, so the
qrels are the unique required IDs: a required ID listed twice is required
once, in recall as in `missing`.
"""

from __future__ import annotations

import math
import random
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.scorer import MetricProtocol, SampleScore, Score

from tests.support import write_lines
from tracegrade import stage_diagnosis
from tracegrade.bulk.results import RunResults
from tracegrade.bulk.scoring import TASKS
from tracegrade.core import diagnose_stage, id_recall, stage_recall
from tracegrade.scorers import context_recall
from tracegrade.scorers.stage import diagnosis_score
from tracegrade.tasks.recorded import stage_input_score

READ_FROM = {"required": "r", "context": "c", "correct": "l"}

# IDs that collide only under some normalisation, which the rules never do:
# Latin and Cyrillic A, NFC and NFD é, ß and ss/SS, the ﬁ ligature and fi,
# the Kelvin sign and K, Angstrom sign and Å, an astral letter, the empty
# ID and whitespace variants. Not here: lone surrogates, which pytrec_eval
# cannot encode (it crashes the interpreter), and NUL, at which its C
# strings end ("a\0b" and "a\0c" would be one document). Both are refused
# by TREC's text files anyway; tests/test_differential.py covers them
# against the reference evaluators.
LOOK_ALIKES: Final = (
    "A",
    "\u0410",
    "a",
    "\u00e9",
    "e\u0301",
    "\u00df",
    "ss",
    "SS",
    "\ufb01",
    "fi",
    "\u212a",
    "K",
    "\u212b",
    "\u00c5",
    "A\u030a",
    "\U0001d400",
    "\U0001f600",
    "\ue000",
    "",
    " ",
    "D1",
    "D1 ",
    "d1",
    "D1\u200b",
    "D10",
)


def recall_metric(scores: Sequence[Any]) -> Any:
    return cast(MetricProtocol, context_recall())(list(scores))


def ragas_recall(required: Sequence[str], context: Sequence[str]) -> float:
    """Ragas' `IDBasedContextRecall`, as its documentation defines it."""
    reference = set(required)
    return len(set(context) & reference) / len(reference)


def stage_score_with(recall: Any, sample_id: str = "s") -> SampleScore:
    return SampleScore(
        sample_id=sample_id,
        score=Score(value="pass", metadata={"recall": recall}),
    )


# --- the definition -----------------------------------------------------------


def test_recall_counts_unique_ids_on_both_sides() -> None:
    record = {"required": ["A", "A", "B", "C"], "context": ["A", "A", "X"]}
    result = diagnose_stage({**record, "correct": True})
    assert result == {"stage": "retrieval", "missing": ["B", "C"]}
    # Three unique required IDs, one supplied (twice): 1/3, not 2/4 or 2/3.
    assert stage_recall(record) == 1 / 3
    assert id_recall(record["required"], result["missing"]) == 1 / 3


def test_look_alikes_are_different_ids() -> None:
    required = ["A", "\u00e9", "\u00df"]
    context = ["\u0410", "e\u0301", "ss"]  # Cyrillic A, NFD é, "ss"
    result = diagnose_stage({"required": required, "context": context, "correct": True})
    assert result["stage"] == "retrieval"
    assert stage_recall({"required": required, "context": context}) == 0.0


def test_recall_needs_no_label() -> None:
    record = {"required": ["A", "B"], "context": ["B"]}
    assert diagnose_stage(record) == {"error": "answer-label"}
    assert stage_recall(record) == 0.5
    assert stage_recall({**record, "correct": "yes"}) == 0.5


@pytest.mark.parametrize(
    "record",
    [
        {"required": [], "context": ["A"]},
        {"context": ["A"]},
        {"required": None, "context": ["A"]},
        {"required": ["A"]},
        {"required": ["A"], "context": None},
        {"required": ["A"], "context": "A"},
        {"required": ["A"], "context": ("A",)},
        {"required": ["A", 1], "context": ["A"]},
        {"required": ["A"], "context": ["A", None]},
        {"required": "A", "context": ["A"]},
    ],
)
def test_recall_is_none_without_a_required_set_or_id_lists(
    record: dict[str, Any],
) -> None:
    assert stage_recall(record) is None


def test_recall_refuses_what_no_diagnosis_gives() -> None:
    with pytest.raises(ValueError, match="at least one required ID"):
        id_recall([], [])
    with pytest.raises(ValueError, match="cannot come from"):
        id_recall(["A"], ["A", "B"])


# Any ID our rules may meet, lone surrogates included: `characters()` with
# no codec draws them (only `text()`'s default alphabet, characters(codec=
# "utf-8"), leaves them out). NUL is left out (see LOOK_ALIKES).
ID = st.sampled_from(LOOK_ALIKES) | st.text(
    st.characters(exclude_characters="\x00"), max_size=3
)
# The IDs a TREC file can hold, for the tests against pytrec_eval: no lone
# surrogate, which has no UTF-8 form (pytrec_eval's C code then copies a
# null pointer and the interpreter dies), and no NUL.
TREC_ID = st.sampled_from(LOOK_ALIKES) | st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), max_size=3
)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    required=st.lists(ID, max_size=12),
    context=st.lists(ID, max_size=12),
    label=st.sampled_from([False, True, None, "yes"]),
)
def test_recall_is_ragas_id_recall_and_leaves_the_result_alone(
    required: list[str], context: list[str], label: Any
) -> None:
    record: dict[str, Any] = {"required": required, "context": context}
    if label is not None:
        record["correct"] = label
    before = diagnose_stage(dict(record))
    score = diagnosis_score(dict(record), READ_FROM, context_recorded=True)
    assert score.metadata is not None
    # Recall is added beside the result, never instead of it.
    assert score.metadata["result"] == before
    recall = score.metadata["recall"]
    if not required:
        assert before == {"stage": "unresolved"} and recall is None
        return
    # Exactly, not approximately: both are one division of the same ints.
    assert recall == ragas_recall(required, context)
    if "missing" in before:
        # The missing-based form, where the rules report `missing`.
        assert recall == id_recall(required, before["missing"])
        assert (recall == 1.0) == (before["stage"] != "retrieval")
    else:
        assert before == {"error": "answer-label"}


# --- the scorer and the metric ------------------------------------------------


@pytest.mark.parametrize(
    ("record", "recall"),
    [
        ({"required": ["A", "B"], "context": ["A", "B"], "correct": True}, 1.0),
        ({"required": ["A", "B"], "context": ["B", "A"], "correct": False}, 1.0),
        ({"required": ["A", "B"], "context": ["B"], "correct": True}, 0.5),
        ({"required": ["A", "B"], "context": [], "correct": False}, 0.0),
        ({"required": [], "context": ["A"], "correct": True}, None),
        ({"context": ["A"], "correct": True}, None),  # required absent
        ({"required": ["A"], "context": ["A"]}, 1.0),  # answer-label
        ({"required": ["A", "B"], "context": ["B"], "correct": None}, 0.5),
        ({"required": ["A"], "context": "A", "correct": True}, None),  # invalid
        ({"required": ["A"], "correct": True}, None),  # context never recorded
    ],
    ids=[
        "pass",
        "generation",
        "retrieval",
        "nothing-supplied",
        "unresolved",
        "required-absent",
        "answer-label",
        "answer-label-null",
        "invalid-input",
        "unrecorded",
    ],
)
def test_every_stage_score_has_recall(record: dict[str, Any], recall: Any) -> None:
    score = stage_input_score(record)
    assert score.metadata is not None
    assert score.metadata["recall"] == recall
    assert type(score.metadata["recall"]) is type(recall)


def test_the_metric_averages_diagnosed_runs_only() -> None:
    scores = [stage_score_with(r) for r in (1.0, 0.5, None, 0.0, None)]
    assert recall_metric(scores) == 0.5
    assert math.isnan(recall_metric([stage_score_with(None)]))
    assert math.isnan(recall_metric([]))


def test_the_metric_does_not_depend_on_the_order_of_runs() -> None:
    # Values whose running float sum changes with the order: the metric's
    # must not, or `tracegrade score` and `inspect eval` could disagree.
    values = [1 / 3, 1 / 7, 2 / 3, 1 / 11, 10 / 13, 5 / 17] * 50
    shuffled = list(values)
    random.Random(3).shuffle(shuffled)
    assert sum(values) != sum(shuffled)  # the premise
    assert recall_metric([stage_score_with(v) for v in values]) == recall_metric(
        [stage_score_with(v) for v in shuffled]
    )
    assert recall_metric([stage_score_with(v) for v in values]) == math.fsum(
        values
    ) / len(values)


@pytest.mark.parametrize("bad", ["0.5", True, 1.5, -0.1, math.nan, [0.5]])
def test_the_metric_refuses_what_is_no_share(bad: Any) -> None:
    with pytest.raises(ValueError, match="recall must be null or a share"):
        recall_metric([stage_score_with(bad)])


def test_the_metric_needs_a_tracegrade_score() -> None:
    foreign = SampleScore(sample_id="s", score=Score(value="pass", metadata={}))
    with pytest.raises(ValueError, match="has no 'recall'"):
        recall_metric([foreign])


RECORDS: Final = [
    {"required": ["A", "B", "C"], "context": ["A"], "correct": True},
    {"required": ["A", "B"], "context": ["A", "B", "A"], "correct": False},
    {"required": ["A"], "context": ["A"], "correct": True},
    {"required": ["A", "B", "C"], "context": ["C", "B"], "correct": False},
    {"required": [], "context": ["A"], "correct": True},  # unresolved
    {"required": ["A"], "context": ["A"]},  # answer-label: unscored
]
EXPECTED_MEAN: Final = math.fsum([1 / 3, 1.0, 1.0, 2 / 3]) / 4


def test_inspect_eval_logs_the_mean_over_diagnosed_runs_of_every_epoch(
    tmp_path: Path,
) -> None:
    dataset = write_lines(
        tmp_path / "runs.jsonl",
        [{"id": f"r{i}", "input": record} for i, record in enumerate(RECORDS)],
    )
    (log,) = eval(
        stage_diagnosis(dataset=dataset),
        display="none",
        log_dir=str(tmp_path / "logs"),
        epochs=2,
        log_realtime=False,
    )
    assert log.status == "success", log.error
    assert log.results is not None
    (score,) = log.results.scores
    assert score.metrics["context_recall"].value == EXPECTED_MEAN
    recalls = Counter(
        sample.scores["stage_diagnosis"].metadata["recall"]
        for sample in log.samples or []
        if sample.scores is not None
    )
    # Each epoch is a run of its own, as in the stage shares. The unlabelled
    # run has its recall (1.0) too, but is unscored: no metric sees it.
    assert recalls == {1 / 3: 2, 1.0: 6, 2 / 3: 2, None: 2}


# --- the bulk path ------------------------------------------------------------


def test_the_bulk_path_keeps_recall_in_a_column_and_gives_the_same_metric(
    tmp_path: Path,
) -> None:
    bulk = TASKS["stage_diagnosis"]
    results = RunResults(bulk.make_scorer(), bulk.name, str(tmp_path))
    generator = random.Random(11)
    scores = []
    for index in range(600):
        required, context = (
            [f"D{generator.randrange(15)}" for _ in range(generator.randint(0, 9))]
            for _ in range(2)
        )
        record = {"required": required, "context": context, "correct": index % 2 == 0}
        score = stage_input_score(record)
        scores.append(SampleScore(sample_id=f"s{index}", score=score))
        results.add(f"s{index}", score)
    distinct = {s.score.metadata["recall"] for s in scores}
    assert len(distinct) > 15  # many distinct shares ...
    # ... yet the shared metadata table stays a few objects: the recalls are
    # a column of doubles, not one metadata dict a sample.
    assert len(results.scores._metadata.items) <= 4
    assert results.scores._recalls.values is not None
    assert results.scores._recalls.values.typecode == "d"
    assert len(results.scores._recalls.values) == 600
    # Each light score reads back with the recall its score had.
    assert [s.metadata["recall"] for s in results.scores] == [
        s.score.metadata["recall"] for s in scores
    ]
    (logged,) = results.results(total=600)[0].scores
    assert logged.metrics["context_recall"].value == recall_metric(scores)


def test_an_extraction_run_has_no_recall_column(tmp_path: Path) -> None:
    bulk = TASKS["ordered_extraction"]
    results = RunResults(bulk.make_scorer(), bulk.name, str(tmp_path))
    results.add("s", bulk.score_input({"source": ["A"], "answer": ["A"]}))
    assert results.scores._recalls.values is None
    assert "recall" not in results.scores[0].metadata


def test_a_column_made_late_holds_none_for_the_runs_before(tmp_path: Path) -> None:
    bulk = TASKS["stage_diagnosis"]
    results = RunResults(bulk.make_scorer(), bulk.name, str(tmp_path))
    results.add("u", stage_input_score({"required": [], "context": []}))
    results.add("r", stage_input_score({"required": ["A", "B"], "context": ["B"]}))
    results.add(
        "p", stage_input_score({"required": ["A"], "context": ["A"], "correct": True})
    )
    # The unlabelled run has its recall, but is unscored: the metric is the
    # diagnosed run's alone.
    assert [s.metadata["recall"] for s in results.scores] == [None, 0.5, 1.0]
    (logged,) = results.results(total=3)[0].scores
    assert logged.metrics["context_recall"].value == 1.0


# --- against ir-measures: TREC's recall ---------------------------------------


def trec_inputs(
    pairs: Sequence[tuple[list[str], list[str]]],
) -> tuple[list[Any], list[Any], int]:
    """Qrels, run and a cut-off k for the pairs, one query each.

    Qrels: each unique required ID with relevance 1. Run: the context with
    repeats dropped, each ID at its first rank, scored so that rank r of n
    has score n - r (descending, no ties, so trec_eval's tie-breaking by
    document id never applies). k: the longest run, so R@k is recall over
    the whole context. A query with an empty context has no run lines;
    ir-measures then gives it the measure's default, 0.0, the recall of a
    context that holds nothing.
    """
    # pytrec_eval takes each ID's UTF-8 form as a C string: an ID without one
    # would crash the interpreter, and a NUL would end the ID early. Fail
    # here, naming the ID, rather than lose the whole test run.
    for required, context in pairs:
        for doc in (*required, *context):
            assert is_trec_id(doc), f"not an ID pytrec_eval can take: {doc!r}"
    qrels = []
    run = []
    k = 1
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
    """Whether pytrec_eval can take `doc`: it has a UTF-8 form, with no NUL."""
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in doc


def test_trec_inputs_refuse_what_would_crash_pytrec_eval() -> None:
    # A lone surrogate (or a NUL) in a pair fails the test in Python, before
    # any pytrec_eval call: there, a lone surrogate is a segmentation fault.
    for bad in ("\udc8b", "\x1f\udc8b", "a\x00b"):
        with pytest.raises(AssertionError, match="not an ID pytrec_eval can take"):
            trec_inputs([(["A"], ["A", bad])])
        with pytest.raises(AssertionError, match="not an ID pytrec_eval can take"):
            trec_inputs([([bad], [])])


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


def test_recall_is_trec_recall_on_thousands_of_generated_pairs() -> None:
    pairs = generated_pairs(seed=20240611, count=5_000)
    # The premise: the pairs hold what the test claims to cover.
    assert sum(len(set(r)) < len(r) for r, _ in pairs) > 1_000
    assert sum(len(set(c)) < len(c) for _, c in pairs) > 1_000
    assert sum(not c for _, c in pairs) > 50
    assert any("A" in c and "\u0410" in r for r, c in pairs)
    qrels, run, k = trec_inputs(pairs)
    measure = ir_measures.R @ k
    theirs = {
        metric.query_id: metric.value
        for metric in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)
    }
    ours = [our_recall(required, context) for required, context in pairs]
    assert len(theirs) == len(pairs)
    # Per query, exactly: trec_eval divides the same two integers.
    assert [theirs[f"q{i}"] for i in range(len(pairs))] == ours
    assert len(set(ours)) > 30
    # The mean: ir-measures adds the queries one by one, in its own order,
    # while `context_recall` rounds the exact sum once (`math.fsum`). A
    # running sum of n values in [0, 1] errs by at most (n - 1) * 2**-53 * n,
    # so the two means differ by at most (n - 1) * 2**-53 (plus an ulp from
    # each division): 5.6e-13 for n = 5000, inside 1e-12.
    aggregate = ir_measures.pytrec_eval.calc_aggregate([measure], qrels, run)[measure]
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
    assert recall_metric(scores) == pytest.approx(aggregate, rel=0, abs=1e-12)
    assert recall_metric(scores) == math.fsum(theirs.values()) / len(pairs)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    pairs=st.lists(
        st.tuples(
            st.lists(TREC_ID, min_size=1, max_size=8),
            st.lists(TREC_ID, max_size=10),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_recall_is_trec_recall_on_hypothesis_pairs(
    pairs: list[tuple[list[str], list[str]]],
) -> None:
    qrels, run, k = trec_inputs(pairs)
    measure = ir_measures.R @ k
    theirs = {
        metric.query_id: metric.value
        for metric in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)
    }
    assert [theirs[f"q{i}"] for i in range(len(pairs))] == [
        our_recall(r, c) for r, c in pairs
    ]
