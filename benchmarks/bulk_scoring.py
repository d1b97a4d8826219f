"""Bulk scoring: `tracegrade score` at 10k, 100k and 1M records, both log formats.

Issue #9 asks what `tracegrade score` costs a user, end to end, at the sizes
people score, in both log formats it writes; and for each figure whether it
meets its target, with the cause measured when it does not. So, for each
task, N recorded runs (seeded, the record mix of `benchmarks/throughput.py`)
are written to a fixture-format file, and for each N and log format:

- `tracegrade score` runs as a subprocess, so interpreter start-up, imports
  and exit are in the seconds, as a user waits for them; its peak memory
  is its own processes' (see `benchmarks/measure.py`); the bytes of every
  log it wrote (all parts when the run is split at `--max-samples-per-log`)
  and its own timers (where the time went) are kept;
- for an `.eval` log, `inspect view` serves the log directory and a fresh
  headless Chromium navigates to the sample list of the log (the first
  part when split): the seconds until the first sample shows, measured by
  `scripts/screenshots.py bulk`'s own functions, so both scripts time
  the same thing. Without Chromium (or with --no-viewer) the figure is null
  with the reason;
- a one-record run of the same task and format gives the memory every run
  pays before its first record (interpreter, Inspect, tracegrade), so a
  peak over its target can be split into that floor and what grows with N.

`inspect eval tracegrade/<task> -T dataset=...` runs on the first M and the
first M/10 records (its default log format). Its cost is a start-up plus a
per-sample cost, so the two runs give both (a straight line through two
points) and its time for N is extrapolated, and reported as extrapolated.
The ratio of a row is that time over `tracegrade score`'s for the same N:
their per-sample costs, start-up spread over N on both sides. A ratio
between different answers would mean nothing, so `tracegrade score` also
scores the first M records in each format and its log is compared with
`inspect eval`'s sample by sample, through `read_eval_log`.

`--baseline REV` also runs, right after each row's run, the same command
with the `tracegrade` of git revision REV (its `src/` first on
PYTHONPATH): a machine that runs slower one hour than the next slows
both alike, so the pair shows what the code since REV changed. `--floor`
also times `benchmarks/bulk_floor.py`'s standard-library floor on the
same records (one core). With either, `--repeats N` more rounds of the
three, alternating, give each row its medians and its ratios to both
(`paired`).

Scratch files go to a temporary directory and each run's logs are deleted
once measured (1M records write gigabytes). The report goes to --json
(`benchmarks/results/bulk_scoring.json` by default) and its table to the
same name ending `.md`, which `--render JSON` rewrites from a saved report
without measuring anything.

    python benchmarks/bulk_scoring.py [--records 10000,100000,1000000]
        [--formats eval,json] [--tasks stage_diagnosis,ordered_extraction]
        [--inspect-records 2000] [--max-samples-per-log N] [--seed 7]
        [--viewer/--no-viewer] [--viewer-give-up-seconds 120]
        [--chromium PATH] [--baseline REV] [--floor] [--repeats N]
        [--json OUT] [--markdown OUT]
        [--render JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks import measure  # noqa: E402
from benchmarks.measure import TRACEGRADE, Measured, revision_env  # noqa: E402
from benchmarks.throughput import (  # noqa: E402
    positive,
    small_extraction_record,
    small_stage_record,
)

SCRIPTS = ROOT / "scripts"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "bulk_scoring.json"
DEFAULT_RECORDS = (10_000, 100_000, 1_000_000)
FORMATS = ("eval", "json")
INSPECT_TASKS = {
    "stage_diagnosis": "tracegrade/stage_diagnosis",
    "ordered_extraction": "tracegrade/ordered_extraction_recorded",
}
RECORD_MAKERS = {
    "stage_diagnosis": small_stage_record,
    "ordered_extraction": small_extraction_record,
}
CLEAN_ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("INSPECT_")
}
MIB = 2**20
# The "timings" of `tracegrade score --json`, in the order the work happens,
# and what each covers (`tracegrade.bulk.scoring.Timings`).
STAGES = {
    "parse": "parsing lines",
    "score": "the core and its Score",
    "sample": "building log samples",
    "serialize": "handing samples to the writer",
    "jsonl": "writing the JSON Lines results",
    "results": "metrics and reductions",
    "write": "writing the log",
}


@dataclass(frozen=True)
class Target:
    """One of issue #9's targets, and the rows it applies to."""

    measure: str
    """Either `seconds` (wall, start-up included) or `peak_mib`."""
    records: int
    limit: float
    task: str | None
    """None: either task."""
    says: str
    """The target as the issue states it."""

    def applies(self, task: str, records: int) -> bool:
        return records == self.records and self.task in (None, task)

    def as_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "task": self.task,
            "records": self.records,
            "formats": list(FORMATS),
            "at_most": self.limit,
            "issue": self.says,
        }


# "400 MB" is read as 400,000,000 bytes, the stricter of the two readings.
TARGETS = (
    Target(
        "seconds",
        1_000_000,
        100.0,
        "stage_diagnosis",
        "1,000,000 stage records <= 100 s end to end",
    ),
    Target(
        "seconds",
        100_000,
        10.0,
        "stage_diagnosis",
        "100,000 <= 10 s (read as stage records, as the line before)",
    ),
    Target(
        "peak_mib",
        1_000_000,
        400e6 / MIB,
        None,
        "peak RSS <= 400 MB at 1,000,000 records of either task",
    ),
)


