"""`report` on Parquet results: the log's figures, read a batch at a time."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.commands import peaks_in_one_interpreter
from tests.test_cli_report import invoke
from tests.test_cli_score import score_file
from tests.test_parquet_outputs import write_records
from tests.test_score_table import random_records
from tracegrade import score_table
from tracegrade.report.results import MODEL, TASK
from tracegrade.table import records_table

STAGE, EXTRACTION = TASKS = ["stage_diagnosis", "ordered_extraction"]
RECORDS = 300  # every case `random_records` draws ten times or more
ENGINE_FILE_ROWS = 250
# What identifies an eval rather than what was counted in it.
NAMING = ("evals", "task", "model")


def report_json(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def figures(report: dict[str, Any], task: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k not in NAMING} for s in report[task]]


@pytest.fixture(scope="module", params=TASKS)
def scored(request: pytest.FixtureRequest, tmp_path_factory: Any) -> dict[str, Any]:
    """Records (bad lines included) as a log and as Parquet results; the
    records without bad lines as a log and as an engine's results."""
    task: str = request.param
    root: Path = tmp_path_factory.mktemp(f"report-parquet-{task}")
    records = random_records(task, RECORDS, seed=11)
    write_records(root / "runs.jsonl", records)
    results = root / "scored"
    results.mkdir()
    # One run writes both: its log, and its results as Parquet.
    out = str(results / "runs.results.parquet")
    extra = "--results-format", "parquet", "--out", out
    _, logged = score_file(task, str(root / "runs.jsonl"), root / "logs", *extra)
    (root / "good.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _, good = score_file(task, str(root / "good.jsonl"), root / "logs-good")
    # As Ray's write_parquet leaves a run: several files, and bookkeeping.
    engine = root / "engine"
    engine.mkdir()
    table = records_table(records, task)
    for number, start in enumerate(range(0, len(records), ENGINE_FILE_ROWS)):
        part = score_table(table.slice(start, ENGINE_FILE_ROWS), task)
        pq.write_table(part, engine / f"part-{number:05d}.parquet")
    (engine / "_SUCCESS").write_text("")
    return {
        "task": task,
        "log": logged["logs"][0],
        "good log": good["logs"][0],
        "results": str(results),
        "engine": str(engine),
        "records": len(records),
    }


def test_parquet_results_report_every_figure_the_log_reports(
    scored: dict[str, Any],
) -> None:
    task = scored["task"]
    from_log = report_json(scored["log"])
    from_results = report_json(scored["results"])

    assert figures(from_results, task) == figures(from_log, task)
    other = next(name for name in TASKS if name != task)
    assert from_results[other] == from_log[other] == []
    summary = from_results[task][0]
    assert (summary["task"], summary["model"]) == (TASK, MODEL)
    # The bad lines ("{not json", "no input", "duplicate id") are rows too.
    assert summary["runs"] == scored["records"] + 3
    (evaluated,) = from_results["evals"]
    assert evaluated["name"] == scored["results"]
    assert evaluated["logs"] == [scored["results"]]
    if task == "stage_diagnosis":
        # The records have steps: where documents were lost is reported too.
        assert summary["pipeline"]["missing"] > 0
    # `score_table`'s rows in several files, as an engine writes them.
    assert figures(report_json(scored["engine"]), task) == figures(
        report_json(scored["good log"]), task
    )
    # Results beside their log are not counted again.
    directory = Path(scored["log"]).parent
    (directory / "runs.results.parquet").write_bytes(
        (Path(scored["results"]) / "runs.results.parquet").read_bytes()
    )
    beside = report_json(str(directory))
    assert [s["runs"] for s in beside[task]] == [scored["records"] + 3]
    assert beside["evals"][0]["logs"] == [scored["log"]]


def one_line_usage_error(result: Result, *said: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for text in said:
        assert text in lines[0]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("records", ["not tracegrade results", "'stage'"]),
        ("no required", ["part-0.parquet", "no column 'required'"]),
        ("csv", ["part-0.parquet", "not a Parquet file"]),
        ("two tasks", ["part-1.parquet", "one run"]),
        # A job run again into the same path (Ray adds files) is two runs.
        ("id twice", ["1.parquet', row 0", 'id "run-0" is also', "duplicate-sample"]),
        ("no pyarrow", ["pip install 'tracegrade[parquet]'"]),
    ],
)
def test_files_that_are_not_one_runs_results_are_named(
    tmp_path: Path, given: str, said: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "part-0.parquet"
    records = records_table(random_records(TASKS[0], 5, seed=1), TASKS[0])
    if given == "records":
        pq.write_table(records, file)
    elif given == "no required":
        pq.write_table(score_table(records).drop_columns(["required"]), file)
    elif given == "csv":
        file.write_text("id,stage\n")
    elif given == "two tasks":
        for number, task in enumerate(TASKS):
            part = tmp_path / f"part-{number}.parquet"
            table = records_table(random_records(task, 5, seed=1), task)
            pq.write_table(score_table(table, task), part)
    else:
        stage_results(file, [True] * 20)
        if given == "no pyarrow":
            # A None entry makes `import pyarrow.dataset` raise ImportError.
            monkeypatch.setitem(sys.modules, "pyarrow.dataset", None)
        else:
            stage_results(tmp_path / "part-1.parquet", [True] * 10 + [False] * 10)
    result = invoke(str(tmp_path), "--fail-under", "pass=0.7")
    one_line_usage_error(result, str(tmp_path), *said)


@pytest.mark.parametrize(
    ("task", "cells", "said"),
    [
        (STAGE, {"recall": 1.5}, "column recall must be null or a share"),
        (STAGE, {"stage": "lost"}, "column stage must be one of"),
        (STAGE, {"error_side": "model", "error_kind": "x"}, "error_side must be one"),
        (STAGE, {"error_side": "answer", "error_kind": ""}, "error_kind must be a"),
        (STAGE, {"error_side": "data", "error_kind": "x"}, "stage must be null on an"),
        (STAGE, {"required": None}, "column required must be a list of IDs, got null"),
        (STAGE, {"labelled_correct": None}, "labelled_correct must be true or false"),
        (STAGE, {"recall": None}, "column recall must be a share where stage is"),
        (STAGE, {"steps": [{"name": "", "ids": []}]}, "column steps[0].name"),
        (STAGE, {"context_size": None}, "context_size must be a count of IDs where"),
        (STAGE, {"lost": None}, "column lost must be set where steps is, on a"),
        (EXTRACTION, {"membership": None}, "membership and order must be true or"),
        (EXTRACTION, {"order": True}, "column order is true where membership is false"),
    ],
)
def test_a_cell_no_result_holds_is_named_by_file_row_and_column(
    tmp_path: Path, task: str, cells: dict[str, Any], said: str
) -> None:
    table = score_table(records_table(random_records(task, 40, seed=4), task), task)
    rows = table.to_pylist()
    # Seed 4: a retrieval row with steps; a graded, unordered row with a source.
    row = next(n for n, r in enumerate(rows) if r.get("stage", r.get("source")))
    rows[row].update(cells)
    file = tmp_path / "part-0.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), file)

    one_line_usage_error(invoke(str(file)), repr(str(file)), f"row {row}", said)


@pytest.mark.skipif(sys.platform != "linux", reason="reads VmHWM from /proc")
def test_memory_is_flat_in_the_number_of_rows(tmp_path: Path) -> None:
    """Ten times the rows, far less than their size added to the peak."""
    records = random_records("stage_diagnosis", 2_000, seed=8)
    scored = score_table(records_table(records, "stage_diagnosis"))
    sizes = (5_000, 50_000)
    for rows in sizes:
        directory = tmp_path / str(rows)
        directory.mkdir()
        # Files of 5,000 rows: more rows are more files, each read in
        # batches of the same size.
        repeated = pa.concat_tables([scored] * 2 + [scored.slice(0, 1_000)])
        for number in range(rows // repeated.num_rows):
            # An id of its own for each row: results never repeat one.
            ids = [f"{number}-{row}" for row in range(repeated.num_rows)]
            unique = repeated.set_column(
                repeated.schema.get_field_index("id"), "id", pa.array(ids)
            )
            pq.write_table(
                unique, directory / f"part-{number}.parquet", row_group_size=8_192
            )
    reported = peaks_in_one_interpreter(
        [(("report", str(tmp_path / str(rows)), "--json"), tmp_path) for rows in sizes],
        tmp_path,
    )
    for done in reported:
        assert done.returncode == 0, done.stderr
    peaks = dict(zip(sizes, (done.peak_mib for done in reported), strict=True))
    # Held whole as Python values, the 45,000 more rows raise the peak by
    # about 75 MiB; read in batches, by about 14.
    assert peaks[50_000] - peaks[5_000] < 40, peaks


def test_results_given_twice_are_one_eval_and_pool_with_others(tmp_path: Path) -> None:
    stage_results(tmp_path / "a" / "part-0.parquet", [True] * 60, "a")
    stage_results(tmp_path / "b" / "part-0.parquet", [False] * 40, "b")
    # An engine's stray file beside the results.
    (tmp_path / "b" / "metadata.json").write_text('{"job": "nightly"}')
    a, b = str(tmp_path / "a"), str(tmp_path / "b")

    twice = report_json(a, a + "/", str(tmp_path / "a" / "."))
    pooled = report_json(a, b, "--pool")
    read = "2 evals in 2 logs, pooled by task, model and score, 100 sample-epochs."
    assert invoke(a, b, "--pool").stdout.startswith(f"tracegrade report: {read}")
    apart = invoke(a, b, "--fail-under", "pass=0.9", "--json")

    assert [s["runs"] for s in twice["stage_diagnosis"]] == [60]
    assert [(s["evals"], s["runs"]) for s in pooled["stage_diagnosis"]] == [
        (["E1", "E2"], 100)
    ]
    assert apart.exit_code == 3, apart.output
    runs = json.loads(apart.stdout)["stage_diagnosis"]
    passed = [(s["runs"], s["stages"]["pass"]["count"]) for s in runs]
    assert passed == [(60, 60), (40, 0)]
    refused = invoke(a, str(tmp_path / "a" / "part-0.parquet"), "--pool")
    assert refused.exit_code == 1
    assert "both scored 60 sample ids" in refused.stderr


def stage_results(file: Path, passing: list[bool], prefix: str = "run") -> Path:
    """Results of records `prefix-N` that pass or miss, as `passing` says."""
    runs = [{"required": ["D1"], "context": ["D1" if ok else "X"]} for ok in passing]
    records = [
        {"id": f"{prefix}-{number}", "input": {**run, "correct": ok}}
        for number, (run, ok) in enumerate(zip(runs, passing, strict=True))
    ]
    file.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(score_table(records_table(records, "stage_diagnosis")), file)
    return file
