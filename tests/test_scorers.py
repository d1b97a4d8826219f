"""The scorers: every packaged case scored as documented, and their inputs."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from typing import Any

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import CORRECT, Score, Target, match
from inspect_ai.solver import TaskState, generate

import tracegrade
from tracegrade import LabelScorerError
from tracegrade._inspect_internals import PrerequisiteError
from tracegrade.core import canonical_json, itemise
from tracegrade.datasets import FixtureCase, packaged_fixture, read_fixture_cases
from tracegrade.scorers import (
    RetrievalTrace,
    diagnosis_score,
    extraction_score,
    ordered_extraction_scorer,
    stage_diagnosis_scorer,
)
from tracegrade.scorers.arguments import ScorerArgumentError
from tracegrade.scorers.outcome import DATA_ERRORS, error_kind

STAGE_CASES = read_fixture_cases(packaged_fixture("stage_diagnosis.jsonl"))
EXTRACTION_CASES = read_fixture_cases(packaged_fixture("ordered_extraction.jsonl"))


def is_unscored(score: Score) -> bool:
    return isinstance(score.value, float) and math.isnan(score.value)


def task_state(
    metadata: dict[str, Any],
    *,
    sample_id: str | int = "s1",
    completion: str | None = None,
    target: str = "",
    scores: dict[str, Score] | None = None,
) -> TaskState:
    """A run's state as a scorer is given it; other test files use it too."""
    state = TaskState(
        model=ModelName("none/none"),
        sample_id=sample_id,
        epoch=1,
        input="",
        messages=[],
        target=Target(target),
        metadata=metadata,
        scores=scores,
    )
    if completion is not None:
        state.output = ModelOutput.from_content(model="test", content=completion)
    return state


def run(scorer: Any, state: TaskState) -> Score:
    score = asyncio.run(scorer(state, state.target))
    assert isinstance(score, Score)
    return score


READ_FROM = {"required": "r", "context": "c", "correct": "l"}


PACKAGED = [("stage", case) for case in STAGE_CASES] + [
    ("extraction", case) for case in EXTRACTION_CASES
]


@pytest.mark.parametrize(("task", "case"), PACKAGED, ids=lambda x: getattr(x, "id", x))
def test_every_packaged_case_is_scored_as_documented(
    task: str, case: FixtureCase
) -> None:
    record = dict(case.input)
    if task == "stage":
        score = diagnosis_score(record, READ_FROM, context_recorded=True)
    else:
        score = extraction_score(record, {"source": "s", "answer": "a"})
    expected, metadata = case.expected or {}, score.metadata or {}
    assert score.explanation and "\n" not in score.explanation
    assert score.explanation.endswith(".")
    kind = error_kind(score)
    if "invalid" in expected:
        assert (kind, metadata["result"]) == ("invalid-input", None)
        assert metadata["error"]["field"] == expected["invalid"]
    else:
        # Compare as JSON text: `==` would let True stand for 1.
        assert canonical_json(metadata["result"]) == canonical_json(expected)
    if expected == {"error": "duplicate-id"}:
        repeated = len(set(record["source"])) != len(record["source"])
        assert kind == ("duplicate-source-id" if repeated else "duplicate-answer-id")
        assert metadata["error"]["side"] == ("data" if repeated else "answer")
    elif expected == {"error": "answer-label"}:
        assert kind == "answer-label"
    elif "invalid" not in expected:
        assert kind is None and metadata["error"] is None
        assert score.value == expected.get("stage", expected)
    assert is_unscored(score) == (kind in DATA_ERRORS)
    if task == "stage":
        # No output here: the answer is the context supplied, not the record.
        context = record.get("context")
        assert score.answer == (
            canonical_json(context) if "context" in record else None
        )
        return
    assert list(metadata) == ["result", "record", "read_from", "error", "itemised"]
    graded = "membership" in expected
    itemised = itemise(record["source"], record["answer"]) if graded else None
    assert metadata["itemised"] == itemised


