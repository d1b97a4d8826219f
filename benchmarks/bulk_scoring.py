"""`tracegrade score` end to end, beside a baseline revision and the floor.

    python benchmarks/bulk_scoring.py [--records 10000,100000,1000000]
        [--formats eval,json] [--tasks stage_diagnosis,ordered_extraction]
        [--inspect-records 2000] [--max-samples-per-log N] [--seed 7]
        [--baseline REV] [--floor] [--repeats N] [--json OUT] [--markdown OUT]

For each task, size and log format, `--repeats` rounds (default 1) run in
turn: `tracegrade score` as a subprocess (start-up included; wall, CPU and
peak memory summed over its processes, `benchmarks/measure.py`), the same
command with the `tracegrade` of git revision REV (`--baseline`), and
`benchmarks/bulk_floor.py`'s one-core standard-library floor (`--floor`).
Each row gives their medians, its ratios to both, and the seconds of
`score`'s own timers by phase (summed over its workers). `inspect eval` on
the first `--inspect-records` records and a tenth of them gives its time,
extrapolated to each row; its samples and scores are compared with
`score`'s of the same records, and the script exits 1 if they differ.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import measure  # noqa: E402
from benchmarks.bulk_floor import floor  # noqa: E402
from benchmarks.measure import CLEAN_ENV, Measured  # noqa: E402
from benchmarks.throughput import (  # noqa: E402
    positive,
    small_extraction_record,
    small_stage_record,
)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "bulk_scoring.json"
FORMATS = ("eval", "json")
INSPECT_TASKS = {
    "stage_diagnosis": "tracegrade/stage_diagnosis",
    "ordered_extraction": "tracegrade/ordered_extraction_recorded",
}
RECORD_MAKERS = {
    "stage_diagnosis": small_stage_record,
    "ordered_extraction": small_extraction_record,
}


def write_records(path: Path, task: str, count: int, seed: int) -> None:
    """`count` seeded records; a shorter file is a prefix of a longer one."""
    rng = random.Random(f"{seed}-{task}")
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            case = {"id": f"run-{number:07d}", "input": RECORD_MAKERS[task](rng)}
            out.write(json.dumps(case) + "\n")


def head(source: Path, target: Path, lines: int) -> Path:
    with source.open("rb") as read, target.open("wb") as out:
        for _, line in zip(range(lines), read, strict=False):
            out.write(line)
    return target


def score(
    dataset: Path,
    log_dir: Path,
    task: str,
    log_format: str,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
) -> tuple[Measured, dict[str, Any]]:
    """One `tracegrade score` run (exit 1, data errors, is a result)."""
    command = measure.tracegrade(
        *("score", task, dataset, "--log-dir", log_dir, "--log-format", log_format),
        *("--json", "--no-progress"),
    )
    if args.max_samples_per_log is not None:
        command += ["--max-samples-per-log", str(args.max_samples_per_log)]
    measured = measure.run_measured(
        command, log_dir.parent, env=env or CLEAN_ENV, exit_codes=(0, 1)
    )
    return measured, json.loads(measured.stdout)


def inspect_eval(task: str, dataset: Path, log_dir: Path) -> Measured:
    command = [sys.executable, "-m", "inspect_ai", "eval", INSPECT_TASKS[task]]
    command += ["-T", f"dataset={dataset}", "--log-dir", str(log_dir)]
    return measure.run_measured(
        [*command, "--display", "none"], log_dir.parent, env=CLEAN_ENV
    )


def comparable(sample: Any) -> str:
    """What a sample says, without what differs between two runs of it."""
    scores = {k: v.model_dump(mode="json") for k, v in (sample.scores or {}).items()}
    said = [sample.id, sample.input, sample.target, sample.metadata, sample.store]
    return json.dumps([*said, sample.output.completion, scores])


def first_difference(ours: Path, theirs: Path) -> str | None:
    """None when both directories' one log hold the same samples and scores."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    logs = [read_eval_log(list_eval_logs(str(d))[0].name) for d in (ours, theirs)]
    if logs[1].status != "success":
        return f"inspect eval ended with status {logs[1].status}"
    results = [log.results.model_dump_json() if log.results else None for log in logs]
    if results[0] != results[1]:
        return "results differ"
    mine, other = ({s.id: comparable(s) for s in log.samples or []} for log in logs)
    if mine.keys() != other.keys():
        return "different sample ids"
    return next((f"sample {k!r} differs" for k in mine if mine[k] != other[k]), None)


