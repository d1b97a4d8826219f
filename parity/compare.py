"""Case-by-case parity: Python answers against the original Node evaluators.

Every comparison is between canonical JSON texts, never parsed objects: in
Python `True == 1` and `{"a": 1, "b": 2} == {"b": 2, "a": 1}`, and either
would hide a real difference from the reference.

Where Python answers come from is pluggable (`PythonSource`): today the core
functions are called directly; results read back from Inspect eval logs can
be compared against the same Node answers by the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import Enum
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final, NoReturn, Protocol

from tracegrade.core import (
    InvalidRecord,
    canonical_json,
    diagnose_stage,
    grade_extraction,
)

from .contract import (
    EVALUATORS,
    Deviation,
    EvaluatorName,
    Standing,
    deviation,
    standing,
)
from .node import NodeEvaluator, NodeOutcome

FIXTURE_KEYS: Final = frozenset({"id", "input", "expected", "reason"})
INVALID_KEY: Final = "invalid"


class FixtureError(ValueError):
    """A fixture line that cannot be read as a case; names file and line."""

    def __init__(self, location: str, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{location}: {problem}")


@dataclass(frozen=True)
class FixtureFile:
    """A JSON Lines fixture file and the evaluator its inputs are for."""

    evaluator: EvaluatorName
    path: Traversable

    @property
    def label(self) -> str:
        """The path as a reader would type it: relative when under the cwd."""
        if isinstance(self.path, Path) and self.path.is_absolute():
            try:
                return str(self.path.relative_to(Path.cwd()))
            except ValueError:
                pass
        return str(self.path)


@dataclass(frozen=True)
class Case:
    """One fixture line. `expected` is None when the file gives none."""

    evaluator: EvaluatorName
    id: str
    input: Any
    expected: Any
    reason: str | None
    file: str
    line: int

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def expected_invalid_field(self) -> str | None:
        """The field named by an `{"invalid": field}` expectation."""
        if isinstance(self.expected, dict) and INVALID_KEY in self.expected:
            return str(self.expected[INVALID_KEY])
        return None


def packaged_fixtures() -> list[FixtureFile]:
    """The fixture files shipped inside the tracegrade package."""
    data = files("tracegrade").joinpath("data")
    return [FixtureFile(name, data.joinpath(f"{name}.jsonl")) for name in EVALUATORS]


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON.parse and json.loads both keep the last of a repeated key, so a
    # repeat is never a difference, only a fixture mistake worth naming.
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise ValueError(f"the key {key!r} appears twice in one object")
        record[key] = value
    return record


def _parse_line(text: str, location: str) -> Any:
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            object_pairs_hook=_object_without_repeats,
        )
    except ValueError as error:
        raise FixtureError(location, f"not a JSON value: {error}") from error


def _case(fixture: FixtureFile, number: int, line: dict[str, Any]) -> Case:
    location = f"{fixture.label}:{number}"
    unknown = sorted(set(line) - FIXTURE_KEYS)
    if unknown:
        raise FixtureError(
            location, f"unknown key(s) {unknown}; a case has {sorted(FIXTURE_KEYS)}"
        )
    for key in ("id", "input"):
        if key not in line:
            raise FixtureError(location, f"the case has no {key!r}")
    case_id = line["id"]
    if type(case_id) is not str or not case_id:
        raise FixtureError(
            location, f"'id' must be a non-empty string, got {case_id!r}"
        )
    reason = line.get("reason")
    if reason is not None and type(reason) is not str:
        raise FixtureError(location, f"'reason' must be a string, got {reason!r}")
    expected = line.get("expected")
    if "expected" in line and type(expected) is not dict:
        raise FixtureError(location, f"'expected' must be an object, got {expected!r}")
    if (
        expected is not None
        and INVALID_KEY in expected
        and (len(expected) != 1 or type(expected[INVALID_KEY]) is not str)
    ):
        raise FixtureError(
            location,
            f"an out-of-contract 'expected' is exactly {{\"invalid\": <field>}}, "
            f"got {expected!r}",
        )
    try:
        canonical_json(line["input"])
    except ValueError as error:
        raise FixtureError(location, f"'input' has no JSON text: {error}") from error
    return Case(
        evaluator=fixture.evaluator,
        id=case_id,
        input=line["input"],
        expected=expected,
        reason=reason,
        file=fixture.label,
        line=number,
    )


def load_fixture(fixture: FixtureFile) -> list[Case]:
    """Read every case of a JSON Lines file, refusing any malformed line."""
    try:
        raw = fixture.path.read_bytes()
    except OSError as error:
        raise FixtureError(fixture.label, f"cannot read the file: {error}") from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FixtureError(fixture.label, f"not UTF-8: {error}") from error
    # Split on newlines only: U+2028 may stand raw inside a JSON string.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    cases: list[Case] = []
    first_line_of: dict[str, int] = {}
    for number, line_text in enumerate(lines, start=1):
        location = f"{fixture.label}:{number}"
        if not line_text.strip():
            raise FixtureError(location, "blank line; every line must be one case")
        line = _parse_line(line_text, location)
        if type(line) is not dict:
            raise FixtureError(
                location, f"a case is a JSON object, got {line_text!r:.80}"
            )
        case = _case(fixture, number, line)
        if case.id in first_line_of:
            first = first_line_of[case.id]
            raise FixtureError(
                location, f"duplicate id {case.id!r}, first used on line {first}"
            )
        first_line_of[case.id] = number
        cases.append(case)
    return cases


@dataclass(frozen=True)
class PythonOutcome:
    """What the Python side answered for one case.

    Exactly one of `result_json` (canonical JSON of the answer) and
    `invalid_message` (an `InvalidRecord` refusal, with its field) is set.
    """

    result_json: str | None
    invalid_field: str | None = None
    invalid_message: str | None = None

    def __post_init__(self) -> None:
        if (self.result_json is None) == (self.invalid_message is None):
            raise ValueError(
                f"a PythonOutcome is a result or a refusal, got {self.result_json!r} "
                f"and {self.invalid_message!r}"
            )


class PythonSource(Protocol):
    """Somewhere Python answers come from, compared against Node's."""

    @property
    def label(self) -> str: ...

    def outcome(self, case: Case) -> PythonOutcome: ...


