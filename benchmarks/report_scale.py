"""`tracegrade report` on 100,000 samples in one log, and 1,000,000 in parts.

Logs are written as `tracegrade score` writes them: `.eval` archives by
`EvalArchive`, each sample a copy of a real `inspect eval
tracegrade/stage_diagnosis` sample with its own record and the very
`Score` tracegrade gives it (`scripts/bulk_eval_log.py` makes them). The
pooled case is one run split into parts of at most `--part-size` samples:
separate logs sharing `eval.run_id`, each with `eval.metadata
["tracegrade_part"]`, written two at a time, one per core.

Each report is `tracegrade report --json` as a subprocess, so interpreter
start-up and imports count. Its wall-clock seconds and its peak memory
are its own, measured through `benchmarks.measure`'s launcher: this
script holds Inspect and the writers' templates, which a child started
from it directly would count as its own. Its figures are checked
against the stages counted while the samples were written: a fast wrong
report would mean nothing.

`--baseline REV` also runs the same command with git revision REV's
`src/` first on PYTHONPATH (as `bulk_scoring.py --baseline` does) on the
single log, in alternating pairs (`--repeat` of them, the order swapped
each pair, so that load from other work on a shared machine falls on
both alike), each pair with the load average when it ran; its figures
are checked as this revision's are. The ratios are of the best times
and the highest peaks.

    python benchmarks/report_scale.py [--samples 100000] [--pooled 1000000]
        [--part-size 75000] [--repeat 3] [--baseline REV] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for place in (ROOT, ROOT / "scripts"):
    if str(place) not in sys.path:
        sys.path.insert(0, str(place))

from inspect_ai.log import EvalLog  # noqa: E402
from pydantic_core import to_json, to_jsonable_python  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.measure import TRACEGRADE, revision_env  # noqa: E402
from benchmarks.measure import run_measured as run_launched  # noqa: E402
from bulk_eval_log import (  # noqa: E402
    Template,
    count_sample,
    make_template,
    sample_id,
    synthetic_header,
    synthetic_sample,
)
from tracegrade.bulk.evallog import EvalArchive, sample_summary  # noqa: E402

TARGET_SECONDS = 5.0
TARGET_SECONDS_AT = 100_000
TARGET_PEAK_MIB = 400.0
STAGES = ("retrieval", "generation", "pass", "unresolved")
CLEAN_ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("INSPECT_")
}
TARGET_RATIO = 1.1
"""At most this many times the baseline revision's time and peak memory."""


def part_header(
    template: Template,
    first: int,
    count: int,
    stages: Counter[str],
    part: tuple[int, int] | None,
    run_id: str | None,
) -> EvalLog:
    """The header of a log of samples `first` to `first + count - 1`."""
    header = synthetic_header(template, count, stages)
    dataset = header.eval.dataset.model_copy(
        update={"sample_ids": [sample_id(first + i) for i in range(count)]}
    )
    update: dict[str, Any] = {"dataset": dataset}
    if part is not None:
        update["metadata"] = {"tracegrade_part": {"index": part[0], "count": part[1]}}
    if run_id is not None:
        update["run_id"] = run_id
    return header.model_copy(update={"eval": header.eval.model_copy(update=update)})


def write_log(
    template: Template,
    location: Path,
    first: int,
    count: int,
    part: tuple[int, int] | None = None,
    run_id: str | None = None,
) -> dict[str, int]:
    """Write one log; its counts (`count_sample`): stages, lucky answers,
    recalls."""
    stages: Counter[str] = Counter()
    with EvalArchive(location) as archive:
        archive.start(template.header.eval, template.header.plan)
        for index in range(first, first + count):
            sample = synthetic_sample(template.sample, index)
            count_sample(stages, sample)
            data = to_json(
                to_jsonable_python(sample, exclude_none=True), exclude_none=True
            )
            archive.add_sample(data, sample_summary(sample))
        archive.finish(
            part_header(template, first, count, stages, part, run_id),
            template.header.reductions,
        )
    return dict(stages)


