"""A large input scored by workers (`bulk.workers`) gives what one process
gives: the same samples, results in input order, counts and metrics, with
repeated ids found across ranges and a field no record has warned of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from inspect_ai.log import read_eval_log

from tests.test_cli_score import score_file
from tracegrade.bulk import run as bulk_run
from tracegrade.bulk import workers
from tracegrade.bulk.ranges import plan_ranges, read_range
from tracegrade.lines import read_lines

RUN_SPECIFIC = {"uuid", "started_at", "completed_at", "total_time", "working_time"}


def write_runs(path: Path, typo: bool = False) -> Path:
    required = "requird" if typo else "required"
    lines = []
    for number in range(600):
        record = {required: ["D1", "D2"], "context": ["D1"] * (number % 3)}
        record["correct"] = number % 2 == 0
        record |= {f"note{number}": 1} if typo else {}  # more keys than are kept
        lines.append(json.dumps({"id": f"run-{number}", "input": record}))
    lines.insert(7, "{broken")  # line 8: its sample would be `line-8`
    lines.insert(300, "   ")
    lines.append(lines[2])  # run-2 again, in the last range
    lines.append(json.dumps({"id": "line-8", "input": {required: [], "context": []}}))
    path.write_text("\r\n".join(lines) + "\n", encoding="utf-8")
    return path


def samples(logs: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for log in logs:
        for sample in read_eval_log(log).samples or []:
            dumped = sample.model_dump(mode="json", exclude=RUN_SPECIFIC)
            for message in dumped["messages"]:
                message.pop("id")
            found[str(sample.id)] = json.dumps(dumped, sort_keys=True)  # NaN too
    return found


RUN_OWN = {"log", "logs", "results", "seconds", "samples_per_second", "timings"}


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key not in RUN_OWN}


@pytest.mark.parametrize(
    ("log_format", "results_format", "typo"),
    [("eval", "jsonl", False), ("json", "parquet", False), ("eval", "jsonl", True)],
)
def test_workers_write_the_samples_of_one_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_format: str,
    results_format: str,
    typo: bool,
) -> None:
    path = str(write_runs(tmp_path / "runs.jsonl", typo))
    options = ("--log-format", log_format, "--results-format", results_format)
    one, alone = score_file(
        "stage_diagnosis", path, tmp_path / "one", *options, "--workers", "1"
    )
    monkeypatch.setattr(workers, "PARALLEL_FROM", 0)
    many, split = score_file(
        "stage_diagnosis", path, tmp_path / "many", *options, "--workers", "2"
    )
    assert one.exit_code == many.exit_code == 1  # the broken line
    assert len(alone["logs"]) == 1 and len(split["logs"]) == 2
    assert comparable(split) == comparable(alone)
    assert split["by_kind"]["duplicate-sample-id"] == 1
    assert bool(split["warnings"]) == typo
    assert all("; more than 50 in all)" in w["message"] for w in split["warnings"])
    assert samples(split["logs"]) == samples(alone["logs"])
    assert "line-8~2" in samples(split["logs"])  # the real `line-8` kept its id
    if results_format == "parquet":
        assert pq.read_table(split["results"]) == pq.read_table(alone["results"])
    else:
        assert Path(split["results"]).read_text() == Path(alone["results"]).read_text()
    headers = [read_eval_log(log, header_only=True) for log in split["logs"]]
    assert [header.eval.metadata["tracegrade_part"] for header in headers] == [
        {"index": 1, "count": 2},
        {"index": 2, "count": 2},
    ]


def test_ranges_read_the_lines_the_whole_file_has(tmp_path: Path) -> None:
    path = tmp_path / "ends.jsonl"
    path.write_bytes(b"a\r\nb\rc\n\nd\r\n" * 500 + b"last")
    whole = [(raw.number, raw.text) for raw in read_lines(path)]
    for parts in (1, 2, 7):
        ranges = plan_ranges(str(path), parts, max_lines=len(whole))
        assert len(ranges) >= min(parts, 2)
        read = [
            (raw.number, raw.text)
            for part in ranges
            for raw in read_range(str(path), part)
        ]
        assert read == whole
    assert all(part.lines <= 100 for part in plan_ranges(str(path), 2, 100))


def test_a_plain_script_starting_workers_is_not_run_again(tmp_path: Path) -> None:
    """Spawn imports the caller's main module in each worker, unless told
    otherwise: a script without a `__name__` guard would run again there."""
    write_runs(tmp_path / "runs.jsonl")
    script = tmp_path / "score_runs.py"
    script.write_text(
        "import sys\n"
        "from tracegrade.bulk import workers\n"
        "from tracegrade.cli import run\n"
        "open('ran', 'a').write('once\\n')\n"
        "workers.PARALLEL_FROM = 0\n"
        "sys.argv = ['tracegrade', 'score', 'stage_diagnosis', 'runs.jsonl',\n"
        "            '--workers', '2', '--log-dir', 'logs', '--json']\n"
        "run()\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr  # the broken line
    assert len(json.loads(done.stdout)["logs"]) == 2
    assert (tmp_path / "ran").read_text() == "once\n"


def test_only_a_large_regular_file_is_scored_in_workers(tmp_path: Path) -> None:
    line = json.dumps({"id": "run", "input": {}}) + "\n"
    small = tmp_path / "small.jsonl"
    small.write_text(line * (workers.PARALLEL_FROM // 16 // len(line) + 1))
    large = tmp_path / "large.jsonl"
    large.write_text(line * (workers.PARALLEL_FROM // len(line) + 1))

    def kind(path: Path | str, count: int | None) -> str:
        run = workers.score_run(
            *("stage_diagnosis", str(path), "logs", None, "eval", 75_000),
            replace=False,
            results_format="jsonl",
            workers=count,
        )
        return "in process" if run.ranges is None else "workers"

    cores = workers.default_workers()
    assert kind(large, None) == ("workers" if cores > 1 else "in process")
    assert kind(small, None) == "in process"  # by default, from 16 MiB
    assert kind(small, 2) == "workers"  # asked for, from 1 MiB
    assert kind(large, 1) == "in process"
    assert kind("-", 8) == "in process"  # standard input


def test_ranges_whose_json_logs_split_write_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The viewer lists no sample of a .json log over 100 MiB: parts stay
    under `MAX_JSON_LOG_BYTES` of samples (made small here). A range split
    so into more parts than guessed does not write over the next range's
    first part (issue 40's matrix)."""
    monkeypatch.setattr(bulk_run, "MAX_JSON_LOG_BYTES", 40_000)
    path = write_runs(tmp_path / "runs.jsonl")
    identity = bulk_run.new_identity(tmp_path, "stage_diagnosis")
    ranges = plan_ranges(str(path), 2, 75_000)
    outcomes = [
        workers.score_part(
            workers.RangeJob(
                *("stage_diagnosis", str(path), str(tmp_path), "json", 75_000),
                *("jsonl", lines, number, identity, number, len(ranges)),
            )
        )
        for number, lines in enumerate(ranges, start=1)
    ]
    logs = [log for outcome in outcomes for log in outcome.summary.logs]
    assert len(outcomes[0].summary.logs) > 1 and len(set(logs)) == len(logs)
    total = 0
    for log in logs:
        samples = json.loads(Path(log).read_text("utf-8"))["samples"]
        sizes = [
            len(json.dumps(s, separators=(",", ":"), ensure_ascii=False))
            for s in samples
        ]
        assert sum(sizes) - max(sizes) < 40_000  # but for the one that crossed it
        total += len(samples)
    assert total == 603
