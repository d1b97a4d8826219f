"""The parity diff must catch what it exists to catch: planted differences
fail the run; out-of-contract records and the documented deviations do not."""

from __future__ import annotations

import json
import re
import runpy
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from parity import compare, node
from parity.__main__ import main
from parity.contract import DEVIATIONS, Standing
from tracegrade.core import canonical_json

REPOSITORY = node.PARITY_DIR.parent
S, X = "stage_diagnosis", "ordered_extraction"
IN, DEVIATION, OUT = Standing.IN_CONTRACT, Standing.DEVIATION, Standing.OUT_OF_CONTRACT
DIFFERENCE, EXPECTED = compare.ProblemKind.DIFFERENCE, compare.ProblemKind.EXPECTED


def write_fixture(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(case) + "\n" for case in cases), "utf-8")
    return path


def diffed(
    path: Path, kind: Any, cases: list[dict[str, Any]], python: Any = None
) -> tuple[compare.FixtureFile, list[compare.FileReport], str]:
    """The cases in a file, Python's answers (the core's unless `python`)
    diffed against Node's, and the text of the diff."""
    fixture = compare.FixtureFile(kind, write_fixture(path, cases))
    python = python or compare.CoreSource()
    reports = compare.compare_files([fixture], python)
    return fixture, reports, compare.render(reports, python.label)


def failures(reports: list[compare.FileReport]) -> dict[str, list[compare.ProblemKind]]:
    return {
        case.case.id: [problem.kind for problem in case.problems]
        for report in reports
        for case in report.failed
    }


SORTED_BY_ORDER = {
    "id": "sort",
    "input": {"source": ["C", "A", "B"], "answer": ["A", "B", "C"]},
    "expected": {"membership": True, "order": False},
}
KEPT_ORDER = {
    "id": "kept",
    "input": {"source": ["C", "A", "B"], "answer": ["C", "A", "B"]},
}
# JavaScript sorts by UTF-16 code units: U+1F600 (0xD83D...) before U+FF61.
ASTRAL_GAP = {
    "id": "astral-gap",
    "input": {"required": ["\uff61", "\U0001f600"], "context": [], "correct": True},
}


STRING_ANSWER = {"id": "string-answer", "input": {"source": ["C"], "answer": "C"}}
ABSENT = {"id": "absent", "input": {"context": []}}
BOTH = '{"membership":true,"order":true}'
REFUSED_INSIDE = "Python refused an input inside the contract"
PYTHON_SORTED = canonical_json(
    {"stage": "retrieval", "missing": ["\uff61", "\U0001f600"]}
)


@pytest.mark.parametrize(
    ("evaluator", "record", "answer", "said"),
    [
        # 1 for true; the answer seen beside the reference's.
        (X, KEPT_ORDER, ['{"membership":1,"order":true}'], [BOTH]),
        # `missing` in code point order, where JavaScript sorts UTF-16 units.
        (S, ASTRAL_GAP, [PYTHON_SORTED], ['"missing":["\\ud83d\\ude00","\\uff61"]']),
        (X, KEPT_ORDER, [None, "source", "no"], [REFUSED_INSIDE]),
        # An answer where the contract has none, and another deviation.
        (X, STRING_ANSWER, [BOTH], []),
        (S, ABSENT, ['{"error":"answer-label"}'], []),
    ],
)
def test_a_planted_difference_fails(
    tmp_path: Path, evaluator: str, record: Any, answer: list[Any], said: list[str]
) -> None:
    # A Python side that answers every case alike.
    planted = SimpleNamespace(
        label="planted", outcome=lambda _: compare.PythonOutcome(*answer)
    )
    fixture, reports, text = diffed(tmp_path / "f.jsonl", evaluator, [record], planted)
    assert failures(reports) == {record["id"]: [DIFFERENCE]}
    assert f"'{record['id']}' at {fixture.label}:1" in text
    assert "parity FAILED: 1 of 1 cases" in text
    for shown in [*answer[:1], *said]:
        assert shown is None or shown in text