def write_parts(
    template: Template, log_dir: Path, total: int, part_size: int
) -> tuple[list[Path], Counter[str]]:
    """One run of `total` samples as parts, written two at a time."""
    log_dir.mkdir(parents=True)
    count = -(-total // part_size)
    run_id = template.header.eval.run_id
    width = len(str(count))
    stages: Counter[str] = Counter()
    paths = []
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        jobs = []
        for index in range(1, count + 1):
            first = (index - 1) * part_size
            path = log_dir / f"stage-diagnosis-part{index:0{width}d}of{count}.eval"
            paths.append(path)
            jobs.append(
                pool.submit(
                    write_log,
                    template,
                    path,
                    first,
                    min(part_size, total - first),
                    (index, count),
                    run_id,
                )
            )
        for job in jobs:
            stages.update(job.result())
    return paths, stages


def run_measured(
    command: Sequence[str], env: dict[str, str] | None = None
) -> tuple[float, float, float, str, str]:
    """Wall seconds, CPU seconds, peak memory (MiB), stdout and stderr of
    one subprocess, its peak its own (see `benchmarks.measure`)."""
    measured = run_launched(command, env=env or CLEAN_ENV)
    return (
        measured.seconds,
        measured.cpu_seconds,
        measured.peak_mib,
        measured.stdout,
        measured.stderr,
    )


def figures_match(report: dict[str, Any], samples: int, stages: Counter[str]) -> bool:
    """The report's stage figures are the counts made while writing."""
    (summary,) = report["stage_diagnosis"]
    return bool(
        summary["runs"] == samples
        and all(summary["stages"][s]["count"] == stages[s] for s in STAGES)
        and summary["lucky"]["count"] == stages["lucky"]
        and sum(log["samples"] for log in report["logs"]) == samples
    )


def measure(
    case: str,
    paths: Sequence[Path],
    given: Sequence[Path],
    samples: int,
    stages: Counter[str],
    repeat: int,
    write_seconds: float,
) -> dict[str, Any]:
    runs = []
    report: dict[str, Any] = {}
    warnings = ""
    for _ in range(repeat):
        seconds, cpu, peak, stdout, warnings = run_measured(report_command(given))
        report = json.loads(stdout)
        runs.append(
            {
                "seconds": round(seconds, 3),
                "cpu_seconds": round(cpu, 3),
                "peak_mib": round(peak, 1),
            }
        )
    seconds = min(run["seconds"] for run in runs)
    peak = max(run["peak_mib"] for run in runs)
    return {
        "case": case,
        "samples": samples,
        "logs": len(paths),
        "logs_read": len(report["logs"]),
        "log_bytes": sum(path.stat().st_size for path in paths),
        "write_seconds": round(write_seconds, 1),
        "runs": runs,
        "seconds": seconds,
        "peak_mib": peak,
        "figures_match": figures_match(report, samples, stages),
        "part_warnings": warnings.strip(),
        "met": {
            "seconds": seconds <= TARGET_SECONDS
            if samples <= TARGET_SECONDS_AT
            else None,
            "peak": peak <= TARGET_PEAK_MIB,
        },
    }


def report_command(given: Sequence[Path]) -> list[str]:
    return [sys.executable, "-c", TRACEGRADE, "report", "--json", *map(str, given)]


def measured_run(
    given: Sequence[Path],
    env: dict[str, str] | None,
    samples: int,
    stages: Counter[str],
) -> dict[str, Any]:
    load = os.getloadavg()[0]
    seconds, cpu, peak, stdout, _ = run_measured(report_command(given), env)
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "peak_mib": round(peak, 1),
        "load_average": round(load, 2),
        "figures_match": figures_match(json.loads(stdout), samples, stages),
    }


