"""A log whose second sample is not UTF-8, or nested past what Python's
parsers reach, stops `report` and `compare` with one line naming the log and
the sample, never a traceback."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.commands import run_tracegrade
from tests.faults.conftest import one_clear_line, write_stage_records

MARKER = b'"HOSTILE"'
# Ten times what Python's JSON parsers reach (Inspect's header read of a
# `.json` log is quadratic in the depth, so not the bug report's 100,000).
DEPTH = 10_000
HOSTILE = {"not-utf-8": b'"a \xff byte"', "deep": b"[" * DEPTH + b"]" * DEPTH}
SECOND_SAMPLE = "run-1"
MEMBER = f"samples/{SECOND_SAMPLE}_epoch_1.json"


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


def hostile_log(good: Path, hostile: bytes, target: Path) -> Path:
    """`good` with the second sample's metadata replaced by `hostile` bytes."""
    target.mkdir()
    path = target / good.name
    if good.suffix == ".json":
        log = json.loads(good.read_bytes())
        assert log["samples"][1]["id"] == SECOND_SAMPLE
        log["samples"][1]["metadata"] = "HOSTILE"
        path.write_bytes(json.dumps(log, indent=2).encode().replace(MARKER, hostile))
        return path
    with zipfile.ZipFile(good) as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == MEMBER:
                sample = json.loads(data) | {"metadata": "HOSTILE"}
                data = json.dumps(sample).encode().replace(MARKER, hostile)
            new.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


# A sample is named by its place in a `.json` log, by its member in an `.eval`.
SAMPLE_NAMED = {"json": "sample 2 in file order", "eval": f"member {MEMBER}"}
WHY = {"not-utf-8": "not UTF-8 (0xff)", "deep": "nested too deeply to read"}


@pytest.mark.parametrize("log_format", ["json", "eval"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_report_and_compare_name_the_log_and_the_sample(
    good_logs: dict[str, Path], tmp_path: Path, log_format: str, kind: str
) -> None:
    good = good_logs[log_format]
    path = hostile_log(good, HOSTILE[kind], tmp_path / "hostile")

    report = run_tracegrade("report", str(path), cwd=tmp_path)
    compare = run_tracegrade("compare", str(good), str(path), cwd=tmp_path)

    for done in (report, compare):
        assert done.returncode != 0
        line = one_clear_line(done.stderr)
        assert f"cannot read {str(path)!r}" in line, line
        assert SAMPLE_NAMED[log_format] in line, line
        assert WHY[kind] in line, line
    assert one_clear_line(compare.stderr).startswith("Error: NEW: ")
