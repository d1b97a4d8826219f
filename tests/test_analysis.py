"""`tracegrade.analysis`: typed `samples_df` columns from real logs; a
`tracegrade score` log gives the same frame as an `inspect eval` one."""

from __future__ import annotations

import builtins
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from inspect_ai import Task, eval, score
from inspect_ai.analysis import Column, SampleSummary, samples_df
from inspect_ai.analysis._dataframe.record import import_record
from inspect_ai.analysis._dataframe.samples import table as samples_table
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries, write_eval_log

from tests.support import SUBPROCESS_ENV, write_lines
from tracegrade import (
    ordered_extraction_recorded,
    ordered_extraction_scorer,
    stage_diagnosis,
    stage_diagnosis_scorer,
)
from tracegrade.analysis import ExtractionColumns, StageColumns, stage_columns
from tracegrade.cli import main
from tracegrade.datasets import ordered_extraction_dataset
from tracegrade.tasks import replay

ROOT = Path(__file__).resolve().parent.parent
EPOCHS = 3
# Long enough that a sample summary drops the `result` and `record` holding
# it (a metadata value over 1,024 characters of JSON).
LONG = [f"DOC-{index:04d}" for index in range(300)]
LABEL_FROM = 'metadata["correct"]'

STAGE_NAMES = [column.name for column in StageColumns]
EXTRACTION_NAMES = [column.name for column in ExtractionColumns]


def stage_row(
    stage: str | None,
    missing: list[str] | None,
    label: bool | None,
    error: str | None = None,
    *,
    recall: float | None = None,
    precision: float | None = None,
) -> dict[str, Any]:
    return {
        "stage": stage,
        "stage_missing": missing,
        "stage_missing_count": None if missing is None else len(missing),
        "stage_recall": recall,
        "stage_precision": precision,
        "stage_label": label,
        "stage_label_from": LABEL_FROM,
        "stage_error": error,
        "stage_error_side": "data" if error else None,
        # No case has pipeline steps (tests/test_steps.py has them).
        "stage_lost_at": None,
    }


# Each case: its recorded input, and the columns it must give.
STAGE_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "long-gap": ({"required": LONG, "context": LONG[:100], "correct": True},
        stage_row("retrieval", LONG[100:], True, recall=100 / len(LONG),
                  precision=1.0)),
    "gap-wrong": ({"required": ["D2", "D1", "D3"], "context": ["D3"], "correct": False},
        stage_row("retrieval", ["D1", "D2"], False, recall=1 / 3, precision=1.0)),
    "gap-lucky": ({"required": ["D1"], "context": [], "correct": True},
        stage_row("retrieval", ["D1"], True, recall=0.0)),
    "generation": ({"required": ["D1"], "context": ["D1", "D2"], "correct": False},
        stage_row("generation", [], False, recall=1.0, precision=0.5)),
    "pass": ({"required": ["D1", "D2"], "context": ["D2", "D1"], "correct": True},
        stage_row("pass", [], True, recall=1.0, precision=1.0)),
    "unresolved": ({"required": [], "context": ["D1"], "correct": True},
        stage_row("unresolved", None, True, precision=0.0)),
    # No label: no stage, but what reached the context is known all the same.
    "no-label": ({"required": ["D1"], "context": ["D1"]},
        stage_row(None, None, None, "answer-label", recall=1.0, precision=1.0)),
    "string-label": ({"required": ["D1", "D2"], "context": ["D1"], "correct": "yes"},
        stage_row(None, None, None, "answer-label", recall=0.5, precision=1.0)),
    "context-not-a-list": ({"required": ["D1"], "context": "D1", "correct": True},
        stage_row(None, None, True, "invalid-input")),
}  # fmt: skip


def extraction_row(
    membership: bool | None,
    order: bool | None,
    itemised: tuple[list[str], list[str], int | None, int] | None,
    error: tuple[str, str] | None = None,
    read_as: str | None = None,
) -> dict[str, Any]:
    dropped, invented, first_break, kept = itemised or (None, None, None, None)
    return {
        "extraction_membership": membership,
        "extraction_order": order,
        "extraction_read_as": read_as,
        "extraction_error": error[0] if error else None,
        "extraction_error_side": error[1] if error else None,
        "extraction_dropped": dropped,
        "extraction_invented": invented,
        "extraction_first_order_break": first_break,
        "extraction_kept_in_order": kept,
    }


