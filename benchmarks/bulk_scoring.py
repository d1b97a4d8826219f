"""Bulk scoring: `tracegrade score` against `inspect eval` on the same records.

For each task, N recorded runs (seeded, the record mix of
`benchmarks/throughput.py`) are written to a fixture-format file and:

- `tracegrade score` runs on all N, as a subprocess, so interpreter
  start-up and imports are included; its own timers give the breakdown;
- `inspect eval tracegrade/<task> -T dataset=...` runs on the first M and
  the first M/10 of them, also as subprocesses with the default log
  format. Its cost is a start-up plus a per-sample cost, so the two runs
  give both (a straight line through two points) and the time for N is
  extrapolated from them, and reported as extrapolated;
- both logs of the first M records are compared sample by sample: a speed
  ratio between different answers would mean nothing.

Then the core alone is timed on the same records in-process, to split
"score" into the evaluator and the `Score` built around it, and Inspect's
`.eval` and `.json` writers are timed on the same ready-made samples.

    python benchmarks/bulk_scoring.py [--records 100000] [--inspect-records 2000]
        [--tasks stage_diagnosis,ordered_extraction] [--writer-samples 10000]
        [--seed N] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.throughput import (  # noqa: E402
    positive,
    small_extraction_record,
    small_stage_record,
)

TARGET_SECONDS = 30.0
TARGET_RATIO = 30.0
INSPECT_TASKS = {
    "stage_diagnosis": "tracegrade/stage_diagnosis",
    "ordered_extraction": "tracegrade/ordered_extraction_recorded",
}
RECORD_MAKERS = {
    "stage_diagnosis": small_stage_record,
    "ordered_extraction": small_extraction_record,
}
# What differs between two runs of the same sample, whoever ran them.
RUN_SPECIFIC = {"uuid", "started_at", "completed_at", "total_time", "working_time"}
CLEAN_ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("INSPECT_")
}


def write_records(path: Path, task: str, count: int, seed: int) -> None:
    rng = random.Random(f"{seed}-{task}")
    make = RECORD_MAKERS[task]
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            case = {"id": f"run-{number:07d}", "input": make(rng)}
            out.write(json.dumps(case) + "\n")


def head(source: Path, target: Path, lines: int) -> None:
    with (
        source.open(encoding="utf-8") as read,
        target.open("w", encoding="utf-8") as out,
    ):
        for _, line in zip(range(lines), read, strict=False):
            out.write(line)


def run_measured(command: Sequence[str], cwd: Path) -> tuple[float, float, str, int]:
    """Wall seconds, peak RSS (MiB), stdout and exit code of one subprocess."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=CLEAN_ENV,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode()
        if process.returncode not in (0, 1):
            raise RuntimeError(
                f"{list(command)[:5]} failed:\n{err.read().decode()[-3000:]}"
            )
    return seconds, usage.ru_maxrss / 1024, stdout, process.returncode


def tracegrade_command(task: str, dataset: Path, log_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from tracegrade.cli import main; main()",
        "score",
        task,
        str(dataset),
        "--log-dir",
        str(log_dir),
        "--json",
        "--no-progress",
    ]


def inspect_command(task: str, dataset: Path, log_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "inspect_ai",
        "eval",
        INSPECT_TASKS[task],
        "-T",
        f"dataset={dataset}",
        "--log-dir",
        str(log_dir),
        "--display",
        "none",
    ]


def comparable(sample: Any) -> str:
    scores = {
        name: score.model_dump(mode="json")
        for name, score in (sample.scores or {}).items()
    }
    return json.dumps(
        {
            "id": sample.id,
            "input": sample.input,
            "target": sample.target,
            "metadata": sample.metadata,
            "store": sample.store,
            "output": sample.output.completion,
            "scores": scores,
        }
    )


