"""The streamed report equals the whole-log report, on real logs.

`tracegrade report` reads each sample on its own as plain JSON
(`report/samples.py`). The reference is what it did before: `read_eval_log`
of the whole log, every sample validated as an `EvalSample`. Both go
through the same aggregation, so any difference is the reading's. The logs
are `inspect eval`'s own `.eval` logs with two epochs, the same logs as
Inspect's JSON writer lays them out in `.json`, and the same logs
rewritten as other writers lay them out: `EvalArchive` (what `tracegrade
score` writes), deflated and stored members, ZIP64 records, a sample
logged twice, NaN in a `.json` log.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.scorer import Score

from tracegrade import ordered_extraction_recorded, stage_diagnosis
from tracegrade.bulk.evallog import EvalArchive, sample_summary
from tracegrade.logs.evals import find_logs
from tracegrade.logs.samples import SampleRead, from_eval_sample
from tracegrade.logs.scores import LogError
from tracegrade.report.aggregate import Report, build_report

EPOCHS = 2
JSON_LOG_NAME = "2026-01-01T00-00-00+00-00_{}.json"


def whole_log(path: str) -> list[SampleRead]:
    """The reference reader: the whole log, validated by Inspect."""
    return [from_eval_sample(s) for s in read_eval_log(path).samples or []]


def both_ways(paths: list[str], top: int = 10) -> tuple[Report, Report]:
    return (
        build_report(paths, top=top),
        build_report(paths, top=top, samples=whole_log),
    )


@pytest.fixture(scope="module")
def epoch_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], list[Path]]:
    """The logs of both packaged tasks over `EPOCHS` epochs in a format,
    evaluated once for the module: the tests only read them. The `.json`
    logs are the `.eval` logs written again by `write_eval_log`, which is
    the very writer (`JSONRecorder.write_log`) `inspect eval` ends a
    `.json` log with, so one eval serves both formats."""
    # Nothing watches the eval live: the buffer of each sample's events that
    # `inspect view` reads while one runs would be cost alone.
    evaluated = eval(
        [stage_diagnosis(dataset="edge-cases"), ordered_extraction_recorded()],
        epochs=EPOCHS,
        display="none",
        log_dir=str(tmp_path_factory.mktemp("epochs-eval")),
        log_format="eval",
        log_realtime=False,
    )
    for log in evaluated:
        assert log.status == "success", log.error
    made = {"eval": [Path(log.location) for log in evaluated]}
    json_dir = tmp_path_factory.mktemp("epochs-json")
    made["json"] = []
    for path in made["eval"]:
        json_path = json_dir / path.with_suffix(".json").name
        write_eval_log(read_eval_log(str(path)), str(json_path), format="json")
        made["json"].append(json_path)
    return made.__getitem__


@pytest.fixture(scope="module", params=["eval", "json"])
def log_dir(
    request: pytest.FixtureRequest, epoch_runs: Callable[[str], list[Path]]
) -> Path:
    return epoch_runs(request.param)[0].parent


@pytest.fixture(scope="module")
def eval_logs(epoch_runs: Callable[[str], list[Path]]) -> list[Path]:
    return epoch_runs("eval")


@pytest.mark.parametrize("top", [10, 3])
def test_streamed_report_equals_the_whole_log_report(log_dir: Path, top: int) -> None:
    paths = find_logs([log_dir])
    streamed, whole = both_ways(paths, top)

    assert streamed == whole
    assert {s.runs for s in streamed.stage_diagnosis} != {0}
    assert [s.epochs for s in streamed.stage_diagnosis] == [[EPOCHS]]
    assert streamed.ordered_extraction[0].itemised > 0


def rezipped(source: Path, target: Path, **options: object) -> Path:
    """`source` with every member written again by `zipfile`."""
    with (
        zipfile.ZipFile(source) as old,
        zipfile.ZipFile(target, "w", **options) as new,
    ):
        for info in old.infolist():
            new.writestr(info.filename, old.read(info))
    return target


@pytest.mark.parametrize("zipped", ["deflate", "stored", "zip64"])
def test_members_however_zipped_read_the_same(
    eval_logs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zipped: str
) -> None:
    if zipped == "zip64":
        # Limits this small make zipfile write every ZIP64 structure: sizes
        # and offsets in ZIP64 extra fields, and the ZIP64 end records.
        monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 64)
        monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 4)
    method = zipfile.ZIP_STORED if zipped == "stored" else zipfile.ZIP_DEFLATED
    paths = [
        str(rezipped(log, tmp_path / log.name, compression=method)) for log in eval_logs
    ]
    monkeypatch.undo()
    if zipped == "zip64":
        assert b"PK\x06\x06" in Path(paths[0]).read_bytes()
    streamed, whole = both_ways(paths)

    assert streamed == whole
    original = both_ways([str(p) for p in eval_logs])[0]
    assert streamed.stage_diagnosis == original.stage_diagnosis


def test_logs_written_by_evalarchive_read_the_same(
    eval_logs: list[Path], tmp_path: Path
) -> None:
    paths = []
    for source in eval_logs:
        log = read_eval_log(str(source))
        with (
            zipfile.ZipFile(source) as old,
            EvalArchive(tmp_path / source.name) as archive,
        ):
            archive.start(log.eval, log.plan)
            for name in old.namelist():
                if name.startswith("samples/"):
                    data = old.read(name)
                    archive.add_sample(data, sample_summary(json.loads(data)))
            paths.append(str(archive.finish(log, log.reductions)))
    streamed, whole = both_ways(paths)

    assert streamed == whole
    assert (
        streamed.stage_diagnosis
        == both_ways([str(p) for p in eval_logs])[0].stage_diagnosis
    )


def test_a_sample_logged_twice_counts_once_as_its_last(
    eval_logs: list[Path], tmp_path: Path
) -> None:
    source = next(log for log in eval_logs if "stage" in log.name)
    path = rezipped(source, tmp_path / source.name, compression=zipfile.ZIP_DEFLATED)
    name = "samples/lucky-answer-gap_epoch_1.json"
    with zipfile.ZipFile(path) as archive:
        sample = json.loads(archive.read(name))
    before = sample["scores"]["stage_diagnosis"]["value"]
    sample["scores"]["stage_diagnosis"]["value"] = "unresolved"
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
    ):
        archive.writestr(name, json.dumps(sample))

    streamed, whole = both_ways([str(path)])
    assert streamed == whole
    (original,) = both_ways([str(source)])[0].stage_diagnosis
    (relogged,) = streamed.stage_diagnosis
    assert relogged.runs == original.runs
    assert (
        relogged.stages["unresolved"].count == original.stages["unresolved"].count + 1
    )
    assert relogged.stages[before].count == original.stages[before].count - 1


class CountingReader:
    """A stream that counts the reads made of it."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        size = len(self.data) if size < 0 else size
        chunk, self.data = self.data[:size], self.data[size:]
        return bytes(chunk)


