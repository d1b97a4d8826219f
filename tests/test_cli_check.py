"""`tracegrade check`: every line that would not be scored cleanly, and why,
as `inspect eval` and the scorers judge it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.commands import peaks_in_one_interpreter
from tests.faults.conftest import write_stage_records
from tests.support import write_lines
from tracegrade.bulk.scoring import TASKS
from tracegrade.cli import main
from tracegrade.cli._stream import TASK_NAMES
from tracegrade.datasets import DatasetError, packaged_fixture, read_fixture_cases

STAGE_OK = {"required": ["D1"], "context": ["D1"], "correct": True}


def run_check(*args: str) -> Result:
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def check_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = run_check(*args, "--json")
    return result.exit_code, dict(json.loads(result.stdout))


def test_task_names_spelled_out_for_help_match_the_tasks() -> None:
    assert tuple(sorted(TASKS)) == TASK_NAMES


@pytest.mark.parametrize("task", ["stage_diagnosis", "ordered_extraction"])
def test_packaged_fixtures_list_exactly_their_out_of_contract_cases(task: str) -> None:
    fixture = packaged_fixture(f"{task}.jsonl")
    cases = read_fixture_cases(fixture)
    exit_code, report = check_json(task, str(fixture))

    expected = {}
    for case in cases:
        assert case.expected is not None
        if "invalid" in case.expected:
            expected[case.line] = (case.id, "invalid-input", case.expected["invalid"])
        elif case.expected == {"error": "answer-label"}:
            expected[case.line] = (case.id, "answer-label", "correct")
        elif case.expected == {"error": "duplicate-id"}:
            source = case.input["source"]
            repeated = len(set(source)) != len(source)
            kind = "duplicate-source-id" if repeated else "duplicate-answer-id"
            expected[case.line] = (case.id, kind, "source" if repeated else "answer")
    problems = report["problems"]
    assert {p["line"]: (p["id"], p["kind"], p["field"]) for p in problems} == expected
    for problem in (p for p in problems if p["kind"] == "invalid-input"):
        assert f"field {problem['field']!r}" in problem["message"]
    assert report["records"] == len(cases)
    counted = report["clean"] + report["data_errors"] + report["answer_failures"]
    assert counted == len(cases)
    assert exit_code == 1 and report["ok"] is False


def test_every_kind_of_problem_is_listed_with_line_and_id(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "runs.jsonl",
        [
            {"id": "r1", "input": STAGE_OK},
            '{"id": "r2", "input": {"required": ["D1"]',
            "",
            {"id": "r1", "input": {**STAGE_OK, "correct": False}},
            {"id": "r4", "inputs": {}},
            {"id": "r5", "input": {"required": ["D1"], "context": ["D1"]}},
            {"id": "r6", "input": {**STAGE_OK, "correct": "yes"}},
            {"id": "r7", "input": {**STAGE_OK, "required": ["D1", 2]}},
            "[" * 100_000,
        ],
    )
    exit_code, report = check_json("stage_diagnosis", path)
    listed = {problem["line"]: problem for problem in report["problems"]}
    assert exit_code == 1
    assert {line: (p["kind"], p["id"]) for line, p in listed.items()} == {
        2: ("malformed-json", None),
        4: ("duplicate-sample-id", "r1"),
        5: ("not-a-fixture-line", "r4"),
        6: ("answer-label", "r5"),
        7: ("answer-label", "r6"),
        8: ("invalid-input", "r7"),
        9: ("malformed-json", None),
    }
    assert listed[4]["first_line"] == 1 and listed[8]["field"] == "required[1]"
    assert 'unknown field "inputs"' in listed[5]["message"]
    assert "No staff label" in listed[6]["message"]
    assert '"yes"' in listed[7]["message"]
    assert report["lines"] == 9 and report["blank"] == 1
    assert report["records"] == 8 and report["clean"] == 1

    text = run_check("stage_diagnosis", path).stdout
    assert (
        f"{path}:8: \"r7\": invalid-input [required[1]]: field 'required[1]' must "
        "be a string ID, got 2"
    ) in text
    assert ":1:" not in text
    assert "7 of 8 records would not be scored." in text
    # --max-listed caps the listing, not the counts.
    _, capped = check_json("stage_diagnosis", path, "--max-listed", "3")
    assert [problem["line"] for problem in capped["problems"]] == [2, 4, 5]
    assert capped["listed"] == 3 and capped["by_kind"] == report["by_kind"]
    text = run_check("stage_diagnosis", path, "--max-listed", "0").stdout
    assert f"{path}:" not in text and "0 of 7 problems listed" in text


@pytest.mark.parametrize(
    ("task", "lines", "exit_code", "said"),
    [
        (
            "stage_diagnosis",
            [{"id": f"run-{n}", "input": STAGE_OK} for n in range(5)],
            0,
            "All 5 records would be scored.",
        ),
        ("stage_diagnosis", ["", "  "], 1, "The file holds no records."),
        (
            "ordered_extraction",
            [{"id": "ans", "input": {"source": ["A", "B"], "answer": ["B", "B"]}}],
            0,  # an answer failure is listed, and scored
            '"ans": duplicate-answer-id [answer] (answer failure)',
        ),
    ],
    ids=["clean", "no records", "answer failure"],
)
def test_the_exit_code_and_the_last_word(
    tmp_path: Path, task: str, lines: list[Any], exit_code: int, said: str
) -> None:
    path = write_lines(tmp_path / "runs.jsonl", lines)
    result = run_check(task, path)
    assert result.exit_code == exit_code
    assert said in result.stdout
    # A progress bar goes to stderr, whatever stdout holds.
    code, report = check_json(task, path, "--progress")
    assert code == exit_code and report["ok"] is (exit_code == 0)


def test_line_numbers_match_the_dataset_reader_with_any_line_ending(
    tmp_path: Path,
) -> None:
    # Text mode turns "\r\n" and a lone "\r" into line breaks; so must check.
    for newline in ("\n", "\r\n", "\r"):
        path = write_lines(
            tmp_path / "runs.jsonl",
            [{"id": "a", "input": STAGE_OK}, "", "{broken", {"id": "b", "input": {}}],
            newline=newline,
        )
        with pytest.raises(DatasetError) as refused:
            read_fixture_cases(path)
        _, report = check_json("stage_diagnosis", path)
        assert refused.value.line == 3
        assert report["problems"][0]["line"] == 3, newline
        assert report["lines"] == 4


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_check_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    """Ten times the lines, the same peak (kept lines would add about 17 MiB);
    `benchmarks/check_memory.py` does the same at a million lines."""
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_stage_records(small, 5_000)
    write_stage_records(large, 50_000)
    checked = peaks_in_one_interpreter(
        [
            (("check", "stage_diagnosis", path.name, "--no-progress"), tmp_path)
            for path in (small, large)
        ],
        tmp_path,
    )
    for done in checked:
        assert done.returncode == 0, done.stderr
    assert large.stat().st_size > 9 * small.stat().st_size
    small_peak, large_peak = (done.peak_mib for done in checked)
    assert large_peak - small_peak < 6, (small_peak, large_peak)
