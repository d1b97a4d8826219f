"""The core against every packaged case (JS typeof labels and UTF-16 order
among them), plus the traps around it. Results are compared as canonical JSON:
`True == 1` would let a wrong answer pass."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import pytest

from tracegrade import InvalidRecord, canonical_json, diagnose_stage, grade_extraction
from tracegrade.core.errors import quote

DATA = files("tracegrade") / "data"
Evaluator = Callable[[Any], Any]
EVALUATORS: dict[str, Evaluator] = {
    "stage_diagnosis.jsonl": diagnose_stage,
    "ordered_extraction.jsonl": grade_extraction,
}


def fixture_cases(name: str) -> list[dict[str, Any]]:
    text = (DATA / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def all_case_params() -> list[Any]:
    return [
        pytest.param(evaluate, case, id=f"{name.removesuffix('.jsonl')}:{case['id']}")
        for name, evaluate in EVALUATORS.items()
        for case in fixture_cases(name)
    ]


def value_at(record: dict[str, Any], field: str) -> Any:
    """What `field` ("context", "required[1]") points at; a missing field is
    reported with the whole record, the only place a reader can look."""
    match = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", field)
    assert match is not None, field
    name, position = match.groups()
    if name not in record:
        return record
    value = record[name]
    return value if position is None else value[int(position)]


def check_case(evaluate: Evaluator, case: dict[str, Any]) -> None:
    expected = case["expected"]
    if "invalid" not in expected:
        assert canonical_json(evaluate(case["input"])) == canonical_json(expected)
        return
    with pytest.raises(InvalidRecord) as raised:
        evaluate(case["input"])
    error = raised.value
    assert error.field == expected["invalid"]
    assert canonical_json(error.value) == canonical_json(
        value_at(case["input"], error.field)
    )
    message = str(error)
    assert repr(error.field) in message
    # Quoted as JSON, the way the value stands in the file.
    assert json.dumps(error.value, ensure_ascii=False)[:60] in message


@pytest.mark.parametrize("evaluate", EVALUATORS.values(), ids=list(EVALUATORS))
@pytest.mark.parametrize("record", [None, [], "record", 1, [["D1"]]])
def test_record_that_is_not_an_object_is_refused(
    evaluate: Evaluator, record: Any
) -> None:
    # Fixture lines cannot hold these: the schema requires `input` to be an object.
    with pytest.raises(InvalidRecord) as raised:
        evaluate(record)
    assert raised.value.field == "record"
    assert raised.value.value is record
    assert str(raised.value).endswith(f"got {json.dumps(record)}")


def assert_plain_json(value: Any) -> None:
    if type(value) is dict:
        for key, item in value.items():
            assert type(key) is str
            assert_plain_json(item)
    elif type(value) is list:
        for item in value:
            assert_plain_json(item)
    else:
        assert type(value) in (bool, str), repr(value)


@pytest.mark.parametrize(("evaluate", "case"), all_case_params())
def test_every_packaged_case(evaluate: Evaluator, case: dict[str, Any]) -> None:
    """The documented result (key order too: canonical JSON keeps it) or
    refusal; plain JSON values; the record untouched and not shared."""
    record = case["input"]
    before = copy.deepcopy(record)
    check_case(evaluate, case)
    assert canonical_json(record) == canonical_json(before)
    if "invalid" in case["expected"]:
        return
    result = evaluate(record)
    assert_plain_json(result)
    assert canonical_json(json.loads(json.dumps(result))) == canonical_json(result)
    if "missing" in result:
        # Mutating the result must not reach back into the caller's record.
        assert result["missing"] is not record["required"]


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("evaluate", "record", "field"),
    [
        (diagnose_stage, {"required": [_nested(5000)], "context": []}, "required[0]"),
        (diagnose_stage, {"required": ["D1"], "context": _nested(5000)}, "context[0]"),
        (grade_extraction, {"source": ["A"], "answer": [_nested(5000)]}, "answer[0]"),
        (diagnose_stage, _nested(5000), "record"),
    ],
)
def test_deep_nesting_is_invalid_input_not_a_recursion_error(
    evaluate: Evaluator, record: Any, field: str
) -> None:
    with pytest.raises(InvalidRecord) as raised:
        evaluate(record)
    assert raised.value.field == field
    # Quoted briefly, deep structure elided.
    assert "[...]" in str(raised.value)
    assert len(str(raised.value)) < 250


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ({"required": ["D1"]}, '{"required": ["D1"]}'),
        ("é\ud800", '"é\\ud800"'),
        (10**5000, "<an integer of 16,610 bits>"),
        ({"D1"}, "{'D1'}"),
        # Cut at 120 characters without quoting the whole value first.
        (["D" * 50] * 1_000_000, json.dumps(["D" * 50] * 3)[:117] + "..."),
    ],
    ids=["object", "surrogate", "huge-int", "set", "long"],
)
def test_bad_values_are_quoted_as_json(value: Any, shown: str) -> None:
    assert quote(value) == shown