class CoreSource:
    """The core functions, called on the fixture input as parsed from JSON.

    Only `InvalidRecord` is an answer; any other exception is a bug in the
    core and propagates.
    """

    label = "Python core"

    def outcome(self, case: Case) -> PythonOutcome:
        evaluate = (
            diagnose_stage if case.evaluator == "stage_diagnosis" else grade_extraction
        )
        try:
            result = evaluate(case.input)
        except InvalidRecord as refusal:
            return PythonOutcome(None, refusal.field, str(refusal))
        return PythonOutcome(canonical_json(result))


class ProblemKind(Enum):
    DIFFERENCE = "difference"
    EXPECTED = "expected mismatch"


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    text: str


@dataclass(frozen=True)
class CaseReport:
    """One case, both answers, and everything wrong with them."""

    case: Case
    standing: Standing
    deviation: Deviation | None
    python: PythonOutcome
    node: NodeOutcome
    problems: tuple[Problem, ...]

    @property
    def failed(self) -> bool:
        return bool(self.problems)


def _first_difference(left: str, right: str) -> int:
    for position, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return position
    return min(len(left), len(right))


def _check_expected(
    case: Case, case_standing: Standing, python: PythonOutcome, node: NodeOutcome
) -> list[Problem]:
    if case.expected is None:
        return []
    invalid_field = case.expected_invalid_field
    if invalid_field is not None:
        if python.invalid_field == invalid_field:
            return []
        found = (
            f"answered {python.result_json}"
            if python.result_json is not None
            else f"refused field {python.invalid_field!r}"
        )
        return [
            Problem(
                ProblemKind.EXPECTED,
                f"expected InvalidRecord on field {invalid_field!r}; Python {found}",
            )
        ]
    expected_json = canonical_json(case.expected)
    problems: list[Problem] = []
    if python.result_json != expected_json:
        problems.append(
            Problem(ProblemKind.EXPECTED, "Python's answer is not the expected one")
        )
    if case_standing is Standing.IN_CONTRACT and node.result_json != expected_json:
        problems.append(
            Problem(ProblemKind.EXPECTED, "Node's answer is not the expected one")
        )
    return problems


