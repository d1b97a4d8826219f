"""`tracegrade import ragas`: tests/data/ragas was written by ragas 0.4.3 itself, with
what its IDBasedContextRecall gave each sample; each record's recall is that score."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.commands import run_tracegrade
from tests.support import write_lines
from tracegrade.core import stage_recall
from tracegrade.importers.common import InputFileError, LabelsRefused
from tracegrade.importers.ragas import stream_ragas


def import_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tracegrade("import", "ragas", *args, cwd=DATA)


DATA = Path(__file__).parent / "data" / "ragas"
RAGAS_JSONL = DATA / "dataset.jsonl"
RAGAS_CSV = DATA / "dataset.csv"
RAGAS_SCORES = json.loads((DATA / "scores.json").read_text(encoding="utf-8"))

# The samples of the reference files, as given to ragas.
# Each sample's fields in this order; None is a field the sample lacks.
FIELDS = {
    "user_input": "question",
    "retrieved_context_ids": "context",
    "reference_context_ids": "required",
    "response": "answer",
    "reference": "reference",
}
SAMPLES: list[dict[str, Any]] = [
    {key: value for key, value in zip(FIELDS, row, strict=True) if value is not None}
    for row in [
        (
            "Which documents say when the plant opened?",
            ["D1", "D2", "D3"],
            ["D1", "D4"],
            'It opened in 1998, "per D1".',
            "1998, says D1;\nD4 agrees.",
        ),
        ("Integer IDs", [1, 2, 3], [2, 5], "two", "2"),
        ("Nothing retrieved", [], ["D1"], "no idea", "D1"),
        ("Nothing required", ["D1"], [], "x", "y"),
        (
            "Quotes, commas and spaces",
            ["a'b", 'q"uote', "comma,id", "D\u2003"],
            ["a'b", "x"],
            "",
            "\u00e9",
        ),
        ("Mixed types", ["7", 8], [7, "8"], None, None),
        (None, ["D9"], ["D9"], None, None),
        ("Repeats", ["D1", "D1", "D2"], ["D1", "D1", "D3"], "r", "s"),
    ]
]
# IDs as text, as Ragas compares str(id); a field the sample lacks is absent.
RECORDS: list[dict[str, Any]] = [
    {
        "id": str(number),
        "input": {
            FIELDS[key]: [str(i) for i in value] if key.endswith("_ids") else value
            for key, value in sample.items()
        },
    }
    for number, sample in enumerate(SAMPLES)
]


def test_the_reference_files_are_what_ragas_writes(tmp_path: Path) -> None:
    """How tests/data/ragas was made (`nox -s ragas` runs it)."""
    ragas = pytest.importorskip("ragas")
    from ragas.metrics import IDBasedContextRecall

    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    samples = [ragas.SingleTurnSample(**sample) for sample in SAMPLES]
    dataset = ragas.EvaluationDataset(samples=samples)
    dataset.to_jsonl(tmp_path / "dataset.jsonl")
    dataset.to_csv(tmp_path / "dataset.csv")
    metric = IDBasedContextRecall()
    scores = [asyncio.run(metric.single_turn_ascore(sample)) for sample in dataset]
    assert [None if math.isnan(score) else score for score in scores] == RAGAS_SCORES
    for name in ("dataset.jsonl", "dataset.csv"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes()


@pytest.mark.parametrize("path", [RAGAS_JSONL, RAGAS_CSV], ids=["jsonl", "csv"])
def test_each_sample_is_a_record_whose_recall_is_ragas_id_based_context_recall(
    tmp_path: Path, path: Path
) -> None:
    """Repeats included: both count each ID once, an integer ID is its decimal
    text, nothing required is Ragas's NaN and our null. CSV writes an empty
    response and none alike: absent wins. --format overrides the suffix."""
    copy = tmp_path / "dataset.txt"
    copy.write_bytes(path.read_bytes())
    form = "csv" if path == RAGAS_CSV else "jsonl"
    result = import_cli(str(copy), "--format", form)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "note: 7 of 8 samples have required documents and no label (no --labels "
        "given); they score answer-label until labelled\n"
    )
    records = [json.loads(line) for line in result.stdout.splitlines()]
    expected = json.loads(json.dumps(RECORDS))
    if path == RAGAS_CSV:
        del expected[4]["input"]["answer"]
        refused = import_cli(str(copy))
        assert (refused.returncode, refused.stdout) == (1, "")
        assert "line 1: not valid JSON" in refused.stderr
    assert records == expected
    assert [stage_recall(record["input"]) for record in records] == RAGAS_SCORES


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([{"id": "0", "correct": True}, {"id": "2", "correct": False}], None),
        # Refused after the dataset is read (the rest: test_trec_import).
        ([{"id": "8", "correct": True}], f'names no sample of {RAGAS_JSONL}: "8"'),
    ],
)
def test_labels_give_correct_after_the_id_lists_or_are_refused(
    tmp_path: Path, lines: list[Any], expected: str | None
) -> None:
    labels = write_lines(tmp_path / "labels.jsonl", lines)
    if expected is not None:
        with pytest.raises(LabelsRefused, match=re.escape(expected)):
            list(stream_ragas(RAGAS_JSONL, labels_path=labels))
        return
    records = list(stream_ragas(RAGAS_JSONL, labels_path=labels))
    assert list(records[0]["input"])[:3] == ["required", "context", "correct"]
    correct = [record["input"].get("correct") for record in records[:4]]
    assert correct == [True, None, False, None]


GOOD = {"retrieved_context_ids": ["D1"], "reference_context_ids": ["D1"]}
HEADER = "user_input,retrieved_context_ids,reference_context_ids\n"


def third(**fields: Any) -> str:
    """A JSONL dataset whose line 3 is GOOD with `fields` changed."""
    return f"{json.dumps(GOOD)}\n\n{json.dumps(GOOD | fields)}\n"


@pytest.mark.parametrize(
    ("name", "text", "line", "expected"),
    [
        ("d.jsonl", '{"a": 1}\nnot json\n', 2, "not valid JSON"),
        (
            "d.jsonl",
            third(reference_context_ids=None),
            3,
            "reference_context_ids is absent; Ragas's IDBasedContextRecall needs "
            "both reference_context_ids and retrieved_context_ids",
        ),
        (
            "d.jsonl",
            third(retrieved_context_ids="D1"),
            3,
            "retrieved_context_ids must be a list of IDs, as Ragas writes one "
            "(['D1', 'D2']): a JSON array, or a Python list of quoted strings "
            'with a comma between each two, got "D1"',
        ),
        ("d.jsonl", third(reference_context_ids=["D1", True]), 3, "[1] true is not an"),
        ("d.jsonl", third(user_input=[{}]), 3, "user_input is a list of messages"),
        ("d.jsonl", third(response=3), 3, "response must be text, got 3"),
        ("d.jsonl", '[{"a": 1},\n', 1, "a Ragas dataset is JSON Lines (to_jsonl), not"),
        ("d.jsonl", '{"reference_context_ids": ["\\ud800"]}\n', 1, "lone surrogate"),
        ("d.jsonl", "\n \n", None, "holds no samples"),
        ("d.csv", HEADER, None, "holds no samples"),
        (
            "d.csv",
            "user_input,retrieved_context_ids\nq,['D1']\n",
            1,
            'the header has no column "reference_context_ids"; found '
            '"user_input", "retrieved_context_ids"',
        ),
        ("d.csv", "a,retrieved_context_ids,a\n", 1, 'column "a" is named twice'),
        (
            "d.csv",
            HEADER + 'q,"[\'D1\']","[\'D1\']"\n"a\nb",[],x\n',
            3,
            'reference_context_ids "x" is not a list of IDs, as Ragas writes one',
        ),
        # Python's reader would take these for other lists: refused.
        ("d.csv", HEADER + "q,['D1'],\"{'D1'}\"\n", 2, "\"{'D1'}\" is not a list"),
        ("d.csv", HEADER + "q,['D1'],['D1' 'D2']\n", 2, "\"['D1' 'D2']\" is not a"),
        ("d.csv", HEADER + "q,['D1'],\"[1_000, 0x10]\"\n", 2, '0x10]" is not a'),
        ("d.csv", HEADER + "q,['D1'],['D\\a']\n", 2, "\"['D\\\\a']\" is not a"),
        ("d.csv", HEADER + "q,['D1']\n", 2, "a row of 2 cells, where the header (line"),
        ("d.csv", HEADER + "q,['D1'],\n", 2, "reference_context_ids is absent"),
        ("d.csv", HEADER + "q,\"['D1']\"x,[]\n", 2, "not a CSV row"),
        *[
            (
                name,
                b'{"reference_context_ids": 1}\n{"b": "\xe9"}\n',
                2,
                "not valid UTF-8 text (byte 0xE9 at column 8)",
            )
            for name in ("d.csv", "d.jsonl")
        ],
    ],
)
def test_a_row_that_is_not_a_sample_is_named(
    tmp_path: Path, name: str, text: str | bytes, line: int | None, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputFileError) as caught:
        list(stream_ragas(path))
    assert caught.value.line == line, caught.value.message
    at = f"{path}, line {line}: " if line else f"{path}: "
    assert caught.value.message.startswith(at) and expected in caught.value.message


@pytest.mark.parametrize(
    ("row", "ids"),
    [
        # JSON first: `\/` is `/` to JSON, and kept by Python's reader.
        ('q,[],"[""doc\\/1""]"', ["doc/1"]),
        ('q,[],"[\'D1\', ""it\'s""]"', ["D1", "it's"]),
        ("q,[],\"['D\\u2003', 'tab\\there']\"", ["D\u2003", "tab\there"]),
        ("q,[],\"[7, '8']\"", ["7", "8"]),
        # Over the csv module's 128 KiB limit for a cell, as a question may be.
        ("x" * 200_000 + ",[],['D1']", ["D1"]),
        ("\nq,[],['D1']", ["D1"]),  # a blank row is skipped
    ],
    ids=["json", "repr", "repr-escapes", "integers", "over-128-KiB", "blank-row"],
)
def test_a_csv_list_cell_is_read_as_json_or_as_repr_writes_it(
    tmp_path: Path, row: str, ids: list[str]
) -> None:
    path = tmp_path / "d.csv"
    path.write_text(HEADER + row + "\n", encoding="utf-8", newline="")
    (record,) = list(stream_ragas(path))
    assert record["input"]["required"] == ids
    assert csv.field_size_limit() == 131_072
