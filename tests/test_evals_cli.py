"""`report` and `compare` count each run once and pair like with like in
directories made by `inspect eval`, `inspect eval-set` and `tracegrade score`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.commands import run_inspect, run_tracegrade
from tests.support import write_lines

OK = {"required": ["D1"], "context": ["D1"], "correct": True}
WRONG = {"required": ["D1"], "context": ["D1"], "correct": False}
QUESTIONS = [f"q{index:02d}" for index in range(1, 15)]


def dataset(path: Path, records: dict[str, Any]) -> str:
    return write_lines(
        path,
        [{"id": sample_id, "input": record} for sample_id, record in records.items()],
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """BASE passes 14 questions; WORSE fails 8 of them (significant: 8 to 0
    gives p = 0.0078)."""
    directory = tmp_path_factory.mktemp("datasets")
    worse = {q: WRONG if index < 8 else OK for index, q in enumerate(QUESTIONS)}
    return {
        "base": dataset(directory / "base.jsonl", dict.fromkeys(QUESTIONS, OK)),
        "worse": dataset(directory / "worse.jsonl", worse),
        "small": dataset(directory / "runs.jsonl", {"r1": OK, "r2": WRONG}),
    }


def inspect_eval(cwd: Path, *args: str) -> None:
    done = run_inspect("eval", *args, "--display", "none", cwd=cwd)
    assert done.returncode == 0, done.stderr


def diagnose(cwd: Path, dataset: str, log_dir: str, *args: str) -> None:
    """`inspect eval tracegrade/stage_diagnosis` of a dataset file."""
    task = "tracegrade/stage_diagnosis"
    inspect_eval(cwd, task, "-T", f"dataset={dataset}", "--log-dir", log_dir, *args)


def test_the_readmes_two_runs_of_one_file_are_two_evals(
    files: dict[str, str], tmp_path: Path
) -> None:
    """`inspect eval -T dataset=runs.jsonl`, then `tracegrade score` of the
    same file into the same directory: two evals of 2 runs, not 4 runs."""
    diagnose(tmp_path, files["small"], "logs")
    scored = run_tracegrade(
        "score", "stage_diagnosis", files["small"], "--log-dir", "logs", cwd=tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    reported = run_tracegrade("report", "logs", "--json", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    read = json.loads(reported.stdout)

    assert [s["runs"] for s in read["stage_diagnosis"]] == [2, 2]
    assert [s["evals"] for s in read["stage_diagnosis"]] == [["E1"], ["E2"]]
    assert read["pooled"] is False
    text = run_tracegrade("report", "logs", cwd=tmp_path).stdout
    assert "2 evals in 2 logs, 4 sample-epochs" in text
    # Pooling them would count every run twice: refused, naming both.
    pooled = run_tracegrade("report", "logs", "--pool", cwd=tmp_path)
    assert pooled.returncode == 1
    assert "--pool: evals E1 and E2" in pooled.stderr
    assert "both scored 2 sample ids" in pooled.stderr
    assert len(pooled.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def two_models(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ci/base: `inspect eval --model mockllm/a,mockllm/b` of BASE. ci/new:
    model a still answers BASE, model b regressed to WORSE."""
    root = tmp_path_factory.mktemp("ci")
    diagnose(root, files["base"], "base", "--model", "mockllm/a,mockllm/b")
    for model, name in (("mockllm/a", "base"), ("mockllm/b", "worse")):
        diagnose(root, files[name], "new", "--model", model)
    return root


def test_a_two_model_directory_compares_pair_by_pair_or_one_model(
    two_models: Path,
) -> None:
    done = run_tracegrade(
        "compare", "base", "new", "--json", "--fail-on-regression", cwd=two_models
    )

    assert done.returncode == 3, done.stderr
    read = json.loads(done.stdout)
    by_name = {pair["name"]: pair for pair in read["pairs"]}
    assert len(by_name) == len(read["pairs"]) == 2
    assert by_name["tracegrade/stage_diagnosis (mockllm/a)"]["gate"]["fails"] is False
    assert by_name["tracegrade/stage_diagnosis (mockllm/b)"]["gate"]["fails"] is True
    significant = "tracegrade/stage_diagnosis (mockllm/b): stage_diagnosis: pass"
    assert read["gate"]["significant"] == [significant]
    assert significant in done.stderr
    # --model selects one pair.
    done = run_tracegrade(
        *("compare", "base", "new", "--model", "mockllm/a", "--fail-on-regression"),
        cwd=two_models,
    )
    assert done.returncode == 0, done.stderr
    assert "1 pair of evals" in done.stdout

    unknown = run_tracegrade("compare", "base", "new", "--model", "c", cwd=two_models)
    assert unknown.returncode == 1
    assert 'BASE has no eval of model "c"' in unknown.stderr


def test_eval_sets_of_two_tasks_pair_by_task(tmp_path: Path) -> None:
    tasks = ("tracegrade/stage_diagnosis", "tracegrade/ordered_extraction_recorded")
    for name in ("base", "new"):
        # A few samples of each task: what is paired is the tasks.
        done = run_inspect(
            *("eval-set", *tasks, "--limit", "3", "--log-dir", name),
            *("--display", "none"),
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
    compared = run_tracegrade("compare", "base", "new", "--json", cwd=tmp_path)

    assert compared.returncode == 0, compared.stderr
    read = json.loads(compared.stdout)
    assert sorted(pair["name"] for pair in read["pairs"]) == [
        f"{task} (none/none)" for task in sorted(tasks)
    ]
    only = run_tracegrade(
        "compare", "base", "new", "--task", "stage_diagnosis", "--json", cwd=tmp_path
    )
    (pair,) = json.loads(only.stdout)["pairs"]
    assert pair["name"] == "tracegrade/stage_diagnosis (none/none)"


def test_an_epochs_reducer_stage_figures_do_not_use_is_said(tmp_path: Path) -> None:
    """Inspect's reducers are defined on numbers; a stage is a category, so
    `--epochs-reducer` changes no stage figure, and report and compare say
    so rather than ignore it silently. A few samples: what is said is of
    the reducer asked for."""
    for name in ("base", "new"):
        inspect_eval(
            tmp_path,
            "tracegrade/stage_diagnosis",
            *("--limit", "3", "--epochs", "2", "--epochs-reducer", "mode"),
            *("--log-dir", name),
        )
    reported = run_tracegrade("report", "base", cwd=tmp_path)
    compared = run_tracegrade("compare", "base", "new", cwd=tmp_path)

    said = (
        "asked for the epochs reducer mode, which stage diagnosis does not use: "
        "a stage is a category, so its figures count every epoch"
    )
    assert reported.returncode == 0 and said in reported.stdout
    assert compared.returncode == 0 and said in compared.stdout