def test_what_is_out_of_contract_or_a_deviation_is_listed_not_failed(
    tmp_path: Path,
) -> None:
    cases = [
        ASTRAL_GAP,
        {"id": "no-context", "input": {"required": [], "correct": True}},
        {
            "id": "string-required",
            "input": {"required": "D1", "context": ["D"], "correct": True},
            "expected": {"invalid": "required"},
        },
        {"id": "absent", "input": {"context": ["D1"], "correct": True}},
        {"id": "null", "input": {"required": None, "context": []}},
    ]
    fixture, reports, text = diffed(tmp_path / "s.jsonl", S, cases)
    assert compare.passed(reports)
    tricky = reports[0].cases[0]
    assert tricky.python.result_json == tricky.node.result_json
    standings = [case.standing for case in reports[0].cases]
    assert standings == [IN, OUT, OUT, DEVIATION, DEVIATION]
    assert "Out of contract, listed and not failed" in text
    assert f'| no-context | {fixture.label}:2 | {{"stage":"unresolved"}} |' in text
    assert "InvalidRecord: field 'context' is missing" in text
    assert '{"stage":"retrieval","missing":["1"]}' in text
    assert "0 differences, 0 expected mismatches" in text
    assert "Deliberate deviations (parity/DEVIATIONS.md): 2" in text
    table = (node.PARITY_DIR / "DEVIATIONS.md").read_text("utf-8")
    for documented in DEVIATIONS:
        assert f"| `{documented.name}` |" in table
    assert "threw TypeError: Cannot read properties of undefined" in text
    assert "threw TypeError: Cannot read properties of null" in text


def test_a_deviation_where_the_reference_answers_fails() -> None:
    case = compare.Case(S, "absent", {"context": []}, None, None, "f", 1)
    unresolved = '{"stage":"unresolved"}'
    python, js = compare.PythonOutcome(unresolved), node.NodeOutcome(unresolved, None)
    report = compare.check_case(case, python, js)
    assert [problem.kind for problem in report.problems] == [DIFFERENCE]


def test_expected_mismatches_fail(tmp_path: Path) -> None:
    cases = [
        {**SORTED_BY_ORDER, "expected": {"membership": True, "order": True}},
        # Refused for another field; refusal expected of a valid record.
        {**STRING_ANSWER, "id": "wrong-field", "expected": {"invalid": "source"}},
        {**KEPT_ORDER, "id": "expected-refusal", "expected": {"invalid": "answer"}},
        {**KEPT_ORDER, "expected": {"order": True, "membership": True}},
    ]
    fixture, reports, text = diffed(tmp_path / "x.jsonl", X, cases)
    assert failures(reports) == {
        "sort": [EXPECTED, EXPECTED],
        "wrong-field": [EXPECTED],
        "expected-refusal": [EXPECTED],
        # Key order is part of the output: never compared as parsed objects.
        "kept": [EXPECTED, EXPECTED],
    }
    said = "expected InvalidRecord on field 'source'; Python refused field 'answer'"
    assert said in text
    assert "4 of 4 cases" in text
    core_only = ["--core-only", "--ordered-extraction", str(fixture.path)]
    assert main(core_only, packaged=()) == 1


GOOD_LINE = json.dumps(KEPT_ORDER)


@pytest.mark.parametrize(
    ("second_line", "problem"),
    [
        ("{not json", "not a JSON value"),
        ('{"input": {}}', "has no 'id'"),
        ('{"id": "x"}', "has no 'input'"),
        (GOOD_LINE, "duplicate id 'kept', first used on line 1"),
        ('{"id": "x", "input": {}, "expect": {}}', "unknown key(s) ['expect']"),
        ('{"id": 7, "input": {}}', "'id' must be a non-empty string"),
        ("", "blank line"),
        ("[1, 2]", "a case is a JSON object"),
        ('{"id": "x", "input": {"correct": NaN}}', "NaN is not JSON"),
        ('{"id": "x", "input": {"a": 1, "a": 2}}', "the key 'a' appears twice"),
        ('{"id": "x", "input": {}, "expected": {"invalid": 1}}', 'exactly {"invalid"'),
        ('{"id": "x", "input": {"correct": 1e400}}', "'input' has no JSON text"),
    ],
)
def test_a_malformed_line_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second_line: str, problem: str
) -> None:
    # A raw U+2028 is legal inside a JSON string: it must not split the line.
    first_line = GOOD_LINE.replace('"C"', '"\u2028C"', 1)
    path = tmp_path / "cases.jsonl"
    path.write_text(f"{first_line}\n{second_line}\n{GOOD_LINE}\n", "utf-8")
    assert main(["--ordered-extraction", str(path)], packaged=()) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"parity: {path}:2: ") and problem in said, said


