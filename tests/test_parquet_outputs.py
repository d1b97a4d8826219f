"""Parquet on one machine: `score --results-format parquet` holds the rows of
its JSON Lines results, `import --output-format parquet` its records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tests.commands import run_tracegrade
from tests.test_cli_score import read_results, score_file
from tests.test_score_table import random_records
from tracegrade import score_table
from tracegrade.bulk.run import results_file_schema
from tracegrade.cli import main
from tracegrade.table import records_table

BAD_LINES = ["{not json", '{"id": "x"}', '{"id": "run-0", "input": {}}']


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    lines = [json.dumps(record) for record in records] + BAD_LINES
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


# 8,189 records and the three bad lines: the last batch of 8,192 rows is full.
@pytest.mark.parametrize(
    ("task", "count"),
    [("stage_diagnosis", 300), ("ordered_extraction", 300), ("stage_diagnosis", 8_189)],
)
def test_parquet_results_are_the_json_lines_results_as_columns(
    tmp_path: Path, task: str, count: int
) -> None:
    records = random_records(task, count, seed=5)
    path = tmp_path / "runs.jsonl"
    write_records(path, records)
    _, jsonl = score_file(task, str(path), tmp_path / "logs")
    parquet = ("--results-format", "parquet")
    result, summary = score_file(task, str(path), tmp_path / "logs2", *parquet)
    assert result.exit_code == 1  # the bad lines
    assert summary["results"].endswith(".results.parquet")
    table = pq.read_table(summary["results"])
    out = tmp_path / "scored.parquet"
    _, named = score_file(task, str(path), tmp_path / "l3", *parquet, "--out", str(out))
    assert named["results"] == str(out) and pq.read_table(out).equals(table)
    entries = read_results(jsonl)

    assert table.schema == results_file_schema(task)
    rows = table.to_pylist()
    assert [row["line"] for row in rows] == [entry["line"] for entry in entries]
    assert [row["id"] for row in rows] == [entry["id"] for entry in entries]
    figure = "stage" if task == "stage_diagnosis" else "membership"
    keys = ("kind", "side", "field", "message")
    for row, entry in zip(rows, entries, strict=True):
        error = entry["error"] or {}
        assert [row[f"error_{key}"] for key in keys] == [error.get(k) for k in keys]
        graded = (entry["result"] if figure == "stage" else entry["value"]) or {}
        assert row[figure] == graded.get(figure)
    # The records' rows are score_table's rows of the same records.
    scored = score_table(records_table(records, task), task)
    if task == "stage_diagnosis":
        # tracegrade score cannot know before the first line whether any
        # record has steps, so its stage results always have `lost`.
        assert "lost" in scored.schema.names
    recorded = table.slice(0, len(records)).drop_columns(["line"])
    assert recorded.to_pylist() == scored.to_pylist()
    kinds = [row["error_kind"] for row in rows[len(records) :]]
    assert kinds == ["malformed-json", "not-a-fixture-line", "duplicate-sample-id"]


TREC = ["import", "trec", "--qrels", "qrels", "--run", "run", "--k", "1"]
TO_PARQUET = ["--output", "r.parquet", "--output-format", "parquet"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--out", "r.parquet"], "names a Parquet file, but the results are JSON"),
        (["--out", "-", "--results-format", "parquet"], "writes a file, not stdout"),
        ([*TREC, "--output-format", "parquet"], "writes a file, not stdout"),
        ([*TREC, "--output", "r.parquet"], "add --output-format parquet"),
        (["--results-format", "parquet"], "need pyarrow"),
        ([*TREC, *TO_PARQUET], "need pyarrow"),
    ],
)
def test_a_parquet_output_that_cannot_be_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    if said == "need pyarrow":
        said = "need pyarrow: pip install 'tracegrade[parquet]'"
        real_find_spec = importlib.util.find_spec

        def without_pyarrow(name: str, *args: Any) -> Any:
            return None if name == "pyarrow" else real_find_spec(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", without_pyarrow)
    monkeypatch.chdir(tmp_path)
    write_records(tmp_path / "runs.jsonl", [])
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 2.0 r\n")
    score = ["score", "stage_diagnosis", "runs.jsonl", "--log-dir", "."]
    result = CliRunner().invoke(main, args if args[0] == "import" else score + args)
    assert result.exit_code == 2
    assert said in result.output
    assert {item.name for item in tmp_path.iterdir()} == {"qrels", "run", "runs.jsonl"}


def test_imported_parquet_records_are_the_json_lines_records(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 D1 1\nq1 0 D2 1\nq2 0 D3 1\nq3 0 D4 2\n")
    (tmp_path / "run").write_text(
        "q1 Q0 D1 1 2.0 r\nq1 Q0 D9 2 1.0 r\nq2 Q0 D3 1 1.0 r\nq3 Q0 D5 1 1.0 r\n"
    )
    (tmp_path / "labels.jsonl").write_text('{"id": "q1", "correct": true}\n')
    common = [*TREC[:-1], "2", "--labels", "labels.jsonl"]
    as_jsonl = run_tracegrade(*common, cwd=tmp_path)
    records = [json.loads(line) for line in as_jsonl.stdout.splitlines()]
    done = run_tracegrade(*common, *TO_PARQUET, cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    table = pq.read_table(tmp_path / "r.parquet")
    assert table.equals(records_table(records, "stage_diagnosis"))
    assert [row["correct"] for row in table.to_pylist()] == [True, None, None]
    assert score_table(table).column("stage").to_pylist()[0] == "retrieval"


def test_no_records_leave_no_parquet_file(tmp_path: Path) -> None:
    (tmp_path / "runs.jsonl").write_text("\n\n")
    done = run_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"),
        *("--out", "results.parquet", "--results-format", "parquet"),
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "no log was written" in done.stdout
    # The abandoned writer must not write its footer into a closed file
    # when it is collected (pyarrow would print that it could not).
    assert "Exception ignored" not in done.stderr
    assert sorted(item.name for item in tmp_path.iterdir()) == ["logs", "runs.jsonl"]
    assert list((tmp_path / "logs").iterdir()) == []
