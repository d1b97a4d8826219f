"""Labels from a grader (`label_scorer=`) or an earlier score (`label_from=`)."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, score
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    PARTIAL,
    Score,
    Scorer,
    Target,
    match,
    scorer,
)
from inspect_ai.solver import TaskState

from tests.commands import run_inspect
from tests.test_scorers import task_state
from tests.test_tasks import evaluated
from tracegrade import diagnose_stage, stage_diagnosis_scorer
from tracegrade.scorers.outcome import error_kind
from tracegrade.tasks import replay

# A grader's value and the label it gives (None: no label).
LABELS: list[tuple[Any, bool | None]] = [
    *((CORRECT, True), (1.0, True), (True, True), (INCORRECT, False), (-0.0, False)),
    *((PARTIAL, None), (0.5, None), (float("nan"), None), ("true", None)),
]


# What the test grader gives beside its value; an Inspect before 0.3.261
# keeps no `Score.reason`, a grader's included.
GIVEN = {
    "answer": "graded answer",
    "explanation": "why",
    "reason": "judged",
    "metadata": {"judge": "fixed"},
}
GRADER_SCORE = {**GIVEN, "reason": "judged" if "reason" in Score.model_fields else None}


@scorer(metrics=[])
def fixed_grade(value: Any = CORRECT, fail: bool = False, none: bool = False) -> Scorer:
    async def grade(state: TaskState, target: Target) -> Score | None:
        if fail:
            raise RuntimeError("the grading model is unreachable")
        return None if none else Score(value=value, **GIVEN)

    return grade


RUN = {"required": ["D1"], "context": ["D1"]}


def score_run(
    grader: Scorer | str | None,
    metadata: dict[str, Any] | None = None,
    *,
    output: str = "",
    target: str = "",
    scores: dict[str, Score] | None = None,
    **kwargs: Any,
) -> Score:
    """The stage score of RUN with `grader`, or `scores` given by earlier scorers."""
    state = task_state(
        dict(RUN if metadata is None else metadata),
        sample_id="q1",
        completion=output,
        scores=scores,
    )
    stage_scorer = stage_diagnosis_scorer(
        context_key="context", label_scorer=grader, **kwargs
    )
    result = asyncio.run(stage_scorer(state, Target(target)))
    assert isinstance(result, Score)
    return result


TABLE = [
    (source, value, label) for value, label in LABELS for source in ("scorer", "score")
]
TABLE.append(("scorer", None, None))  # the grader returned no score at all


@pytest.mark.parametrize(("source", "value", "label"), TABLE, ids=repr)
def test_a_grader_or_a_given_score_labels_the_run_by_the_table(
    source: str, value: Any, label: bool | None
) -> None:
    if source == "scorer":
        result = score_run(fixed_grade(value, none=value is None))
    else:
        judged = Score(value=value, **GRADER_SCORE)
        scores = {"fixed_grade": judged}
        result = score_run(None, scores=scores, label_from="fixed_grade")
    metadata = result.metadata or {}
    assert metadata["read_from"]["correct"] == f"{source} fixed_grade"
    fields = ("value", "answer", "explanation", "reason", "metadata")
    given = {"value": value, **GRADER_SCORE} if value is not None else {}
    shown = {field: given.get(field) for field in fields}
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(metadata["grader"].pop("value"))
        shown.pop("value")
    assert metadata["grader"] == {"name": "fixed_grade", **shown}
    if label is not None:
        assert result.value == ("pass" if label else "generation")
        assert metadata["record"] == {**RUN, "correct": label}
        assert metadata["record"]["correct"] is label  # not 1 or 1.0
        # The record in the metadata is what the core received: parity with
        # the reference evaluators holds whoever supplied the label.
        assert diagnose_stage(metadata["record"]) == metadata["result"]
        return
    assert isinstance(result.value, float) and math.isnan(result.value)
    assert error_kind(result) == "answer-label"
    assert "correct" not in metadata["record"]
    assert metadata["result"] == {"error": "answer-label"}
    assert metadata["error"]["message"] == result.explanation
    what = {None: "returned no score", PARTIAL: 'gave "P"', "true": 'gave "true"'}
    if isinstance(value, float):
        what[value] = "gave 0.5" if value == 0.5 else "left the run unscored (NaN)"
    assert result.explanation == (
        f"The {'grader' if source == 'scorer' else 'score'} fixed_grade "
        f'{what[value]}, which is not a label (only CORRECT "C", true or 1 and '
        'INCORRECT "I", false or 0 are), so the answer cannot be called correct '
        "or incorrect."
    )


def test_the_grader_is_run_on_the_run_its_registry_name_too() -> None:
    result = score_run("includes", output="-20 C", target="-18 C")
    assert result.value == "generation"
    result = score_run("includes", output="The answer is -18 C", target="-18 C")
    assert result.value == "pass"
    assert (result.metadata or {})["read_from"]["correct"] == "scorer includes"
    assert (result.metadata or {})["grader"]["name"] == "includes"
    # It replaces a label in metadata; what it raises goes up, as from any
    # Inspect scorer (Inspect makes it the sample's error).
    result = score_run(fixed_grade(INCORRECT), {**RUN, "correct": True})
    assert (result.metadata or {})["record"]["correct"] is False
    with pytest.raises(RuntimeError, match="the grading model is unreachable"):
        score_run(fixed_grade(fail=True))
    # Unresolved and retrieval runs keep the grader's score.
    unresolved = score_run(fixed_grade(PARTIAL), {"required": [], "context": []})
    assert unresolved.value == "unresolved"
    assert (unresolved.metadata or {})["grader"]["value"] == "P"
    lucky = score_run(fixed_grade(CORRECT), {"required": ["D1"], "context": []})
    assert lucky.value == "retrieval"
    assert (lucky.metadata or {})["record"]["correct"] is True


def stages(log: EvalLog, name: str = "stage_diagnosis") -> dict[Any, Any]:
    assert log.samples is not None
    return {s.id: (s.scores or {})[name].value for s in log.samples}


EXPECTED = {"right": "pass", "wrong": "generation", "lucky": "retrieval"}


def documented_score(needle: str, log: str, page: str = "scores.md") -> list[str]:
    """The `inspect score LOG ...` command of docs/`page` holding `needle`, as
    arguments of `inspect`, with LOG the log given."""
    text = (Path(__file__).parents[1] / "docs" / page).read_text("utf-8")
    blocks = re.findall(r"```bash\n(inspect score LOG .*?)```", text, re.S)
    (block,) = [block for block in blocks if needle in block]
    words = shlex.split(block.replace("\\\n", " "))
    assert words[:3] == ["inspect", "score", "LOG"], words
    return ["score", log, *words[3:]]


CALLS: Counter[Any] = Counter()


@scorer(metrics=[])
def counted_judge() -> Scorer:
    """match(), counting its calls per sample: a model judge costs each."""
    judge = match()

    async def grade(state: TaskState, target: Target) -> Score:
        CALLS[state.sample_id] += 1
        judged = await judge(state, target)
        assert judged is not None
        return judged

    return grade


@pytest.fixture(scope="module")
def judged_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """One eval whose judge scores first, a stage scorer labelling from its
    score, and one with a grader of its own (stage_diagnosis1)."""
    CALLS.clear()
    runs = {
        "right": (["D1"], ["D1"], "-18 degrees C."),
        "wrong": (["D1"], ["D1"], "I do not know."),
        "lucky": (["D1", "D2"], ["D1"], "-18 degrees C."),
    }
    task = Task(
        dataset=[
            Sample(
                id=run_id,
                input="At what temperature is the frozen chamber kept?",
                target="-18 degrees C.",
                metadata={"required": required, "context": context, "answer": answer},
            )
            for run_id, (required, context, answer) in runs.items()
        ],
        solver=replay(),
        scorer=[
            counted_judge(),
            stage_diagnosis_scorer(label_from="counted_judge"),
            stage_diagnosis_scorer(label_scorer=match()),
        ],
        name="graded_runs",
    )
    return evaluated(task, tmp_path_factory.mktemp("judged"))


def test_one_eval_labels_from_its_judge_called_once_or_a_grader_of_its_own(
    judged_log: EvalLog,
) -> None:
    """The grader is logged so that `score` can rebuild the scorer."""
    assert stages(judged_log) == stages(judged_log, "stage_diagnosis1") == EXPECTED
    assert CALLS == {"right": 1, "wrong": 1, "lucky": 1}
    for sample in judged_log.samples or []:
        scores = sample.scores or {}
        judged = scores["counted_judge"].model_dump(include={"value", "answer"})
        grader = (scores["stage_diagnosis"].metadata or {})["grader"]
        assert {"value": grader["value"], "answer": grader["answer"]} == judged
    assert judged_log.results is not None
    (graded,) = [s for s in judged_log.results.scores if s.name == "stage_diagnosis1"]
    assert graded.metrics["lucky_answers"].value == 1
    assert judged_log.eval.scorers is not None
    spec = judged_log.eval.scorers[-1]
    assert spec.options is not None
    assert spec.options["label_scorer"]["name"] == "match"
    scorer = stage_diagnosis_scorer(label_scorer=match())
    rescored = score(judged_log, scorer, action="overwrite", display="none")
    assert rescored.results is not None
    assert [s.name for s in rescored.results.scores] == ["stage_diagnosis"]
    assert stages(rescored) == EXPECTED


def test_a_missing_given_score_is_answer_label_and_warned_of_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stage_scorer = stage_diagnosis_scorer(context_key="context", label_from="judge")
    results = []
    with caplog.at_level(logging.WARNING, logger="tracegrade"):
        for sample_id in ("q1", "q2"):
            judged = {"match": Score(value=CORRECT)}
            state = task_state(dict(RUN), sample_id=sample_id, scores=judged)
            results.append(asyncio.run(stage_scorer(state, Target(""))))
    for result in results:
        assert isinstance(result, Score)
        assert error_kind(result) == "answer-label"
        assert result.explanation == (
            'No score "judge" was given to this run before the stage diagnosis '
            '(label_from="judge"), so the answer cannot be called correct or '
            "incorrect."
        )
        assert (result.metadata or {})["grader"]["value"] is None
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(
        'stage_diagnosis: sample "q1" has no score "judge" (label_from="judge"), '
        'and no run scored before it had one. Its scores: "match".'
    )
    assert "--action append" in warning


def test_inspect_score_runs_the_pages_grader_with_arguments_and_label_from(
    tmp_path: Path, judged_log: EvalLog
) -> None:
    """docs/scores.md's commands on a copy: Inspect's own form for a scorer
    argument, and `label_from=`, which reads the log's scores under `--action
    append` (the judge is not run again)."""
    location = str(shutil.copy(judged_log.location, tmp_path))
    grader = "{type: scorer, name: match, params: {location: begin}}"
    with_arguments = documented_score(grader, location)
    assert f"label_scorer={grader}" in with_arguments
    # The page's judge is model_graded_qa; this log's is counted_judge().
    label_from = documented_score("label_from=", location)
    label_from[label_from.index("label_from=model_graded_qa")] = (
        "label_from=counted_judge"
    )
    for command in (with_arguments, label_from):
        done = run_inspect(*command, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    log = read_eval_log(location)
    # "-18 degrees C." begins with the target; "I do not know." does not.
    assert stages(log, "stage_diagnosis2") == EXPECTED
    assert stages(log, "stage_diagnosis3") == EXPECTED
    assert log.results is not None
    *_, graded, judged = log.results.scores
    assert graded.params["label_scorer"] == {
        "type": "scorer",
        "name": "match",
        "params": {"location": "begin"},
    }
    assert judged.params["label_from"] == "counted_judge"
