"""The staff-label round trip, offline: run, `labels export`, fill, `labels apply`,
export again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import CORRECT, PARTIAL, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

# The example's helpers (pytest puts tests/ on sys.path).
from test_rag_example import QUESTIONS, answering_model, rag
from tests.commands import run_tracegrade
from tests.support import OfflineLogs
from tracegrade import stage_diagnosis_scorer
from tracegrade.label_logs import label_requests
from tracegrade.tasks import replay

REFERENCE = {q["id"]: q["answer"] for q in QUESTIONS}
# The mock model answers these right (the reference answer), the rest not.
ANSWERED_RIGHT = {"Q-001", "Q-002", "Q-004", "Q-005", "Q-010", "Q-021"}


def rag_log(tmp_path: Path) -> Path:
    """The RAG example's log, the mock model answering ANSWERED_RIGHT right."""
    answers = {
        q: [REFERENCE[q] if q in ANSWERED_RIGHT else "I do not know."]
        for q in REFERENCE
    }
    (log,) = eval(
        rag.rag_qa(),
        model=answering_model(answers),
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_realtime=False,
    )
    assert log.status == "success"
    return Path(log.location)


def staff_fill(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What staff do: judge each answer against the reference answer."""
    return [
        {**line, "correct": line["answer"] == REFERENCE[line["id"]]} for line in lines
    ]


def test_the_round_trip_exports_every_run_and_takes_labels_back(tmp_path: Path) -> None:
    log_path = rag_log(tmp_path)
    # 2. export, as the README says: to stdout, redirected to a file
    exported = run_tracegrade("labels", "export", str(log_path), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [line["id"] for line in lines] == [q["id"] for q in QUESTIONS]
    before = read_eval_log(str(log_path))
    assert before.samples is not None
    for line, sample in zip(lines, before.samples, strict=True):
        assert list(line) == [
            *("id", "question", "answer", "required", "context", "correct"),
            "grader",
        ]
        assert line["question"] == sample.input
        assert line["answer"] == sample.output.completion
        assert line["required"] == sample.metadata["required"]
        assert line["context"] == sample.store["RetrievalTrace:context"]
        # Pre-filled with match()'s verdict, for staff to check.
        judged = ((sample.scores or {})["stage_diagnosis"].metadata or {})["grader"]
        assert line["correct"] is (judged["value"] == "C")
        assert line["correct"] is (line["id"] in ANSWERED_RIGHT)
        assert line["grader"] == {"name": "match", "explanation": judged["explanation"]}

    # 3. staff fill in the labels
    labels = tmp_path / "labels.jsonl"
    filled = staff_fill(lines)
    labels.write_text("".join(json.dumps(line) + "\n" for line in filled))

    # 4. labels apply joins them back
    scored = run_tracegrade("labels", "apply", str(log_path), str(labels), cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert "30 of 30 runs labelled and diagnosed with the labels in" in scored.stderr
    # (What each stage then is: test_labels_apply, on three runs.)
    # The relabelled log (two stage scores per sample) exports the same lines.
    out = tmp_path / "again.jsonl"
    again = run_tracegrade(
        "labels", "export", str(log_path), "--out", str(out), cwd=tmp_path
    )
    assert f"30 lines to label written to {out}" in again.stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == lines


def test_a_log_without_stage_scores_or_no_log_is_refused(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    bogus = tmp_path / "not-a-log.eval"
    bogus.write_text("hello")
    for path, said in [
        (
            offline_logs.extraction,
            "no sample has a stage_diagnosis score, so there is nothing",
        ),
        (str(bogus), f"cannot read {str(bogus)!r} as an Inspect log"),
    ]:
        result = run_tracegrade("labels", "export", path, cwd=tmp_path)
        assert result.returncode == 1
        assert said in result.stderr


@scorer(metrics=[])
def unsure_judge() -> Scorer:
    """PARTIAL for run "r2", CORRECT otherwise, with a reason each."""

    async def judge(state: TaskState, target: Target) -> Score:
        unsure = state.sample_id == "r2"
        return Score(
            value=PARTIAL if unsure else CORRECT,
            explanation="half of it" if unsure else "all of it",
        )

    return judge


def test_a_verdict_that_is_no_label_and_a_context_never_recorded_are_null(
    tmp_path: Path,
) -> None:
    """From a `label_from` grader too, its explanation there either way; a
    run whose context was never recorded is still a line to label."""
    runs = {"r1": {"context": ["D1"]}, "r2": {"context": ["D2"]}, "r3": {}}
    task = Task(
        dataset=[
            Sample(id=key, input="?", metadata={"required": ["D1"], **run})
            for key, run in runs.items()
        ],
        solver=replay(),
        scorer=[
            unsure_judge(),
            stage_diagnosis_scorer(context_key="context", label_from="unsure_judge"),
        ],
    )
    (log,) = eval(
        task, display="none", log_dir=str(tmp_path / "logs"), log_realtime=False
    )
    assert log.status == "success", log.error
    judged = {"name": "unsure_judge", "explanation": "all of it"}
    assert [
        (x["id"], x["context"], x["correct"], x["grader"]) for x in label_requests(log)
    ] == [
        ("r1", ["D1"], True, judged),
        ("r2", ["D2"], None, {**judged, "explanation": "half of it"}),
        ("r3", None, True, judged),
    ]
