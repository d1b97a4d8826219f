"""`tracegrade compare` memory against the number of changed pairs.

BASE is `--samples` stage records that all pass; each NEW is the same with
its first `--changed` share regressed (a required document lost), both
logged by `tracegrade score`. `compare --json` and `--html` then run through
`measure.run_measured`, so each peak is the command's own. Flat memory means
the peaks at none and at all pairs changed are about the same.
`--baseline REV` also runs git revision REV on the largest NEW; `--work DIR`
keeps the logs and reuses them.

    python benchmarks/compare_scale.py [--samples 1000000]
        [--changed 0,0.5,1] [--baseline REV] [--work DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.measure import (  # noqa: E402
    CLEAN_ENV,
    machine,
    revision_env,
    run_measured,
    tracegrade,
)


def write_records(path: Path, samples: int, regressed: int) -> None:
    """Stage records that pass, the first `regressed` of them missing one
    required document (a regression against the passing run)."""
    with path.open("w", encoding="utf-8") as out:
        for number in range(samples):
            required = [f"doc-{number % 997:04d}", f"ref-{(number * 7) % 389:04d}"]
            context = [*required, f"other-{(number * 13) % 211:04d}"]
            if number < regressed:
                context = context[1:]
            record = {"required": required, "context": context, "correct": True}
            out.write(json.dumps({"id": f"run-{number:08d}", "input": record}) + "\n")


def score(records: Path, log_dir: Path) -> float:
    command = tracegrade("score", "stage_diagnosis", records, "--log-dir", log_dir)
    return run_measured([*command, "--no-progress"], env=CLEAN_ENV).seconds


def compare(
    base: Path,
    new: Path,
    work: Path,
    regressed: int,
    env: dict[str, str] | None = None,
    label: str = "this tree",
) -> list[dict[str, Any]]:
    rows = []
    for output, name in (("--json", "compare.json"), ("--html", "compare.html")):
        path = work / name
        options = ["--html", path, "--force"] if output == "--html" else ["--json"]
        measured = run_measured(
            tracegrade("compare", base, new, *options),
            env=env or CLEAN_ENV,
            stdout_to=path if output == "--json" else None,
            exit_codes=(0, 3),
        )
        listed = None
        if output == "--json":
            # Only the count is kept: the parsed JSON (gigabytes at a million
            # pairs) is dropped before the next command runs.
            with path.open("rb") as read:
                (pair,) = json.load(read)["pairs"]
            listed = len(pair["stage_diagnosis"][0]["regressions"])
            del pair
        rows.append(
            {
                "code": label,
                "output": output,
                "changed": regressed,
                "seconds": round(measured.seconds, 1),
                "peak_mib": round(measured.peak_mib, 1),
                "output_mb": round(path.stat().st_size / 1e6, 1),
                "listed": listed,
                "correct": None if listed is None else listed == regressed,
            }
        )
        path.unlink()
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument(
        "--changed",
        default="0,0.5,1",
        help="comma-separated shares of the samples that regress in NEW",
    )
    parser.add_argument("--baseline", metavar="REV", default=None)
    parser.add_argument("--work", type=Path, metavar="DIR", default=None)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    args.shares = [float(share) for share in args.changed.split(",")]
    if args.samples < 1 or not all(0 <= share <= 1 for share in args.shares):
        parser.error("--samples must be positive and --changed shares in [0, 1]")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict[str, Any]] = []
    scoring: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tracegrade-compare-scale-") as scratch:
        work = Path(scratch) if args.work is None else args.work
        work.mkdir(parents=True, exist_ok=True)
        news = []
        changed = [round(share * args.samples) for share in args.shares]
        for name, regressed in [("base", 0), *((f"new-{n}", n) for n in changed)]:
            logs = work / name
            if not logs.is_dir():
                records = work / f"{name}.jsonl"
                write_records(records, args.samples, regressed)
                scoring[name] = round(score(records, logs), 1)
                records.unlink()
            if name != "base":
                news.append((regressed, logs))
        base = work / "base"
        scratch_dir = Path(scratch)
        for regressed, new in news:
            rows += compare(base, new, scratch_dir, regressed)
            print(json.dumps(rows[-2:]), flush=True)
        if args.baseline is not None:
            regressed, new = news[-1]
            env = revision_env(args.baseline, scratch_dir, CLEAN_ENV)
            rows += compare(
                base, new, scratch_dir, regressed, env, f"git {args.baseline}"
            )
            print(json.dumps(rows[-2:]), flush=True)
    result = {
        "command": "python benchmarks/compare_scale.py"
        f" --samples={args.samples} --changed={args.changed}"
        + (f" --baseline={args.baseline}" if args.baseline else "")
        + (f" --work={args.work}" if args.work else ""),
        "machine": machine(),
        "samples": args.samples,
        "scoring_seconds": scoring,
        "rows": rows,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for row in rows:
        print(
            f"{row['code']:>14} {row['output']:>7} changed {row['changed']:>9,}: "
            f"{row['seconds']:7.1f} s, peak {row['peak_mib']:8,.0f} MiB, "
            f"output {row['output_mb']:8,.1f} MB"
        )
    print(f"Reproduce: {result['command']}")
    return 0 if all(row["correct"] in (None, True) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