def check_case(case: Case, python: PythonOutcome, node: NodeOutcome) -> CaseReport:
    """Judge one case: agreement inside the contract, the documented answer
    for a deviation, a refusal outside."""
    case_standing = standing(case.evaluator, case.input)
    case_deviation = deviation(case.evaluator, case.input)
    problems: list[Problem] = []

    def difference(text: str) -> None:
        problems.append(Problem(ProblemKind.DIFFERENCE, text))

    if case_standing is Standing.IN_CONTRACT:
        if python.result_json is None:
            difference("Python refused an input inside the contract")
        if node.result_json is None:
            difference("Node threw on an input inside the contract")
        if (
            python.result_json is not None
            and node.result_json is not None
            and python.result_json != node.result_json
        ):
            at = _first_difference(python.result_json, node.result_json)
            difference(f"Python and Node answers differ from character {at}")
    elif case_standing is Standing.DEVIATION:
        assert case_deviation is not None
        if python.result_json != case_deviation.python_result:
            difference(
                f"deviation {case_deviation.name!r}: Python must answer "
                f"{case_deviation.python_result}"
            )
        if node.threw is None or not node.threw.startswith(
            f"{case_deviation.node_throws}:"
        ):
            difference(
                f"deviation {case_deviation.name!r}: the reference was documented to "
                f"throw {case_deviation.node_throws}"
            )
    elif python.result_json is not None:
        difference(
            "Python answered an input outside the contract instead of refusing it"
        )

    problems.extend(_check_expected(case, case_standing, python, node))
    return CaseReport(
        case=case,
        standing=case_standing,
        deviation=case_deviation,
        python=python,
        node=node,
        problems=tuple(problems),
    )


@dataclass(frozen=True)
class FileReport:
    fixture: FixtureFile
    cases: list[CaseReport] = field(default_factory=list)

    def count(self, case_standing: Standing) -> int:
        return sum(report.standing is case_standing for report in self.cases)

    @property
    def failed(self) -> list[CaseReport]:
        return [report for report in self.cases if report.failed]

    def problems(self, kind: ProblemKind) -> int:
        return sum(
            problem.kind is kind for report in self.cases for problem in report.problems
        )


def compare_files(
    fixtures: Sequence[FixtureFile],
    python: PythonSource,
    *,
    node: str = "node",
) -> list[FileReport]:
    """Run every case through `python` and the original Node evaluators.

    All files are read first, so a malformed line stops the run before any
    Node process starts. One Node process serves each evaluator.
    """
    loaded = [(fixture, load_fixture(fixture)) for fixture in fixtures]
    reports: list[FileReport] = []
    with ExitStack() as stack:
        evaluators: dict[EvaluatorName, NodeEvaluator] = {}
        for fixture, cases in loaded:
            if fixture.evaluator not in evaluators:
                evaluators[fixture.evaluator] = stack.enter_context(
                    NodeEvaluator(fixture.evaluator, node=node)
                )
            node_outcomes = evaluators[fixture.evaluator].evaluate_many(
                [case.input for case in cases]
            )
            reports.append(
                FileReport(
                    fixture,
                    [
                        check_case(case, python.outcome(case), node_outcome)
                        for case, node_outcome in zip(cases, node_outcomes, strict=True)
                    ],
                )
            )
    return reports


def _python_text(outcome: PythonOutcome) -> str:
    if outcome.result_json is not None:
        return outcome.result_json
    return f"InvalidRecord: {outcome.invalid_message}"


