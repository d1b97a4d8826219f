"""`check`, `score` and `inspect eval -T dataset=` give each hostile line the
same verdict (blank, refused with the same kind, or scored with the same reason)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from tests.commands import run_tracegrade
from tracegrade import stage_diagnosis
from tracegrade.datasets import DatasetError, read_fixture_cases

OK = '{"required": ["D1"], "context": ["D1"], "correct": true}'
WITH = OK[:-1] + ", "  # OK with one more field to come
NULL_CONTEXT = '{"required": ["D1"], "context": null, "correct": true}'
NOT_A_CASE, MALFORMED = "not-a-fixture-line", "malformed-json"


def case(case_id: str, record: str) -> str:
    return f'{{"id": {json.dumps(case_id)}, "input": {record}}}'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# (name, line, verdict: "blank", a line-error kind, or the score's reason).
HOSTILE = [
    ("clean", case("clean", OK), ""),
    ("overflow-label", case("a", OK.replace("true", "1e400")), NOT_A_CASE),
    ("overflow-extra", case("b", WITH + '"note": -1e400}'), NOT_A_CASE),
    ("huge-int", case("c", WITH + '"n": ' + "9" * 5000 + "}"), NOT_A_CASE),
    ("large-finite", case("d", OK.replace("true", "1e308")), "answer-label"),
    ("deep-allowed", case("e", WITH + '"x": ' + nested(98) + "}"), ""),
    ("deep-refused", case("f", WITH + '"x": ' + nested(99) + "}"), NOT_A_CASE),
    ("deep-in-ids", case("g", '{"required": [' + nested(300) + "]}"), NOT_A_CASE),
    ("too-deep-to-read", case("h", nested(50_000)), MALFORMED),
    ("lone-surrogate-id", case("\ud800", OK), NOT_A_CASE),
    ("surrogate-in-ids", case("i", OK.replace('"D1"]', '"D1", "\\ud800"]', 1)), ""),
    # A key no log can hold (no UTF-8 form), at any depth of the line.
    ("surrogate-key", case("n", WITH + '"\\udc00": 1}'), NOT_A_CASE),
    ("surrogate-deep", case("o", WITH + '"x": [{"\\ud800": {"y": 1}}]}'), NOT_A_CASE),
    ("surrogate-top-key", case("p", OK)[:-1] + ', "\\udfff": 1}', NOT_A_CASE),
    ("empty-id", case("", OK), NOT_A_CASE),
    ("null-context", case("j", NULL_CONTEXT), "invalid-input"),
    ("duplicate-key", '{"id": "k", "id": "l", "input": {}}', MALFORMED),
    ("nan", case("m", '{"correct": NaN}'), MALFORMED),
    ("nbsp", "\u00a0", MALFORMED),
    ("vertical-tab", "\x0b", MALFORMED),
    ("json-whitespace", " \t ", "blank"),
    ("not-an-object", "[1, 2]", NOT_A_CASE),
]
INVALID_UTF8 = b'{"id": "z\xff", "input": {}}\n'


def write(path: Path, lines: list[str], raw: bytes = b"") -> Path:
    data = b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in lines)
    path.write_bytes(data + raw)
    return path


def test_check_score_and_the_dataset_reader_agree(tmp_path: Path) -> None:
    lines = [line for _, line, _ in HOSTILE]
    path = write(tmp_path / "hostile.jsonl", lines, INVALID_UTF8)
    expected = {n: v for n, (_, _, v) in enumerate(HOSTILE, start=1) if v != "blank"}
    expected[len(HOSTILE) + 1] = MALFORMED

    checked = run_tracegrade(
        "check", "stage_diagnosis", str(path), "--json", cwd=tmp_path
    )
    assert "Traceback" not in checked.stderr, checked.stderr
    problems = json.loads(checked.stdout)["problems"]
    assert {p["line"]: p["kind"] for p in problems} == {
        line: kind for line, kind in expected.items() if kind
    }
    args = ("score", "stage_diagnosis", str(path), "--log-dir", "logs", "--json")
    scored = run_tracegrade(*args, cwd=tmp_path)
    assert "Traceback" not in scored.stderr, scored.stderr
    summary = json.loads(scored.stdout)
    results = (tmp_path / summary["results"]).read_text().splitlines()
    entries = map(json.loads, results)
    verdicts = {e["line"]: (e["error"] or {}).get("kind", "") for e in entries}
    assert verdicts == expected
    assert summary["lines"] == len(HOSTILE) + 1
    assert summary["records"] + summary["blank"] == summary["lines"]

    # `inspect eval`'s reader: a refused line alone is a DatasetError of its kind.
    refusals = (MALFORMED, NOT_A_CASE)
    for name, line, verdict in HOSTILE:
        if verdict in refusals:
            with pytest.raises(DatasetError) as refused:
                read_fixture_cases(write(tmp_path / f"{name}.jsonl", [line]))
            assert (refused.value.kind, refused.value.line) == (verdict, 1), name
    kept = [(line, verdict) for _, line, verdict in HOSTILE if verdict not in refusals]
    dataset = write(tmp_path / "kept.jsonl", [line for line, _ in kept])
    task = stage_diagnosis(dataset=str(dataset))
    (log,) = inspect_eval(task, display="none", log_dir=str(tmp_path / "eval-logs"))
    assert log.status == "success"
    reasons = {
        sample.id: (sample.scores or {})["stage_diagnosis"].reason or ""
        for sample in log.samples or []
    }
    assert reasons == {
        json.loads(line)["id"]: verdict for line, verdict in kept if verdict != "blank"
    }
