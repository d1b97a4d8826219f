"""No silent key typos: a key no run has is warned of once, in the terminal
and the log; a key that is no key is refused when the scorer is built."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from tests.commands import (
    InspectCommand,
    inspect_in_one_fresh_process,
    run_tracegrade,
)
from tests.support import write_lines
from tracegrade import (
    ordered_extraction_scorer,
    stage_diagnosis,
    stage_diagnosis_scorer,
)
from tracegrade.cli import main
from tracegrade.scorers.outcome import error_kind

TASK_FILE = """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample

from tracegrade import ordered_extraction_scorer, stage_diagnosis_scorer
from tracegrade.tasks import replay


def gold(
    name: str,
    required_key: str = "gold_docs",
    correct_key: str = "judged",
    context_key: str | None = None,
    labels: str | None = None,
    record_context: bool = True,
) -> Task:
    runs = {"q1": (["D1"], ["D1"], True), "q2": (["D2"], ["D1"], False)}
    return Task(
        name=name,
        dataset=[
            Sample(
                # Each task's own ids, so that its lines of the shared output
                # are told from the others'.
                id=f"{name}-{run_id}",
                input="?",
                metadata={
                    "gold_docs": required,
                    "retrieved": context,
                    "judged": judged,
                    **({"context": context} if record_context else {}),
                },
            )
            for run_id, (required, context, judged) in runs.items()
        ],
        solver=replay(),
        scorer=stage_diagnosis_scorer(
            required_key=required_key,
            correct_key=correct_key,
            context_key=context_key,
            labels=labels,
        ),
    )


@task
def required_typo() -> Task:
    return gold("required_typo", required_key="gold_doc")


@task
def correct_typo() -> Task:
    return gold("correct_typo", correct_key="jugded")


@task
def context_typo() -> Task:
    return gold("context_typo", context_key="retreived")


@task
def unrecorded() -> Task:
    return gold("unrecorded", record_context=False)


@task
def unmatched_labels() -> Task:
    return gold("unmatched_labels", labels="labels.jsonl")


@task
def every_key() -> Task:
    return gold("every_key", context_key="retrieved")
"""

METADATA_KEYS = '"context", "gold_docs", "judged", "retrieved"'
STAGE_TASKS = [
    "required_typo",
    "correct_typo",
    "context_typo",
    "unrecorded",
    "unmatched_labels",
    "every_key",
]


class Eval(NamedTuple):
    """One `inspect eval` of every task of TASK_FILE: what it printed (stdout
    and stderr, shared by the tasks) and each task's log."""

    output: str
    logs: dict[str, EvalLog]
    paths: dict[str, Path]


class Refused(NamedTuple):
    """The stage log `inspect score` was given, its bytes before, and what
    each refused command (by its -S argument) ended with."""

    log: Path
    before: bytes
    done: dict[str, subprocess.CompletedProcess[str]]


class Commands(NamedTuple):
    evaluated: Eval
    refused: Refused


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> Commands:
    """`inspect eval` of TASK_FILE, then each bad `inspect score -S` argument on a
    log made beforehand, in turn in one fresh interpreter: Inspect sets its
    display and exception hook once per process, from its first command."""
    work = tmp_path_factory.mktemp("warnings")
    (work / "tasks.py").write_text(TASK_FILE)
    write_lines(
        work / "labels.jsonl",
        [{"id": "Q1", "correct": True}, {"id": "Q2", "correct": False}],
    )
    scored = tmp_path_factory.mktemp("score")
    (log,) = eval(
        stage_diagnosis(dataset="edge-cases"),
        limit=2,
        display="none",
        log_dir=str(scored),
        log_realtime=False,
    )
    assert log.status == "success", log.error
    path = Path(log.location)
    before = path.read_bytes()
    refusals = [
        InspectCommand(
            [
                *("score", str(path), "--scorer", f"tracegrade/{scorer}"),
                *("-S", argument, "--action", "append", "--overwrite"),
            ],
            scored,
        )
        for scorer, argument, _ in REFUSALS
    ]
    done, *refused = inspect_in_one_fresh_process(
        [
            InspectCommand(
                ["eval", "tasks.py"], work, {"INSPECT_LOG_DIR": str(work / "logs")}
            ),
            *refusals,
        ]
    )
    assert done.returncode == 0, done.stderr
    logs, paths = {}, {}
    for found in (work / "logs").glob("*.eval"):
        read = read_eval_log(str(found))
        assert read.status == "success", read.error
        logs[read.eval.task] = read
        paths[read.eval.task] = found
    assert sorted(logs) == sorted(STAGE_TASKS)
    return Commands(
        Eval(done.stdout + done.stderr, logs, paths),
        Refused(
            path,
            before,
            {a: d for (_, a, _), d in zip(REFUSALS, refused, strict=True)},
        ),
    )