def first_difference(ours_dir: Path, inspect_dir: Path) -> str | None:
    """None when both logs hold the same samples with the same scores."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    (ours_info,) = list_eval_logs(str(ours_dir))
    (inspect_info,) = list_eval_logs(str(inspect_dir))
    ours = read_eval_log(ours_info.name)
    theirs = read_eval_log(inspect_info.name)
    if theirs.status != "success":
        return f"inspect eval ended with status {theirs.status}"
    if ours.results is None or theirs.results is None:
        return "a log has no results"
    if ours.results.model_dump_json() != theirs.results.model_dump_json():
        return "results differ"
    mine = {sample.id: comparable(sample) for sample in ours.samples or []}
    other = {sample.id: comparable(sample) for sample in theirs.samples or []}
    if mine.keys() != other.keys():
        return "different sample ids"
    for sample_id, text in mine.items():
        if text != other[sample_id]:
            return f"sample {sample_id!r} differs"
    return None


def time_core(task: str, dataset: Path) -> dict[str, float]:
    """Seconds for the evaluator alone and with the Score built around it."""
    from tracegrade.bulk.scoring import TASKS
    from tracegrade.core import diagnose_stage, grade_extraction
    from tracegrade.datasets import parse_case_line

    evaluate = diagnose_stage if task == "stage_diagnosis" else grade_extraction
    cases = []
    with dataset.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            cases.append(parse_case_line(str(dataset), number, line))
    inputs = [case.input for case in cases]
    started = time.perf_counter()
    for record in inputs:
        with contextlib.suppress(ValueError):
            evaluate(record)
    core = time.perf_counter() - started
    score_input = TASKS[task].score_input
    started = time.perf_counter()
    for record in inputs:
        score_input(record)
    with_score = time.perf_counter() - started
    return {"core": core, "core_and_score": with_score}


def time_writers(log_dir: Path, samples: int, work: Path) -> dict[str, Any]:
    """Inspect's `.eval` and `.json` writers on the same ready-made samples."""
    from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

    (info,) = list_eval_logs(str(log_dir))
    log = read_eval_log(info.name)
    assert log.samples
    base = log.samples
    ready = []
    for index in range(samples):
        sample = base[index % len(base)]
        ready.append(sample.model_copy(update={"id": f"{sample.id}~{index}"}))
    log.samples = ready
    timings: dict[str, Any] = {"samples": samples}
    for fmt in ("json", "eval"):
        target = work / f"writer.{fmt}"
        started = time.perf_counter()
        write_eval_log(log, str(target), format=fmt)
        timings[f"{fmt}_seconds"] = time.perf_counter() - started
        timings[f"{fmt}_bytes"] = target.stat().st_size
    return timings


