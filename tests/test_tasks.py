"""The replay tasks run end to end, with no model and no network."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from tests.commands import inspect_in_one_fresh_process, run_inspect
from tests.support import OfflineLogs, write_lines
from tracegrade import DatasetError, ordered_extraction_recorded, stage_diagnosis
from tracegrade.datasets import packaged_fixture, read_fixture_cases
from tracegrade.tasks import extraction_input_score, stage_input_score


def evaluated(task: Any, log_dir: Path, **options: Any) -> EvalLog:
    """`inspect eval` of `task` into `log_dir`, offline; it must succeed."""
    (log,) = eval(
        task, display="none", log_dir=str(log_dir), log_realtime=False, **options
    )
    assert log.status == "success", log.error
    return log


def test_the_stage_task_replays_the_readme_tours_runs_by_default() -> None:
    """As examples/runs/base.jsonl, which the README's tour runs."""
    packaged = packaged_fixture("recorded_rag_runs.jsonl")
    tour = Path(__file__).parents[1] / "examples" / "runs" / "base.jsonl"
    assert packaged.read_bytes() == tour.read_bytes()
    runs = read_fixture_cases(packaged)
    assert [sample.id for sample in stage_diagnosis().dataset] == [r.id for r in runs]


TASKS = [
    "tracegrade/stage_diagnosis",
    "tracegrade/ordered_extraction_recorded",
    "tracegrade/ordered_extraction",
]
# `inspect ARGS` (LOG: a copy of a stage log) and what its refusal says: a
# typo must not run on the packaged runs or score with the default instead.
REFUSED = [
    *(
        (
            ["eval", task, "-T", "datset=mine.jsonl", "--log-dir", "logs"],
            f'{task} takes no argument datset="mine.jsonl"; it takes dataset',
        )
        for task in TASKS
    ),
    (
        shlex.split(
            "score LOG --scorer tracegrade/stage_diagnosis "
            "-S requried_key=gold_docs --action append --overwrite"
        ),
        'takes no argument requried_key="gold_docs"; it takes required_key,',
    ),
]


@pytest.fixture(scope="module")
def refusals(
    tmp_path_factory: pytest.TempPathFactory, offline_logs: OfflineLogs
) -> list[tuple[Path, subprocess.CompletedProcess[str]]]:
    """Each command in one fresh interpreter, as Inspect sets its display on
    the first."""
    work = [tmp_path_factory.mktemp("refused") for _ in REFUSED]
    commands = []
    for (args, _), cwd in zip(REFUSED, work, strict=True):
        log = str(shutil.copy(offline_logs.stage, cwd / "log.eval"))
        commands.append(([log if arg == "LOG" else arg for arg in args], cwd))
    return list(zip(work, inspect_in_one_fresh_process(commands), strict=True))


@pytest.mark.parametrize("case", range(len(REFUSED)), ids=[*TASKS, "score"])
def test_an_argument_the_task_or_scorer_does_not_take_is_refused(
    refusals: list[tuple[Path, subprocess.CompletedProcess[str]]],
    case: int,
    offline_logs: OfflineLogs,
) -> None:
    cwd, result = refusals[case]
    assert result.returncode == 1
    assert REFUSED[case][1] in " ".join((result.stdout + result.stderr).split())
    assert "Traceback" not in result.stderr
    assert not (cwd / "logs").exists() or not list_eval_logs(str(cwd / "logs"))
    assert (cwd / "log.eval").read_bytes() == Path(offline_logs.stage).read_bytes()


def test_the_extraction_scorer_resolves_by_name_in_inspect_score(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    """Rescores its own copy of the packaged extraction log (every case)."""
    (tmp_path / "logs").mkdir()
    source = Path(offline_logs.extraction)
    location = str(shutil.copy(source, tmp_path / "logs" / source.name))
    result = run_inspect(
        *("score", location, "--scorer", "tracegrade/ordered_extraction"),
        *("-S", "answer_key=answer", "--action", "overwrite", "--overwrite"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    rescored = read_eval_log(location)
    assert rescored.status == "success"
    # The same score as the task's own scorer gave every case.
    original = read_eval_log(str(source))
    pairs = zip(original.samples or [], rescored.samples or [], strict=True)
    for before, after in pairs:
        (old,), (new,) = (before.scores or {}).values(), (after.scores or {}).values()
        assert as_text(new) == as_text(old), before.id
    assert rescored.eval.scorers is not None
    (scorer,) = rescored.eval.scorers
    assert scorer.options == {"answer_key": "answer"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "line 1: not valid JSON"),
        ([{"id": "a", "input": {}, "expect": {}}], 'line 1: unknown field "expect"'),
        (['{"id": "a", "id": "b", "input": {}}'], "line 1: not valid JSON .*twice"),
        (
            [{"id": "a", "input": {}}, "", {"id": "a", "input": {}}],
            'line 3: id "a" is already used on line 1',
        ),
        ([""], "holds no cases"),
        (None, "cannot read"),
    ],
)
def test_a_malformed_or_missing_file_stops_the_task_being_built(
    tmp_path: Path, lines: list[Any] | None, message: str
) -> None:
    dataset = str(tmp_path / "absent.jsonl")
    if lines is not None:
        dataset = write_lines(tmp_path / "bad.jsonl", lines)
    for make_task in (stage_diagnosis, ordered_extraction_recorded):
        with pytest.raises(DatasetError, match=message) as raised:
            make_task(dataset=dataset)
        assert dataset in str(raised.value)


def as_text(score: Any) -> str:
    fields = ("value", "answer", "explanation", "metadata")
    return json.dumps([getattr(score, name) for name in fields], sort_keys=True)


@pytest.mark.parametrize(
    ("make_task", "fixture", "extra", "score_input"),
    [
        (
            stage_diagnosis,
            "stage_diagnosis.jsonl",
            [
                {"required": ["A"], "context": ["B"], "correct": True, "steps": None},
                {
                    "required": ["A", "B"],
                    "context": ["A"],
                    "correct": False,
                    "steps": [{"name": "retriever", "ids": ["A", "C"]}],
                    "answer": "Paris",
                },
                {"required": ["A"], "context": None, "correct": True},
            ],
            stage_input_score,
        ),
        (
            ordered_extraction_recorded,
            "ordered_extraction.jsonl",
            [
                {"source": ["A", "B"], "output": "B, A"},
                {"source": ["A"], "output": "A", "answer": ["A"]},
                {"source": ["A"], "output": ["A"]},
            ],
            extraction_input_score,
        ),
    ],
)
def test_a_case_scores_as_its_task_scores_it_without_inspects_runner(
    make_task: Any,
    fixture: str,
    extra: list[dict[str, Any]],
    score_input: Any,
    tmp_path: Path,
) -> None:
    """Each sample keeps its input, `expected` and `reason` as metadata."""
    packaged = packaged_fixture(fixture).read_text("utf-8").splitlines()
    cases: list[dict[str, Any]] = [json.loads(line) for line in packaged if line]
    cases += [{"id": f"extra-{n}", "input": case} for n, case in enumerate(extra)]
    dataset = write_lines(tmp_path / "cases.jsonl", cases)
    log = evaluated(make_task(dataset=dataset), tmp_path / "logs")
    assert log.samples is not None
    by_id = {case["id"]: case for case in cases}
    for sample in log.samples:
        case = by_id[sample.id]
        kept = {key: case[key] for key in ("expected", "reason") if key in case}
        assert sample.metadata == {**case["input"], **kept}, sample.id
        assert sample.scores is not None
        (logged,) = sample.scores.values()
        assert as_text(logged) == as_text(score_input(case["input"])), sample.id