# --- Inputs and subprocesses ---------------------------------------------------


def write_records(path: Path, task: str, count: int, seed: int) -> None:
    """`count` seeded records; a shorter file is a prefix of a longer one."""
    rng = random.Random(f"{seed}-{task}")
    make = RECORD_MAKERS[task]
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            case = {"id": f"run-{number:07d}", "input": make(rng)}
            out.write(json.dumps(case) + "\n")


# The first record's id, which the sample list of the first part shows first.
FIRST_SAMPLE = "run-0000000"


def head(source: Path, target: Path, lines: int) -> None:
    with (
        source.open(encoding="utf-8") as read,
        target.open("w", encoding="utf-8") as out,
    ):
        for _, line in zip(range(lines), read, strict=False):
            out.write(line)


def run_measured(
    command: Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> Measured:
    """One `tracegrade` run, its peak its own (see `benchmarks.measure`);
    exit 1 is a result here (data errors), not a failure."""
    return measure.run_measured(command, cwd, env=env or CLEAN_ENV, exit_codes=(0, 1))


def tracegrade_command(
    task: str,
    dataset: Path,
    log_dir: Path,
    log_format: str,
    max_samples_per_log: int | None,
) -> list[str]:
    command = [
        sys.executable,
        "-c",
        TRACEGRADE,
        "score",
        task,
        str(dataset),
        "--log-dir",
        str(log_dir),
        "--log-format",
        log_format,
        "--json",
        "--no-progress",
    ]
    if max_samples_per_log is not None:
        command += ["--max-samples-per-log", str(max_samples_per_log)]
    return command


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


# --- Same answers as inspect eval ------------------------------------------------


def comparable(sample: Any) -> str:
    """What a sample says, without what differs between two runs of it."""
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


# --- The viewer ------------------------------------------------------------------


class Viewer:
    """Times `inspect view`'s sample list, or says once why it cannot."""

    def __init__(self, enabled: bool, chromium: str | None, give_up: float) -> None:
        self.give_up = give_up
        self.binary: str | None = None
        self.version: str | None = None
        self.unavailable: str | None = None
        if not enabled:
            self.unavailable = "not measured (--no-viewer)"
            return
        if str(SCRIPTS) not in sys.path:
            sys.path.insert(0, str(SCRIPTS))
        try:
            from screenshots import ScreenshotError, find_chromium
        except ImportError as error:  # aiohttp, which the browser driver needs
            self.unavailable = f"cannot drive a browser: {error}"
            return
        try:
            self.binary = find_chromium(chromium)
        except ScreenshotError as error:
            self.unavailable = str(error)
            return
        completed = subprocess.run(
            [self.binary, "--version"], capture_output=True, text=True, check=False
        )
        self.version = completed.stdout.strip() or None

    def measure(self, log_dir: Path, log: Path) -> dict[str, Any]:
        """Seconds from navigation until `log`'s sample list shows its first
        sample, with `inspect view` serving all of `log_dir` (every part)."""
        from inspect_ai.log import read_eval_log

        header = read_eval_log(str(log), header_only=True)
        shown: dict[str, Any] = {
            "seconds": None,
            "reason": None,
            "log": log.name,
            "log_bytes": log.stat().st_size,
            "samples": header.results.total_samples if header.results else None,
            "view_server_peak_mib": None,
            "browser_peak_mib": None,
        }
        if self.binary is None:
            shown["reason"] = self.unavailable
            return shown
        from screenshots import ScreenshotError, time_sample_list

        try:
            timing = time_sample_list(
                self.binary, log_dir, log.name, FIRST_SAMPLE, self.give_up
            )
        except (ScreenshotError, subprocess.TimeoutExpired, OSError) as error:
            shown["reason"] = f"the viewer could not be timed: {error}"
            return shown
        shown["seconds"] = timing.sample_list.seconds
        shown["reason"] = timing.sample_list.failure
        shown["view_server_peak_mib"] = round(timing.view_server_peak_rss / MIB, 1)
        shown["browser_peak_mib"] = round(timing.browser_peak_rss / MIB, 1)
        return shown


def not_viewed(reason: str) -> dict[str, Any]:
    return {"seconds": None, "reason": reason}


# --- Targets and their misses ----------------------------------------------------


def check_targets(
    rows: list[dict[str, Any]], memory: Sequence[dict[str, Any]] = ()
) -> None:
    """Set each row's `targets`, `met` (null when no target applies) and
    `misses`, each miss with its cause as measured in the same report
    (`memory`: the tracemalloc runs, by task and format)."""
    for row in rows:
        checks = []
        misses = []
        for target in TARGETS:
            if not target.applies(row["task"], row["records"]):
                continue
            value = row["tracegrade"][target.measure]
            met = value <= target.limit
            checks.append({**target.as_json(), "value": value, "met": met})
            if not met:
                misses.append(miss_cause(target, row, rows, memory))
        row["targets"] = checks
        row["met"] = all(check["met"] for check in checks) if checks else None
        row["misses"] = misses


def other_seconds(ours: dict[str, Any]) -> float:
    """In-process seconds that none of tracegrade's own timers covers."""
    timed = sum(ours["timings"].get(stage, 0.0) for stage in STAGES)
    return float(ours["in_process_seconds"] - timed)


def miss_cause(
    target: Target,
    row: dict[str, Any],
    rows: list[dict[str, Any]],
    memory: Sequence[dict[str, Any]] = (),
) -> str:
    ours = row["tracegrade"]
    where = f"{row['task']}, {row['records']:,} records, .{row['format']}"
    if target.measure == "seconds":
        spent = {
            "start-up, imports and exit": ours["startup_and_exit_seconds"],
            **{
                label: ours["timings"].get(stage, 0.0)
                for stage, label in STAGES.items()
            },
            "the rest (reading, the loop)": other_seconds(ours),
        }
        ranked = sorted(spent.items(), key=lambda item: -item[1])
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in ranked)
        return (
            f"{where}: {ours['seconds']:.1f} s against at most "
            f"{target.limit:.0f} s ({ours['records_per_s']:,.0f} records/s, "
            f"{target.records / target.limit:,.0f} needed; "
            f"{ours['cpu_seconds']:.1f} s of CPU); the time went to {parts}"
        )
    floor = row.get("floor_peak_mib")
    series = sorted(
        (other["records"], other["tracegrade"]["peak_mib"])
        for other in rows
        if other["task"] == row["task"] and other["format"] == row["format"]
    )
    text = (
        f"{where}: peak {ours['peak_mib']:,.0f} MiB against at most "
        f"{target.limit:,.0f} MiB (400 MB)"
    )
    if floor is not None:
        text += (
            f"; a one-record run of the same task and format peaks at "
            f"{floor:,.0f} MiB (interpreter, Inspect, tracegrade), so "
            f"{ours['peak_mib'] - floor:,.0f} MiB grows with the records"
        )
    if len(series) > 1:
        (low_n, low), (high_n, high) = series[0], series[-1]
        per = (high - low) / (high_n - low_n) * 100_000
        text += (
            f"; from {low_n:,} to {high_n:,} records the peak grew "
            f"{per:,.1f} MiB per 100,000 records"
        )
    for trace in memory:
        if (trace["task"], trace["format"]) == (row["task"], row["format"]):
            text += "; " + memory_cause(trace)
    return text