def inspect_fit(task: str, full: Path, records: int, work: Path) -> dict[str, float]:
    """`inspect eval`'s start-up and per-sample seconds, from a straight line
    through its runs on the first `records` and a tenth of them."""
    sizes = sorted({max(1, records // 10), records})
    seconds = [
        inspect_eval(
            task, head(full, work / f"{task}-{n}.jsonl", n), work / f"inspect-{n}"
        ).seconds
        for n in sizes
    ]
    per_sample = (
        (seconds[-1] - seconds[0]) / (sizes[-1] - sizes[0])
        if len(sizes) > 1
        else seconds[0] / sizes[0]
    )
    startup = max(0.0, seconds[-1] - per_sample * sizes[-1])
    return {"startup_seconds": startup, "per_sample_seconds": per_sample}


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("seconds", "cpu_seconds", "peak_mib")
    found = {k: statistics.median(run[k] for run in runs) for k in keys if k in runs[0]}
    return {**found, "runs": [run["seconds"] for run in runs]}


def measure_row(
    task: str,
    dataset: Path,
    log_format: str,
    args: argparse.Namespace,
    work: Path,
    baseline_env: dict[str, str] | None,
) -> dict[str, Any]:
    """`args.repeats` rounds of ours, the baseline and the floor, in turn."""
    runs: dict[str, list[dict[str, Any]]] = {"tracegrade": []}
    runs.update({"baseline": []} if baseline_env is not None else {})
    runs.update({"floor": []} if args.floor else {})
    log_dir = work / "logs"
    row: dict[str, Any] = {}
    for _ in range(args.repeats):
        for name, done in runs.items():
            if name == "floor":
                done.append(floor(dataset, task, work / "floor.zip"))
                (work / "floor.zip").unlink()
                continue
            env = baseline_env if name == "baseline" else None
            measured, summary = score(dataset, log_dir, task, log_format, args, env)
            done.append(
                {
                    "seconds": measured.seconds,
                    "cpu_seconds": measured.cpu_seconds,
                    "peak_mib": measured.peak_mib,
                }
            )
            if name == "tracegrade":
                logs = [Path(log) for log in summary["logs"]]
                row["logs"] = len(logs)
                row["log_bytes"] = sum(log.stat().st_size for log in logs)
                row["timings"] = summary["timings"]
                row["exit_code"] = measured.exit_code
            shutil.rmtree(log_dir)
    row.update({name: medians(done) for name, done in runs.items()})
    for name in ("baseline", "floor"):
        if name in row:
            row[f"ratio_to_{name}"] = (
                row["tracegrade"]["seconds"] / row[name]["seconds"]
            )
    return row


def bench_task(
    task: str, args: argparse.Namespace, work: Path, baseline_env: dict[str, str] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows for every size and format of `task`, and its answers compared."""
    full = work / f"{task}.jsonl"
    write_records(full, task, max(args.records), args.seed)
    print(f"{task}: inspect eval on {args.inspect_records:,} records", file=sys.stderr)
    fit = inspect_fit(task, full, args.inspect_records, work)
    subset = work / f"{task}-{args.inspect_records}.jsonl"
    comparisons = []
    for log_format in args.formats:
        score(subset, work / "compared", task, log_format, args)
        difference = first_difference(
            work / "compared", work / f"inspect-{args.inspect_records}"
        )
        shutil.rmtree(work / "compared")
        comparisons.append(
            {"task": task, "format": log_format, "records": args.inspect_records}
            | {"answers_identical": difference is None, "difference": difference}
        )
    rows = []
    for records in args.records:
        dataset = head(full, work / f"{task}-{records}-rows.jsonl", records)
        for log_format in args.formats:
            print(f"{task}: {records:,} records, .{log_format}", file=sys.stderr)
            row = {"task": task, "records": records, "format": log_format}
            row |= measure_row(task, dataset, log_format, args, work, baseline_env)
            estimate = fit["startup_seconds"] + fit["per_sample_seconds"] * records
            row["inspect_eval_seconds"] = estimate
            row["ratio_of_inspect_eval"] = estimate / row["tracegrade"]["seconds"]
            rows.append(row)
        dataset.unlink()
    return rows, comparisons


def command_line(args: argparse.Namespace) -> str:
    line = (
        "python benchmarks/bulk_scoring.py"
        f" --records={','.join(map(str, args.records))}"
        f" --formats={','.join(args.formats)} --tasks={','.join(args.tasks)}"
        f" --inspect-records={args.inspect_records} --seed={args.seed}"
    )
    if args.max_samples_per_log is not None:
        line += f" --max-samples-per-log={args.max_samples_per_log}"
    if args.baseline is not None:
        line += f" --baseline={args.baseline}"
    return line + (" --floor" if args.floor else "") + f" --repeats={args.repeats}"


def commit() -> str | None:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or None


def markdown(report: dict[str, Any]) -> str:
    """The rows as a table, then each row's seconds by phase."""
    rows, revision = report["rows"], report["baseline"]
    head = ["task", "records", "format", "s", "CPU s", "peak MiB"]
    if revision is not None:
        head += [f"`{revision}`: s", "CPU s", "peak MiB", "vs baseline"]
    if report["floor"]:
        head += ["floor: s", "vs floor"]
    head += ["vs inspect eval"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|---|---:|---|" + "---:|" * (len(head) - 3),
    ]
    phases = sorted({phase for row in rows for phase in row["timings"]})
    for row in rows:
        ours = row["tracegrade"]
        cells = [row["task"], f"{row['records']:,}", f".{row['format']}"]
        cells += [f"{ours['seconds']:.1f}", f"{ours['cpu_seconds']:.1f}"]
        cells += [f"{ours['peak_mib']:.0f}"]
        if revision is not None:
            before = row["baseline"]
            cells += [f"{before['seconds']:.1f}", f"{before['cpu_seconds']:.1f}"]
            cells += [f"{before['peak_mib']:.0f}", f"{row['ratio_to_baseline']:.2f}"]
        if report["floor"]:
            cells += [f"{row['floor']['seconds']:.1f}", f"{row['ratio_to_floor']:.2f}"]
        cells += [f"{row['ratio_of_inspect_eval']:.0f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| task | records | format | " + " | ".join(phases) + " |"]
    lines.append("|---|---:|---|" + "---:|" * len(phases))
    for row in rows:
        cells = [row["task"], f"{row['records']:,}", f".{row['format']}"]
        cells += [f"{row['timings'].get(phase, 0):.1f}" for phase in phases]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"`{report['command']}`: seconds are wall time of the subprocess,"]
    lines.append(
        "start-up included; CPU and peak memory summed over its processes "
        "(PSS); medians of the rounds; phases are `score --json`'s timers, "
        "summed over its workers."
    )
    for compared in report["comparisons"]:
        said = "the same" if compared["answers_identical"] else "DIFFERENT"
        why = "" if compared["answers_identical"] else f": {compared['difference']}"
        lines.append(
            f"- {compared['task']}, .{compared['format']}: `tracegrade score` "
            f"and `inspect eval` on {compared['records']:,} records give {said} "
            f"samples and scores{why}."
        )
    return "\n".join(lines) + "\n"


def sizes(text: str) -> list[int]:
    return [positive(part) for part in text.split(",")]


def choices(allowed: Sequence[str]) -> Any:
    def parse(text: str) -> list[str]:
        chosen = text.split(",")
        if not set(chosen) <= set(allowed):
            raise argparse.ArgumentTypeError(f"choose from {','.join(allowed)}")
        return chosen

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=sizes, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--formats", type=choices(FORMATS), default=list(FORMATS))
    parser.add_argument(
        "--tasks", type=choices(list(INSPECT_TASKS)), default=list(INSPECT_TASKS)
    )
    parser.add_argument("--inspect-records", type=positive, default=2_000)
    parser.add_argument("--max-samples-per-log", type=positive, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--baseline", metavar="REV", help="a git revision to pair")
    parser.add_argument("--floor", action="store_true", help="time bulk_floor.py too")
    parser.add_argument("--repeats", type=positive, default=1)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="OUT")
    parser.add_argument("--markdown", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "command": command_line(args),
        "machine": measure.machine(),
        "inspect_ai": version("inspect_ai"),
        "commit": commit(),
        "baseline": args.baseline,
        "floor": args.floor,
        "rows": [],
        "comparisons": [],
    }
    with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-") as scratch:
        work = Path(scratch)
        baseline_env = None
        if args.baseline is not None:
            baseline_env = measure.revision_env(args.baseline, work, CLEAN_ENV)
        for task in args.tasks:
            rows, comparisons = bench_task(task, args, work, baseline_env)
            report["rows"] += rows
            report["comparisons"] += comparisons
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    table = markdown(report)
    (args.markdown or args.json.with_suffix(".md")).write_text(table, encoding="utf-8")
    print(table)
    return 0 if all(c["answers_identical"] for c in report["comparisons"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
