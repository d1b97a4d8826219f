"""The README states what the repo does; these keep the two from drifting."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_readme_carries_the_deviations_table_verbatim() -> None:
    deviations = (ROOT / "parity" / "DEVIATIONS.md").read_text("utf-8")
    rows = table_rows(deviations)

    assert len(rows) > 3
    start = README.index(rows[0])
    assert README[start:].splitlines()[: len(rows)] == rows


def test_readme_case_tables_are_the_packaged_documents_cases() -> None:
    for name in ("stage_diagnosis", "ordered_extraction"):
        fixture = ROOT / "src" / "tracegrade" / "data" / f"{name}.jsonl"
        cases = {
            case["id"]: case
            for case in map(json.loads, fixture.read_text("utf-8").splitlines())
        }
        rows = [
            row
            for row in table_rows(README)
            if re.match(r"\| `[a-z-]+` \| `\{", row) and row.split("`")[1] in cases
        ]
        assert rows, name
        for row in rows:
            case = cases[row.split("`")[1]]
            compact = json.dumps(case["input"], separators=(",", ":"))
            expected = json.dumps(case["expected"], separators=(",", ":"))
            assert f"`{compact}`" in row
            assert f"`{expected}`" in row
            assert row.rstrip(" |").endswith(case["reason"])


def test_readme_commands_name_existing_files() -> None:
    for path in re.findall(
        r"(?:python3? |bash )((?:benchmarks|scripts|examples|\.ci)/[\w./-]+)", README
    ):
        assert (ROOT / path).exists(), path


def benchmark(name: str) -> Any:
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())


def test_readme_speed_figures_are_the_committed_benchmark_run() -> None:
    for row in benchmark("throughput")["rows"]:
        if row["target"] is None:
            continue
        line = (
            f"| {row['python_records_per_s']:,.0f} | {row['node_records_per_s']:,.0f} |"
        )
        assert line in README, line
        ratio = row["ratio"]
        shown = f"{ratio:.2f}x" if ratio < 1 else f"{ratio:.1f}x"
        assert f"{line} {shown} |" in README, shown
    # The bulk table is the one the benchmark renders from its own report.
    rendered = (ROOT / "benchmarks" / "results" / "bulk_scoring.md").read_text()
    table = [line for line in rendered.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(benchmark("bulk_scoring")["rows"])
    for line in table:
        assert line in README, line
    _bulk_prose_is_the_committed_run(" ".join(README.split()))
    viewer = benchmark("viewer")
    assert f"up to {viewer['limit_samples']:,} samples" in README
    assert f"({viewer['limit_samples_deep_link']:,} when a sample" in README
    small, large = benchmark("check_memory")["rows"]
    assert f"{small['peak_mib']:.1f} MiB on 100,000 lines" in README
    assert f"{large['peak_mib']:.1f} MiB on 1,000,000 lines" in README
    one, parts = benchmark("report_scale")["rows"]
    before = benchmark("report_scale")["baseline"]
    slowest = max(run["seconds"] for run in one["runs"])
    flat = " ".join(README.split())
    for said in (
        f"in one `.eval` log in {one['seconds']:.2f} s (best of three runs, "
        f"the slowest {slowest:.2f} s) at {one['peak_mib']:.1f} MiB",
        f"{parts['logs']} parts of one run in {parts['seconds']:.1f} s at "
        f"{parts['peak_mib']:.1f} MiB",
        f"took {before['seconds']:.0f} s and {before['peak_mib']:,.0f} MiB",
    ):
        assert said in flat, said


def _bulk_prose_is_the_committed_run(flat: str) -> None:
    """The figures the bulk paragraph quotes, from the benchmark's JSON."""
    report = benchmark("bulk_scoring")
    run = {(row["task"], row["records"], row["format"]): row for row in report["rows"]}

    def ours(task: str, records: int, log_format: str) -> dict[str, Any]:
        found: dict[str, Any] = run[task, records, log_format]["tracegrade"]
        return found

    stage, extraction = "stage_diagnosis", "ordered_extraction"
    said = (
        f"1,000,000 stage records in {ours(stage, 1_000_000, 'eval')['seconds']:.1f} s "
        f"(`.eval`) and {ours(stage, 1_000_000, 'json')['seconds']:.1f} s (`.json`), "
        f"100,000 in {ours(stage, 100_000, 'eval')['seconds']:.1f} s and "
        f"{ours(stage, 100_000, 'json')['seconds']:.1f} s, and peaks of "
        f"{ours(stage, 1_000_000, 'eval')['peak_mib']:.0f} and "
        f"{ours(stage, 1_000_000, 'json')['peak_mib']:.0f} MiB (stage) and "
        f"{ours(extraction, 1_000_000, 'eval')['peak_mib']:.0f} and "
        f"{ours(extraction, 1_000_000, 'json')['peak_mib']:.0f} MiB (extraction)"
    )
    assert said in flat, said
    if "All three are met" in flat:
        assert all(target["met"] for row in report["rows"] for target in row["targets"])
    # The target with the least room, and the slowest sample list.
    margin, closest = min(
        (
            (1 - target["value"] / target["at_most"], row)
            for row in report["rows"]
            for target in row["targets"]
        ),
        key=lambda room: room[0],
    )
    assert f"{round(100 * margin)}% under it" in flat
    kind = "stage" if closest["task"] == stage else "extraction"
    closest_format = f"`.{closest['format']}`"
    assert f"{closest['records']:,} {kind} records as {closest_format}" in flat
    slowest = max(row["viewer"]["seconds"] or 0 for row in report["rows"])
    assert f"slowest sample list in the viewer took {slowest:.1f} s" in flat
