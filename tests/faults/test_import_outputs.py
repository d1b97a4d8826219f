"""`tracegrade import` writes whole or not at all (ragas streams, so it holds the
shared writer): bad input far into the file leaves no output and no changed input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands import run_tracegrade
from tests.faults.conftest import assert_no_final_outputs, one_clear_line, snapshot

GOOD_ROWS = 2_000
ARGS = ["import", "ragas", "dataset.jsonl"]


def write_dataset(directory: Path, last: list[object] | None = None) -> None:
    """GOOD_ROWS samples, then one whose reference IDs are `last`."""
    ids = [[f"D{n}"] for n in range(GOOD_ROWS)] + ([last] if last else [])
    rows = [{"retrieved_context_ids": ["D1"], "reference_context_ids": i} for i in ids]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (directory / "dataset.jsonl").write_text(text)


def test_an_import_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    write_dataset(tmp_path)
    result = run_tracegrade(*ARGS, "--output", "runs.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == GOOD_ROWS
    assert result.stderr.endswith(f"\n{GOOD_ROWS} records written to runs.jsonl\n")
    assert run_tracegrade(*ARGS, cwd=tmp_path).stdout.splitlines() == lines
    (tmp_path / "runs.jsonl").unlink()

    before = snapshot(tmp_path)
    refused = run_tracegrade(
        *ARGS, "--output", "dataset.jsonl", "--force", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "would destroy the input" in one_clear_line(refused.stderr)
    assert snapshot(tmp_path) == before

    write_dataset(tmp_path, [True])
    before = snapshot(tmp_path)
    expected = f"dataset.jsonl, line {GOOD_ROWS + 1}: reference_context_ids[0] true"
    for output in (["--output", "runs.jsonl"], []):
        result = run_tracegrade(*ARGS, *output, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (1, "")
        assert one_clear_line(result.stderr).startswith(f"Error: {expected}")
        assert_no_final_outputs(tmp_path, before)
        assert not list(tmp_path.glob("runs.jsonl*"))
