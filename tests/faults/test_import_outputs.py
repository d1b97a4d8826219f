"""`tracegrade import trec`, `ragas` and `openinference`: whole or absent.

The real command, in a process of its own, on input that is bad only far
into the file (after many good lines): it must exit 1 with one line naming
the file, line and field, and leave no output and no changed input. Asked
to write over one of its inputs, it must refuse before reading anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands import run_tracegrade
from tests.faults.conftest import assert_no_final_outputs, one_clear_line, snapshot

GOOD_ROWS = 2_000
EXAMPLE = "example.id"


def trec_files(directory: Path, bad: bool) -> list[str]:
    (directory / "qrels.txt").write_text(
        "".join(f"q{n} 0 D{n} 1\n" for n in range(GOOD_ROWS))
    )
    run = "".join(f"q{n} Q0 D{n} 1 1.0 tag\n" for n in range(GOOD_ROWS))
    (directory / "run.txt").write_text(run + ("q0 Q0 D9 2 oops tag\n" if bad else ""))
    return ["trec", "--qrels", "qrels.txt", "--run", "run.txt", "-k", "1"]


def ragas_files(directory: Path, bad: bool) -> list[str]:
    rows = [
        {"retrieved_context_ids": [f"D{n}"], "reference_context_ids": [f"D{n}"]}
        for n in range(GOOD_ROWS)
    ]
    if bad:
        rows.append({"retrieved_context_ids": ["D1"], "reference_context_ids": [True]})
    path = directory / "dataset.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["ragas", "dataset.jsonl"]


def openinference_files(directory: Path, bad: bool) -> list[str]:
    def line(trace: int, document: object) -> str:
        attributes = [
            ("openinference.span.kind", {"stringValue": "RETRIEVER"}),
            ("retrieval.documents.0.document.id", document),
            (EXAMPLE, {"stringValue": f"ex-{trace}"}),
        ]
        span = {
            "traceId": f"{trace + 1:032x}",
            "spanId": f"{trace + 1:016x}",
            "attributes": [{"key": k, "value": v} for k, v in attributes],
        }
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})

    lines = [line(n, {"stringValue": "D"}) for n in range(GOOD_ROWS)]
    lines += [line(GOOD_ROWS, {"boolValue": True})] if bad else []
    (directory / "spans.jsonl").write_text("".join(f"{x}\n" for x in lines))
    gold = [{"key": f"ex-{n}", "required": ["D"]} for n in range(GOOD_ROWS + 1)]
    (directory / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    return ["openinference", "spans.jsonl", "--gold", "gold.jsonl", "--key", EXAMPLE]


IMPORTERS = {
    "trec": (trec_files, f"run.txt, line {GOOD_ROWS + 1}: field 5 (score)"),
    "ragas": (
        ragas_files,
        f"dataset.jsonl, line {GOOD_ROWS + 1}: reference_context_ids[0] true",
    ),
    "openinference": (
        openinference_files,
        f"spans.jsonl, line {GOOD_ROWS + 1}: resourceSpans[0].scopeSpans[0]."
        "spans[0].attributes[1]: document id true",
    ),
}


@pytest.mark.parametrize("importer", IMPORTERS)
def test_an_import_appears_whole_or_not_at_all(tmp_path: Path, importer: str) -> None:
    """Whole to a file or stdout; refused before reading, asked to write over
    an input; and with bad input late, nothing on stdout or under the name:
    the records before the bad one wait in a spool."""
    make, expected = IMPORTERS[importer]
    args = make(tmp_path, bad=False)
    result = run_tracegrade("import", *args, "--output", "runs.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == GOOD_ROWS
    assert all(json.loads(line)["input"]["context"] for line in lines)
    assert (
        result.stderr.splitlines()[-1] == f"{GOOD_ROWS} records written to runs.jsonl"
    )
    assert run_tracegrade("import", *args, cwd=tmp_path).stdout.splitlines() == lines
    (tmp_path / "runs.jsonl").unlink()

    before = snapshot(tmp_path)
    first_input = next(arg for arg in args if (tmp_path / arg).is_file())
    refused = run_tracegrade(
        "import", *args, "--output", first_input, "--force", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "would destroy the input" in one_clear_line(refused.stderr)
    assert snapshot(tmp_path) == before

    args = make(tmp_path, bad=True)
    before = snapshot(tmp_path)
    for output in (["--output", "runs.jsonl"], []):
        result = run_tracegrade("import", *args, *output, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (1, "")
        assert one_clear_line(result.stderr).startswith(f"Error: {expected}")
        assert_no_final_outputs(tmp_path, before)
        assert not list(tmp_path.glob("runs.jsonl*"))
