"""Parity through real eval logs: what a user reads back from an `inspect eval`
log is Node's answer, so nothing on the Inspect path changes a result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score

from parity.compare import (
    CoreSource,
    FixtureFile,
    compare_files,
    packaged_fixtures,
    passed,
    render,
)
from parity.logs import EvalRunError, LogSource, run_task

LONE_SURROGATE_CASE = {
    "id": "lone-surrogate",
    "input": {"required": ["\ud800", "a"], "context": ["a"], "correct": True},
}


@pytest.mark.usefixtures("parity_evals_in_process")
def test_logged_results_of_every_packaged_case_agree_with_node() -> None:
    fixtures = packaged_fixtures()

    reports = compare_files(fixtures, LogSource(fixtures))

    assert passed(reports), render(reports, "Inspect log")
    assert sum(len(report.cases) for report in reports) == sum(
        len(report.cases) for report in compare_files(fixtures, CoreSource())
    )


def test_a_logged_result_that_differs_from_node_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "one.jsonl"
    record = {"id": "sorted", "input": {"source": ["C", "A"], "answer": ["A", "C"]}}
    path.write_text(json.dumps(record) + "\n", "utf-8")
    fixture = FixtureFile("ordered_extraction", path)

    def tampered(evaluator: str, dataset: Path, log_dir: Path) -> list[EvalSample]:
        # What a log would hold if the Inspect path turned `false` into `0`.
        score = Score(
            value={"membership": True, "order": False},
            metadata={"result": {"membership": True, "order": 0}, "error": None},
        )
        scores = {"ordered_extraction": score}
        return [EvalSample(id="sorted", epoch=1, input="", target="", scores=scores)]

    monkeypatch.setattr("parity.logs.run_task", tampered)
    reports = compare_files([fixture], LogSource([fixture]))

    assert not passed(reports)
    assert "Python and Node answers differ" in render(reports, "Inspect log")


@pytest.mark.usefixtures("parity_evals_in_process")
def test_an_eval_that_cannot_start_is_an_error_not_a_pass(tmp_path: Path) -> None:
    malformed = tmp_path / "bad.jsonl"
    malformed.write_text('{"id": "x"}\n', "utf-8")

    with pytest.raises(EvalRunError, match="left 0 logs"):
        run_task("stage_diagnosis", malformed, tmp_path / "logs")


def test_inspect_log_writer_loses_lone_surrogates(tmp_path: Path) -> None:
    """Inspect's log writer writes a lone surrogate as `\\ud800`: listed in
    parity/DEVIATIONS.md (if this fails, Inspect fixed it). Its eval runs in a
    fresh interpreter, as `python -m parity` runs them."""
    path = tmp_path / "lone.jsonl"
    path.write_text(json.dumps(LONE_SURROGATE_CASE) + "\n", "utf-8")
    fixture = FixtureFile("stage_diagnosis", path)

    assert passed(compare_files([fixture], CoreSource()))
    reports = compare_files([fixture], LogSource([fixture]))

    assert not passed(reports)
    (case,) = reports[0].cases
    assert case.python.result_json == '{"stage":"retrieval","missing":["\\\\ud800"]}'
    assert case.node.result_json == '{"stage":"retrieval","missing":["\\ud800"]}'


@pytest.mark.usefixtures("parity_evals_in_process")
def test_one_file_given_for_both_evaluators_has_no_false_difference(
    tmp_path: Path,
) -> None:
    """Each evaluator's log answers for its own run of a record holding both
    evaluators' fields: different results for the same sample id."""
    path = tmp_path / "both.jsonl"
    record = {
        "required": ["D1"],
        "context": ["D1"],
        "correct": True,
        "source": ["C", "A"],
        "answer": ["A", "C"],
    }
    path.write_text(json.dumps({"id": "both", "input": record}) + "\n", "utf-8")
    fixtures = [
        FixtureFile("stage_diagnosis", path),
        FixtureFile("ordered_extraction", path),
    ]

    reports = compare_files(fixtures, LogSource(fixtures))

    assert passed(reports), render(reports, "Inspect log")
    results = {report.cases[0].python.result_json for report in reports}
    assert results == {
        '{"stage":"pass","missing":[]}',
        '{"membership":true,"order":false}',
    }
