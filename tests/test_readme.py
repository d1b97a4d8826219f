"""The README states what the repo does; these keep the two from drifting."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
