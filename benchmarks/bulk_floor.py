"""The one-core floor of `tracegrade score` with the standard library alone.

    python benchmarks/bulk_floor.py RECORDS.jsonl [--task stage_diagnosis]
        [--json OUT]

Per record: parse the line (`json.loads`), apply the core rule
(`diagnose_stage` or `grade_extraction`), `json.dumps` a sample of about
the size `tracegrade score` writes, and deflate it into a zip member, as a
`.eval` log holds one a sample. No Inspect, no metrics, no results file:
what the work costs at the least, on one core, to set `score` beside.
`bulk_scoring.py --floor` times it on its own records, beside each row.
"""

from __future__ import annotations

import argparse
import json
import time
import zipfile
from pathlib import Path
from typing import Any

from tracegrade.core import InvalidRecord, diagnose_stage, grade_extraction

SAMPLE_PADDING = 1500
"""Characters a logged sample holds beside its record: messages, the
score's metadata, timestamps and ids (about those of a `.eval` sample)."""


def floor(path: Path, task: str, archive: Path) -> dict[str, float]:
    """Seconds of each phase over every line of `path`, and their CPU."""
    rule = diagnose_stage if task == "stage_diagnosis" else grade_extraction
    phases = {"parse": 0.0, "rule": 0.0, "dumps": 0.0, "deflate": 0.0}
    started, cpu = time.perf_counter(), time.process_time()
    with (
        path.open(encoding="utf-8") as lines,
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out,
    ):
        for number, line in enumerate(lines, start=1):
            begun = time.perf_counter()
            case = json.loads(line)
            parsed = time.perf_counter()
            result: Any
            try:
                result = rule(case["input"])
            except InvalidRecord as error:
                result = {"error": str(error)}
            ruled = time.perf_counter()
            sample = {
                "id": case["id"],
                "input": case["input"],
                "score": result,
                "padding": "x" * SAMPLE_PADDING,
            }
            data = json.dumps(sample).encode("utf-8")
            dumped = time.perf_counter()
            out.writestr(f"samples/{number}_epoch_1.json", data)
            done = time.perf_counter()
            phases["parse"] += parsed - begun
            phases["rule"] += ruled - parsed
            phases["dumps"] += dumped - ruled
            phases["deflate"] += done - dumped
    phases["seconds"] = time.perf_counter() - started
    phases["cpu_seconds"] = time.process_time() - cpu
    return {name: round(value, 3) for name, value in phases.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path, help="a fixture-format JSON Lines file")
    parser.add_argument(
        "--task",
        choices=("stage_diagnosis", "ordered_extraction"),
        default="stage_diagnosis",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    archive = args.records.with_name(args.records.name + ".floor.zip")
    try:
        measured = floor(args.records, args.task, archive)
    finally:
        archive.unlink(missing_ok=True)
    report = {"task": args.task, "records": str(args.records), **measured}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
