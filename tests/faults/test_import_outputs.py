"""`tracegrade import`: whole or absent. The three commands share one writer, so
a streaming one (ragas) holds it: on input bad only far into the file, it exits
1 with one line naming the file, line and field, and leaves no output and no
changed input; asked to write over an input, it refuses before reading."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands import run_tracegrade
from tests.faults.conftest import assert_no_final_outputs, one_clear_line, snapshot

GOOD_ROWS = 2_000


def write_dataset(directory: Path, bad: bool) -> list[str]:
    rows = [
        {"retrieved_context_ids": [f"D{n}"], "reference_context_ids": [f"D{n}"]}
        for n in range(GOOD_ROWS)
    ]
    if bad:
        rows.append({"retrieved_context_ids": ["D1"], "reference_context_ids": [True]})
    path = directory / "dataset.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["import", "ragas", "dataset.jsonl"]


def test_an_import_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    args = write_dataset(tmp_path, bad=False)
    result = run_tracegrade(*args, "--output", "runs.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == GOOD_ROWS
    assert (
        result.stderr.splitlines()[-1] == f"{GOOD_ROWS} records written to runs.jsonl"
    )
    assert run_tracegrade(*args, cwd=tmp_path).stdout.splitlines() == lines
    (tmp_path / "runs.jsonl").unlink()

    before = snapshot(tmp_path)
    refused = run_tracegrade(
        *args, "--output", "dataset.jsonl", "--force", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "would destroy the input" in one_clear_line(refused.stderr)
    assert snapshot(tmp_path) == before

    args = write_dataset(tmp_path, bad=True)
    before = snapshot(tmp_path)
    expected = f"dataset.jsonl, line {GOOD_ROWS + 1}: reference_context_ids[0] true"
    for output in (["--output", "runs.jsonl"], []):
        result = run_tracegrade(*args, *output, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (1, "")
        assert one_clear_line(result.stderr).startswith(f"Error: {expected}")
        assert_no_final_outputs(tmp_path, before)
        assert not list(tmp_path.glob("runs.jsonl*"))
