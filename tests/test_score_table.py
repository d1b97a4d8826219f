"""`tracegrade.score_table`: each row of a random table (null cells, null
IDs, broken steps) is what `tracegrade score` makes of the same record."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from functools import partial
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.test_differential import extraction_records, stage_records
from tracegrade import ScoreTableError, diagnose_stage, grade_extraction, score_table
from tracegrade.core.itemise import dropped_ids, invented_ids
from tracegrade.core.recall import stage_precision, stage_recall
from tracegrade.core.steps import lost_documents, read_steps
from tracegrade.table import record_schema, records_table, result_schema
from tracegrade.tasks.recorded import extraction_input_score, stage_input_score

_SURROGATE = re.compile("[\ud800-\udfff]")
STEP_NAMES = ["retriever", "reranker", "filter", "context", ""]
NO_STEP = {"required": [], "context": [], "correct": None, "steps": []}  # refused


def arrow_text(text: str) -> str:
    """Arrow holds UTF-8 only: a lone surrogate becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def arrow_ids(
    draw: st.DrawFn, ids: list[str], *, null_items: bool = True
) -> list[str | None]:
    listed: list[str | None] = [arrow_text(item) for item in ids]
    if null_items and listed and draw(st.integers(0, 9)) == 0:
        listed[draw(st.integers(0, len(listed) - 1))] = None
    return listed


def maybe_null(draw: st.DrawFn, value: Any) -> Any:
    return None if draw(st.integers(0, 9)) == 0 else value


@st.composite
def stage_rows(draw: st.DrawFn) -> dict[str, Any]:
    """A record as a table row: every field a cell, null for absent."""
    record = draw(stage_records())
    pool = [*record["required"], *record["context"], "D1", "D2"]
    correct = record.get("correct")
    steps: list[dict[str, Any]] | None = None
    if draw(st.booleans()):
        # Repeats, "context" and "" are refused.
        names = draw(st.lists(st.sampled_from(STEP_NAMES), max_size=3))
        steps = [
            {
                "name": maybe_null(draw, name),
                "ids": maybe_null(
                    draw,
                    arrow_ids(draw, draw(st.lists(st.sampled_from(pool), max_size=5))),
                ),
            }
            for name in names
        ]
    return {
        "required": maybe_null(draw, arrow_ids(draw, record["required"])),
        "context": maybe_null(draw, arrow_ids(draw, record["context"])),
        "correct": correct if type(correct) is bool else None,
        "steps": steps,
    }


@st.composite
def extraction_rows(draw: st.DrawFn) -> dict[str, Any]:
    record = draw(extraction_records())
    row: dict[str, Any] = {
        "source": maybe_null(draw, arrow_ids(draw, record["source"])),
        "answer": maybe_null(draw, arrow_ids(draw, record["answer"])),
        "output": None,
    }
    if draw(st.integers(0, 4)) == 0:
        # The model's text instead of (or, refused, beside) a recorded list.
        answer = [arrow_text(item) for item in record["answer"]]
        row["output"] = "ANSWER: " + json.dumps(answer, ensure_ascii=False)
        if draw(st.booleans()):
            row["answer"] = None
    return row


def as_record(row: dict[str, Any]) -> dict[str, Any]:
    """The record a row stands for: a null cell is an absent field."""
    return {field: value for field, value in row.items() if value is not None}


def table_of(rows: list[dict[str, Any]], task: str) -> pa.Table:
    schema = record_schema(task)
    fields = [name for name in schema.names if name != "id" and name in rows[0]]
    columns = {"id": [f"run-{number}" for number in range(len(rows))]}
    columns.update({field: [row[field] for row in rows] for field in fields})
    return pa.table(columns, schema=pa.schema([schema.field(name) for name in columns]))


def error_cells(metadata: dict[str, Any]) -> dict[str, Any]:
    error = metadata["error"] or {}
    return {
        f"error_{key}": error.get(key) for key in ("kind", "side", "field", "message")
    }