def test_a_record_that_is_not_json_still_gives_a_loggable_score() -> None:
    record = {"required": ["D1"], "context": {"D1"}, "correct": True}
    score = diagnosis_score(record, READ_FROM, context_recorded=True)
    assert is_unscored(score)
    assert score.metadata is not None
    assert score.metadata["record"]["context"] == "{'D1'}"
    canonical_json(score.metadata)


def test_a_broken_source_outranks_an_unreadable_answer() -> None:
    repeated = extraction_score({"source": ["A", "A"]}, {}, answer_text="no list")
    assert is_unscored(repeated)
    assert error_kind(repeated) == "duplicate-source-id"
    missing = extraction_score({}, {}, answer_text="no list")
    assert error_kind(missing) == "invalid-input"
    assert (missing.metadata or {})["error"]["field"] == "source"


NO_LABEL = "so the answer cannot be called correct or incorrect."


@pytest.mark.parametrize(
    ("record", "sentence"),
    [
        (
            {"required": ["D1"], "context": ["X"], "correct": False},
            "D1 never reached the supplied context, so the failure is attributed "
            "to retrieval before the answer is considered.",
        ),
        # Sorted, quoted when not plain, and cut after five.
        (
            {
                "required": ["", "D1 ", "e\u0301", *"xyzw"],
                "context": ["X"],
                "correct": False,
            },
            '"", "D1 ", "e\\u0301", w, x and 2 more never reached the supplied '
            "context, so the failure is attributed to retrieval before the answer "
            "is considered.",
        ),
        # The lucky-answer gap, as the source document words it.
        (
            {"required": ["D1", "D2", "D3"], "context": ["D1"], "correct": True},
            "D2 and D3 never reached the supplied context; a correct label cannot "
            "erase that gap.",
        ),
        (
            {"required": ["D1"], "context": ["D1"], "correct": False},
            "Every required document reached the context, so the wrong-answer "
            "label points to generation.",
        ),
        (
            {"required": ["D1"], "context": ["D1"], "correct": True},
            "Every required document reached the context and the answer is "
            "labelled correct: a grounded pass.",
        ),
        (
            {"required": ["D1"], "context": ["D1"]},
            f"No staff label was found in labels file staff.jsonl, {NO_LABEL}",
        ),
        (
            {"required": ["D1"], "context": ["D1"], "correct": "true"},
            f'The staff label "true" is not true or false, {NO_LABEL}',
        ),
        (
            {"required": [], "context": []},
            "The required set is empty, so there is nothing to diagnose.",
        ),
        (
            {"context": []},
            "No required set was declared, so there is nothing to diagnose.",
        ),
        # Null, as an unset RetrievalTrace is: not called missing.
        (
            {"required": ["D1"], "context": None, "correct": True},
            "The recorded context is null (RetrievalTrace.context was never set "
            "to a list of IDs), so retrieval cannot be judged and the run is not "
            "graded.",
        ),
    ],
)
def test_stage_sentences(record: dict[str, Any], sentence: str) -> None:
    read_from = {**READ_FROM, "correct": "labels file staff.jsonl"}
    recorded = record.get("context") is not None
    score = diagnosis_score(record, read_from, context_recorded=recorded)
    assert score.explanation == sentence


@pytest.mark.parametrize(
    ("source", "answer", "sentence"),
    [
        (["C", "A", "B"], ["C", "A", "B"], "Every source ID is kept, in source order."),
        (
            ["C", "A", "B"],
            ["A", "B", "C"],
            "Every ID remains, but position 1 holds A where the source has C: "
            "the source order is lost.",
        ),
        (
            ["A", "B", "C"],
            ["A", "B", "D"],
            "The answer misses C and adds D, so membership fails and order "
            "cannot pass.",
        ),
        (["A"], [], "The answer misses A, so membership fails and order cannot pass."),
        (
            ["C", "A", "B"],
            ["C", "A", "A", "B"],
            "The answer repeats A, which fails both criteria before order is "
            "graded; sorting cannot repair it.",
        ),
        (
            ["A", "B", "A"],
            ["A", "B"],
            "The source repeats A, which breaks the unique-list contract, so the "
            "sample cannot be graded.",
        ),
    ],
)
def test_extraction_sentences(
    source: list[str], answer: list[str], sentence: str
) -> None:
    score = extraction_score({"source": source, "answer": answer}, {})
    assert score.explanation == sentence


