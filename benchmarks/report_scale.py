"""`tracegrade report` on 100,000 samples in one log, and 1,000,000 in parts.

Each report is a measured subprocess (`measure.run_measured`), its figures
checked against the scored results; `--baseline REV` also runs revision REV's
`src/` on the one log, in `--repeat` pairs whose order alternates.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.measure import (  # noqa: E402
    CLEAN_ENV,
    machine,
    revision_env,
    run_measured,
    tracegrade,
    write_stage_records,
)

STAGES = ("retrieval", "generation", "pass", "unresolved")


def score(work: Path, samples: int, part_size: int) -> tuple[Path, Counter[str]]:
    """Log `samples` stage records with `tracegrade score`; the log directory
    and the stages (and lucky answers) its results count."""
    records, logs = work / f"records-{samples}.jsonl", work / f"logs-{samples}"
    write_stage_records(records, samples)
    run_measured(
        tracegrade(
            "score",
            "stage_diagnosis",
            records,
            "--log-dir",
            logs,
            "--max-samples-per-log",
            str(part_size),
            "--no-progress",
        ),
        env=CLEAN_ENV,
    )
    (results,) = logs.glob("*.results.jsonl")
    counts: Counter[str] = Counter()
    with records.open() as given, results.open() as scored:
        for record, result in zip(given, scored, strict=True):
            stage = json.loads(result)["value"]
            counts.update(("runs", stage))
            counts["lucky"] += (
                stage == "retrieval" and json.loads(record)["input"]["correct"]
            )
    records.unlink()
    return logs, counts


def report(logs: Path, counts: Counter[str], env: dict[str, str]) -> dict[str, Any]:
    """One measured `tracegrade report --json`, its figures checked."""
    load = os.getloadavg()[0]
    measured = run_measured(tracegrade("report", "--json", logs), env=env)
    found = json.loads(measured.stdout)
    (summary,) = found["stage_diagnosis"]
    return {
        "seconds": round(measured.seconds, 3),
        "cpu_seconds": round(measured.cpu_seconds, 3),
        "peak_mib": round(measured.peak_mib, 1),
        "load_average": round(load, 2),
        "logs": len(found["logs"]),
        "figures_match": summary["runs"] == counts["runs"]
        and all(summary["stages"][s]["count"] == counts[s] for s in STAGES)
        and summary["lucky"]["count"] == counts["lucky"],
    }


def case(name: str, logs: Path, counts: Counter[str], repeat: int) -> dict[str, Any]:
    runs = [report(logs, counts, CLEAN_ENV) for _ in range(repeat)]
    return {
        "case": name,
        "samples": counts["runs"],
        "logs": runs[0]["logs"],
        "log_bytes": sum(path.stat().st_size for path in logs.glob("*.eval")),
        "runs": runs,
        "seconds": min(run["seconds"] for run in runs),
        "peak_mib": max(run["peak_mib"] for run in runs),
        "figures_match": all(run["figures_match"] for run in runs),
    }


def against(
    revision: str, logs: Path, counts: Counter[str], repeat: int
) -> dict[str, Any]:
    """This tree and `revision` in `repeat` pairs, the order swapped each pair."""
    env = revision_env(revision, logs.parent, CLEAN_ENV)
    pairs: list[dict[str, Any]] = []
    for number in range(repeat):
        order = ("new", "baseline") if number % 2 == 0 else ("baseline", "new")
        sides = {
            side: report(logs, counts, env if side == "baseline" else CLEAN_ENV)
            for side in order
        }
        pairs.append({"first": order[0], **sides})
    best = {
        side: {
            "seconds": min(pair[side]["seconds"] for pair in pairs),
            "cpu_seconds": min(pair[side]["cpu_seconds"] for pair in pairs),
            "peak_mib": max(pair[side]["peak_mib"] for pair in pairs),
        }
        for side in ("new", "baseline")
    }
    return {
        "revision": revision,
        "samples": counts["runs"],
        "pairs": pairs,
        "best": best,
        "ratios": {
            k: round(best["new"][k] / best["baseline"][k], 3) for k in best["new"]
        },
        "figures_match": all(
            p[s]["figures_match"] for p in pairs for s in ("new", "baseline")
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--pooled", type=int, default=1_000_000, help="0: none")
    parser.add_argument("--part-size", type=int, default=75_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV")
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    if min(args.samples, args.part_size, args.repeat) < 1 or args.pooled < 0:
        parser.error("sizes and --repeat must be positive (--pooled may be 0)")
    rows, before = [], None
    with tempfile.TemporaryDirectory(prefix="tracegrade-report-scale-") as scratch:
        logs, counts = score(Path(scratch), args.samples, args.samples)
        rows.append(case("one log", logs, counts, args.repeat))
        if args.baseline:
            before = against(args.baseline, logs, counts, args.repeat)
        if args.pooled:
            logs, counts = score(Path(scratch), args.pooled, args.part_size)
            rows.append(case("parts of one run", logs, counts, 1))
    result = {
        "command": "python benchmarks/report_scale.py"
        f" --samples={args.samples} --pooled={args.pooled}"
        f" --part-size={args.part_size} --repeat={args.repeat}"
        + (f" --baseline={args.baseline}" if args.baseline else ""),
        "machine": machine(),
        "rows": rows,
        "baseline": before,
    }
    for row in rows:
        print(
            f"{row['case']:>16}: {row['samples']:>9,} samples in {row['logs']} logs,"
            f" {row['seconds']:.2f} s, peak {row['peak_mib']:,.0f} MiB,"
            f" figures {'match' if row['figures_match'] else 'DIFFER'}"
        )
    if before is not None:
        print(f"against {before['revision']}, best of each: {before['ratios']}")
    print(f"Reproduce: {result['command']}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    checked = [*rows, *([before] if before else [])]
    return 0 if all(row["figures_match"] for row in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
