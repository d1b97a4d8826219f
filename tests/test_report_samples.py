"""The streamed report equals the whole-log report (`read_eval_log`)."""

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
from tracegrade.logs.evals import find_logs
from tracegrade.logs.samples import SampleRead, from_eval_sample
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
    """Both tasks over `EPOCHS` epochs; the .json logs rewritten from .eval."""
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


def test_streamed_report_equals_the_whole_log_report(log_dir: Path) -> None:
    streamed, whole = both_ways(find_logs([log_dir]), top=3)

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
