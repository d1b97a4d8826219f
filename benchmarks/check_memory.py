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
    measured = run_measured(
        [*command, "--max-listed", "0", "--no-progress"], exit_codes=(0, 1)
    )
    lines = json.loads(measured.stdout)["lines"]
    return {
        "lines": lines,
        "bytes": path.stat().st_size,
        "seconds": measured.seconds,
        "lines_per_s": lines / measured.seconds,
        "peak_mib": measured.peak_mib,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tracegrade-check-") as scratch:
        for count in (args.small, args.large):
            path = Path(scratch) / f"runs-{count}.jsonl"
            write_records(path, count)
            rows.append(measure(path))
    command = "python benchmarks/check_memory.py"
    command += f" --small={args.small} --large={args.large}"
    # The id file: 16-byte digest and line number per id, in a B-tree.
    id_file_mib = rows[1]["lines"] * 28 / 2**20
    report = {"command": command, "machine": machine(), "rows": rows}
    for row in rows:
        print(
            f"{row['lines']:>9,} lines ({row['bytes'] / 1e6:,.0f} MB):"
            f" {row['seconds']:.1f} s, {row['lines_per_s']:,.0f} lines/s,"
            f" peak {row['peak_mib']:.1f} MiB"
        )
    growth = rows[1]["peak_mib"] - rows[0]["peak_mib"]
    print(
        f"Growth for {args.large / args.small:.0f}x the lines: {growth:+.1f} MiB; "
        f"the sample ids went to a temporary SQLite file (about {id_file_mib:.0f} "
        "MiB on disk)."
    )
    print(f"Reproduce: {command}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