def expected_stage(record: dict[str, Any], *, steps: bool) -> dict[str, Any]:
    """`tracegrade score`'s per-line score of the record, and the core's
    own figures where the core decides."""
    score = stage_input_score(record)
    metadata = score.metadata or {}
    result = metadata["result"]
    row = {key: (result or {}).get(key) for key in ("stage", "missing")}
    if steps:
        row["lost"] = metadata.get("lost")
    row["recall"] = metadata["recall"]
    row["precision"] = metadata["precision"]
    # What the report reads of a diagnosed run, from the score's record.
    diagnosed = score.value in ("retrieval", "generation", "pass")
    logged = metadata["record"]
    row["required"] = logged["required"] if diagnosed else None
    row["labelled_correct"] = logged.get("correct") is True if diagnosed else None
    if steps:
        with_steps = diagnosed and logged.get("steps") is not None
        # A row's step is a struct: a step recorded without inputs has null.
        row["steps"] = (
            [{**step, "inputs": step.get("inputs")} for step in logged["steps"]]
            if with_steps
            else None
        )
        row["context_size"] = len(logged["context"]) if with_steps else None
    row.update(error_cells(metadata))
    if metadata["error"] is None:
        assert result == diagnose_stage(record)
        assert row["recall"] == stage_recall(record)
        assert row["precision"] == stage_precision(record)
        recorded = read_steps(record)
        if steps and recorded is not None and "missing" in result:
            assert row["lost"] == lost_documents(result["missing"], recorded)
    return row


def expected_extraction(record: dict[str, Any]) -> dict[str, Any]:
    score = extraction_input_score(record)
    metadata = score.metadata or {}
    value = score.value if isinstance(score.value, dict) else {}
    itemised = metadata.get("itemised") or {}
    row = {
        "membership": value.get("membership"),
        "order": value.get("order"),
        "dropped": itemised.get("dropped"),
        "invented": itemised.get("invented"),
        "source": metadata["record"]["source"] if itemised else None,
        "first_order_break": itemised.get("first_order_break"),
        "kept_in_order": itemised.get("kept_in_order"),
        "read_as": metadata.get("read_as"),
        **error_cells(metadata),
    }
    if metadata["error"] is None and "output" not in record:
        assert grade_extraction(record) == value
        assert row["dropped"] == dropped_ids(record["source"], record["answer"])
        assert row["invented"] == invented_ids(record["source"], record["answer"])
    return row


@settings(max_examples=60)
@given(rows=st.lists(stage_rows(), min_size=1, max_size=30), steps=st.booleans())
@example(rows=[NO_STEP], steps=True)
def test_each_stage_row_is_what_tracegrade_score_makes_of_it(
    rows: list[dict[str, Any]], steps: bool
) -> None:
    if not steps:
        rows = [{**row, "steps": None} for row in rows]
    table = table_of(rows, "stage_diagnosis")
    if not steps:
        table = table.drop_columns(["steps"])

    scored = score_table(table)

    assert scored.schema == result_schema("stage_diagnosis", steps=steps)
    got = scored.to_pylist()
    assert [row.pop("id") for row in got] == table.column("id").to_pylist()
    for row, given_row in zip(got, rows, strict=True):
        assert row == expected_stage(as_record(given_row), steps=steps)


@settings(max_examples=60)
@given(rows=st.lists(extraction_rows(), min_size=1, max_size=30))
def test_each_extraction_row_is_what_tracegrade_score_makes_of_it(
    rows: list[dict[str, Any]],
) -> None:
    scored = score_table(table_of(rows, "ordered_extraction"), "ordered_extraction")

    assert scored.schema == result_schema("ordered_extraction")
    for row, given_row in zip(scored.to_pylist(), rows, strict=True):
        del row["id"]
        assert row == expected_extraction(as_record(given_row))


