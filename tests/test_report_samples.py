"""The streamed report equals the whole-log report (`read_eval_log`)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.scorer import Score

from tracegrade.logs.samples import from_eval_sample
from tracegrade.report.aggregate import Report, build_report

EPOCHS = 2


def both_ways(paths: list[str], top: int = 10) -> tuple[Report, Report]:
    """Streamed, and read whole by the reference reader, validated by Inspect."""
    return build_report(paths, top=top), build_report(
        paths,
        top=top,
        samples=lambda path: map(from_eval_sample, read_eval_log(path).samples or []),
    )


@pytest.fixture(scope="module")
def epoch_runs(
    two_epoch_logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[str]]:
    """Both tasks over `EPOCHS` epochs; the .json logs rewritten from .eval,
    a sample of each with another scorer's NaN."""
    json_dir = tmp_path_factory.mktemp("epochs-json")
    made: dict[str, list[str]] = {"eval": [], "json": []}
    for log in two_epoch_logs.values():
        rewritten = read_eval_log(str(log))
        assert rewritten.samples is not None
        sample = rewritten.samples[len(rewritten.samples) // 2]
        sample.scores = {**(sample.scores or {}), "other": Score(value=math.nan)}
        json_path = json_dir / log.with_suffix(".json").name
        write_eval_log(rewritten, str(json_path), format="json")
        made["eval"].append(str(log))
        made["json"].append(str(json_path))
    return made


@pytest.mark.parametrize("form", ["eval", "json"])
def test_streamed_report_equals_the_whole_log_report(
    epoch_runs: dict[str, list[str]], form: str
) -> None:
    streamed, whole = both_ways(epoch_runs[form], top=3)

    assert streamed == whole
    assert {s.runs for s in streamed.stage_diagnosis} != {0}
    assert [s.epochs for s in streamed.stage_diagnosis] == [[EPOCHS]]
    assert streamed.ordered_extraction[0].itemised > 0
    if form == "json":  # NaN, as Inspect writes it, is read as Inspect reads it
        assert all(b"NaN" in Path(log).read_bytes() for log in epoch_runs[form])
        assert [log.other_scorers for log in streamed.logs] == [["other"]] * 2


def test_a_sample_logged_twice_counts_once_as_its_last(
    epoch_runs: dict[str, list[str]], tmp_path: Path
) -> None:
    source = next(log for log in epoch_runs["eval"] if "stage" in log)
    path = tmp_path / Path(source).name
    # Every member written again by `zipfile`, then one sample again.
    with (
        zipfile.ZipFile(source) as old,
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as new,
    ):
        for info in old.infolist():
            new.writestr(info.filename, old.read(info))
        name = "samples/lucky-answer-gap_epoch_1.json"
        sample = json.loads(old.read(name))
    before = sample["scores"]["stage_diagnosis"]["value"]
    sample["scores"]["stage_diagnosis"]["value"] = "unresolved"
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
    ):
        archive.writestr(name, json.dumps(sample))

    streamed, whole = both_ways([str(path)])
    assert streamed == whole
    (original,) = both_ways([source])[0].stage_diagnosis
    (relogged,) = streamed.stage_diagnosis
    assert relogged.runs == original.runs
    unresolved = relogged.stages["unresolved"].count
    assert unresolved == original.stages["unresolved"].count + 1
    assert relogged.stages[before].count == original.stages[before].count - 1
