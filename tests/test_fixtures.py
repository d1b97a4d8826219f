"""Sanity checks of the packaged fixture files, which every other test trusts."""

from __future__ import annotations

import json
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tracegrade import canonical_json

DATA = files("tracegrade") / "data"
REFERENCE = Path(__file__).resolve().parents[1] / "parity" / "reference"
MIN_IN_CONTRACT = 25

# Each packaged file, the document whose cases it starts from, and every
# output category the evaluator can produce (so none goes untested).
FIXTURE_FILES = {
    "stage_diagnosis.jsonl": (
        "000_dfd11cef632e8d90.txt",
        {"retrieval", "generation", "pass", "unresolved", "answer-label", "invalid"},
    ),
    "ordered_extraction.jsonl": (
        "001_a705b3246644a072.txt",
        {"membership&order", "membership-only", "neither", "duplicate-id", "invalid"},
    ),
}


def fixture_lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def fixture_cases(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in fixture_lines(name)]


def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (DATA / "fixture.schema.json").read_text(encoding="utf-8")
    )
    return schema


def document_cases(document: str) -> list[dict[str, Any]]:
    """The `const cases = [...]` array of a document's evaluator; it is JSON."""
    text = (REFERENCE / document).read_text(encoding="utf-8")
    start = text.index("[", text.index("const cases = "))
    cases, _ = json.JSONDecoder().raw_decode(text, start)
    assert isinstance(cases, list) and cases, document
    return cases


def document_table(document: str) -> list[tuple[Any, Any, str]]:
    """(input, expected, reason) for each data row of the filled-cases table."""
    rows = []
    for line in (REFERENCE / document).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            continue
        # maxsplit keeps any "|" inside the reason text within the last cell.
        cells = [cell.strip() for cell in line[1:-1].split("|", 3)]
        if len(cells) != 4 or not cells[1].startswith("{"):
            continue  # header and separator rows
        rows.append((json.loads(cells[1]), json.loads(cells[2]), cells[3]))
    assert rows, document
    return rows


def category(expected: dict[str, Any]) -> str:
    if "invalid" in expected:
        return "invalid"
    if "error" in expected:
        return str(expected["error"])
    if "stage" in expected:
        return str(expected["stage"])
    if expected["membership"] and expected["order"]:
        return "membership&order"
    return "membership-only" if expected["membership"] else "neither"


files_param = pytest.mark.parametrize("name", sorted(FIXTURE_FILES))


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param({"input": {}}, id="id-missing"),
        pytest.param({"id": "", "input": {}}, id="id-empty"),
        pytest.param({"id": "x"}, id="input-missing"),
        pytest.param({"id": "x", "input": []}, id="input-not-object"),
        pytest.param({"id": "x", "input": {}, "note": ""}, id="extra-property"),
        pytest.param({"id": "x", "input": {}, "reason": 1}, id="reason-not-string"),
        pytest.param(
            {"id": "x", "input": {}, "expected": {"stage": "pass"}},
            id="diagnosis-without-missing",
        ),
        pytest.param(
            {
                "id": "x",
                "input": {},
                "expected": {"stage": "unresolved", "missing": []},
            },
            id="unresolved-with-missing",
        ),
        pytest.param(
            {"id": "x", "input": {}, "expected": {"error": "answer_label"}},
            id="unknown-error",
        ),
        pytest.param(
            {"id": "x", "input": {}, "expected": {"membership": 1, "order": 0}},
            id="grade-numbers-not-booleans",
        ),
        pytest.param(
            {"id": "x", "input": {}, "expected": {"membership": False, "order": True}},
            id="order-without-membership",
        ),
        pytest.param(
            {"id": "x", "input": {}, "expected": {"invalid": ""}},
            id="invalid-field-empty",
        ),
    ],
)
def test_schema_rejects_malformed_line(line: dict[str, Any]) -> None:
    assert not jsonschema.Draft202012Validator(load_schema()).is_valid(line)


def test_schema_accepts_user_line_without_expected_or_reason() -> None:
    line = {"id": "mine", "input": {"source": ["A"], "answer": ["A"]}}
    jsonschema.Draft202012Validator(load_schema()).validate(line)


@files_param
def test_every_case_conforms_to_schema(name: str) -> None:
    validator = jsonschema.Draft202012Validator(load_schema())
    problems = [
        f"{case.get('id')!r}: {error.message}"
        for case in fixture_cases(name)
        for error in validator.iter_errors(case)
    ]
    assert problems == []


@files_param
def test_ids_are_unique(name: str) -> None:
    counts = Counter(case["id"] for case in fixture_cases(name))
    assert [case_id for case_id, count in counts.items() if count > 1] == []


@files_param
def test_packaged_cases_carry_expected_and_reason(name: str) -> None:
    for case in fixture_cases(name):
        assert isinstance(case.get("expected"), dict), case["id"]
        assert isinstance(case.get("reason"), str), case["id"]
        assert case["reason"].strip(), case["id"]


@files_param
def test_documents_own_cases_are_present_unchanged(name: str) -> None:
    document = FIXTURE_FILES[name][0]
    by_id = {case["id"]: case for case in fixture_cases(name)}
    table = document_table(document)
    for original in document_cases(document):
        case = by_id.get(original["id"])
        assert case is not None, f"{original['id']} missing from {name}"
        assert canonical_json(case["input"]) == canonical_json(original["input"])
        assert canonical_json(case["expected"]) == canonical_json(original["expected"])
        rows = [row for row in table if row[0] == original["input"]]
        assert len(rows) == 1, f"{original['id']}: no single table row for its input"
        _, table_expected, table_reason = rows[0]
        assert canonical_json(table_expected) == canonical_json(original["expected"])
        assert case["reason"] == table_reason


@files_param
def test_enough_in_contract_cases(name: str) -> None:
    in_contract = [
        case for case in fixture_cases(name) if "invalid" not in case["expected"]
    ]
    assert len(in_contract) >= MIN_IN_CONTRACT


@files_param
def test_every_output_category_appears(name: str) -> None:
    seen = {category(case["expected"]) for case in fixture_cases(name)}
    assert seen == FIXTURE_FILES[name][1]