def _node_text(outcome: NodeOutcome) -> str:
    if outcome.result_json is not None:
        return outcome.result_json
    return f"threw {outcome.threw}"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows)
    return lines


def _difference_block(report: CaseReport, python_label: str) -> list[str]:
    case = report.case
    python_text = _python_text(report.python)
    node_text = _node_text(report.node)
    expected_text = (
        "(none given)" if case.expected is None else canonical_json(case.expected)
    )
    label_width = max(len(python_label), len("expected")) + 2
    lines = [f"FAIL {case.evaluator} {case.id!r} at {case.location}"]
    lines.extend(
        f"  - {problem.kind.value}: {problem.text}" for problem in report.problems
    )
    lines.append(f"  {'input':<{label_width}}{canonical_json(case.input)}")
    lines.append(f"  {python_label:<{label_width}}{python_text}")
    lines.append(f"  {'Node':<{label_width}}{node_text}")
    if python_text != node_text and report.standing is Standing.IN_CONTRACT:
        at = _first_difference(python_text, node_text)
        lines.append(f"  {'':<{label_width}}{' ' * at}^")
    lines.append(f"  {'expected':<{label_width}}{expected_text}")
    return lines


def _summary(report: FileReport) -> str:
    fixture = report.fixture
    return (
        f"{fixture.label} [{fixture.evaluator}]: {len(report.cases)} cases, "
        f"{report.count(Standing.IN_CONTRACT)} in contract, "
        f"{report.count(Standing.DEVIATION)} deviations, "
        f"{report.count(Standing.OUT_OF_CONTRACT)} out of contract; "
        f"{report.problems(ProblemKind.DIFFERENCE)} differences, "
        f"{report.problems(ProblemKind.EXPECTED)} expected mismatches"
    )


def render(reports: Sequence[FileReport], python_label: str) -> str:
    """The readable report: failures first, then the listed-only cases, then counts."""
    lines: list[str] = []
    failed = [case for report in reports for case in report.failed]
    for case_report in failed:
        lines.extend(_difference_block(case_report, python_label))
        lines.append("")

    deviations = [
        case
        for report in reports
        for case in report.cases
        if case.deviation is not None
    ]
    if deviations:
        lines.append(f"Deliberate deviations (parity/DEVIATIONS.md): {len(deviations)}")
        lines.extend(
            _table(
                ["id", "where", "deviation", "Node", python_label],
                (
                    [
                        case.case.id,
                        case.case.location,
                        case.deviation.name if case.deviation else "",
                        _node_text(case.node),
                        _python_text(case.python),
                    ]
                    for case in deviations
                ),
            )
        )
        lines.append("")

    outside = [
        case
        for report in reports
        for case in report.cases
        if case.standing is Standing.OUT_OF_CONTRACT
    ]
    if outside:
        lines.append(
            f"Out of contract, listed and not failed (Python refuses, the reference "
            f"was never defined there): {len(outside)}"
        )
        lines.extend(
            _table(
                ["id", "where", "Node", python_label],
                (
                    [
                        case.case.id,
                        case.case.location,
                        _node_text(case.node),
                        _python_text(case.python),
                    ]
                    for case in outside
                ),
            )
        )
        lines.append("")

    lines.extend(_summary(report) for report in reports)
    total = sum(len(report.cases) for report in reports)
    if failed:
        lines.append(f"parity FAILED: {len(failed)} of {total} cases")
    else:
        lines.append(f"parity OK: {total} cases in {len(reports)} files")
    return "\n".join(lines)


def passed(reports: Iterable[FileReport]) -> bool:
    return not any(report.failed for report in reports)


def fixture_files(paths: Mapping[EvaluatorName, Sequence[str]]) -> list[FixtureFile]:
    """Fixture files named on the command line, per evaluator."""
    return [
        FixtureFile(evaluator, Path(path))
        for evaluator in EVALUATORS
        for path in paths.get(evaluator, ())
    ]