@pytest.fixture(scope="module")
def evaluated(commands: Commands) -> Eval:
    return commands.evaluated


@pytest.fixture(scope="module")
def refused(commands: Commands) -> Refused:
    return commands.refused


def logged_warnings(log: EvalLog) -> list[tuple[Any, str]]:
    """(sample id, message) of every warning in the samples' transcripts."""
    found = []
    for sample in log.samples or []:
        for event in sample.events:
            if event.event == "logger" and event.message.level == "warning":
                found.append((sample.id, event.message.message))
    return found


def printed_warnings(evaluated: Eval, task: str) -> list[str]:
    """The first line of each warning in the shared output that names one of
    `task`'s samples (its ids start with the task's name)."""
    named = f'"{task}-'
    lines = evaluated.output.splitlines()
    return [line for line in lines if "stage_diagnosis:" in line and named in line]


def values(log: EvalLog) -> dict[Any, Any]:
    return {s.id: (s.scores or {})["stage_diagnosis"].value for s in log.samples or []}


@pytest.mark.parametrize(
    ("task", "key", "argument", "consequence", "value"),
    [
        (
            "required_typo",
            "gold_doc",
            "required_key",
            "A run without it has nothing to diagnose: unresolved.",
            "unresolved",
        ),
        (
            "correct_typo",
            "jugded",
            "correct_key",
            "A run without it has no label: answer-label.",
            math.nan,
        ),
        (
            "context_typo",
            "retreived",
            "context_key",
            "A run without it is not graded: invalid-input.",
            math.nan,
        ),
    ],
)
def test_a_misspelled_key_is_warned_of_once_in_the_terminal_and_the_log(
    evaluated: Eval,
    task: str,
    key: str,
    argument: str,
    consequence: str,
    value: Any,
) -> None:
    log = evaluated.logs[task]
    # Per-sample semantics are unchanged: each run gets what the rules say.
    for got in values(log).values():
        if isinstance(value, float):
            assert isinstance(got, float) and math.isnan(got)
        else:
            assert got == value
    (logged,) = logged_warnings(log)
    sample_id, message = logged
    assert (
        f'stage_diagnosis: sample "{sample_id}" has no metadata key "{key}" '
        f'({argument}="{key}"), and no run scored before it had one. '
        f"Its metadata keys: {METADATA_KEYS}. {consequence} "
        f"If no sample has the key, check {argument}."
    ) in message
    (printed,) = printed_warnings(evaluated, task)
    assert f'has no metadata key "{key}"' in printed
    assert evaluated.output.count(f'has no metadata key "{key}"') == 1


def test_a_context_no_solver_recorded_is_warned_of(evaluated: Eval) -> None:
    (logged,) = logged_warnings(evaluated.logs["unrecorded"])
    assert "recorded no context (no solver set RetrievalTrace.context)" in logged[1]
    assert "Its store keys: none." in logged[1]
    (printed,) = printed_warnings(evaluated, "unrecorded")
    assert "recorded no context" in printed


def test_a_labels_file_that_matches_no_sample_is_warned_of(evaluated: Eval) -> None:
    log = evaluated.logs["unmatched_labels"]
    assert all(math.isnan(v) for v in values(log).values())
    assert {
        error_kind((s.scores or {})["stage_diagnosis"]) for s in log.samples or []
    } == {"answer-label"}
    ((sample_id, message),) = logged_warnings(log)
    assert (
        f'labels file labels.jsonl has no label for sample "{sample_id}" epoch 1'
    ) in message
    assert 'It labels ids "Q1", "Q2".' in message
    (printed,) = printed_warnings(evaluated, "unmatched_labels")
    assert "labels file labels.jsonl has no label" in printed


def test_keys_every_sample_has_are_not_warned_of(evaluated: Eval) -> None:
    log = evaluated.logs["every_key"]
    assert values(log) == {"every_key-q1": "pass", "every_key-q2": "retrieval"}
    assert logged_warnings(log) == []
    assert printed_warnings(evaluated, "every_key") == []
    # Every warning printed is one that a task with a missing key logged.
    logged = sum(len(logged_warnings(evaluated.logs[t])) for t in STAGE_TASKS)
    assert evaluated.output.count("stage_diagnosis:") == logged


# --- refused when the scorer is built ------------------------------------------------


REFUSALS = [
    (
        "stage_diagnosis",
        "required_key=7",
        "required_key must be one sample metadata key, a non-empty string, got 7",
    ),
    (
        "stage_diagnosis",
        "requried_key=gold_docs",
        'stage_diagnosis takes no argument requried_key="gold_docs"; it takes '
        "required_key, correct_key, context_key, labels, label_scorer, "
        "label_from, steps_key, context_tools and context_id_key",
    ),
]


