"""`tracegrade score`: its log holds what `inspect eval` of the same file
logs, but for what is specific to a run (ids, times, the transcript)."""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from inspect_ai import eval
from inspect_ai._view.common import get_log_file, get_logs
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries, write_eval_log
from inspect_ai.log._file import eval_log_json
from isal import isal_zlib

from tests.commands import run_inspect
from tests.support import deflated, stored_member, write_lines
from tracegrade import ordered_extraction_recorded, stage_diagnosis
from tracegrade.bulk.evallog import sample_member
from tracegrade.cli import main
from tracegrade.datasets import packaged_fixture, read_fixture_cases

pytestmark = pytest.mark.runs_long

STAGE_OK = {"required": ["D1"], "context": ["D1"], "correct": True}
ANSWERED = 'Checked twice.\nANSWER: ["C-3", "A-1", "B-2"]'
ECHOED = (
    'Source order per the document: ["C-3", "A-1", "B-2"]\n'
    "My answer (sorted): ['A-1', 'B-2', 'C-3']"
)

# Fields of a sample that belong to one run, not to its content.
RUN_SPECIFIC_SAMPLE_FIELDS = {
    *("uuid", "started_at", "completed_at", "total_time", "working_time"),
    *("events", "attachments"),
}
RUN_SPECIFIC_EVAL_FIELDS = {"eval_id", "run_id", "task_id", "created"}


def run_score(*args: str) -> Result:
    return CliRunner().invoke(main, ["score", *args], catch_exceptions=False)


def score_file(
    task: str, path: str, log_dir: Path, *extra: str
) -> tuple[Result, dict[str, Any]]:
    result = run_score(task, path, "--log-dir", str(log_dir), "--json", *extra)
    summary: dict[str, Any] = json.loads(result.stdout)
    return result, summary


def read_results(summary: dict[str, Any]) -> list[dict[str, Any]]:
    text = Path(summary["results"]).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def dump(model: Any) -> Any:
    return json.loads(model.model_dump_json(exclude_none=True))


def without_message_ids(sample: dict[str, Any]) -> dict[str, Any]:
    """Message ids are random per run; everything else must match."""
    sample = {
        key: value
        for key, value in sample.items()
        if key not in RUN_SPECIFIC_SAMPLE_FIELDS
    }
    sample["messages"] = [
        {key: value for key, value in message.items() if key != "id"}
        for message in sample["messages"]
    ]
    for choice in sample["output"].get("choices", []):
        choice["message"].pop("id", None)
    return sample


def same_json(left: Any, right: Any) -> bool:
    # Text comparison: NaN equals NaN, and True never equals 1.
    return json.dumps(left) == json.dumps(right)


def extended_fixture(tmp_path: Path, task: str) -> str:
    """The packaged cases, plus what they lack: replayed answer texts,
    cases without `expected`, non-ASCII sample ids."""
    lines = packaged_fixture(f"{task}.jsonl").read_text(encoding="utf-8").splitlines()
    if task == "stage_diagnosis":
        extra: list[Any] = [
            {"id": "with-answer", "input": {**STAGE_OK, "answer": "Paris."}},
            {"id": "运行-1", "input": {**STAGE_OK, "answer": ["not", "text"]}},
            {"id": "Zz-no-expected", "input": {"required": [], "context": []}},
        ]
    else:
        source = ["C-3", "A-1", "B-2"]
        answered = {"source": source, "output": ANSWERED}
        extra = [
            {"id": "运行-1", "input": {"source": ["é", "e"], "answer": ["e", "é"]}},
            {"id": "Zz-context", "input": {"source": [], "answer": [], "context": []}},
            # Recorded outputs, read from their text as a live output is.
            {"id": "output-read", "input": answered},
            {"id": "output-echo", "input": {"source": source, "output": ECHOED}},
            {"id": "output-and-answer", "input": {**answered, "answer": source}},
            {"id": "output-no-text", "input": {"source": source, "output": source}},
        ]
    return write_lines(tmp_path / f"{task}.jsonl", [*lines, *extra])


TASK_FUNCTIONS = {
    "stage_diagnosis": stage_diagnosis,
    "ordered_extraction": ordered_extraction_recorded,
}