# Recorded answers, graded as recorded: no reading, so no `read_as`.
EXTRACTION_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "long-drop": ({"source": LONG, "answer": [*LONG[:100], "NEW-1"]},
        extraction_row(False, False, (LONG[100:], ["NEW-1"], 101, 100))),
    "unrequested-sort": ({"source": ["C", "A", "B"], "answer": ["A", "B", "C"]},
        extraction_row(True, False, ([], [], 1, 2))),
    "kept": ({"source": ["C", "A", "B"], "answer": ["C", "A", "B"]},
        extraction_row(True, True, ([], [], None, 3))),
    "dropped-one": ({"source": ["C", "A", "B"], "answer": ["C", "B"]},
        extraction_row(False, False, (["A"], [], 2, 2))),
    "duplicate-answer": ({"source": ["C", "A", "B"], "answer": ["C", "A", "A", "B"]},
        extraction_row(False, False, None, ("duplicate-answer-id", "answer"))),
    "duplicate-source": ({"source": ["A", "B", "A"], "answer": ["A", "B"]},
        extraction_row(None, None, None, ("duplicate-source-id", "data"))),
    "source-not-a-list": ({"source": "A", "answer": ["A"]},
        extraction_row(None, None, None, ("invalid-input", "data"))),
}  # fmt: skip

# Answers as a model writes them, read from the output text (each reading:
# test_answer_parsing).
READ_AS_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "json": ({"source": ["C", "A", "B"], "answer": 'Sure: ["C", "A", "B"]'},
        extraction_row(True, True, ([], [], None, 3), read_as="json")),
    "commas": ({"source": ["C", "A", "B"], "answer": "C, A"},
        extraction_row(False, False, (["B"], [], 3, 2), read_as="commas")),
    "prose": ({"source": ["C", "A", "B"], "answer": "I cannot help with that."},
        extraction_row(False, False, None, ("unreadable-answer", "answer"))),
}  # fmt: skip

MALFORMED = "{broken"


def fixture_file(path: Path, cases: dict[str, tuple[dict[str, Any], Any]]) -> str:
    return write_lines(
        path,
        [{"id": case_id, "input": record} for case_id, (record, _) in cases.items()],
    )


