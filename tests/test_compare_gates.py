"""`compare --fail-on-regression --gate`: gates on context recall and a
step's recall, on real logs from `inspect eval`.

BASE: 16 runs that fail at retrieval with 3 of 4 required documents
retrieved and in the context, and 4 grounded passes. NEW halves what the
retriever finds for the 16 (1 of 4) and loses p01's document: one pass
regression. The pass test is too few to tell; the recall tests are not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from scipy.stats import binomtest  # type: ignore[import-untyped]

from tests.commands import run_tracegrade
from tests.support import write_lines
from tracegrade import stage_diagnosis

REQUIRED = ["D1", "D2", "D3", "D4"]
FAILING = [f"r{n:02d}" for n in range(1, 17)]
PASSING = ["p01", "p02", "p03", "p04"]


def record(retrieved: list[str], required: list[str]) -> dict[str, Any]:
    found = [doc for doc in retrieved if doc in required]
    return {
        "required": required,
        "context": found,
        "steps": [{"name": "retriever", "ids": retrieved}],
        "correct": True,
    }


def runs(kept: int, p01: list[str]) -> dict[str, Any]:
    failing = {q: record([*REQUIRED[:kept], "X"], REQUIRED) for q in FAILING}
    passing = {q: record(["D1", "X"], ["D1"]) for q in PASSING}
    return {**failing, **passing, "p01": record(p01, ["D1"])}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("gates")
    made = {}
    for name, sides in {"base": runs(3, ["D1", "X"]), "new": runs(1, ["X"])}.items():
        dataset = write_lines(
            folder / f"{name}.jsonl",
            [{"id": sample, "input": value} for sample, value in sides.items()],
        )
        (log,) = eval(
            stage_diagnosis(dataset=dataset),
            display="none",
            log_dir=str(folder / name),
            log_realtime=False,
        )
        assert log.status == "success", log.error
        made[name] = log.location
    return made


def compare(logs: dict[str, str], *args: str, cwd: Path) -> Any:
    return run_tracegrade(
        "compare", logs["base"], logs["new"], "--json", *args, cwd=cwd
    )


def test_halved_recall_fails_its_gate_but_not_the_default(
    logs: dict[str, str], tmp_path: Path
) -> None:
    # The recall of 17 samples fell (16 from 3/4 to 1/4, p01 from 1 to 0).
    p_value = binomtest(17, 17).pvalue
    default = compare(logs, "--fail-on-regression", cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    gate = json.loads(default.stdout)["gate"]
    assert (gate["regressions"], gate["significant"]) == (1, [])
    assert gate["outcomes"] == ["stage_diagnosis: pass"]
    for measure in ("context_recall", "retriever_recall"):
        gated = compare(logs, "--fail-on-regression", "--gate", measure, cwd=tmp_path)
        assert gated.returncode == 3, gated.stderr
        read = json.loads(gated.stdout)
        assert read["gate"]["significant"] == [f"stage_diagnosis: {measure}"]
        assert read["gate"]["outcomes"] == [f"stage_diagnosis: {measure}"]
        (stages,) = read["pairs"][0]["stage_diagnosis"]
        figures = {f["figure"]: f for f in stages["figures"]}
        tested = figures["recall" if measure == "context_recall" else measure]
        assert (tested["fell"], tested["rose"]) == (17, 0)
        assert tested["p_value"] == p_value
        assert f"stage_diagnosis: {measure}" in gated.stderr


def test_a_gate_on_pass_and_recall_tests_both(
    logs: dict[str, str], tmp_path: Path
) -> None:
    both = ("--gate", "pass", "--gate", "context_recall")
    result = compare(logs, "--fail-on-regression", *both, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    gate = json.loads(result.stdout)["gate"]
    assert gate["outcomes"] == [
        "stage_diagnosis: pass",
        "stage_diagnosis: context_recall",
    ]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--fail-on-regression", "--gate", "reranker_recall"], "reranker_recall"),
        (["--fail-on-regression", "--gate", "recall"], '"recall"'),
        (["--gate", "context_recall"], "--fail-on-regression"),
    ],
)
def test_a_gate_the_runs_do_not_have_is_a_usage_error(
    logs: dict[str, str], tmp_path: Path, args: list[str], named: str
) -> None:
    result = compare(logs, *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr and result.stdout == ""
    assert "Traceback" not in result.stderr
