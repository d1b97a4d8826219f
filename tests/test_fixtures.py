"""The packaged fixture files, which every other test trusts, and the line
schema docs/scores.md gives users."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tracegrade import canonical_json

DATA = files("tracegrade") / "data"
REFERENCE = Path(__file__).resolve().parents[1] / "parity" / "reference"
SCHEMA = json.loads((DATA / "fixture.schema.json").read_text(encoding="utf-8"))
# Each packaged file, its document, and every category its evaluator gives.
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


def category(expected: dict[str, Any]) -> str:
    if "invalid" in expected or "error" in expected or "stage" in expected:
        return str(expected.get("error") or expected.get("stage") or "invalid")
    if expected["membership"]:
        return "membership&order" if expected["order"] else "membership-only"
    return "neither"


@pytest.mark.parametrize(
    "line",
    [
        {"input": {}},
        {"id": "", "input": {}},
        {"id": "x"},
        {"id": "x", "input": []},
        {"id": "x", "input": {}, "note": ""},
        {"id": "x", "input": {}, "reason": 1},
        {"id": "x", "input": {}, "expected": {"stage": "pass"}},
        {"id": "x", "input": {}, "expected": {"stage": "unresolved", "missing": []}},
        {"id": "x", "input": {}, "expected": {"error": "answer_label"}},
        {"id": "x", "input": {}, "expected": {"membership": 1, "order": 0}},
        {"id": "x", "input": {}, "expected": {"membership": False, "order": True}},
        {"id": "x", "input": {}, "expected": {"invalid": ""}},
    ],
)
def test_the_schema_refuses_a_malformed_line(line: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.validate({"id": "mine", "input": {"source": ["A"], "answer": ["A"]}})
    assert not validator.is_valid(line)


@pytest.mark.parametrize("name", sorted(FIXTURE_FILES))
def test_the_packaged_cases_are_the_documents_and_cover_all(name: str) -> None:
    """Schema-valid and unique, the document's cases and reasons unchanged,
    every category, at least 25 in the contract."""
    cases = [json.loads(line) for line in (DATA / name).read_text("utf-8").splitlines()]
    for case in cases:
        jsonschema.Draft202012Validator(SCHEMA).validate(case)
        assert case["reason"].strip() and "expected" in case, case["id"]
    assert len({case["id"] for case in cases}) == len(cases)
    document, categories = FIXTURE_FILES[name]
    text = (REFERENCE / document).read_text(encoding="utf-8")
    start = text.index("[", text.index("const cases = "))
    originals = json.JSONDecoder().raw_decode(text, start)[0]
    assert originals
    reasons = {}  # the table's expected and reason by input
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|", 3)]
        if line.startswith("|") and len(cells) == 4 and cells[1].startswith("{"):
            row = (canonical_json(json.loads(cells[2])), cells[3])
            reasons[canonical_json(json.loads(cells[1]))] = row
    by_id = {case["id"]: case for case in cases}
    for original in originals:
        case = by_id[original["id"]]
        assert canonical_json(case["input"]) == canonical_json(original["input"])
        expected = canonical_json(original["expected"])
        assert canonical_json(case["expected"]) == expected
        assert reasons[canonical_json(original["input"])] == (expected, case["reason"])
    assert {category(case["expected"]) for case in cases} == categories
    assert sum("invalid" not in case["expected"] for case in cases) >= 25
