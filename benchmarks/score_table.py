"""`tracegrade.score_table` on one core, and through Ray Data with 2 workers.

Seeded stage records of every outcome, written as `--files` Parquet files,
are scored a `--batch-size` batch at a time: in this process (CPU seconds,
less moved by other load, and wall seconds; reading and the import of
Inspect timed apart), and by the documented Ray recipe
(`read_parquet` -> `map_batches(score_table)` -> `write_parquet`, wall
clock, `ray.init` apart), after the same pipeline with a function that
returns its batch unchanged: the engine's own cost. Both results must be
the same rows; the load average is kept before and after each part.

    python benchmarks/score_table.py [--records 200000] [--files 8]
        [--batch-size 8192] [--seed 31] [--no-ray] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import tracegrade  # noqa: E402
from benchmarks.measure import machine  # noqa: E402
from tracegrade.table import records_table  # noqa: E402

IDS = [f"doc-{number}" for number in range(40)]


def make_records(count: int, seed: int) -> list[dict[str, Any]]:
    """Seeded stage records of every outcome."""
    chooser = random.Random(seed)
    records = []
    for number in range(count):
        required = chooser.sample(IDS, chooser.randint(0, 4))
        context = chooser.sample(IDS, chooser.randint(1, 8))
        if required and chooser.random() < 0.5:
            context += required[: chooser.randint(1, len(required))]
        fields: dict[str, Any] = {"required": required, "context": context}
        if chooser.random() < 0.9:
            fields["correct"] = chooser.random() < 0.5
        if chooser.random() < 0.3:
            retrieved = chooser.sample(IDS, 12)
            fields["steps"] = [
                {"name": "retriever", "ids": retrieved},
                {"name": "reranker", "ids": retrieved[:6]},
            ]
        if chooser.random() < 0.01:
            del fields["context"]
        if chooser.random() < 0.01:
            fields["steps"] = [{"name": "context", "ids": []}]
        records.append({"id": f"run-{number}", "input": fields})
    return records


def load() -> list[float]:
    return [round(figure, 2) for figure in os.getloadavg()]


def one_core(files: list[Path], batch_size: int) -> tuple[dict[str, Any], pa.Table]:
    loads = load()
    # Rows are scored through the recorded task's own function, which
    # imports Inspect AI: once a process, timed apart.
    started = time.process_time()
    import tracegrade.tasks.recorded

    imports = time.process_time() - started
    started = time.process_time()
    tables = [pq.read_table(path) for path in files]
    read = time.process_time() - started
    scored = []
    started = time.process_time()
    wall = time.perf_counter()
    for table in tables:
        for batch in table.to_batches(max_chunksize=batch_size):
            scored.append(tracegrade.score_table(batch))
    seconds = time.process_time() - started
    wall = time.perf_counter() - wall
    results = pa.concat_tables(scored)
    records = results.num_rows
    return {
        "records": records,
        "import_cpu_seconds": round(imports, 3),
        "read_cpu_seconds": round(read, 3),
        "score_cpu_seconds": round(seconds, 3),
        "records_per_second_per_core": round(records / seconds),
        "score_wall_seconds": round(wall, 3),
        "records_per_second_wall": round(records / wall),
        "load_average_before": loads,
        "load_average_after": load(),
    }, results


def unchanged(table: pa.Table) -> pa.Table:
    """The engine's own floor: the same pipeline, no scoring."""
    return table


def through_ray(
    folder: Path, batch_size: int, files: int
) -> tuple[dict[str, Any], pa.Table]:
    import ray
    import ray.data

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    loads = load()
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    init = time.perf_counter() - started
    try:
        timed = {}
        for name, function, kwargs in (
            ("unchanged", unchanged, {}),
            ("scored", tracegrade.score_table, {"task": "stage_diagnosis"}),
        ):
            out = folder / f"ray-{name}"
            started = time.perf_counter()
            (
                ray.data.read_parquet(str(folder / "traces"), override_num_blocks=files)
                .map_batches(
                    function,
                    batch_format="pyarrow",
                    batch_size=batch_size,
                    fn_kwargs=kwargs,
                )
                .write_parquet(str(out))
            )
            timed[name] = time.perf_counter() - started
        seconds = timed["scored"]
    finally:
        ray.shutdown()
    results = pq.read_table(folder / "ray-scored")
    records = results.num_rows
    return {
        "records": records,
        "workers": 2,
        "init_seconds": round(init, 2),
        "unchanged_wall_seconds": round(timed["unchanged"], 3),
        "wall_seconds": round(seconds, 3),
        "records_per_second": round(records / seconds),
        "records_per_second_per_core": round(records / seconds / 2),
        "ray": ray.__version__,
        "load_average_before": loads,
        "load_average_after": load(),
    }, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)

    report: dict[str, Any] = {
        "command": " ".join(
            [
                "python benchmarks/score_table.py",
                *(argv if argv is not None else sys.argv[1:]),
            ]
        ),
        "machine": {**machine(), "pyarrow": pa.__version__},
        "records": args.records,
        "files": args.files,
        "batch_size": args.batch_size,
    }
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        table = records_table(make_records(args.records, args.seed), "stage_diagnosis")
        (folder / "traces").mkdir()
        part = -(-table.num_rows // args.files)
        paths = []
        for number in range(args.files):
            path = folder / "traces" / f"part-{number:03}.parquet"
            pq.write_table(table.slice(number * part, part), path)
            paths.append(path)
        report["one_core"], local = one_core(paths, args.batch_size)
        kinds = local.column("error_kind").value_counts().to_pylist()
        report["error_kinds"] = {
            item["values"] or "none": item["counts"] for item in kinds
        }
        if not args.no_ray:
            report["ray"], distributed = through_ray(
                folder, args.batch_size, args.files
            )
            if sorted(distributed.to_pylist(), key=lambda row: row["id"]) != sorted(
                local.to_pylist(), key=lambda row: row["id"]
            ):
                print("Ray's results differ from one core's", file=sys.stderr)
                return 1
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
