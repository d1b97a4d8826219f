"""Parquet on one machine: `score --results-format parquet` holds the rows of
its JSON Lines results, `import --output-format parquet` its records."""

from __future__ import annotations

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

BAD_LINES = [
    "{not json",
    json.dumps({"id": "x"}),
    json.dumps({"id": "run-0", "input": {}}),
]


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    lines = [json.dumps(record) for record in records] + BAD_LINES
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize("task", ["stage_diagnosis", "ordered_extraction"])
def test_parquet_results_are_the_json_lines_results_as_columns(
    tmp_path: Path, task: str
) -> None:
    records = random_records(task, 300, seed=5)
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
    for row, entry in zip(rows, entries, strict=True):
        error = entry["error"] or {}
        assert [
            row[f"error_{key}"] for key in ("kind", "side", "field", "message")
        ] == [error.get(key) for key in ("kind", "side", "field", "message")]
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


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--out", "r.parquet"], "names a Parquet file, but the results are JSON"),
        (["--out", "-", "--results-format", "parquet"], "writes a file, not stdout"),
        ([*TREC, "--output-format", "parquet"], "writes a file, not stdout"),
        ([*TREC, "--output", "r.parquet"], "add --output-format parquet"),
    ],
)
def test_a_parquet_output_that_cannot_be_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write_records(tmp_path / "runs.jsonl", [])
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 2.0 r\n")
    score = ["score", "stage_diagnosis", "runs.jsonl", "--log-dir", "."]
    result = CliRunner().invoke(main, args if args[0] == "import" else score + args)
    assert result.exit_code == 2
    assert said in result.output
    assert sorted(item.name for item in tmp_path.iterdir()) == [
        "qrels",
        "run",
        "runs.jsonl",
    ]


def test_imported_parquet_records_are_the_json_lines_records(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 D1 1\nq1 0 D2 1\nq2 0 D3 1\nq3 0 D4 2\n")
    (tmp_path / "run").write_text(
        "q1 Q0 D1 1 2.0 r\nq1 Q0 D9 2 1.0 r\nq2 Q0 D3 1 1.0 r\nq3 Q0 D5 1 1.0 r\n"
    )
    (tmp_path / "labels.jsonl").write_text('{"id": "q1", "correct": true}\n')
    common = [
        "import",
        "trec",
        "--qrels",
        str(tmp_path / "qrels"),
        "--run",
        str(tmp_path / "run"),
        "--k",
        "2",
        "--labels",
        str(tmp_path / "labels.jsonl"),
    ]
    as_jsonl = CliRunner().invoke(main, common, catch_exceptions=False)
    records = [json.loads(line) for line in as_jsonl.stdout.splitlines()]
    out = tmp_path / "runs.parquet"
    done = CliRunner().invoke(
        main,
        [*common, "--output", str(out), "--output-format", "parquet"],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output

    table = pq.read_table(out)
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
    # The abandoned writer must not write its footer into a closed file
    # when it is collected (pyarrow would print that it could not).
    assert "Exception ignored" not in done.stderr
    assert sorted(item.name for item in tmp_path.iterdir()) == ["logs", "runs.jsonl"]
    assert list((tmp_path / "logs").iterdir()) == []


@pytest.mark.parametrize("command", ["score", "import"])
def test_parquet_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def without_pyarrow(name: str, *args: Any) -> Any:
        return None if name == "pyarrow" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_pyarrow)
    (tmp_path / "runs.jsonl").write_text(
        json.dumps(random_records("stage_diagnosis", 1, 1)[0])
    )
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 2.0 r\n")
    score = [
        *("score", "stage_diagnosis", str(tmp_path / "runs.jsonl")),
        *("--log-dir", str(tmp_path / "logs"), "--results-format", "parquet"),
    ]
    trec = [
        *("import", "trec", "--qrels", str(tmp_path / "qrels")),
        *("--run", str(tmp_path / "run"), "--k", "1"),
        *("--output", str(tmp_path / "r.parquet"), "--output-format", "parquet"),
    ]
    args = score if command == "score" else trec
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "need pyarrow: pip install 'tracegrade[parquet]'" in result.output
    assert sorted(item.name for item in tmp_path.iterdir()) == [
        "qrels",
        "run",
        "runs.jsonl",
    ]
