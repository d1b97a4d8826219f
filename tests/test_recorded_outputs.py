"""Recorded outputs read as live ones, by `inspect eval` and `tracegrade score`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inspect_ai.log import EvalLog, read_eval_log

from tests.support import write_lines
from tests.test_tasks import evaluated
from tracegrade import ordered_extraction_recorded
from tracegrade.cli import main
from tracegrade.tasks import extraction_input_score

SOURCE = ["C-3", "A-1", "B-2"]

# id: (output, (membership, order), read_as, what the explanation says)
OUTPUTS: dict[str, tuple[str, tuple[bool, bool], str | None, str]] = {
    "echo-then-sorted": (
        'Source order per the document: ["C-3", "A-1", "B-2"]\n'
        "My answer (sorted): ['A-1', 'B-2', 'C-3']",
        (False, False),
        None,
        'two different lists: ["C-3", "A-1", "B-2"] (line 1) and ["A-1", "B-2", '
        '"C-3"] (line 2)',
    ),
    "python-list-with-lone-surrogate": (
        "['C-3\ud800', 'A-1', 'B-2']",
        (False, False),
        "python-list",
        "",
    ),
    # Long: read off the event loop, thinned in the log, many brackets on a line.
    "many-json-arrays": (
        "".join(f'["a{i}"] ' for i in range(12_000)),
        (False, False),
        None,
        'two different lists: ["a0"] (line 1) and ["a1"] (line 1)',
    ),
    "answer-line": (
        "The document names A-1 first in its table of contents, but the text "
        'gives C-3 first.\nANSWER: ["C-3", "A-1", "B-2"]',
        (True, True),
        "answer-line-json",
        "",
    ),
}


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = [
        {"id": name, "input": {"source": SOURCE, "output": output}}
        for name, (output, *_) in OUTPUTS.items()
    ]
    return Path(write_lines(tmp_path_factory.mktemp("outputs") / "in.jsonl", lines))


@pytest.fixture(scope="module")
def eval_log(fixture: Path) -> EvalLog:
    return evaluated(
        ordered_extraction_recorded(dataset=str(fixture)), fixture.parent / "logs"
    )


@pytest.fixture(scope="module")
def scored(fixture: Path) -> dict[str, dict[str, Any]]:
    """`tracegrade score` of the outputs, which warns of no missing field."""
    command = ["score", "ordered_extraction", str(fixture), "--json"]
    command += ["--log-dir", str(fixture.parent / "scored")]
    result = CliRunner().invoke(main, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["warnings"] == []
    log = read_eval_log(summary["log"], header_only=True)
    assert "tracegrade_warnings" not in (log.eval.metadata or {})
    lines = Path(summary["results"]).read_text(encoding="utf-8").splitlines()
    return {entry["id"]: entry for entry in map(json.loads, lines)}


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_an_output_is_read_right_or_refused_by_eval_and_score_alike(
    eval_log: EvalLog, scored: dict[str, dict[str, Any]], name: str
) -> None:
    _, (membership, order), read_as, said = OUTPUTS[name]
    (sample,) = [sample for sample in eval_log.samples or [] if sample.id == name]
    score = (sample.scores or {})["ordered_extraction"]
    metadata = score.metadata or {}
    assert score.value == {"membership": membership, "order": order}
    assert metadata["read_as"] == read_as
    assert metadata["read_from"]["answer"] == 'metadata["output"]'
    assert said in (score.explanation or "")
    if read_as is None:
        assert score.reason == "unreadable-answer"
        assert said in metadata["error"]["message"]
    # The replay solver shows the recorded output as the model's.
    if "surrogate" not in name:
        assert sample.output.completion == OUTPUTS[name][0]
    entry = scored[name]
    assert entry["value"] == score.value
    assert entry["explanation"] == score.explanation
    assert entry["result"] == metadata["result"]


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ({"answer": SOURCE, "output": "x"}, "is given beside a recorded answer"),
        ({"output": SOURCE}, "must be a text, the model's output"),
    ],
)
def test_an_output_beside_an_answer_or_not_a_text_is_invalid_input(
    case: dict[str, Any], said: str
) -> None:
    score = extraction_input_score({"source": SOURCE, **case})
    assert score.reason == "invalid-input"
    assert (score.metadata or {})["error"]["field"] == "output"
    assert said in (score.metadata or {})["error"]["message"]
