"""Hostile logs: a log that cannot be read is named in one line, never a traceback.

A `.json` or `.eval` log whose second sample holds a byte that is not
UTF-8, or a value nested `DEPTH` levels deep (past what Python's parser
goes), is given to the real `tracegrade report` and `tracegrade compare`.
Each must stop with one line naming the log and the sample, and exit
non-zero.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.commands import run_tracegrade
from tests.faults.conftest import one_clear_line, write_stage_records

MARKER = b'"HOSTILE"'
DEPTH = 10_000
"""Ten times the depth Python's JSON parsers reach. The 100,000 levels of
the bug report fail alike, but Inspect's own header read of such a `.json`
log (which `report` calls first) takes seconds a run: it is quadratic in
the depth."""
HOSTILE = {"not-utf-8": b'"a \xff byte"', "deep": b"[" * DEPTH + b"]" * DEPTH}
SECOND_SAMPLE = "run-1"


@pytest.fixture(scope="module")
def good_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A three-sample log of each format, from `tracegrade score`."""
    work = tmp_path_factory.mktemp("hostile-logs")
    write_stage_records(work / "runs.jsonl", 3)
    logs = {}
    for log_format in ("json", "eval"):
        log_dir = work / log_format
        done = run_tracegrade(
            *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", str(log_dir)),
            *("--log-format", log_format, "--out", f"{log_format}.jsonl"),
            cwd=work,
        )
        assert done.returncode == 0, done.stderr
        (logs[log_format],) = log_dir.iterdir()
    return logs


def _with_hostile_sample(sample: dict[str, object], hostile: bytes) -> bytes:
    sample["metadata"] = "HOSTILE"
    return json.dumps(sample).encode().replace(MARKER, hostile)


def hostile_json_log(good: Path, hostile: bytes, target: Path) -> Path:
    log = json.loads(good.read_bytes())
    log["samples"][1]["metadata"] = "HOSTILE"
    assert log["samples"][1]["id"] == SECOND_SAMPLE
    text = json.dumps(log, indent=2).encode()
    target.mkdir()
    path = target / good.name
    path.write_bytes(text.replace(MARKER, hostile))
    return path


def hostile_eval_log(good: Path, hostile: bytes, target: Path) -> Path:
    target.mkdir()
    path = target / good.name
    member = f"samples/{SECOND_SAMPLE}_epoch_1.json"
    with zipfile.ZipFile(good) as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == member:
                data = _with_hostile_sample(json.loads(data), hostile)
            new.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


MAKERS: dict[str, Callable[[Path, bytes, Path], Path]] = {
    "json": hostile_json_log,
    "eval": hostile_eval_log,
}
# How the sample is named: by its place in a `.json` log, by its member
# (id and epoch) in an `.eval` log.
SAMPLE_NAMED = {
    "json": "sample 2 in file order",
    "eval": f"member samples/{SECOND_SAMPLE}_epoch_1.json",
}
WHY = {"not-utf-8": "not UTF-8 (0xff)", "deep": "nested too deeply to read"}


@pytest.mark.parametrize("log_format", ["json", "eval"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_report_and_compare_name_the_log_and_the_sample(
    good_logs: dict[str, Path], tmp_path: Path, log_format: str, kind: str
) -> None:
    good = good_logs[log_format]
    path = MAKERS[log_format](good, HOSTILE[kind], tmp_path / "hostile")

    report = run_tracegrade("report", str(path), cwd=tmp_path)
    compare = run_tracegrade("compare", str(good), str(path), cwd=tmp_path)

    for done in (report, compare):
        assert done.returncode != 0
        line = one_clear_line(done.stderr)
        assert f"cannot read {str(path)!r}" in line, line
        assert SAMPLE_NAMED[log_format] in line, line
        assert WHY[kind] in line, line
    assert one_clear_line(compare.stderr).startswith("Error: NEW: ")