def bench_task(
    task: str, records: int, inspect_records: int, seed: int, work: Path
) -> dict[str, Any]:
    full = work / f"{task}.jsonl"
    write_records(full, task, records, seed)

    seconds, peak, stdout, exit_code = run_measured(
        tracegrade_command(task, full, work / f"{task}-tracegrade"), work
    )
    summary = json.loads(stdout)

    sizes = sorted({max(1, inspect_records // 10), inspect_records})
    inspect_runs: list[dict[str, Any]] = []
    for size in sizes:
        subset = work / f"{task}-{size}.jsonl"
        head(full, subset, size)
        log_dir = work / f"{task}-inspect-{size}"
        inspect_seconds, inspect_peak, _, _ = run_measured(
            inspect_command(task, subset, log_dir), work
        )
        inspect_runs.append(
            {"records": size, "seconds": inspect_seconds, "peak_mib": inspect_peak}
        )
    small, large = inspect_runs[0], inspect_runs[-1]
    if large["records"] > small["records"]:
        per_sample = (large["seconds"] - small["seconds"]) / (
            large["records"] - small["records"]
        )
    else:
        per_sample = large["seconds"] / large["records"]
    startup = max(0.0, large["seconds"] - per_sample * large["records"])
    inspect_estimate = startup + per_sample * records

    # Same answers? tracegrade on the subset inspect eval ran, then compare.
    subset = work / f"{task}-{inspect_records}.jsonl"
    ours_dir = work / f"{task}-tracegrade-subset"
    run_measured(tracegrade_command(task, subset, ours_dir), work)
    difference = first_difference(ours_dir, work / f"{task}-inspect-{inspect_records}")

    core = time_core(task, full)
    timings = summary["timings"]
    return {
        "task": task,
        "records": records,
        "tracegrade": {
            "seconds": seconds,
            "records_per_s": records / seconds,
            "peak_mib": peak,
            "exit_code": exit_code,
            "in_process_seconds": summary["seconds"],
            "startup_and_exit_seconds": seconds - summary["seconds"],
            "timings": timings,
            "log_bytes": Path(summary["log"]).stat().st_size,
        },
        "inspect_eval": {
            "runs": inspect_runs,
            "per_sample_seconds": per_sample,
            "startup_seconds": startup,
            "extrapolated_seconds": inspect_estimate,
            "extrapolated": large["records"] != records,
        },
        "ratio": inspect_estimate / seconds,
        "answers_identical": difference is None,
        "difference": difference,
        "core_seconds": core["core"],
        "core_and_score_seconds": core["core_and_score"],
        "met": {
            "seconds": seconds <= TARGET_SECONDS,
            "ratio": inspect_estimate / seconds >= TARGET_RATIO,
        },
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=positive, default=100_000)
    parser.add_argument("--inspect-records", type=positive, default=2_000)
    parser.add_argument(
        "--tasks", default="stage_diagnosis,ordered_extraction", metavar="T1,T2"
    )
    parser.add_argument("--writer-samples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    args.tasks = [task for task in args.tasks.split(",") if task]
    unknown = set(args.tasks) - set(INSPECT_TASKS)
    if unknown:
        parser.error(f"unknown task(s): {', '.join(sorted(unknown))}")
    if args.inspect_records > args.records:
        parser.error("--inspect-records cannot exceed --records")
    return args


def command_line(args: argparse.Namespace) -> str:
    return (
        "python benchmarks/bulk_scoring.py"
        f" --records={args.records} --inspect-records={args.inspect_records}"
        f" --tasks={','.join(args.tasks)} --writer-samples={args.writer_samples}"
        f" --seed={args.seed}"
    )


def show(report: dict[str, Any]) -> None:
    console = Console(width=max(Console().width, 110))
    table = Table(title="tracegrade score vs inspect eval (wall clock, subprocesses)")
    for column in ("task", "records", "tracegrade s", "records/s", "peak MiB"):
        table.add_column(column, justify="right")
    table.add_column("inspect eval s", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("same answers")
    for row in report["rows"]:
        ours, theirs = row["tracegrade"], row["inspect_eval"]
        estimate = f"{theirs['extrapolated_seconds']:,.0f}"
        if theirs["extrapolated"]:
            estimate += " *"
        table.add_row(
            row["task"],
            f"{row['records']:,}",
            f"{ours['seconds']:.1f}",
            f"{ours['records_per_s']:,.0f}",
            f"{ours['peak_mib']:,.0f}",
            estimate,
            f"{row['ratio']:,.0f}x",
            "yes" if row["answers_identical"] else f"NO: {row['difference']}",
        )
    table.caption = "* extrapolated from two smaller runs, see below"
    console.print(table)
    for row in report["rows"]:
        met = row["met"]
        console.print(
            f"{row['task']}: at most {TARGET_SECONDS:.0f} s: "
            f"{'met' if met['seconds'] else 'NOT met'}; "
            f"at least {TARGET_RATIO:.0f}x faster: "
            f"{'met' if met['ratio'] else 'NOT met'}."
        )

    breakdown = Table(title="Where tracegrade's time goes (seconds)")
    breakdown.add_column("stage")
    for row in report["rows"]:
        breakdown.add_column(row["task"], justify="right")
    stages = [
        ("interpreter start-up, imports, exit", "startup_and_exit_seconds"),
        ("parse lines (parse_case_line)", "parse"),
        ("  core alone (measured separately)", "core"),
        ("core + Score building", "score"),
        ("build log samples", "sample"),
        ("serialise samples (to_json_safe)", "serialize"),
        ("write JSON Lines results", "jsonl"),
        ("metrics and reductions (eval_results)", "results"),
        ("write the log file", "write"),
        ("other (reading, loop)", "other"),
    ]
    for label, key in stages:
        cells = []
        for row in report["rows"]:
            ours = row["tracegrade"]
            timings = ours["timings"]
            if key == "startup_and_exit_seconds":
                value = ours[key]
            elif key == "core":
                value = row["core_seconds"]
            elif key == "other":
                value = ours["in_process_seconds"] - sum(timings.values())
            else:
                value = timings[key]
            cells.append(f"{value:.2f}")
        breakdown.add_row(label, *cells)
    console.print(breakdown)

    for row in report["rows"]:
        runs = ", ".join(
            f"{run['records']:,} records in {run['seconds']:.1f} s"
            for run in row["inspect_eval"]["runs"]
        )
        console.print(
            f"inspect eval {row['task']}: {runs}; "
            f"{row['inspect_eval']['per_sample_seconds'] * 1000:.2f} ms per sample "
            f"after {row['inspect_eval']['startup_seconds']:.1f} s start-up."
        )

    writers = report.get("writers")
    if writers:
        json_mb = writers["json_bytes"] / 1e6
        eval_mb = writers["eval_bytes"] / 1e6
        console.print(
            f"Inspect's writers on {writers['samples']:,} ready-made samples: "
            f".json {writers['json_seconds']:.2f} s ({json_mb:.0f} MB), "
            f".eval {writers['eval_seconds']:.2f} s ({eval_mb:.0f} MB)."
        )
    console.print(f"Reproduce: {report['command']}", soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-") as scratch:
        work = Path(scratch)
        rows = [
            bench_task(task, args.records, args.inspect_records, args.seed, work)
            for task in args.tasks
        ]
        writers = None
        if args.writer_samples > 0:
            writers = time_writers(
                work / f"{args.tasks[0]}-tracegrade-subset", args.writer_samples, work
            )
    report = {
        "command": command_line(args),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "targets": {"seconds": TARGET_SECONDS, "ratio": TARGET_RATIO},
        "rows": rows,
        "writers": writers,
    }
    show(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if all(row["answers_identical"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