def test_the_stage_scorer_reads_the_context_from_retrieval_trace() -> None:
    metadata = {"required": ["D1", "D2"], "correct": True}
    state = task_state(metadata)
    state.store_as(RetrievalTrace).context = ["D1"]
    score = run(stage_diagnosis_scorer(), state)
    assert score.value == "retrieval"
    assert score.metadata is not None
    assert score.metadata["record"] == {**metadata, "context": ["D1"]}
    assert score.metadata["read_from"] == {
        "required": 'metadata["required"]',
        "context": "store RetrievalTrace:context",
        "correct": 'metadata["correct"]',
    }
    # With no output the answer is the context; with one, the output (the
    # viewer's ANSWER column showed the record, as the INPUT did).
    assert score.answer == '["D1"]'
    answered = task_state(metadata, completion="Paris, per D1.")
    answered.store_as(RetrievalTrace).context = ["D1", "D2"]
    assert run(stage_diagnosis_scorer(), answered).answer == "Paris, per D1."
    # Nothing recorded, a context in metadata not asked for: invalid-input.
    unrecorded = run(stage_diagnosis_scorer(), task_state({**metadata, "context": []}))
    assert is_unscored(unrecorded) and unrecorded.answer is None
    assert error_kind(unrecorded) == "invalid-input"
    assert "never recorded" in (unrecorded.explanation or "")
    assert "RetrievalTrace.context" in (unrecorded.explanation or "")


def test_the_extraction_scorer_reads_output_and_target() -> None:
    """The answer is itemised as it was read from the output."""
    state = task_state({}, completion="- C\n- B\n- X", target='["C", "A", "B"]')
    score = run(ordered_extraction_scorer(source_key=None), state)
    assert score.value == {"membership": False, "order": False}
    assert score.answer == '["C","B","X"]'
    metadata = score.metadata or {}
    assert metadata["read_from"] == {"source": "target", "answer": "output"}
    assert metadata["record"] == {"source": ["C", "A", "B"], "answer": ["C", "B", "X"]}
    assert metadata["itemised"] == {
        "dropped": ["A"],
        "invented": ["X"],
        "first_order_break": 2,
        "kept_in_order": 2,
    }
    keys = ("result", "record", "read_from", "error", "itemised", "read_as")
    assert tuple(metadata) == keys


def test_a_target_that_is_no_json_array_text_is_refused_as_written() -> None:
    """Inspect's `Target.text` of `["C", "A", "B"]` is "CAB", which no one wrote."""
    state = task_state({}, completion='["C", "A", "B"]')
    scorer = ordered_extraction_scorer(source_key=None)
    for target, said in (
        (["C", "A", "B"], "one JSON array of string IDs in the target's text, as in"),
        ("C, A", "a JSON array of string IDs in the target (Expecting value"),
    ):
        score = asyncio.run(scorer(state, Target(target)))
        assert is_unscored(score) and error_kind(score) == "invalid-input"
        metadata = score.metadata or {}
        message = metadata["error"]["message"]
        assert said in message and message.endswith(f"got {json.dumps(target)}")
        assert "CAB" not in message and metadata["itemised"] is None


STAGE_ARGUMENTS = (
    "required_key, correct_key, context_key, labels, label_scorer, label_from, "
    "steps_key, context_tools and context_id_key"
)
ONE_SOURCE = (
    "but a run's label has one source: a staff labels file (labels), a grader "
    "(label_scorer) or an earlier scorer's score (label_from); give one"
)


async def homemade(state: TaskState, target: Target) -> Score:
    return Score(value=CORRECT)


