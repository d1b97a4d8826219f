"""Ray Data as the engine beyond one machine: the documented recipe, run.

`read_parquet` -> `map_batches(score_part, batch_format="pyarrow")` ->
`write_parquet` on a local Ray of 2 CPUs, over 100,000 records in 4
Parquet files: every row Ray writes is `score_table`'s row of its record,
which tests/test_score_table.py holds to `tracegrade score`'s.

One Ray session for the module: starting one takes seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import ray
import ray.data

from tests.test_score_table import random_records
from tracegrade import score_table
from tracegrade.bulk.workers import score_part
from tracegrade.table import records_table, result_schema

pytestmark = pytest.mark.runs_long

RECORDS = 100_000
FILES = 4


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


def test_the_ray_recipe_scores_as_score_table(local_ray: None, tmp_path: Path) -> None:
    # Stage records: the task with the most columns (steps and `lost`).
    task = "stage_diagnosis"
    table = records_table(random_records(task, RECORDS, seed=11), task)
    traces = tmp_path / "traces"
    traces.mkdir()
    part = RECORDS // FILES
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
    assert results.schema == result_schema(task, steps=True)
    assert results.sort_by("id").equals(score_table(table, task).sort_by("id"))
    kinds = set(results.column("error_kind").to_pylist())
    assert len(kinds) >= 3  # errors as well as results went through Ray