def cell(value: Any) -> Any:
    """A frame cell as plain Python: `<NA>` as None, whole floats as ints
    (pandas makes whole numbers beside a None floats)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, np.ndarray):
        # A list in an `object` column (`parallel=True` only, tested there).
        return value.tolist()
    return value


def rows(frame: pd.DataFrame, names: Sequence[str]) -> dict[tuple[str, int], Any]:
    """The named columns of each sample-epoch, keyed by (id, epoch)."""
    keys = zip(frame["id"].tolist(), frame["epoch"].tolist(), strict=True)
    values = zip(*(frame[name].tolist() for name in names), strict=True)
    table = {
        key: {name: cell(value) for name, value in zip(names, row, strict=True)}
        for key, row in zip(keys, values, strict=True)
    }
    assert len(table) == len(frame), "one row per sample-epoch"
    return table


def expected_rows(
    cases: dict[str, tuple[Any, dict[str, Any]]], epochs: int = 1
) -> dict[tuple[str, int], Any]:
    return {
        (case_id, epoch): columns
        for case_id, (_, columns) in cases.items()
        for epoch in range(1, epochs + 1)
    }


def run_eval(task: Task, log_dir: Path, **options: Any) -> str:
    (log,) = eval(
        task,
        model="none/none",
        display="none",
        log_dir=str(log_dir),
        **options,
        log_realtime=False,
    )
    assert log.status == "success", log.error
    return log.location


def frame(logs: str | Sequence[str], columns: list[Column]) -> pd.DataFrame:
    return samples_df(logs, columns=SampleSummary + columns, quiet=True)


@pytest.fixture(scope="module")
def stage_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture_file(tmp_path_factory.mktemp("stage") / "runs.jsonl", STAGE_CASES)


@pytest.fixture(scope="module")
def extraction_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture_file(
        tmp_path_factory.mktemp("extraction") / "runs.jsonl", EXTRACTION_CASES
    )


@pytest.fixture(scope="module")
def stage_log(stage_file: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return run_eval(
        stage_diagnosis(dataset=stage_file),
        tmp_path_factory.mktemp("stage-logs"),
        epochs=EPOCHS,
    )


@pytest.fixture(scope="module")
def extraction_log(
    extraction_file: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    return run_eval(
        ordered_extraction_recorded(dataset=extraction_file),
        tmp_path_factory.mktemp("extraction-logs"),
        epochs=EPOCHS,
    )


def test_extraction_columns_of_every_epoch(extraction_log: str) -> None:
    """(The stage columns of every epoch: test_an_appended_score_reads_...)"""
    extraction = frame(extraction_log, ExtractionColumns)
    assert rows(extraction, EXTRACTION_NAMES) == expected_rows(EXTRACTION_CASES, EPOCHS)


def test_read_as_names_the_reading_of_the_output(tmp_path: Path) -> None:
    task = Task(
        dataset=ordered_extraction_dataset(
            fixture_file(tmp_path / "answers.jsonl", READ_AS_CASES)
        ),
        solver=replay(),
        scorer=ordered_extraction_scorer(),
    )
    log = run_eval(task, tmp_path / "logs")
    read = frame(log, ExtractionColumns)
    assert rows(read, EXTRACTION_NAMES) == expected_rows(READ_AS_CASES)


def test_the_summary_drops_what_full_columns_read(stage_log: str) -> None:
    """The reason for `full=True`: a summary no longer holds a long list."""
    (summary,) = [
        sample
        for sample in read_eval_log_sample_summaries(stage_log)
        if sample.id == "long-gap" and sample.epoch == 1
    ]
    # Handed a summary, a full column refuses rather than reading None.
    log = read_eval_log(stage_log, header_only=True)
    with pytest.raises(ValueError, match=r"'result' was removed .*full=True"):
        import_record(log, summary, StageColumns)


def test_the_summary_columns_read_summaries_alike(
    stage_log: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Columns that read only the value, the reason and short strings need
    no full sample: a selection of them is read from the summaries."""
    names = ["stage", "stage_error"]
    selected = [column for column in StageColumns if column.name in names]
    assert [column.name for column in selected] == names

    def no_full_log(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("read the full log")

    full = rows(frame(stage_log, StageColumns), names)
    monkeypatch.setattr(samples_table, "read_eval_log_async", no_full_log)
    assert rows(frame(stage_log, selected), names) == full


def test_importing_needs_no_pandas_and_reading_names_it(stage_log: str) -> None:
    code = f"""
import sys
sys.modules["pandas"] = sys.modules["pyarrow"] = None  # as if not installed
import tracegrade
import tracegrade.analysis
from inspect_ai.analysis import samples_df
try:
    samples_df({stage_log!r}, columns=tracegrade.analysis.StageColumns)
except Exception as error:
    print(type(error).__name__, error)
"""
    ran = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=SUBPROCESS_ENV,
        timeout=120,
        check=True,
    )
    assert "PrerequisiteError" in ran.stdout
    assert "pip install pandas pyarrow" in ran.stdout


def test_parallel_reads_give_the_same_values(
    stage_log: str, extraction_log: str
) -> None:
    """`parallel=True` sends the columns to other processes (they must
    pickle) and concatenates a frame per log. A column typed differently in
    two logs (all None in one) is then `object`, its lists numpy arrays;
    the values are the same."""
    logs = [stage_log, extraction_log]
    names = STAGE_NAMES + EXTRACTION_NAMES
    columns = SampleSummary + StageColumns + ExtractionColumns
    serial = samples_df(logs, columns=columns, quiet=True)
    parallel = samples_df(logs, columns=columns, quiet=True, parallel=2)
    assert len(serial) == (len(STAGE_CASES) + len(EXTRACTION_CASES)) * EPOCHS
    # A log without the score gives empty columns.
    of_stage_log = serial[serial["log"].str.endswith(Path(stage_log).name)]
    assert of_stage_log[EXTRACTION_NAMES].isna().all(axis=None)
    assert rows(parallel, names) == rows(serial, names)