# Stage scorer arguments and the start of the refusal, which is one line.
STAGE_REFUSALS: list[tuple[dict[str, Any], str]] = [
    (
        {"required_key": 7},
        "required_key must be one sample metadata key, a non-empty string, got 7",
    ),
    (
        {"context_key": {"retrieved": 1}},
        "context_key must be one sample metadata key, a non-empty string, or "
        'None, got {"retrieved": 1}',
    ),
    (
        {"requried_key": "gold", "context": ["D1"]},
        f'stage_diagnosis takes no arguments requried_key="gold", '
        f'context=["D1"]; it takes {STAGE_ARGUMENTS}',
    ),
    (
        {"context_tools": ""},
        'context_tools must be a tool name or a list of them, got ""',
    ),
    (
        {"context_tools": "search", "context_key": "c"},
        'context_tools="search" reads the context and steps from the tool '
        "calls; context_key and steps_key read them from metadata: give one "
        "source",
    ),
    (
        {"label_scorer": match(), "label_from": "judge"},
        f'label_scorer=match() and label_from="judge" were given, {ONE_SOURCE}',
    ),
    (
        {"labels": "labels.jsonl", "label_scorer": "match"},
        f'labels="labels.jsonl" and label_scorer="match" were given, {ONE_SOURCE}',
    ),
    (
        {"label_from": "  "},
        "label_from must name a score an earlier scorer gives, such as "
        '"model_graded_qa", got "  "',
    ),
    # `match` is registered as a scorer too: it makes one.
    (
        {"label_scorer": match},
        "label_scorer match is the @scorer function, not a scorer; call it: "
        "label_scorer=match() (with any arguments it takes)",
    ),
    ({"label_scorer": "mtach"}, 'label_scorer "mtach" is not a registered ...'),
    ({"label_scorer": 5}, "label_scorer must be an Inspect scorer or its registry ..."),
    ({"label_scorer": homemade}, "label_scorer homemade was not made by a ..."),
    ({"label_scorer": "pattern"}, 'label_scorer "pattern" cannot be made without ...'),
    (
        {"label_scorer": generate()},
        'label_scorer "inspect_ai/generate" is a registered solver, not a scorer',
    ),
]
EXTRACTION_REFUSALS: list[tuple[dict[str, Any], str]] = [
    (
        {"structured_key": "ids", "answer_key": "answer"},
        'structured_key reads the model\'s output, and answer_key="answer" '
        "grades a recorded answer instead; give one",
    ),
    (
        {"output_key": "output"},
        'output_key="output" reads a recorded output beside recorded answers, '
        "so it needs answer_key too; without answer_key the model's own "
        "output is graded",
    ),
    (
        {"sorce_key": "ids"},
        'ordered_extraction takes no argument sorce_key="ids"; it takes '
        "source_key, answer_key, structured_key and output_key",
    ),
]


@pytest.mark.parametrize(
    ("factory", "arguments", "said"),
    [(stage_diagnosis_scorer, *row) for row in STAGE_REFUSALS]
    + [(ordered_extraction_scorer, *row) for row in EXTRACTION_REFUSALS],
)
def test_a_bad_argument_is_refused_when_the_scorer_is_built(
    factory: Any, arguments: dict[str, Any], said: str
) -> None:
    label = {"labels", "label_scorer", "label_from"} & set(arguments)
    with pytest.raises(LabelScorerError if label else ScorerArgumentError) as raised:
        factory(**arguments)
    message = str(raised.value)
    # A row ending in " ..." quotes the message's start; every other row is whole.
    assert message.startswith(said[:-4]) if said.endswith(" ...") else message == said
    assert "\n" not in str(raised.value)
    # Inspect's CLI prints a PrerequisiteError's message alone; its scorer
    # loader would hide a ValueError's behind "couldn't be loaded".
    assert isinstance(raised.value, PrerequisiteError)
    assert not isinstance(raised.value, ValueError)


@pytest.mark.parametrize("bad", [("D1",), ["D1", 2], "D1"])
def test_the_store_model_refuses_what_the_contract_refuses(bad: Any) -> None:
    trace = task_state({}).store_as(RetrievalTrace)
    with pytest.raises(ValueError):
        trace.context = bad


def test_importing_tracegrade_does_not_import_inspect() -> None:
    code = (
        "import sys, tracegrade\n"
        "assert 'inspect_ai' not in sys.modules, 'eager'\n"
        "tracegrade.stage_diagnosis_scorer\n"
        "assert 'inspect_ai' in sys.modules, 'not loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_attributes_still_raise() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        tracegrade.no_such_name  # noqa: B018