def json_log_with_nan(source: str, tmp_path: Path) -> str:
    log = read_eval_log(source)
    assert log.samples is not None
    sample = log.samples[len(log.samples) // 2]
    assert sample.scores is not None
    sample.scores["other"] = Score(value=math.nan)
    path = tmp_path / JSON_LOG_NAME.format("nan")
    write_eval_log(log, str(path))
    assert b"NaN" in path.read_bytes()
    return str(path)


def test_nan_in_a_json_log_reads_the_same(
    eval_logs: list[Path], tmp_path: Path
) -> None:
    source = next(str(log) for log in eval_logs if "stage" in log.name)
    path = json_log_with_nan(source, tmp_path)
    streamed, whole = both_ways([path])

    assert streamed == whole
    (log,) = streamed.logs
    assert log.other_scorers == ["other"]
    assert streamed.stage_diagnosis == both_ways([source])[0].stage_diagnosis


def test_an_unreadable_sample_names_its_member(
    eval_logs: list[Path], tmp_path: Path
) -> None:
    source = eval_logs[0]
    path = rezipped(source, tmp_path / source.name, compression=zipfile.ZIP_DEFLATED)
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(path, "a") as archive,
    ):
        name = next(n for n in archive.namelist() if n.startswith("samples/"))
        archive.writestr(name, b'{"id": "x", "epoch": 1, "scores": ')

    with pytest.raises(LogError, match=rf"cannot read .*member {name}: .*not JSON"):
        build_report([str(path)])


def damaged(source: Path, target: Path, damage: str) -> tuple[Path, str]:
    """A copy of `source`, deflated, with its first sample member damaged:
    a byte of its data flipped, marked encrypted, or given an unknown
    compression method; and the member's name."""
    path = rezipped(source, target, compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.startswith("samples/"))
    data = bytearray(path.read_bytes())
    local = info.header_offset
    if damage == "flipped":
        start = local + 30 + len(info.filename.encode()) + len(info.extra)
        data[start + info.compress_size // 2] ^= 0xFF
    else:
        name = info.filename.encode()
        directory = data.index(b"PK\x01\x02")
        while data[directory + 46 : directory + 46 + len(name)] != name:
            directory = data.index(b"PK\x01\x02", directory + 1)
        if damage == "encrypted":
            data[directory + 8] |= 0x01
        else:
            data[directory + 10 : directory + 12] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    return path, info.filename


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("flipped", "(deflate|size and CRC|Error -3)"),
        ("encrypted", "it is encrypted"),
        ("method", "compression method 99 is not supported"),
    ],
)
def test_a_damaged_member_is_named(
    eval_logs: list[Path], tmp_path: Path, damage: str, problem: str
) -> None:
    source = eval_logs[0]
    path, name = damaged(source, tmp_path / source.name, damage)

    with pytest.raises(LogError, match=rf"cannot read .*member {name}: .*{problem}"):
        build_report([str(path)])


def test_a_cut_archive_is_not_read(eval_logs: list[Path], tmp_path: Path) -> None:
    cut = tmp_path / eval_logs[0].name
    cut.write_bytes(eval_logs[0].read_bytes()[:-30])

    with pytest.raises(LogError, match="not a ZIP archive"):
        build_report([str(cut)])