@pytest.mark.parametrize("task", ["stage_diagnosis", "ordered_extraction"])
def test_tracegrade_score_logs_read_as_inspect_eval_logs(
    task: str, stage_file: str, extraction_file: str, tmp_path: Path
) -> None:
    """The same rows as `inspect eval`'s (the tests above hold those)."""
    # A line that is not JSON becomes an unscored sample of its own (the
    # stage one says where its label would have been read, as for any line).
    cases, path, columns, malformed = (
        (STAGE_CASES, stage_file, StageColumns,
         stage_row(None, None, None, "malformed-json"))
        if task == "stage_diagnosis"
        else (EXTRACTION_CASES, extraction_file, ExtractionColumns,
              extraction_row(None, None, None, ("malformed-json", "data")))
    )  # fmt: skip
    names = [column.name for column in columns]
    lines = Path(path).read_text("utf-8").splitlines()
    runs = write_lines(tmp_path / "runs.jsonl", [*lines, MALFORMED])
    args = ["score", task, runs, "--log-dir", str(tmp_path / "logs"), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output  # the malformed line
    scored = rows(frame(json.loads(result.stdout)["log"], columns), names)
    assert scored.pop((f"line-{len(lines) + 1}", 1)) == malformed
    assert scored == expected_rows(cases)


def test_an_appended_score_reads_under_its_own_name(
    stage_log: str, tmp_path: Path
) -> None:
    """`inspect score --action append` adds `stage_diagnosis1`; the default
    columns keep reading the original. (The walkthrough's lines for it, after
    `labels apply`: test_labels_apply.)"""
    labels = write_lines(
        tmp_path / "labels.jsonl",
        [{"id": "no-label", "correct": True}, {"id": "generation", "correct": True}],
    )
    rescored = score(
        read_eval_log(stage_log),
        stage_diagnosis_scorer(labels=labels),
        action="append",
        display="none",
    )
    path = str(tmp_path / "rescored.eval")
    write_eval_log(rescored, path)
    relabelled_columns = stage_columns("stage_diagnosis1", prefix="relabelled")
    both = frame(path, StageColumns + relabelled_columns)

    assert rows(both, STAGE_NAMES) == expected_rows(STAGE_CASES, EPOCHS)
    relabelled = rows(both, [column.name for column in relabelled_columns])
    for epoch in range(1, EPOCHS + 1):
        assert relabelled["no-label", epoch]["relabelled"] == "pass"
        assert relabelled["generation", epoch]["relabelled"] == "pass"
        assert relabelled["gap-wrong", epoch]["relabelled_error"] == "answer-label"
        for row in (relabelled[case_id, epoch] for case_id in STAGE_CASES):
            assert row["relabelled_label_from"] == f"labels file {labels}"


def test_an_older_log_without_itemisation_is_refused_by_sample(
    extraction_log: str, tmp_path: Path
) -> None:
    """(Precision from an older log's records: test_old_logs, through the
    same `read_stage`.)"""
    log = read_eval_log(extraction_log)
    for sample in log.samples or []:
        del (sample.scores or {})["ordered_extraction"].metadata["itemised"]  # type: ignore[index]
    older = str(tmp_path / "older.eval")
    write_eval_log(log, older)
    with pytest.raises(
        ValueError,
        match=r"score 'ordered_extraction' of sample .*needs metadata itemised",
    ):
        frame(older, ExtractionColumns)


def readme_recipe() -> list[str]:
    """The recipe's lines, from the walkthrough the README links to."""
    page = (ROOT / "docs" / "evaluate-your-own-model.md").read_text("utf-8")
    blocks = re.findall(
        r"```python\n(from inspect_ai\.analysis import .*?)```", page, re.DOTALL
    )
    (block,) = [block for block in blocks if "+ StageColumns +" in block]
    return block.splitlines()


def test_the_readme_recipe_answers_its_questions(
    stage_log: str, extraction_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in (stage_log, extraction_log):
        (logs / Path(log).name).write_bytes(Path(log).read_bytes())
    monkeypatch.chdir(tmp_path)

    namespace: dict[str, Any] = {}
    answers = []
    for line in readme_recipe():
        code = line.split("#")[0].strip()
        try:
            expression = compile(code, "README", "eval")
        except SyntaxError:
            exec(compile(code, "README", "exec"), namespace)
        else:
            answers.append(builtins.eval(expression, namespace))
    shares, recall, most_missed, kept_membership = answers

    # Stage shares per model: the stage metrics of the log.
    results = read_eval_log(stage_log, header_only=True).results
    assert results is not None
    (metrics,) = [s.metrics for s in results.scores if s.name == "stage_diagnosis"]
    stages = ("retrieval", "generation", "pass", "unresolved")
    logged = {stage: metrics[stage].value for stage in stages}
    assert shares["none/none"].to_dict() == pytest.approx(logged)
    # Context recall over every run with evidence, labelled or not: the five
    # diagnosed runs (all the log's `context_recall` sees) and two answer-label.
    diagnosed = [100 / 300, 1 / 3, 0, 1, 1]
    assert recall["none/none"] == pytest.approx((sum(diagnosed) + 1 + 0.5) / 7)
    # The most-missed IDs: D1 by two runs in each epoch, then IDs missed once.
    assert most_missed.index[0] == "D1"
    assert most_missed.tolist() == [2 * EPOCHS] + [EPOCHS] * 9
    # The order failures that kept membership: only the sorted answer.
    assert set(kept_membership["id"]) == {"unrequested-sort"}
    assert len(kept_membership) == EPOCHS