def random_records(task: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Fixture-format records of every outcome, bad ones included, with
    absent fields where a table has null cells."""
    chooser = random.Random(seed)
    ids = [f"D{number}" for number in range(8)]

    def some() -> list[str]:
        return chooser.sample(ids, chooser.randint(0, 4))

    records = []
    for number in range(count):
        if task == "stage_diagnosis":
            fields: dict[str, Any] = {"required": some(), "context": some()}
            if chooser.random() < 0.8:
                fields["correct"] = chooser.random() < 0.5
            if chooser.random() < 0.3:
                fields["steps"] = [
                    {"name": "retriever", "ids": some()},
                    {"name": "reranker", "ids": some()},
                ]
            if chooser.random() < 0.05:
                del fields["context"]
            if chooser.random() < 0.05:
                fields["steps"] = [{"name": "context", "ids": []}]
        else:
            source = some()
            answer = chooser.sample(source, len(source)) + some()[:1]
            fields = {"source": source, "answer": answer}
            if chooser.random() < 0.1:
                fields["source"] = source + source[:1]
            if chooser.random() < 0.1:
                fields["output"] = "no list here"
                del fields["answer"]
        records.append({"id": f"run-{number}", "input": fields})
    return records


def test_a_pandas_frame_scores_as_its_arrow_table() -> None:
    records = random_records("stage_diagnosis", 50, seed=7)
    table = records_table(records, "stage_diagnosis")
    assert score_table(table.to_pandas()).equals(score_table(table))


def test_no_rows_give_no_rows_of_the_same_schema() -> None:
    table = records_table([], "ordered_extraction")
    scored = score_table(table, "ordered_extraction")
    assert scored.num_rows == 0
    assert scored.schema == result_schema("ordered_extraction")


def test_key_arguments_name_other_columns() -> None:
    table = pa.table(
        {"run": ["a"], "gold": [["D1", "D2"]], "supplied": [["D2"]], "label": [True]}
    )
    (row,) = score_table(
        table,
        id_key="run",
        required_key="gold",
        context_key="supplied",
        correct_key="label",
    ).to_pylist()
    assert row["id"] == "a"
    assert (row["stage"], row["missing"], row["recall"]) == ("retrieval", ["D1"], 0.5)


def stage_table_of(fields: dict[str, Any]) -> pa.Table:
    return records_table([{"id": "a", "input": fields}], "stage_diagnosis")


def list_ids(table: pa.Table) -> pa.Table:
    return score_table(table.set_column(0, "id", pa.array([[1]] * table.num_rows)))


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (partial(score_table, task="stage"), "task must be stage_diagnosis"),
        (partial(score_table, requried_key="g"), 'no key argument requried_key="g"'),
        (partial(score_table, correct_key=""), "correct_key must be"),
        (
            partial(score_table, context_key="required"),
            "context_key and required_key both name",
        ),
        (partial(score_table, required_key="gold"), 'no column "gold" (required_key)'),
        (lambda table: score_table(table.to_pylist()), "table must be a pyarrow"),
        (list_ids, 'the id column "id" is list<item'),
        (lambda _: stage_table_of({"note": "x"}), 'has a field "note"'),
        (lambda _: stage_table_of({"correct": "no"}), 'field "correct" of some record'),
    ],
)
def test_a_call_no_row_can_be_scored_by_is_refused_naming_what(
    call: Any, said: str
) -> None:
    table = records_table(random_records("stage_diagnosis", 3, 1), "stage_diagnosis")
    with pytest.raises(ScoreTableError, match=re.escape(said)):
        call(table)


def test_a_column_of_the_wrong_type_is_an_error_row_for_each_row() -> None:
    """A whole column of integers is what a record of integer IDs is: each
    row names the field, and the batch is scored. Number ids become text."""
    columns = {"id": [7, 8], "required": [[1], [2]], "context": [["D1"], ["D2"]]}
    table = pa.table({**columns, "correct": [True, False]})
    rows = score_table(table).to_pylist()
    assert [row["error_field"] for row in rows] == ["required[0]", "required[0]"]
    assert [row["id"] for row in rows] == ["7", "8"]


def test_a_lone_surrogate_read_from_output_text_is_its_escape() -> None:
    """JSON text may escape a lone surrogate; Arrow's UTF-8 cannot hold
    one, so the row shows the escape, as an error message quotes it."""
    table = pa.table(
        {"source": [["A"], ["B"]], "output": ['ANSWER: ["\\ud83d"]', 'ANSWER: ["B"]']}
    )
    rows = score_table(table, "ordered_extraction").to_pylist()
    assert [row["id"] for row in rows] == [None, None]  # no id column
    assert rows[0]["invented"] == ["\\ud83d"]
    assert rows[0]["dropped"] == ["A"]
    assert rows[1]["order"] is True


def test_importing_tracegrade_does_not_import_pyarrow() -> None:
    code = "import sys, tracegrade; tracegrade.score_table; print(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "pyarrow" not in done.stdout.split(), done.stderr


def test_a_steps_inputs_survive_the_record_table() -> None:
    """Fan-in (two retrievers feeding a reranker) is in each step's
    `inputs`: a table without them would read the second retriever as a
    filter of the first, and lose D3 there."""
    steps = [
        {"name": "retriever", "ids": ["D1", "D3"]},
        {"name": "retriever-2", "ids": ["D7", "D1"], "inputs": []},
        {"name": "reranker", "ids": ["D1"], "inputs": ["retriever", "retriever-2"]},
    ]
    record = {"required": ["D3", "D7"], "context": ["D1"], "correct": True}
    table = records_table(
        [{"id": "q1", "input": {**record, "steps": steps}}], "stage_diagnosis"
    )
    (lost,) = score_table(table).column("lost").to_pylist()
    assert [(entry["id"], entry["lost_at"]) for entry in lost] == [
        ("D3", "reranker"),
        ("D7", "reranker"),
    ]