class LogPair(NamedTuple):
    """The logs of one file by `inspect eval` and `tracegrade score`, in one format."""

    task: str
    log_format: str
    inspect_log: str
    ours: str
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def inspect_eval_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each task's `.eval` log of its extended fixture, evaluated once for
    the module, in a directory holding the fixture."""
    logs = {}
    for task, make in TASK_FUNCTIONS.items():
        tmp_path = tmp_path_factory.mktemp(f"{task}-inspect")
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.chdir(tmp_path)
            # Relative, as a user would pass it: both logs record it as given.
            path = Path(extended_fixture(tmp_path, task)).name
            logged = {"log_dir": "inspect-logs", "log_format": "eval"}
            (evaluated,) = eval(make(dataset=path), display="none", **logged)
        assert evaluated.status == "success"
        logs[task] = tmp_path / evaluated.location
    return logs


@pytest.fixture(
    scope="module",
    params=[(task, fmt) for task in sorted(TASK_FUNCTIONS) for fmt in ("eval", "json")],
    ids=lambda param: "-".join(param),
)
def log_pair(
    request: pytest.FixtureRequest,
    inspect_eval_logs: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> LogPair:
    """`inspect eval`'s `.json` log is its `.eval` log rewritten by the writer
    `inspect eval --log-format json` ends with (`write_eval_log`). Workers'
    logs are held to these (`test_workers_write_the_samples_of_one_process`)."""
    task, log_format = request.param
    inspect_log = inspect_eval_logs[task]
    tmp_path = tmp_path_factory.mktemp(f"{task}-{log_format}")
    path = f"{task}.jsonl"
    shutil.copy(inspect_log.parent.parent / path, tmp_path / path)
    if log_format == "json":
        in_json = tmp_path / "inspect-logs" / inspect_log.with_suffix(".json").name
        in_json.parent.mkdir()
        write_eval_log(read_eval_log(str(inspect_log)), str(in_json), format="json")
        inspect_log = in_json
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        result, summary = score_file(
            task, path, Path("tracegrade-logs"), "--log-format", log_format
        )
    assert result.exit_code == 0
    return LogPair(
        task, log_format, str(inspect_log), str(tmp_path / summary["log"]), summary
    )


def test_log_is_indistinguishable_from_inspect_eval(log_pair: LogPair) -> None:
    assert Path(log_pair.ours).suffix == f".{log_pair.log_format}"
    inspect_log = read_eval_log(log_pair.inspect_log)
    ours = read_eval_log(log_pair.ours)

    assert ours.status == inspect_log.status == "success"
    ours_eval, inspect_eval = dump(ours.eval), dump(inspect_log.eval)
    for key in RUN_SPECIFIC_EVAL_FIELDS:
        assert ours_eval.pop(key) and inspect_eval.pop(key)
    assert ours_eval == inspect_eval
    assert dump(ours.plan) == dump(inspect_log.plan)
    assert same_json(dump(ours.results), dump(inspect_log.results))
    assert same_json(
        [dump(reduction) for reduction in ours.reductions or []],
        [dump(reduction) for reduction in inspect_log.reductions or []],
    )

    assert ours.samples is not None and inspect_log.samples is not None
    # Same samples, in the same order as Inspect's reader gives them.
    assert [sample.id for sample in ours.samples] == [
        sample.id for sample in inspect_log.samples
    ]
    for mine, theirs in zip(ours.samples, inspect_log.samples, strict=True):
        assert mine.events == []
        assert same_json(
            without_message_ids(dump(mine)), without_message_ids(dump(theirs))
        ), mine.id
    # What `inspect view`'s /api/logs and /api/logs/{log} serve of it.
    listing = asyncio.run(get_logs(str(Path(log_pair.ours).parent), False, {}))
    assert listing is not None
    (listed,) = listing.files
    assert listed.task_id == ours.eval.task_id
    header = json.loads(asyncio.run(get_log_file(log_pair.ours, "0")).contents)
    assert "samples" not in header
    assert header["results"]["total_samples"] == len(ours.samples)
    if log_pair.log_format == "eval":
        # Deflated by ISA-L by the writer (`deflating_with_isal`).
        member = sample_member(ours.samples[0].id, 1)
        with zipfile.ZipFile(log_pair.ours) as archive:
            stored = deflated(archive.read(member), isal_zlib)
        assert stored_member(Path(log_pair.ours), member) == stored


def test_sample_summaries_are_the_same(log_pair: LogPair) -> None:
    """What the viewer lists. Inspect lists a `.eval` log's summaries in
    the order samples finished, which differs between runs; sorted here."""

    def summaries(log: str) -> list[dict[str, Any]]:
        read = [dump(summary) for summary in read_eval_log_sample_summaries(log)]
        for summary in read:
            for key in RUN_SPECIFIC_SAMPLE_FIELDS:
                summary.pop(key, None)
        return sorted(read, key=lambda summary: str(summary["id"]))

    ours = summaries(log_pair.ours)
    assert len(ours) == log_pair.summary["records"]
    assert same_json(ours, summaries(log_pair.inspect_log))


def test_inspect_score_rescores_both_alike(log_pair: LogPair, tmp_path: Path) -> None:
    """`inspect score --action append` reads the samples back, scores them
    again and writes the log: the same results and scores come out of both
    (`--overwrite`: without a terminal it would prompt and abort)."""
    rescored = []
    for log in (log_pair.inspect_log, log_pair.ours):
        copy_of_log = tmp_path / f"{len(rescored)}{Path(log).suffix}"
        copy_of_log.write_bytes(Path(log).read_bytes())
        completed = run_inspect(
            *("score", str(copy_of_log), "--scorer", f"tracegrade/{log_pair.task}"),
            *("--action", "append", "--overwrite"),
            cwd=tmp_path,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        rescored.append(read_eval_log(str(copy_of_log)))
        assert rescored[-1].status == "success"
    theirs, ours = rescored
    assert ours.results is not None and theirs.results is not None
    names = [score.name for score in ours.results.scores]
    assert f"{log_pair.task}1" in names  # the appended score: scorers are
    # named as their tasks
    assert same_json(dump(ours.results), dump(theirs.results))

    def scores(sample: Any) -> dict[str, Any]:
        return {name: dump(score) for name, score in (sample.scores or {}).items()}

    by_id = {sample.id: sample for sample in theirs.samples or []}
    for sample in ours.samples or []:
        assert same_json(scores(sample), scores(by_id[sample.id])), sample.id


def test_jsonl_has_one_entry_per_record_with_the_evaluator_result(
    tmp_path: Path,
) -> None:
    fixture = packaged_fixture("stage_diagnosis.jsonl")
    result, summary = score_file("stage_diagnosis", str(fixture), tmp_path / "logs")
    assert result.exit_code == 0
    entries = read_results(summary)
    cases = read_fixture_cases(fixture)
    assert [(entry["id"], entry["line"]) for entry in entries] == [
        (case.id, case.line) for case in cases
    ]
    for entry, case in zip(entries, cases, strict=True):
        assert case.expected is not None and entry["explanation"]
        if "invalid" in case.expected:
            assert entry["result"] is None and entry["value"] is None
            assert entry["error"]["kind"] == "invalid-input"
            assert entry["error"]["field"] == case.expected["invalid"]
        else:
            assert same_json(entry["result"], case.expected), case.id
        if "stage" in case.expected:
            assert entry["value"] == case.expected["stage"]
            assert entry["error"] is None


def test_every_line_is_accounted_for(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "runs.jsonl",
        [
            {"id": "a", "input": STAGE_OK},
            '{"id": "b", "input": ',
            "",
            {"id": "a", "input": {**STAGE_OK, "correct": False}},
            {"id": "line-2", "input": {**STAGE_OK, "context": []}},
            [1, 2],
            {"id": "c", "inputs": {}},
            {"id": "d", "input": {**STAGE_OK, "context": "D1"}},
            {"id": "e", "input": {"required": ["D1"], "context": ["D1"]}},
        ],
    )
    result, summary = score_file(
        "stage_diagnosis", path, tmp_path / "logs", "--log-format", "json"
    )
    assert result.exit_code == 1
    # Inspect reads back and writes what was written, unreadable lines too:
    # nothing dropped, coerced or defaulted (a .eval log's samples are
    # these bytes too: `sample_json`).
    log = read_eval_log(summary["log"])
    written = Path(summary["log"]).read_bytes()
    assert same_json(json.loads(written), json.loads(eval_log_json(log)))

    entries = read_results(summary)
    assert [entry["line"] for entry in entries] == [1, 2, 4, 5, 6, 7, 8, 9]
    ids = [entry["id"] for entry in entries]
    assert ids == ["a", None, "a", "line-2", None, "c", "d", "e"]
    kinds = [entry["error"] and entry["error"]["kind"] for entry in entries]
    unreadable = ["malformed-json", "duplicate-sample-id"]
    not_records = ["not-a-fixture-line"] * 2
    bad_input = ["invalid-input", "answer-label"]
    assert kinds == [None, *unreadable, None, *not_records, *bad_input]
    assert entries[2]["error"]["first_line"] == 1

    assert summary["lines"] == summary["records"] + summary["blank"] == 9
    assert summary["scored"] + summary["not_scored"] == summary["records"] == 8
    assert summary["line_errors"] == 4
    assert summary["by_kind"] == Counter([*unreadable, *not_records, *bad_input])

    assert log.status == "success" and log.results is not None
    assert log.results.total_samples == log.results.completed_samples == 8
    (eval_score,) = log.results.scores
    assert eval_score.scored_samples == 2 and eval_score.unscored_samples == 6
    samples = {sample.id: sample for sample in log.samples or []}
    # A real sample already has the id line-2, so the bad line 2 yields.
    in_file_order = ["a", "line-2~2", "line-4", "line-2", "line-6", "line-7", "d", "e"]
    assert log.eval.dataset.sample_ids == in_file_order
    assert set(samples) == set(in_file_order)
    bad = samples["line-2~2"]
    assert (bad.input, bad.metadata) == ('{"id": "b", "input": ', {"line": 2})
    score = (bad.scores or {})["stage_diagnosis"]
    assert isinstance(score.value, float) and math.isnan(score.value)
    assert score.reason == "malformed-json"
    metadata = score.metadata or {}
    assert metadata["error"]["side"] == "data" and metadata["result"] is None


def test_context_recall_and_precision_count_unlabelled_runs(tmp_path: Path) -> None:
    """Both need only the required and context IDs, so a run without a label
    counts; the logged metrics see only the scored run."""
    unlabelled = {"required": ["D1", "D2"], "context": ["D1", "X", "Y"]}
    runs = [{"id": "a", "input": unlabelled}, {"id": "b", "input": STAGE_OK}]
    path = write_lines(tmp_path / "runs.jsonl", runs)
    result, summary = score_file("stage_diagnosis", path, tmp_path / "logs")
    assert result.exit_code == 0, result.output
    assert summary["recall"] == {"mean": (0.5 + 1.0) / 2, "runs": 2}
    assert summary["precision"] == {"mean": (1 / 3 + 1.0) / 2, "runs": 2}
    metrics = summary["metrics"]["stage_diagnosis"]
    assert metrics["context_recall"] == metrics["context_precision"] == 1.0
    # Counts are integers, shares floats.
    assert type(metrics["scored_runs"]) is int and type(metrics["pass"]) is float

    shown = run_score("stage_diagnosis", path, "--log-dir", str(tmp_path / "again"))
    for name, mean in (("recall", "0.75"), ("precision", "0.6667")):
        said = rf"context {name}, labelled or not\W+{mean} over 2 runs"
        assert re.search(said, shown.stdout), shown.stdout


def test_counts_read_as_integers(tmp_path: Path) -> None:
    """The summary printed metrics to four significant digits, so 10,001
    lucky answers read `1e+04`."""
    lucky = {"required": ["D1"], "context": ["D2"], "correct": True}
    runs = [{"id": f"r{i}", "input": lucky} for i in range(10_001)]
    path = write_lines(tmp_path / "lucky.jsonl", runs)
    result = run_score("stage_diagnosis", path, "--log-dir", str(tmp_path / "logs"))
    assert result.exit_code == 0, result.output
    assert re.search(r"stage_diagnosis lucky_answers\W+10,001\b", result.stdout)
    assert re.search(r"stage_diagnosis scored_runs\W+10,001\b", result.stdout)
    assert re.search(r"stage_diagnosis retrieval\W+1\b", result.stdout)
    assert "e+" not in result.stdout, result.stdout


def test_results_can_go_to_stdout_with_the_summary_on_stderr(tmp_path: Path) -> None:
    runs = [{"id": "a", "input": STAGE_OK}, {"id": "b", "input": STAGE_OK}]
    path = write_lines(tmp_path / "runs.jsonl", runs)
    to_stdout = ("--log-dir", str(tmp_path / "logs"), "--out", "-")
    result = run_score("stage_diagnosis", path, *to_stdout)
    assert result.exit_code == 0
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["a", "b"]
    assert "Log:" in result.stderr and "Log:" not in result.stdout

    both = run_score("stage_diagnosis", path, *to_stdout, "--json")
    assert both.exit_code == 2 and "both want stdout" in both.output


def test_an_unreadable_line_is_shown_cut_and_with_its_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    long_line = '{"id": "x", "input": ' + "[" * 3000
    path.write_bytes(b'{"id": "\xff"}\n' + long_line.encode() + b"\n")
    _, summary = score_file("stage_diagnosis", str(path), tmp_path / "logs")
    inputs = {s.id: s.input for s in read_eval_log(summary["log"]).samples or []}
    assert inputs["line-1"] == '{"id": "\\xff"}'
    assert inputs["line-2"] == long_line[:2000] + "..."


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_a_run_over_the_limit_is_split_into_parts_that_pool(
    tmp_path: Path, log_format: str
) -> None:
    lines = packaged_fixture("stage_diagnosis.jsonl").read_text("utf-8").splitlines()
    lines.insert(4, "{broken")
    lines.insert(30, "not json")
    path = write_lines(tmp_path / "runs.jsonl", lines)
    fmt = ("--log-format", log_format)
    # At the limit, the run is one log.
    _, whole = score_file(
        "stage_diagnosis", path, tmp_path / "whole", *fmt, "--max-samples-per-log=48"
    )
    assert "-part" not in whole["log"]
    result, split = score_file(
        "stage_diagnosis", path, tmp_path / "split", *fmt, "--max-samples-per-log=20"
    )
    assert result.exit_code == 1  # the two unreadable lines
    assert whole["records"] == split["records"] == 48

    assert split["log"] is None
    base = Path(split["results"]).name.removesuffix(".results.jsonl")
    assert [Path(log).name for log in split["logs"]] == [
        f"{base}-part{index}of3.{log_format}" for index in (1, 2, 3)
    ]
    headers = [read_eval_log(log, header_only=True).eval for log in split["logs"]]
    identities = [(head.run_id, head.eval_id, head.task_id) for head in headers]
    assert [len(set(ids)) for ids in zip(*identities, strict=True)] == [1, 3, 3]
    assert [header.metadata for header in headers] == [
        {"tracegrade_part": {"index": index, "count": 3}} for index in (1, 2, 3)
    ]
    # Every sample in exactly one part, in file order, the unreadable lines
    # in their parts where they stood.
    whole_header = read_eval_log(whole["log"], header_only=True).eval
    assert whole_header.metadata is None
    in_parts = [header.dataset.sample_ids or [] for header in headers]
    assert [len(ids) for ids in in_parts] == [20, 20, 8]
    assert [i for ids in in_parts for i in ids] == whole_header.dataset.sample_ids
    assert in_parts[0][4] == "line-5" and "line-31" in in_parts[1]
    for log, sample_ids in zip(split["logs"], in_parts, strict=True):
        samples = read_eval_log(log).samples or []
        assert sorted(str(s.id) for s in samples) == sorted(map(str, sample_ids))

    # The summary is over the whole run; the results are the same lines.
    assert split["metrics"] == whole["metrics"]
    assert read_results(split) == read_results(whole)

    def report(path: str) -> dict[str, Any]:
        read = CliRunner().invoke(main, ["report", path, "--json"])
        assert read.exit_code == 0, read.output
        pooled: dict[str, Any] = json.loads(read.stdout)
        return {k: v for k, v in pooled.items() if k not in ("logs", "evals")}

    assert report(str(tmp_path / "split")) == report(whole["log"])


def test_a_field_no_record_has_is_warned_of_in_the_terminal_json_and_log(
    tmp_path: Path,
) -> None:
    # "requird": the typo that makes every run `unresolved`, each rightly.
    runs = [{"id": name, "input": {"requird": ["D1"], "context": []}} for name in "ab"]
    dataset = write_lines(tmp_path / "typo.jsonl", runs)
    _, summary = score_file("stage_diagnosis", dataset, tmp_path / "logs")
    fields = [warning["field"] for warning in summary["warnings"]]
    assert fields == ["required", "correct"]
    assert '"requird"' in summary["warnings"][0]["message"]
    # No run has a context recall: NaN in the log, null in the summary.
    assert summary["metrics"]["stage_diagnosis"]["context_recall"] is None
    (log,) = summary["logs"]
    metadata = read_eval_log(log, header_only=True).eval.metadata or {}
    assert metadata["tracegrade_warnings"] == [
        warning["message"] for warning in summary["warnings"]
    ]

    shown = run_score("stage_diagnosis", dataset, "--log-dir", str(tmp_path / "logs2"))
    flat = " ".join(shown.output.split())
    assert "warning: no record of" in flat
    assert 'has "required" in its input' in flat