def memory_cause(trace: dict[str, Any]) -> str:
    """What the memory runs found, in a sentence."""
    top = ", ".join(
        f"{entry['bytes_per_record']:,.0f} B at {entry['allocated_at']}"
        + (
            f" (from {entry['from']})"
            if entry["from"] and entry["from"] != entry["allocated_at"]
            else ""
        )
        for entry in trace["top"][:4]
    )
    finishing = trace["peak_mib_after_finishing"] - trace["peak_mib_while_scoring"]
    return (
        f"at {trace['records']:,} records the resident size grew "
        f"{trace['resident_bytes_per_record']:,.0f} bytes a record from the "
        f"first record to the last, and finishing the logs (metrics, "
        f"reductions, headers) raised the peak {finishing:,.1f} MiB more "
        f"({finishing * MIB / trace['records']:,.0f} bytes a record); under "
        f"tracemalloc on {trace['traced_records']:,} records, live Python "
        f"objects grew {trace['live_bytes_per_record']:,.0f} bytes a record, "
        f"the most at {top}, and finishing added "
        f"{trace['live_bytes_per_record_added_while_finishing']:,.0f} bytes a "
        "record of them at its peak"
    )


# --- What holds the memory ----------------------------------------------------


# Runs `tracegrade score` in this interpreter under tracemalloc, snapshots the
# Python heap once the first record is in the log and again when the last
# has been scored (on entry to `BulkLog.finish`): the difference is what the
# run holds for every record, without the fixed cost of imports and of
# caches the first record fills. Then the peak while finishing (metrics,
# reductions, headers) on top of it. Only Python's own allocator is seen
# (not zlib's or SQLite's buffers, say).
TRACER = """
import json, sys, tracemalloc
from tracegrade.bulk import log as bulk_log
from tracegrade.cli import main

out_path, frames, *argv = sys.argv[1:]
tracing = int(frames) > 0
seen = {}
add_sample, finish = bulk_log.BulkLog.add_sample, bulk_log.BulkLog.finish

def resident():
    status = dict(
        line.split(":", 1) for line in open("/proc/self/status").read().splitlines()
    )
    return {key: int(status[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM")}

def where(frame):
    name = frame.filename
    for cut in ("/site-packages/", "/src/", "/lib/python"):
        if cut in name:
            name = name.split(cut, 1)[1]
            break
    return f"{name}:{frame.lineno}"

def traced_add_sample(self, *args, **kwargs):
    add_sample(self, *args, **kwargs)
    if "first_resident" not in seen:
        seen["first_resident"] = resident()
        if tracing:
            seen["first"] = tracemalloc.take_snapshot()
            seen["first_bytes"] = tracemalloc.get_traced_memory()[0]

def traced_finish(self, **options):
    seen["last_resident"] = resident()
    if not tracing:
        try:
            return finish(self, **options)
        finally:
            seen["finished_resident"] = resident()
    current, peak = tracemalloc.get_traced_memory()
    grouped = {}
    last = tracemalloc.take_snapshot()
    for stat in last.compare_to(seen.pop("first"), "traceback"):
        frames_ = list(reversed(stat.traceback))  # most recent call first
        ours = next((f for f in frames_ if "tracegrade" in f.filename), None)
        key = (where(frames_[0]), where(ours) if ours else None)
        size, count = grouped.get(key, (0, 0))
        grouped[key] = (size + stat.size_diff, count + stat.count_diff)
    del last
    top = sorted(grouped.items(), key=lambda item: -item[1][0])[:8]
    seen["held_bytes"] = current - seen.pop("first_bytes")
    seen["peak_bytes_while_scoring"] = peak
    seen["held_bytes_before_finishing"] = current
    seen["top"] = [
        {"allocated_at": at, "from": via, "bytes": size, "blocks": count}
        for (at, via), (size, count) in top
    ]
    tracemalloc.reset_peak()
    try:
        return finish(self, **options)
    finally:
        seen["peak_bytes_while_finishing"] = tracemalloc.get_traced_memory()[1]

bulk_log.BulkLog.add_sample = traced_add_sample
bulk_log.BulkLog.finish = traced_finish
if tracing:
    tracemalloc.start(int(frames))
try:
    main(argv, prog_name="tracegrade")
except SystemExit:
    pass
tracemalloc.stop()
with open(out_path, "w") as out:
    json.dump(seen, out)
"""
TRACE_FRAMES = 6
TRACED_SHARE = 5


