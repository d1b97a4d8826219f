"""docs/beyond-one-machine.md's blocks run as written, offline, the Ray recipe
on a Ray of its own (its cost: benchmarks/ray_cost.py)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import ray

from tests.commands import run_tracegrade
from tests.support import working_in
from tracegrade import score_table
from tracegrade.table import records_table

pytestmark = pytest.mark.runs_long

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "beyond-one-machine.md").read_text(encoding="utf-8")


def page_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.DOTALL)


def test_the_pages_blocks_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a clone's root, offline, every block but the importer's (its
    spans are import-openinference.md's) and Spark's: the example table,
    the Ray recipe, the reports of its results."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    base = (ROOT / "examples" / "runs" / "base.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in base.splitlines()]
    example = pq.read_table(tmp_path / "examples" / "runs" / "base.parquet")
    assert example.equals(records_table(records, "stage_diagnosis"))

    python = [block for block in page_blocks("python") if "pyspark" not in block]
    assert len(python) == 3
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    try:
        with working_in(tmp_path):
            for block in python:
                exec(block, {})
    finally:
        ray.shutdown()
    # Every row Ray writes is `score_table`'s row of its record.
    results = pads.dataset(tmp_path / "results").to_table()
    assert results.sort_by("id").equals(score_table(example).sort_by("id"))

    commands = [
        shlex.split(line)
        for block in page_blocks("bash")
        for line in block.splitlines()
        if line.startswith("tracegrade ") and not line.startswith("tracegrade import")
    ]
    assert [command[1] for command in commands] == ["score", "report", "report"]
    for command in commands:
        done = run_tracegrade(*command[1:], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
