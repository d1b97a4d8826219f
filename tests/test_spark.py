"""Spark: the documented `mapInArrow` recipe on a local Spark, run by `nox -s
spark` (pyspark is a large install and needs Java 17); skipped without it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import tracegrade
from tests.test_score_table import random_records
from tracegrade.table import records_table, result_ddl, score_batches

pyspark_sql = pytest.importorskip(
    "pyspark.sql", reason="pyspark is installed by `nox -s spark`, which runs this"
)

pytestmark = pytest.mark.runs_long


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("tracegrade-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


def test_the_spark_recipe_scores_as_score_table(spark: Any, tmp_path: Path) -> None:
    """Every row Spark writes is `score_table`'s row of its record, which
    tests/test_score_table.py holds to `tracegrade score`'s."""
    records = random_records("stage_diagnosis", 3_000, seed=17)
    table = records_table(records, "stage_diagnosis")
    (tmp_path / "traces").mkdir()
    for number in range(3):
        part = table.slice(number * 1_000, 1_000)
        pq.write_table(part, tmp_path / "traces" / f"{number}.parquet")

    traces = spark.read.parquet(str(tmp_path / "traces"))
    scored = traces.mapInArrow(
        partial(score_batches, task="stage_diagnosis"), result_ddl(steps=True)
    )
    scored.write.parquet(str(tmp_path / "results"))

    results = pq.read_table(tmp_path / "results").to_pylist()
    local = tracegrade.score_table(table).to_pylist()
    assert sorted(results, key=lambda row: row["id"]) == sorted(
        local, key=lambda row: row["id"]
    )
    assert len({row["error_kind"] for row in results}) >= 3