@pytest.mark.parametrize(("scorer", "argument", "said"), REFUSALS)
def test_inspect_score_refuses_a_bad_argument_in_one_line(
    refused: Refused, scorer: str, argument: str, said: str
) -> None:
    done = refused.done[argument]
    assert done.args[:4] == ["inspect", "score", str(refused.log), "--scorer"]
    assert done.args[4:7] == [f"tracegrade/{scorer}", "-S", argument]
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert said in " ".join((done.stdout + done.stderr).split())
    assert refused.log.read_bytes() == refused.before


# --- the rule, one run at a time ---------------------------------------------------


def score_in_turn(scorer: Any, runs: list[dict[str, Any]]) -> None:
    for number, metadata in enumerate(runs):
        state = TaskState(
            model=ModelName("none/none"),
            sample_id=f"r{number}",
            epoch=1,
            input="",
            messages=[],
            metadata=metadata,
        )
        asyncio.run(scorer(state, Target("")))


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_key_the_first_runs_lack_is_warned_of_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Inspect gives a scorer no end of run, so a key the first run lacks
    is warned of even if a later run has it; the warning says "before"."""
    unlabelled = {"required": ["D1"], "context": ["D1"]}
    with caplog.at_level(logging.WARNING, logger="tracegrade"):
        score_in_turn(
            stage_diagnosis_scorer(context_key="context"),
            [unlabelled, unlabelled, {**unlabelled, "correct": True}, unlabelled],
        )
    (warning,) = warnings_of(caplog)
    assert warning.startswith(
        'stage_diagnosis: sample "r0" has no metadata key "correct" '
        '(correct_key="correct"), and no run scored before it had one.'
    )
    assert 'Its metadata keys: "context", "required".' in warning


def extraction_state(metadata: dict[str, Any], number: int) -> TaskState:
    return TaskState(
        model=ModelName("none/none"),
        sample_id=f"r{number}",
        epoch=1,
        input="",
        messages=[],
        metadata=metadata,
    )


@pytest.mark.parametrize(
    ("arguments", "warned"),
    [
        ({"source_key": "sources", "answer_key": "answer"}, ["sources"]),
        ({"source_key": "sources", "answer_key": "answers"}, ["sources", "answers"]),
        # Keys every run has, and the target and the output, are never warned of.
        ({"source_key": None}, []),
    ],
)
def test_the_extraction_scorer_warns_once_of_each_key_no_run_has(
    caplog: pytest.LogCaptureFixture, arguments: dict[str, Any], warned: list[str]
) -> None:
    scorer = ordered_extraction_scorer(**arguments)
    run = {"source": ["A"], "answer": ["A"]}
    with caplog.at_level(logging.WARNING, logger="tracegrade"):
        for number in range(3):
            asyncio.run(scorer(extraction_state(run, number), Target('["A"]')))
    found = warnings_of(caplog)
    # Each at the first run, none again.
    assert len(found) == len(warned)
    for message, key in zip(found, warned, strict=True):
        assert message.startswith(
            f'ordered_extraction: sample "r0" has no metadata key "{key}"'
        )
        assert 'Its metadata keys: "answer", "source".' in message


# --- tracegrade check ----------------------------------------------------------------


def test_recorded_outputs_stand_for_the_answer(tmp_path: Path) -> None:
    """The documented `{"source", "output"}` form: no field is missing, in
    `check`, in `score` or in the log it writes; with neither, the warning
    names both."""
    output = 'Sorted, as asked:\nANSWER: ["A", "B", "C"]'
    path = write_lines(
        tmp_path / "runs.jsonl",
        [{"id": "run-0003", "input": {"source": ["C", "A", "B"], "output": output}}],
    )
    checked = CliRunner().invoke(main, ["check", "ordered_extraction", path, "--json"])
    assert (checked.exit_code, json.loads(checked.stdout)["warnings"]) == (0, [])

    scored = run_tracegrade(
        "score", "ordered_extraction", path, "--log-dir", "logs", cwd=tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    assert "warning" not in scored.stderr
    (log,) = (tmp_path / "logs").glob("*.eval")
    written = read_eval_log(str(log))
    assert "tracegrade_warnings" not in (written.eval.metadata or {})
    assert written.results is not None
    assert written.results.scores[0].metrics["membership"].value == 1

    neither = write_lines(
        tmp_path / "neither.jsonl", [{"id": "a", "input": {"source": ["A"]}}]
    )
    checked = CliRunner().invoke(
        main, ["check", "ordered_extraction", neither, "--json"]
    )
    (warning,) = json.loads(checked.stdout)["warnings"]
    assert warning["field"] == "answer"
    assert (
        f'no record of {neither} has "answer" or "output" in its input'
        in (warning["message"])
    )
