"""`tracegrade import trec` on forms Python and trec_eval read differently.

The real command, in a process of its own, refuses each with file, line and
field, and leaves no output and no changed input (docs/import-trec.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import run_tracegrade
from tests.faults.conftest import assert_no_final_outputs, one_clear_line, snapshot

QRELS = "q1 0 D1 1\nq1 0 D2 1\nq2 0 D3 1\n"
RUN = "q1 Q0 D1 1 3.0 tag\nq1 Q0 D2 2 2.0 tag\nq2 Q0 D3 1 1.0 tag\n"


def import_trec(
    tmp_path: Path, qrels: str, run: str
) -> tuple[int, str, str, dict[str, str]]:
    """Run the command with --output; its exit code, stdout, stderr, and
    the directory as it was before."""
    (tmp_path / "qrels.txt").write_text(qrels, encoding="utf-8")
    (tmp_path / "run.txt").write_text(run, encoding="utf-8")
    before = snapshot(tmp_path)
    result = run_tracegrade(
        *("import", "trec", "--qrels", "qrels.txt", "--run", "run.txt", "-k", "5"),
        *("--output", "runs.jsonl"),
        cwd=tmp_path,
    )
    return result.returncode, result.stdout, result.stderr, before


@pytest.mark.parametrize(
    ("file", "text", "expected"),
    [
        ("qrels.txt", "q1 0 D2 0_1\n", 'field 4 (relevance) "0_1" is not'),
        ("qrels.txt", "q1 0 D2 \u0663\n", 'field 4 (relevance) "\u0663" is not'),
        ("qrels.txt", "q1 0 D2 1e3\n", 'field 4 (relevance) "1e3" is not'),
        ("run.txt", "q1 Q0 D2 2 1_000 tag\n", 'field 5 (score) "1_000" is not'),
        (
            "run.txt",
            "q1 Q0 D2\u2003 2 2.0 tag\n",
            'field 3 (doc_id) "D2\u2003" holds U+2003, a space to Python',
        ),
    ],
)
def test_a_form_trec_eval_reads_otherwise_is_refused(
    tmp_path: Path, file: str, text: str, expected: str
) -> None:
    files = {"qrels.txt": QRELS, "run.txt": RUN}
    lines = files[file].splitlines(keepends=True)
    lines[1] = text
    files[file] = "".join(lines)
    code, stdout, stderr, before = import_trec(
        tmp_path, files["qrels.txt"], files["run.txt"]
    )
    assert code == 1
    assert stdout == ""
    assert one_clear_line(stderr).startswith(f"Error: {file}, line 2: {expected}")
    assert_no_final_outputs(tmp_path, before)
    assert not list(tmp_path.glob("runs.jsonl*"))