def against_revision(
    revision: str,
    path: Path,
    samples: int,
    stages: Counter[str],
    repeat: int,
    scratch: Path,
) -> dict[str, Any]:
    """This revision and `revision` on one log, in `repeat` alternating
    pairs; each run's figures are checked."""
    env = revision_env(revision, scratch, CLEAN_ENV)
    pairs: list[dict[str, Any]] = []
    for number in range(repeat):
        order = ("new", "baseline") if number % 2 == 0 else ("baseline", "new")
        pair = {
            side: measured_run(
                [path], env if side == "baseline" else None, samples, stages
            )
            for side in order
        }
        pairs.append({"first": order[0], **pair})
    best = {
        side: {
            "seconds": min(pair[side]["seconds"] for pair in pairs),
            "cpu_seconds": min(pair[side]["cpu_seconds"] for pair in pairs),
            "peak_mib": max(pair[side]["peak_mib"] for pair in pairs),
        }
        for side in ("new", "baseline")
    }
    ratios = {
        key: round(best["new"][key] / best["baseline"][key], 3)
        for key in ("seconds", "cpu_seconds", "peak_mib")
    }
    return {
        "case": f"one log, against {revision}",
        "revision": revision,
        "samples": samples,
        "pairs": pairs,
        "best": best,
        "ratios": ratios,
        "target_ratio": TARGET_RATIO,
        "met": {
            "seconds": ratios["seconds"] <= TARGET_RATIO,
            "peak": ratios["peak_mib"] <= TARGET_RATIO,
        },
        "figures_match": all(
            pair[side]["figures_match"]
            for pair in pairs
            for side in ("new", "baseline")
        ),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument(
        "--pooled", type=int, default=1_000_000, help="0 skips the pooled case"
    )
    parser.add_argument("--part-size", type=int, default=75_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run git revision REV on the single log, in alternating pairs",
    )
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    if args.samples < 1 or args.part_size < 1 or args.repeat < 1 or args.pooled < 0:
        parser.error("sizes and --repeat must be positive (--pooled may be 0)")
    return args


def command_line(args: argparse.Namespace) -> str:
    return (
        "python benchmarks/report_scale.py"
        f" --samples={args.samples} --pooled={args.pooled}"
        f" --part-size={args.part_size} --repeat={args.repeat}"
        + (f" --baseline={args.baseline}" if args.baseline else "")
    )


def show(result: dict[str, Any]) -> None:
    console = Console(width=max(Console().width, 110))
    table = Table(title="tracegrade report --json (wall clock, subprocess)")
    for column in ("case", "samples", "logs", "seconds", "peak MiB", "figures"):
        table.add_column(column, justify="left" if column == "case" else "right")
    for row in result["rows"]:
        if "skipped" in row:
            table.add_row(row["case"], f"{row['samples']:,}", "", "skipped", "", "")
            continue
        table.add_row(
            row["case"],
            f"{row['samples']:,}",
            str(row.get("logs", 1)),
            f"{row['seconds']:.2f}",
            f"{row['peak_mib']:,.0f}",
            "match" if row["figures_match"] else "DIFFER",
        )
    console.print(table)
    before = result["baseline"]
    if before is not None:
        pairs = Table(title=f"against {before['revision']}, alternating pairs")
        for column in (
            "pair",
            "load",
            "new s",
            "new CPU s",
            "new MiB",
            "base s",
            "base CPU s",
            "base MiB",
        ):
            pairs.add_column(column, justify="right")
        for number, pair in enumerate(before["pairs"], start=1):
            new, base = pair["new"], pair["baseline"]
            pairs.add_row(
                f"{number} ({pair['first']} first)",
                f"{new['load_average']:.1f}/{base['load_average']:.1f}",
                f"{new['seconds']:.2f}",
                f"{new['cpu_seconds']:.2f}",
                f"{new['peak_mib']:,.0f}",
                f"{base['seconds']:.2f}",
                f"{base['cpu_seconds']:.2f}",
                f"{base['peak_mib']:,.0f}",
            )
        console.print(pairs)
        ratios = before["ratios"]
        console.print(
            f"Best of each against {before['revision']}: time x{ratios['seconds']}"
            f" (CPU x{ratios['cpu_seconds']}), peak x{ratios['peak_mib']}; at most"
            f" x{before['target_ratio']}: time {_met(before['met']['seconds'])},"
            f" peak {_met(before['met']['peak'])}."
        )
    for row in result["rows"]:
        if "skipped" in row:
            console.print(f"{row['case']}: skipped ({row['skipped']}).")
            continue
        met = row["met"]
        said = [f"peak at most {TARGET_PEAK_MIB:.0f} MiB: " + _met(met["peak"])]
        if met["seconds"] is not None:
            said.insert(0, f"at most {TARGET_SECONDS:.0f} s: " + _met(met["seconds"]))
        console.print(f"{row['case']}: {'; '.join(said)}.")
    console.print(f"Reproduce: {result['command']}", soft_wrap=True)


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict[str, Any]] = []
    before = None
    with tempfile.TemporaryDirectory(prefix="tracegrade-report-scale-") as scratch:
        work = Path(scratch)
        template = make_template(work)

        started = time.perf_counter()
        one = work / "one" / "stage-diagnosis-bulk.eval"
        one.parent.mkdir()
        stages = Counter(write_log(template, one, 0, args.samples))
        written = time.perf_counter() - started
        rows.append(
            measure("one log", [one], [one], args.samples, stages, args.repeat, written)
        )
        if args.baseline:
            before = against_revision(
                args.baseline, one, args.samples, stages, args.repeat, work
            )
        one.unlink()

        if args.pooled:
            started = time.perf_counter()
            parts, stages = write_parts(
                template, work / "parts", args.pooled, args.part_size
            )
            written = time.perf_counter() - started
            rows.append(
                measure(
                    "parts of one run",
                    parts,
                    [work / "parts"],
                    args.pooled,
                    stages,
                    1,
                    written,
                )
            )
        else:
            rows.append(
                {"case": "parts of one run", "samples": 0, "skipped": "--pooled 0"}
            )
    result = {
        "command": command_line(args),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_end": [round(load, 2) for load in os.getloadavg()],
        },
        "targets": {
            "seconds": TARGET_SECONDS,
            "seconds_at_samples": TARGET_SECONDS_AT,
            "peak_mib": TARGET_PEAK_MIB,
        },
        "rows": rows,
        "baseline": before,
    }
    show(result)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    checked = [*rows, *([before] if before else [])]
    return 0 if all(row.get("figures_match", True) for row in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