def run_tracer(
    task: str,
    dataset: Path,
    log_format: str,
    max_samples_per_log: int | None,
    frames: int,
    work: Path,
) -> dict[str, Any]:
    """One `TRACER` run; `frames` 0 for resident memory alone."""
    out = work / f"{task}-{log_format}-trace.json"
    log_dir = work / f"{task}-trace-{log_format}"
    command = tracegrade_command(
        task, dataset, log_dir, log_format, max_samples_per_log
    )[3:]
    command += ["--workers", "1"]  # the loop in this process, where it is traced
    run_measured([sys.executable, "-c", TRACER, str(out), str(frames), *command], work)
    seen: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    shutil.rmtree(log_dir)
    out.unlink()
    return seen


def trace_memory(
    task: str,
    dataset: Path,
    records: int,
    log_format: str,
    max_samples_per_log: int | None,
    work: Path,
) -> dict[str, Any]:
    """Where a run's memory grows with its records, measured twice.

    Untraced: the resident size (VmRSS) once the first record is in the log
    and once the last is scored, and the peak (VmHWM) before and after
    finishing. Under tracemalloc: how much of that growth is live Python
    objects, and where they were allocated. Resident growth beyond the live
    objects is memory the process keeps without holding objects in it
    (freed blocks its allocator does not return, C libraries' buffers).
    Tracing is slow, so it runs on the first 1/`TRACED_SHARE` of the records.
    """
    later = max(1, records - 1)  # the records after the first
    plain = run_tracer(task, dataset, log_format, max_samples_per_log, 0, work)
    first, last = plain["first_resident"], plain["last_resident"]
    finished = plain["finished_resident"]
    traced_records = max(1, records // TRACED_SHARE)
    traced_later = max(1, traced_records - 1)
    prefix = work / f"{task}-{traced_records}-traced.jsonl"
    head(dataset, prefix, traced_records)
    traced = run_tracer(
        task, prefix, log_format, max_samples_per_log, TRACE_FRAMES, work
    )
    prefix.unlink()
    finishing = (
        traced["peak_bytes_while_finishing"] - traced["held_bytes_before_finishing"]
    )
    return {
        "task": task,
        "format": log_format,
        "records": records,
        "resident_mib_after_first_record": first["VmRSS"] / MIB,
        "resident_mib_after_last_record": last["VmRSS"] / MIB,
        "resident_bytes_per_record": (last["VmRSS"] - first["VmRSS"]) / later,
        "peak_mib_while_scoring": last["VmHWM"] / MIB,
        "peak_mib_after_finishing": finished["VmHWM"] / MIB,
        "traced_records": traced_records,
        "live_bytes_per_record": traced["held_bytes"] / traced_later,
        "live_bytes_per_record_added_while_finishing": finishing / traced_records,
        "top": [
            {**entry, "bytes_per_record": entry["bytes"] / traced_later}
            for entry in traced["top"]
        ],
    }


# --- One task --------------------------------------------------------------------


def inspect_eval_fit(task: str, full: Path, records: int, work: Path) -> dict[str, Any]:
    """`inspect eval` on the first `records` and tenth of them: a start-up
    plus a per-sample cost, from a straight line through the two runs."""
    runs: list[dict[str, Any]] = []
    for size in sorted({max(1, records // 10), records}):
        subset = work / f"{task}-{size}.jsonl"
        head(full, subset, size)
        measured = run_measured(
            inspect_command(task, subset, work / f"{task}-inspect-{size}"), work
        )
        runs.append(
            {
                "records": size,
                "seconds": measured.seconds,
                "peak_mib": measured.peak_mib,
            }
        )
    small, large = runs[0], runs[-1]
    if large["records"] > small["records"]:
        per_sample = (large["seconds"] - small["seconds"]) / (
            large["records"] - small["records"]
        )
    else:
        per_sample = large["seconds"] / large["records"]
    startup = max(0.0, large["seconds"] - per_sample * large["records"])
    return {
        "runs": runs,
        "log_format": "eval (its default)",
        "per_sample_seconds": per_sample,
        "startup_seconds": startup,
    }


def score_once(
    task: str,
    dataset: Path,
    log_dir: Path,
    log_format: str,
    max_samples_per_log: int | None,
    work: Path,
    env: dict[str, str] | None = None,
) -> tuple[Measured, dict[str, Any]]:
    measured = run_measured(
        tracegrade_command(task, dataset, log_dir, log_format, max_samples_per_log),
        work,
        env,
    )
    return measured, json.loads(measured.stdout)


def alternate(
    task: str,
    dataset: Path,
    log_dir: Path,
    log_format: str,
    args: argparse.Namespace,
    work: Path,
    baseline_env: dict[str, str] | None,
) -> dict[str, Any]:
    """`args.repeats` rounds of this code, the baseline and the floor in
    turn on the same records: each one's medians, and the ratios of ours."""
    from benchmarks.bulk_floor import floor

    runs: dict[str, list[dict[str, float]]] = {"tracegrade": []}
    if baseline_env is not None:
        runs["baseline"] = []
    if args.floor:
        runs["floor"] = []
    for _ in range(args.repeats):
        for name in runs:
            if name == "floor":
                timed = floor(dataset, task, work / "floor.zip")
                runs[name].append({k: timed[k] for k in ("seconds", "cpu_seconds")})
                (work / "floor.zip").unlink()
                continue
            env = baseline_env if name == "baseline" else None
            measured, _ = score_once(
                task, dataset, log_dir, log_format, args.max_samples_per_log, work, env
            )
            shutil.rmtree(log_dir)
            runs[name].append(
                {
                    "seconds": measured.seconds,
                    "cpu_seconds": measured.cpu_seconds,
                    "peak_mib": measured.peak_mib,
                }
            )
    paired: dict[str, Any] = {
        name: {key: statistics.median(run[key] for run in done) for key in done[0]}
        | {"runs": [run["seconds"] for run in done]}
        for name, done in runs.items()
    }
    ours = paired["tracegrade"]["seconds"]
    for name in ("baseline", "floor"):
        if name in paired:
            paired[f"ratio_to_{name}"] = ours / paired[name]["seconds"]
    return paired


@dataclass
class TaskRun:
    """Everything measured for one task."""

    rows: list[dict[str, Any]]
    fit: dict[str, Any]
    comparisons: list[dict[str, Any]]
    memory: list[dict[str, Any]]


def bench_task(
    task: str,
    args: argparse.Namespace,
    viewer: Viewer,
    work: Path,
    baseline_env: dict[str, str] | None,
) -> TaskRun:
    """Rows for every size and format of `task`, its inspect eval fit, its
    answer comparisons and what holds its memory."""
    console = Console(stderr=True)
    largest = max(args.records)
    full = work / f"{task}-{largest}.jsonl"
    write_records(full, task, largest, args.seed)

    console.print(f"{task}: inspect eval on {args.inspect_records:,} records ...")
    fit = inspect_eval_fit(task, full, args.inspect_records, work)
    subset = work / f"{task}-{args.inspect_records}.jsonl"
    comparisons = []
    floors: dict[str, float] = {}
    one = work / f"{task}-1.jsonl"
    head(full, one, 1)
    for log_format in args.formats:
        ours_dir = work / f"{task}-compare-{log_format}"
        score_once(task, subset, ours_dir, log_format, None, work)
        difference = first_difference(
            ours_dir, work / f"{task}-inspect-{args.inspect_records}"
        )
        comparisons.append(
            {
                "task": task,
                "format": log_format,
                "records": args.inspect_records,
                "answers_identical": difference is None,
                "difference": difference,
            }
        )
        shutil.rmtree(ours_dir)
        floor_dir = work / f"{task}-floor-{log_format}"
        floors[log_format] = score_once(task, one, floor_dir, log_format, None, work)[
            0
        ].peak_mib
        shutil.rmtree(floor_dir)

    memory = []
    if args.trace_memory_records:
        traced = work / f"{task}-{args.trace_memory_records}-trace.jsonl"
        head(full, traced, args.trace_memory_records)
        for log_format in args.formats:
            console.print(
                f"{task}: tracemalloc, {args.trace_memory_records:,} records, "
                f".{log_format}"
            )
            memory.append(
                trace_memory(
                    task,
                    traced,
                    args.trace_memory_records,
                    log_format,
                    args.max_samples_per_log,
                    work,
                )
            )
        traced.unlink()

    rows = []
    for records in args.records:
        dataset = full
        if records != largest:
            dataset = work / f"{task}-{records}.jsonl"
            head(full, dataset, records)
        for log_format in args.formats:
            console.print(
                f"{task}: tracegrade score {records:,} records, .{log_format}"
            )
            load = os.getloadavg()[0]
            log_dir = work / f"{task}-{records}-{log_format}"
            measured, summary = score_once(
                task, dataset, log_dir, log_format, args.max_samples_per_log, work
            )
            logs = [Path(name) for name in summary["logs"]]
            if log_format == "eval":
                viewer_load = os.getloadavg()[0]
                shown = viewer.measure(log_dir, logs[0])
                shown["load_average_before"] = round(viewer_load, 2)
            else:
                shown = not_viewed("timed on .eval logs only")
            estimate = fit["startup_seconds"] + fit["per_sample_seconds"] * records
            (compared,) = (c for c in comparisons if c["format"] == log_format)
            rows.append(
                {
                    "task": task,
                    "records": records,
                    "format": log_format,
                    "tracegrade": {
                        "seconds": measured.seconds,
                        "records_per_s": records / measured.seconds,
                        "cpu_seconds": measured.cpu_seconds,
                        "peak_mib": measured.peak_mib,
                        "largest_process_peak_mib": measured.largest_process_mib,
                        "rss_sum_peak_mib": measured.rss_sum_mib,
                        "exit_code": measured.exit_code,
                        "in_process_seconds": summary["seconds"],
                        "startup_and_exit_seconds": measured.seconds
                        - summary["seconds"],
                        "timings": summary["timings"],
                        "logs": len(logs),
                        "log_bytes": sum(log.stat().st_size for log in logs),
                        "results_bytes": Path(summary["results"]).stat().st_size,
                        "load_average_before": round(load, 2),
                    },
                    "floor_peak_mib": floors[log_format],
                    "viewer": shown,
                    "inspect_eval": {
                        "per_sample_seconds": fit["per_sample_seconds"],
                        "startup_seconds": fit["startup_seconds"],
                        "extrapolated_seconds": estimate,
                        "extrapolated": records != args.inspect_records,
                    },
                    "ratio": estimate / measured.seconds,
                    "answers_identical": compared["answers_identical"],
                    "difference": compared["difference"],
                }
            )
            shutil.rmtree(log_dir)
            rows[-1]["baseline"] = None
            if baseline_env is not None:
                before, _ = score_once(
                    task,
                    dataset,
                    log_dir,
                    log_format,
                    args.max_samples_per_log,
                    work,
                    baseline_env,
                )
                shutil.rmtree(log_dir)
                rows[-1]["baseline"] = {
                    "revision": args.baseline,
                    "seconds": before.seconds,
                    "cpu_seconds": before.cpu_seconds,
                    "peak_mib": before.peak_mib,
                }
            if (baseline_env is not None or args.floor) and args.repeats:
                rows[-1]["paired"] = alternate(
                    task, dataset, log_dir, log_format, args, work, baseline_env
                )
        if dataset != full:
            dataset.unlink()
    full.unlink()
    return TaskRun(rows, {"task": task, **fit}, comparisons, memory)


# --- The report ------------------------------------------------------------------


def tracegrade_source() -> dict[str, Any]:
    """Which tracegrade was measured: its path, and its commit if in git."""
    import tracegrade

    where = Path(tracegrade.__file__).resolve().parent

    def git(*args: str) -> str | None:
        completed = subprocess.run(
            ["git", "-C", str(where), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        return completed.stdout.strip() if completed.returncode == 0 else None

    status = git("status", "--porcelain", "--", ".")
    return {
        "path": str(where),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": None if status is None else bool(status),
    }


def command_line(args: argparse.Namespace) -> str:
    line = (
        "python benchmarks/bulk_scoring.py"
        f" --records={','.join(str(n) for n in args.records)}"
        f" --formats={','.join(args.formats)}"
        f" --tasks={','.join(args.tasks)}"
        f" --inspect-records={args.inspect_records}"
        f" --trace-memory-records={args.trace_memory_records}"
        f" --seed={args.seed}"
    )
    if args.max_samples_per_log is not None:
        line += f" --max-samples-per-log={args.max_samples_per_log}"
    line += " --viewer" if args.viewer else " --no-viewer"
    if args.baseline is not None:
        line += f" --baseline={args.baseline}"
    if args.floor:
        line += " --floor"
    if args.baseline is not None or args.floor:
        line += f" --repeats={args.repeats}"
    return line


def build_report(args: argparse.Namespace) -> dict[str, Any]:
    from importlib.metadata import version

    viewer = Viewer(args.viewer, args.chromium, args.viewer_give_up_seconds)
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
    }
    rows: list[dict[str, Any]] = []
    fits: list[dict[str, Any]] = []
    comparisons: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-") as scratch:
        baseline_env = None
        if args.baseline is not None:
            baseline_env = revision_env(args.baseline, Path(scratch), CLEAN_ENV)
        for task in args.tasks:
            run = bench_task(task, args, viewer, Path(scratch), baseline_env)
            rows += run.rows
            fits.append(run.fit)
            comparisons += run.comparisons
            memory += run.memory
    check_targets(rows, memory)
    return {
        "command": command_line(args),
        "peak_rss": (
            "peak_mib: the peak of the summed proportional set size (PSS) of "
            "the measured command and its descendants (the .eval writer's "
            "child), sampled every 50 ms by a launcher process (a bare "
            "interpreter, so this script's own resident size, which Linux "
            "carries into a child's peak, is not counted), and at least the "
            "largest process's ru_maxrss from os.wait4 "
            "(largest_process_peak_mib); rss_sum_peak_mib sums RSS instead, "
            "counting pages the processes share twice"
        ),
        "what": (
            "wall seconds of the `tracegrade score` subprocess (start-up "
            "included), records/s, its peak RSS (wait4), bytes and number of "
            "the logs it wrote, its own timings; seconds until `inspect view` "
            "lists the first .eval log's samples; inspect eval's time "
            "extrapolated to the same records over tracegrade's (ratio)"
        ),
        "machine": machine,
        "inspect_ai": version("inspect_ai"),
        "tracegrade": tracegrade_source(),
        "baseline": args.baseline,
        "chromium": viewer.version,
        "viewer_unavailable": viewer.unavailable,
        "targets": [target.as_json() for target in TARGETS],
        "inspect_eval": fits,
        "comparisons": comparisons,
        "memory": memory,
        "rows": rows,
        "misses": [miss for row in rows for miss in row["misses"]],
    }


def met_text(row: dict[str, Any]) -> str:
    if row["met"] is None:
        return "-"
    return "met" if row["met"] else "**missed**"


def viewer_text(row: dict[str, Any]) -> str:
    seconds = row["viewer"]["seconds"]
    if seconds is not None:
        return f"{seconds:.1f}"
    return "-" if row["format"] != "eval" else "n/a"


def table_cells(
    row: dict[str, Any], with_baseline: bool = False, with_paired: bool = False
) -> list[str]:
    ours = row["tracegrade"]
    before = row.get("baseline")
    return [
        row["task"],
        f"{row['records']:,}",
        f".{row['format']}",
        f"{ours['seconds']:.1f}",
        *([f"{before['seconds']:.1f}" if before else "-"] if with_baseline else []),
        *paired_cells(row, with_baseline and with_paired),
        f"{ours['records_per_s']:,.0f}",
        f"{ours['peak_mib']:,.0f}",
        f"{ours['log_bytes'] / 1e6:,.1f}",
        str(ours["logs"]),
        viewer_text(row),
        f"{row['ratio']:,.0f}x",
        met_text(row),
    ]


COLUMNS = (
    "task",
    "records",
    "format",
    "seconds",
    "records/s",
    "peak MiB",
    "log MB",
    "logs",
    "viewer s",
    "vs inspect eval",
    "met?",
)


def paired_cells(row: dict[str, Any], with_baseline: bool) -> list[str]:
    """The alternating runs' ratios, where the report has them."""
    if not with_baseline:
        return []
    paired = row.get("paired") or {}
    return [
        f"{paired[name]:.2f}" if name in paired else "-"
        for name in ("ratio_to_baseline", "ratio_to_floor")
    ]


def table_columns(report: dict[str, Any]) -> tuple[str, ...]:
    """The table's columns: "before s" beside "seconds" with a baseline,
    and the alternating runs' ratios to it and to the floor."""
    if not report.get("baseline"):
        return COLUMNS
    if not any("paired" in row for row in report["rows"]):
        return (*COLUMNS[:4], "before s", *COLUMNS[4:])
    return (*COLUMNS[:4], "before s", "vs before", "vs floor", *COLUMNS[4:])


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The table's cells, row by row, under `table_columns(report)`."""
    with_baseline = bool(report.get("baseline"))
    with_paired = any("paired" in row for row in report["rows"])
    return [table_cells(row, with_baseline, with_paired) for row in report["rows"]]


def markdown(report: dict[str, Any], source: str) -> str:
    """The table and its misses, for READMEs to quote; `source` names the
    JSON it was rendered from, so a reader knows which run to rerun."""
    names = table_columns(report)
    lines = [
        f"<!-- Written by benchmarks/bulk_scoring.py from {source};"
        " rerun it (or --render) rather than editing. -->",
        "",
        "| " + " | ".join(names) + " |",
        "|"
        + "|".join(
            "---:" if 3 <= index < len(names) - 1 else "---"
            for index in range(len(names))
        )
        + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(report)]
    machine = report["machine"]
    lines += [
        "",
        f"`{report['command']}` on {machine['cpus']} CPUs, Python "
        f"{machine['python']}, inspect_ai {report['inspect_ai']}. Seconds are "
        "the wall time of the `tracegrade score` subprocess, start-up "
        "included; peak MiB the peak of the memory its processes hold "
        "together (their summed PSS, shared pages counted once, sampled "
        "every 50 ms, and never below the largest one's peak RSS; "
        "revisions before the `.eval` writer became a thread forked it); "
        "log MB all its logs (the `logs` "
        "parts of one run); viewer s the seconds until `inspect view` lists "
        "the first `.eval` log's samples (`-`: not timed for `.json`); "
        "vs inspect eval: `inspect eval`'s time for the same records, "
        "extrapolated from runs on "
        + " and ".join(
            f"{run['records']:,}" for run in report["inspect_eval"][0]["runs"]
        )
        + " records, over `tracegrade score`'s."
        + (
            f" before s: the same run, right after it, of git revision "
            f"`{report['baseline']}` (its `src/` first on PYTHONPATH)."
            if report.get("baseline")
            else ""
        ),
        "",
    ]
    if report.get("viewer_unavailable"):
        lines += [f"Viewer not timed: {report['viewer_unavailable']}.", ""]
    lines.append("Targets (issue #9):")
    lines += [f"- {target['issue']}" for target in report["targets"]]
    lines.append("")
    if report["misses"]:
        lines.append("Misses, with their measured causes:")
        lines += [f"- {miss}" for miss in report["misses"]]
    elif any(row["targets"] for row in report["rows"]):
        lines.append("Every target with a row here is met.")
    else:
        lines.append("No row here is at a size a target is set for.")
    lines.append("")
    for compared in report["comparisons"]:
        same = (
            "the same samples and scores"
            if compared["answers_identical"]
            else f"DIFFERENT answers ({compared['difference']})"
        )
        lines.append(
            f"- {compared['task']}, .{compared['format']}: `tracegrade score` "
            f"and `inspect eval` on the first {compared['records']:,} records "
            f"give {same}."
        )
    return "\n".join(lines) + "\n"


def show(report: dict[str, Any]) -> None:
    console = Console(width=max(Console().width, 140))
    table = Table(title="tracegrade score (wall clock, subprocess)")
    for index, column in enumerate(table_columns(report)):
        table.add_column(column, justify="left" if index < 3 else "right")
    for cells in table_rows(report):
        table.add_row(*(cell.replace("**", "") for cell in cells))
    console.print(table)

    breakdown = Table(title="Where tracegrade's time goes (seconds)")
    columns = ("task", "records", "format", "wall", "cpu", "start-up+exit")
    for column in (*columns, *STAGES, "other"):
        breakdown.add_column(column, justify="right")
    for row in report["rows"]:
        ours = row["tracegrade"]
        timings = ours["timings"]
        other = other_seconds(ours)
        breakdown.add_row(
            row["task"],
            f"{row['records']:,}",
            f".{row['format']}",
            f"{ours['seconds']:.2f}",
            f"{ours['cpu_seconds']:.2f}",
            f"{ours['startup_and_exit_seconds']:.2f}",
            *(f"{timings.get(stage, 0.0):.2f}" for stage in STAGES),
            f"{other:.2f}",
        )
    console.print(breakdown)

    for fit in report["inspect_eval"]:
        runs = ", ".join(
            f"{run['records']:,} records in {run['seconds']:.1f} s"
            for run in fit["runs"]
        )
        console.print(
            f"inspect eval {fit['task']}: {runs}; "
            f"{fit['per_sample_seconds'] * 1000:.2f} ms per sample "
            f"after {fit['startup_seconds']:.1f} s start-up."
        )
    for compared in report["comparisons"]:
        console.print(
            f"{compared['task']} .{compared['format']} on the first "
            f"{compared['records']:,} records: "
            + (
                "same answers as inspect eval"
                if compared["answers_identical"]
                else f"DIFFERENT from inspect eval: {compared['difference']}"
            )
        )
    for trace in report.get("memory", []):
        console.print(
            f"Memory, {trace['task']} .{trace['format']}: {memory_cause(trace)}",
            soft_wrap=True,
            markup=False,
        )
    if report.get("viewer_unavailable"):
        console.print(f"Viewer not timed: {report['viewer_unavailable']}")
    for miss in report["misses"]:
        console.print(f"MISSED: {miss}", soft_wrap=True, markup=False)
    console.print(f"Reproduce: {report['command']}", soft_wrap=True, markup=False)


# --- Command line ----------------------------------------------------------------


def sizes(text: str) -> list[int]:
    """A comma-separated list of record counts, smallest first."""
    values = sorted(
        {positive(part.replace("_", "")) for part in text.split(",") if part}
    )
    if not values:
        raise argparse.ArgumentTypeError("give at least one record count")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--records",
        type=sizes,
        default=list(DEFAULT_RECORDS),
        metavar="N1,N2",
        help="record counts (default 10000,100000,1000000)",
    )
    parser.add_argument("--formats", default=",".join(FORMATS), metavar="F1,F2")
    parser.add_argument("--tasks", default=",".join(INSPECT_TASKS), metavar="T1,T2")
    parser.add_argument("--inspect-records", type=positive, default=2_000)
    parser.add_argument(
        "--max-samples-per-log",
        type=positive,
        default=None,
        help="passed to tracegrade score (default: its own)",
    )
    parser.add_argument(
        "--trace-memory-records",
        type=int,
        default=100_000,
        metavar="N",
        help="find what holds memory with tracemalloc on N records (0: skip)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--viewer",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time inspect view's sample list in headless Chromium",
    )
    parser.add_argument("--viewer-give-up-seconds", type=float, default=120.0)
    parser.add_argument("--chromium", help="Chromium binary")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time each row with the tracegrade of this git revision",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time the standard-library floor (benchmarks/bulk_floor.py)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        metavar="N",
        help="alternating rounds of this code, the baseline and the floor",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="OUT")
    parser.add_argument(
        "--markdown", type=Path, metavar="OUT", help="default: --json, ending .md"
    )
    parser.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="measure nothing: show a saved report and write its table",
    )
    args = parser.parse_args(argv)
    args.tasks = split_choices(parser, "--tasks", args.tasks, INSPECT_TASKS)
    args.formats = split_choices(parser, "--formats", args.formats, FORMATS)
    if args.render is None and args.inspect_records > max(args.records):
        parser.error("--inspect-records cannot exceed the largest --records")
    if args.render is None and args.trace_memory_records > max(args.records):
        parser.error("--trace-memory-records cannot exceed the largest --records")
    return args


def split_choices(
    parser: argparse.ArgumentParser, option: str, text: str, known: Iterable[str]
) -> list[str]:
    chosen = [part for part in text.split(",") if part]
    unknown = set(chosen) - set(known)
    if unknown or not chosen:
        parser.error(f"{option}: choose from {', '.join(known)}")
    return list(dict.fromkeys(chosen))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render is not None:
        source = args.render
        report = json.loads(source.read_text(encoding="utf-8"))
    else:
        source = args.json
        report = build_report(args)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    markdown_path = args.markdown or source.with_suffix(".md")
    show(report)
    markdown_path.write_text(markdown(report, source.name), encoding="utf-8")
    identical = all(row["answers_identical"] for row in report["rows"])
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