@pytest.mark.usefixtures("parity_evals_in_process")
def test_cli_runs_extra_files_with_and_without_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stage = write_fixture(tmp_path / "stage.jsonl", [ASTRAL_GAP])
    extraction_one = write_fixture(tmp_path / "one.jsonl", [SORTED_BY_ORDER])
    extraction_two = write_fixture(tmp_path / "two.jsonl", [KEPT_ORDER])
    extraction = ["--ordered-extraction", str(extraction_one)]
    extraction += ["--ordered-extraction", str(extraction_two)]
    status = main(["--stage-diagnosis", str(stage), *extraction], packaged=())
    printed = capsys.readouterr().out
    assert status == 0
    for path, name in ((stage, S), (extraction_one, X), (extraction_two, X)):
        assert f"{path} [{name}]: 1 cases, 1 in contract" in printed
    # Both Python sides, the core and the logs of `inspect eval`, are checked.
    assert "== Python core against the original Node evaluators ==" in printed
    assert "== Inspect log against the original Node evaluators ==" in printed
    assert printed.count("parity OK: 3 cases in 3 files\n") == 2
    assert printed.endswith("parity OK: 3 cases in 3 files\n")


def test_python_m_parity_runs_packaged_and_extra_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The entry point `nox -s parity` runs, as `python -m` runs it."""
    extra = write_fixture(tmp_path / "extra.jsonl", [ASTRAL_GAP])
    monkeypatch.chdir(REPOSITORY)
    # This module imported parity.__main__; `-m` runs it afresh, as here.
    monkeypatch.delitem(sys.modules, "parity.__main__")
    argv = ["parity", "--core-only", "--stage-diagnosis", str(extra)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("parity", run_name="__main__", alter_sys=True)
    completed = capsys.readouterr()
    assert exited.value.code == 0, completed.out + completed.err
    # The packaged files are wherever tracegrade is installed: `src/` in an
    # editable install, site-packages in a nox session.
    for name in (S, X):
        assert f"tracegrade/data/{name}.jsonl [{name}]: " in completed.out, name
    assert f"\n{extra} [stage_diagnosis]: 1 cases" in completed.out


@pytest.mark.parametrize(
    ("version", "said"),
    [
        (None, r"'node' was not found on PATH.*18 or newer"),
        ("v16.20.2", r"is Node.js v16.20.2; .* needs 18 or newer"),
    ],
)
def test_missing_or_old_node_is_a_clear_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    version: str | None,
    said: str,
) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    if version is not None:
        fake = tmp_path / "bin" / "node"
        fake.write_text(f"#!/bin/sh\necho {version}\n", "utf-8")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    path = write_fixture(tmp_path / "x.jsonl", [KEPT_ORDER])
    assert main(["--core-only", "--ordered-extraction", str(path)], packaged=()) == 2
    assert re.search(said, capsys.readouterr().err)


def test_harness_answers_every_line_in_order_and_never_crashes() -> None:
    requests = [
        '{"id": "a", "input": {"source": ["A"], "answer": ["A"]}}',
        "not json",
        '{"id": 2, "input": null}',
        "[1]",
        '{"id": 4}',
        '{"id": 5, "input": {"source": ["A", "A"], "answer": []}, "expected": 0}',
    ]
    completed = subprocess.run(
        ["node", str(node.HARNESS), str(node.original_script("ordered_extraction"))],
        input="\n".join(requests) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    null_input = "TypeError: Cannot read properties of null (reading 'source')"
    no_object = 'TypeError: a request must be a JSON object {"id", "input"}'
    no_input = 'TypeError: a request must have an "input" member'
    assert answers == [
        {"id": "a", "result": {"membership": True, "order": True}},
        {"id": None, "threw": answers[1]["threw"]},
        {"id": 2, "threw": null_input},
        {"id": None, "threw": no_object},
        {"id": 4, "threw": no_input},
        {"id": 5, "result": {"error": "duplicate-id"}},
    ]
    assert answers[1]["threw"].startswith("SyntaxError: ")
    assert json.loads(completed.stderr)["checked"] == 3


def test_client_streams_and_batches_through_one_process() -> None:
    # Megabytes each way: far past the pipe buffers, so a batch that wrote
    # everything before reading would deadlock.
    long_ids = [f"{n:05d}-\U0001f600-\ud800-" + "x" * 200 for n in range(40)]
    records = [{"required": long_ids, "context": [], "correct": True}] * 400
    all_missing = canonical_json({"stage": "retrieval", "missing": long_ids})
    with node.NodeEvaluator("stage_diagnosis") as js:
        pid = js.pid
        first = js.evaluate({"required": ["A"], "context": ["A"], "correct": True})
        batch = js.evaluate_many(records)
        last = js.evaluate({"required": ["A"], "context": ["A"], "correct": False})
        pid_after = js.pid
    assert pid is not None and pid_after == pid
    assert first == node.NodeOutcome('{"stage":"pass","missing":[]}', None)
    assert batch == [node.NodeOutcome(all_missing, None)] * 400
    assert last == node.NodeOutcome('{"stage":"generation","missing":[]}', None)
