"""`tracegrade import trec` on number and space forms trec_eval reads otherwise.

Python's `int()` and `float()` take `0_1`, `٣` (Arabic-Indic 3) and
`1_000`, and `str.split()` cuts a field at an EM SPACE, dropping it; trec_eval
reads none of these that way. The real command, in a process of its own,
must refuse each number form with file, line and field, leave no output
and no changed input, and keep an EM SPACE inside its document id.
"""

from __future__ import annotations

import json
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
    ("file", "line", "text", "expected"),
    [
        (
            "qrels.txt",
            2,
            "q1 0 D2 0_1\n",
            'qrels.txt, line 2: field 4 (relevance) "0_1" is not an integer of '
            'the form trec_eval reads, [+-]?[0-9]+ ("_" is no digit separator '
            "to trec_eval)",
        ),
        (
            "qrels.txt",
            2,
            "q1 0 D2 \u0663\n",
            'qrels.txt, line 2: field 4 (relevance) "\u0663" is not an integer of '
            "the form trec_eval reads, [+-]?[0-9]+ (U+0663 (ARABIC-INDIC DIGIT "
            "THREE) is not an ASCII digit)",
        ),
        (
            "run.txt",
            2,
            "q1 Q0 D2 2 1_000 tag\n",
            'run.txt, line 2: field 5 (score) "1_000" is not a number of the '
            "form trec_eval reads: [+-], digits with an optional point and "
            'e-exponent, or inf ("_" is no digit separator to trec_eval)',
        ),
    ],
)
def test_a_number_form_trec_eval_reads_otherwise_is_refused(
    tmp_path: Path, file: str, line: int, text: str, expected: str
) -> None:
    files = {"qrels.txt": QRELS, "run.txt": RUN}
    lines = files[file].splitlines(keepends=True)
    lines[line - 1] = text
    files[file] = "".join(lines)
    code, stdout, stderr, before = import_trec(
        tmp_path, files["qrels.txt"], files["run.txt"]
    )
    assert code == 1
    assert stdout == ""
    assert one_clear_line(stderr) == f"Error: {expected}"
    assert_no_final_outputs(tmp_path, before)
    assert not list(tmp_path.glob("runs.jsonl*"))


def test_plus_one_is_read_as_trec_eval_reads_it(tmp_path: Path) -> None:
    """atol reads "+1" whole, as 1: a form trec_eval accepts is accepted."""
    code, _, stderr, _ = import_trec(tmp_path, QRELS.replace("D2 1", "D2 +1"), RUN)
    assert code == 0, stderr
    records = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(records[0])["input"]["required"] == ["D1", "D2"]


def test_an_em_space_after_a_document_id_is_kept(tmp_path: Path) -> None:
    """trec_eval splits on ASCII whitespace only, so "D2" and "D2<EM SPACE>"
    are two documents: the run did not retrieve D2."""
    code, _, stderr, _ = import_trec(tmp_path, QRELS, RUN.replace("D2 2", "D2\u2003 2"))
    assert code == 0, stderr
    data = (tmp_path / "runs.jsonl").read_bytes()
    assert "D2\u2003".encode() in data
    first = json.loads(data.decode("utf-8").splitlines()[0])
    assert first == {
        "id": "q1",
        "input": {
            "required": ["D1", "D2"],
            "context": ["D1", "D2\u2003"],
            "steps": [{"name": "run", "ids": ["D1", "D2\u2003"]}],
        },
    }
