"""Ray Data as the engine beyond one machine: the documented recipe, run.

`read_parquet` -> `map_batches(score_part, batch_format="pyarrow")` ->
`write_parquet` on a local Ray of 2 CPUs, over 100,000 records in 4
Parquet files. The 100,000 are 100 copies (new ids) of 1,000
distinct records of every outcome, so `tracegrade score` scores the 1,000
once: a result depends on a record's fields, never on its id, and each of
Ray's rows must equal the command's result for the record it copies.

One Ray session for the module: starting one takes seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import ray
import ray.data

from tests.test_cli_score import read_results, score_file
from tests.test_score_table import random_records
from tracegrade.bulk.workers import score_part
from tracegrade.table import records_table, result_schema

pytestmark = pytest.mark.runs_long

DISTINCT = 1_000
COPIES = 100
FILES = 4
ERROR_KEYS = ("kind", "side", "field", "message")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # Ray reports usage to its makers unless told not to; this machine
    # reaches no such place, and a test has no business calling out.
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def copies(table: pa.Table) -> pa.Table:
    """`COPIES` copies of a table, each row's id `BASE~copy-K`."""
    copied = []
    for copy in range(COPIES):
        ids = pc.binary_join_element_wise(
            table.column("id"), pa.scalar(f"copy-{copy}"), "~"
        )
        copied.append(table.set_column(0, "id", ids))
    return pa.concat_tables(copied)


COMPARED = ["id", "stage", "missing", *(f"error_{key}" for key in ERROR_KEYS)]


def expected_table(entries: list[dict[str, Any]]) -> pa.Table:
    """tracegrade score's results as the columns of score_table they give."""
    schema = result_schema("stage_diagnosis")
    columns: dict[str, list[Any]] = {name: [] for name in COMPARED}
    for entry in entries:
        result, error = entry["result"] or {}, entry["error"] or {}
        columns["id"].append(entry["id"])
        columns["stage"].append(result.get("stage"))
        columns["missing"].append(result.get("missing"))
        for key in ERROR_KEYS:
            columns[f"error_{key}"].append(error.get(key))
    return pa.table(columns, schema=pa.schema([schema.field(n) for n in COMPARED]))


def test_the_ray_recipe_scores_as_tracegrade_score(
    local_ray: None, tmp_path: Path
) -> None:
    # Stage records: the task with the most columns (steps and `lost`);
    # the extraction table is held to tracegrade score in test_score_table.
    task = "stage_diagnosis"
    records = random_records(task, DISTINCT, seed=11)
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    _, summary = score_file(task, str(path), tmp_path / "logs")
    entries = read_results(summary)

    traces = tmp_path / "traces"
    traces.mkdir()
    table = copies(records_table(records, task))
    assert table.num_rows == DISTINCT * COPIES
    part = table.num_rows // FILES
    for number in range(FILES):
        pq.write_table(table.slice(number * part, part), traces / f"{number}.parquet")

    (
        ray.data.read_parquet(str(traces))
        .map_batches(
            score_part,
            batch_format="pyarrow",
            batch_size=8192,
            fn_kwargs={"task": task},
        )
        .write_parquet(str(tmp_path / "results"))
    )

    results = pads.dataset(tmp_path / "results").to_table()
    assert results.num_rows == DISTINCT * COPIES
    assert results.schema == result_schema(task, steps=True)
    got = results.select(COMPARED).sort_by("id")
    expected = copies(expected_table(entries)).sort_by("id")
    if not got.equals(expected):
        for row, wanted in zip(got.to_pylist(), expected.to_pylist(), strict=True):
            assert row == wanted
    kinds = set(results.column("error_kind").to_pylist())
    assert len(kinds) >= 3  # errors as well as results went through Ray
