"""`tracegrade check` memory on a million lines against a hundred thousand.

The same kind of records, only more: if the check streams, the peaks match
(each its own, through `measure.run_measured`). The ids it must remember to
find repeats go to a temporary SQLite file, not memory.

    python benchmarks/check_memory.py [--small 100000] [--large 1000000]
        [--json OUT]
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

from benchmarks.measure import machine, run_measured, tracegrade  # noqa: E402


def write_records(path: Path, count: int) -> None:
    """Stage records, a few of them out of contract, all ids distinct."""
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            record: dict[str, Any] = {
                "required": [f"doc-{number % 997:04d}", f"doc-{number % 389:04d}"],
                "context": [
                    f"doc-{(number * 7) % 997:04d}",
                    f"doc-{number % 389:04d}",
                    "doc-0001",
                ],
                "correct": number % 3 == 0,
            }
            if number % 1000 == 999:
                del record["correct"]
            out.write(json.dumps({"id": f"run-{number:08d}", "input": record}) + "\n")


def measure(path: Path) -> dict[str, Any]:
    command = tracegrade("check", "stage_diagnosis", path, "--json")
    command += ["--max-listed", "0", "--no-progress"]
    measured = run_measured(command, exit_codes=(0, 1))
    summary = json.loads(measured.stdout)
    seconds = measured.seconds
    return {
        "lines": summary["lines"],
        "bytes": path.stat().st_size,
        "seconds": seconds,
        "lines_per_s": summary["lines"] / seconds,
        "peak_mib": measured.peak_mib,
        "problems": summary["data_errors"],
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, metavar="OUT")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tracegrade-check-") as scratch:
        for count in (args.small, args.large):
            path = Path(scratch) / f"runs-{count}.jsonl"
            write_records(path, count)
            rows.append(measure(path))
            path.unlink()
    small, large = rows
    report = {
        "command": (
            f"python benchmarks/check_memory.py --small={args.small} "
            f"--large={args.large}"
        ),
        "machine": machine(),
        "rows": rows,
        "growth_mib": large["peak_mib"] - small["peak_mib"],
        # The id file: 16-byte digest and line number per id, in a B-tree.
        "id_file_estimate_mib": large["lines"] * 28 / 2**20,
    }
    for row in rows:
        print(
            f"{row['lines']:>9,} lines ({row['bytes'] / 1e6:,.0f} MB):"
            f" {row['seconds']:.1f} s, {row['lines_per_s']:,.0f} lines/s,"
            f" peak {row['peak_mib']:.1f} MiB, {row['problems']:,} problems"
        )
    print(
        f"Growth for {large['lines'] / small['lines']:.0f}x the lines: "
        f"{report['growth_mib']:+.1f} MiB; the sample ids went to a temporary "
        f"SQLite file (about {report['id_file_estimate_mib']:.0f} MiB on disk)."
    )
    print(f"Reproduce: {report['command']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
