"""One classifier, one verdict: hostile lines through every reader.

`tracegrade check`, `tracegrade score` and `inspect eval -T dataset=` must
give each line the same verdict: skipped as blank, refused with the same
kind (naming the line), or scored with the same reason. Every line that
parses must be graded or named; none may crash a reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval

from tests.commands import (
    run_tracegrade,
)
from tracegrade import stage_diagnosis
from tracegrade.datasets import DatasetError, read_fixture_cases


def _nested(depth: int) -> str:
    """JSON text of a value nested `depth` levels deep."""
    return "[" * depth + "]" * depth


def _case(case_id: str, record: str) -> str:
    return f'{{"id": {json.dumps(case_id)}, "input": {record}}}'


OK = '{"required": ["D1"], "context": ["D1"], "correct": true}'
# (name, line text, verdict): verdict is "blank", a line-error kind, or the
# score's reason ("" for a clean score). A case line's input is at depth 2.
HOSTILE: list[tuple[str, str, str]] = [
    ("clean", _case("clean", OK), ""),
    ("overflow-label", _case("a", OK.replace("true", "1e400")), "not-a-fixture-line"),
    (
        "overflow-extra",
        _case("b", OK[:-1] + ', "note": -1e400}'),
        "not-a-fixture-line",
    ),
    (
        "huge-int",
        _case("c", OK[:-1] + ', "n": ' + "9" * 5000 + "}"),
        "not-a-fixture-line",
    ),
    ("large-finite", _case("d", OK.replace("true", "1e308")), "answer-label"),
    ("deep-allowed", _case("e", OK[:-1] + ', "x": ' + _nested(98) + "}"), ""),
    (
        "deep-refused",
        _case("f", OK[:-1] + ', "x": ' + _nested(99) + "}"),
        "not-a-fixture-line",
    ),
    (
        "deep-in-id-list",
        _case("g", '{"required": [' + _nested(300) + "]}"),
        "not-a-fixture-line",
    ),
    ("too-deep-to-read", _case("h", _nested(50_000)), "malformed-json"),
    ("lone-surrogate-id", _case("\ud800", OK), "not-a-fixture-line"),
    (
        "lone-surrogate-in-ids",
        _case("i", OK.replace('"D1"]', '"D1", "\\ud800"]', 1)),
        "",
    ),
    # A key no log can hold (no UTF-8 form), at any depth of the line.
    (
        "lone-surrogate-key",
        _case("n", OK[:-1] + ', "\\udc00": 1}'),
        "not-a-fixture-line",
    ),
    (
        "lone-surrogate-nested-key",
        _case("o", OK[:-1] + ', "x": [{"\\ud800": {"y": 1}}]}'),
        "not-a-fixture-line",
    ),
    (
        "lone-surrogate-top-key",
        _case("p", OK)[:-1] + ', "\\udfff": 1}',
        "not-a-fixture-line",
    ),
    ("empty-id", _case("", OK), "not-a-fixture-line"),
    (
        "null-context",
        _case("j", OK.replace('["D1"], "correct"', 'null, "correct"')),
        "invalid-input",
    ),
    ("duplicate-key", '{"id": "k", "id": "l", "input": {}}', "malformed-json"),
    ("nan", _case("m", '{"correct": NaN}'), "malformed-json"),
    ("nbsp", "\u00a0", "malformed-json"),
    ("vertical-tab", "\x0b", "malformed-json"),
    ("json-whitespace", " \t ", "blank"),
    ("not-an-object", "[1, 2]", "not-a-fixture-line"),
]
INVALID_UTF8 = b'{"id": "z\xff", "input": {}}'


def _write(path: Path, lines: list[str], raw: bytes | None = None) -> Path:
    data = b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in lines)
    path.write_bytes(data + (raw + b"\n" if raw else b""))
    return path


def _check_verdicts(path: Path) -> dict[int, str]:
    done = run_tracegrade(
        "check", "stage_diagnosis", str(path), "--json", cwd=path.parent
    )
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    return {problem["line"]: problem["kind"] for problem in report["problems"]}


def _score_verdicts(path: Path) -> tuple[dict[int, str], dict[str, Any]]:
    done = run_tracegrade(
        *("score", "stage_diagnosis", str(path), "--log-dir", "logs", "--json"),
        cwd=path.parent,
    )
    assert "Traceback" not in done.stderr, done.stderr
    summary = json.loads(done.stdout)
    entries = [
        json.loads(line)
        for line in Path(path.parent / summary["results"]).read_text().splitlines()
    ]
    verdicts = {
        entry["line"]: (entry["error"] or {}).get("kind", "") for entry in entries
    }
    return verdicts, summary


def test_check_score_and_the_dataset_reader_agree_on_every_line(
    tmp_path: Path,
) -> None:
    lines = [line for _, line, _ in HOSTILE]
    path = _write(tmp_path / "hostile.jsonl", lines, INVALID_UTF8)
    expected = {
        number: verdict
        for number, (_, _, verdict) in enumerate(HOSTILE, start=1)
        if verdict != "blank"
    }
    expected[len(HOSTILE) + 1] = "malformed-json"

    checked = _check_verdicts(path)
    scored, summary = _score_verdicts(path)

    assert {line: kind for line, kind in expected.items() if kind} == checked
    assert expected == scored
    # Every line accounted for: one result per non-blank line.
    assert summary["lines"] == len(HOSTILE) + 1
    assert summary["records"] + summary["blank"] == summary["lines"]
    # The dataset reader `inspect eval` uses: each refused line alone is a
    # DatasetError of the same kind naming line 1; each accepted line is a
    # sample with the same reason, each alone in the dataset of its own
    # task, all the tasks one eval.
    accepted: list[tuple[int, str, str]] = []  # (number, line, verdict)
    tasks = []
    for number, (name, line, verdict) in enumerate(HOSTILE, start=1):
        alone = _write(tmp_path / f"{name}.jsonl", [line])
        if verdict == "blank":
            with pytest.raises(DatasetError, match="holds no cases"):
                read_fixture_cases(alone)
        elif verdict in ("malformed-json", "not-a-fixture-line"):
            with pytest.raises(DatasetError) as refused:
                read_fixture_cases(alone)
            assert (refused.value.kind, refused.value.line) == (verdict, 1), name
        else:
            accepted.append((number, line, verdict))
            tasks.append(stage_diagnosis(dataset=str(alone)))
    logs = inspect_eval(tasks, display="none", log_dir=str(tmp_path / "eval-logs"))
    assert len(logs) == len(accepted)
    for (number, line, verdict), log in zip(accepted, logs, strict=True):
        name = HOSTILE[number - 1][0]
        assert log.status == "success", name
        assert log.samples is not None
        (sample,) = log.samples
        assert sample.id == json.loads(line)["id"], name  # the line's own log
        assert sample.scores is not None
        reason = sample.scores["stage_diagnosis"].reason or ""
        assert reason == scored[number] == verdict, name
