"""The report's figures, derived independently from the fixtures and core; the
streamed report equals the whole-log report (`read_eval_log`)."""

from __future__ import annotations

import json
import math
import shutil
import zipfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.scorer import Score, match

from tests.support import OfflineLogs, split_into_parts
from tracegrade import InvalidRecord, diagnose_stage, grade_extraction
from tracegrade.core import has_duplicates
from tracegrade.datasets import packaged_fixture, read_fixture_cases
from tracegrade.logs.samples import from_eval_sample
from tracegrade.logs.scores import LogPart
from tracegrade.report.aggregate import (
    ExtractionSummary,
    Report,
    ReportError,
    StageSummary,
    build_report,
    effective_trials,
    wilson,
)
from tracegrade.report.runs import Undiagnosed
from tracegrade.report.tables import eval_warnings, report_page
from tracegrade.tasks import replay

STAGE_CASES = read_fixture_cases(packaged_fixture("stage_diagnosis.jsonl"))
EXTRACTION_CASES = read_fixture_cases(packaged_fixture("ordered_extraction.jsonl"))


def ranked(counter: Counter[str], top: int = 10) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


def expected_stages() -> dict[str, Counter[Any]]:
    n: dict[str, Counter[Any]] = defaultdict(Counter)
    for case in STAGE_CASES:
        try:
            result = diagnose_stage(case.input)
        except InvalidRecord:
            n["errors"]["invalid-input", "data"] += 1
            continue
        if "error" in result:
            n["errors"]["answer-label", "data"] += 1
            continue
        n["n"][result["stage"]] += 1
        if "missing" in result:
            correct = case.input.get("correct") is True
            n["req"].update(set(case.input["required"]))
            n["n"]["labelled_correct"] += correct
            if result["stage"] == "retrieval":
                n["missed"].update(result["missing"])
                n["n"]["lucky"] += correct
    return n


def expected_extraction() -> dict[str, Counter[Any]]:
    n: dict[str, Counter[Any]] = defaultdict(Counter)
    for case in EXTRACTION_CASES:
        try:
            result = grade_extraction(case.input)
        except InvalidRecord:
            n["errors"]["invalid-input", "data"] += 1
            continue
        source = case.input["source"]
        if "error" in result:
            if has_duplicates(source):
                n["errors"]["duplicate-source-id", "data"] += 1
            else:  # A repeated answer ID fails both criteria but is graded.
                n["errors"]["duplicate-answer-id", "answer"] += 1
                n["n"]["graded"] += 1
            continue
        answer = case.input["answer"]
        n["n"].update(["graded", "itemised"])
        n["n"]["membership"] += result["membership"]
        n["n"]["order"] += result["order"]
        n["in_source"].update(source)
        n["dropped"].update(i for i in source if i not in answer)
        n["invented"].update(i for i in answer if i not in source)
    return n


@pytest.fixture(scope="session")
def report(offline_logs: OfflineLogs) -> Report:
    return build_report([str(offline_logs.log_dir)])


def only_stage(report: Report) -> StageSummary:
    (summary,) = report.stage_diagnosis
    return summary


def errors(summary: StageSummary | ExtractionSummary) -> Counter[tuple[str, str]]:
    return Counter({(e.kind, e.side): e.count for e in summary.errors})


def test_stage_figures_match_the_core_on_the_fixture(
    offline_logs: OfflineLogs, report: Report
) -> None:
    expected = expected_stages()
    n = expected["n"]
    summary = only_stage(report)
    diagnosed = sum(n[s] for s in ("retrieval", "generation", "pass", "unresolved"))

    where = "tracegrade/stage_diagnosis", "none/none", "stage_diagnosis"
    assert (summary.task, summary.model, summary.scorer) == where
    assert (summary.runs, summary.diagnosed) == (len(STAGE_CASES), diagnosed)
    assert {stage: p.count for stage, p in summary.stages.items()} == {
        stage: n[stage] for stage in summary.stages
    }
    for p in summary.stages.values():
        assert p.total == diagnosed
        assert (p.low, p.high) == wilson(p.count / p.total, p.total)
    lucky = summary.lucky
    assert (lucky.count, lucky.total) == (n["lucky"], n["labelled_correct"])
    assert errors(summary) == expected["errors"]
    assert [(d.id, d.missed, d.required) for d in summary.missed] == [
        (i, missed, expected["req"][i]) for i, missed in ranked(expected["missed"])
    ]
    assert summary.distinct_missed == len(expected["missed"])
    logs = {log.path: log for log in report.logs}
    assert logs[offline_logs.stage].samples == len(STAGE_CASES)
    assert logs[offline_logs.stage].samples_without_tracegrade_score == 0
    assert [log.part for log in report.logs] == [None, None]
    assert eval_warnings(report) == []


def test_extraction_figures_match_the_core_on_the_fixture(
    offline_logs: OfflineLogs, report: Report
) -> None:
    expected = expected_extraction()
    n = expected["n"]
    (summary,) = report.ordered_extraction

    assert (summary.runs, summary.graded) == (len(EXTRACTION_CASES), n["graded"])
    for criterion in ("membership", "order"):
        proportion = getattr(summary, criterion)
        assert (proportion.count, proportion.total) == (n[criterion], n["graded"])
    # Order implies membership, so the gap counts membership-only runs.
    assert summary.gap.count == n["membership"] - n["order"]
    assert errors(summary) == expected["errors"]
    assert summary.itemised == n["itemised"]
    assert [(d.id, d.dropped, d.in_source) for d in summary.dropped] == [
        (i, dropped, expected["in_source"][i])
        for i, dropped in ranked(expected["dropped"])
    ]
    assert [(i.id, i.invented) for i in summary.invented] == ranked(
        expected["invented"]
    )
    assert summary.distinct_dropped == len(expected["dropped"])
    assert summary.distinct_invented == len(expected["invented"])
    # The look-alikes stay apart: composed é dropped, decomposed é invented.
    assert "\u00e9" in {d.id for d in summary.dropped}
    assert "e\u0301" in {i.id for i in summary.invented}


def test_recall_and_precision_are_exact_means_over_every_run_with_one(
    offline_logs: OfflineLogs, report: Report
) -> None:
    """Labelled or not (Inspect's metrics: scored runs only)."""
    stage_log = read_eval_log(offline_logs.stage)
    assert stage_log.results is not None
    metrics = stage_log.results.scores[0].metrics
    scores = [
        (score.metadata or {}, score.value)
        for sample in stage_log.samples or []
        for score in (sample.scores or {}).values()
    ]
    summary = only_stage(report)
    for key in ("recall", "precision"):
        shares = [meta[key] for meta, _ in scores if meta.get(key) is not None]
        scored = [
            m[key] for m, value in scores if m.get(key) is not None and value == value
        ]
        assert getattr(summary, f"{key}_runs") == len(shares) > len(scored)
        assert getattr(summary, key) == math.fsum(shares) / len(shares)
        assert metrics[f"context_{key}"].value == math.fsum(scored) / len(scored)


def test_each_sample_epoch_counts_and_the_sample_is_the_cluster(
    two_epoch_logs: dict[str, Path], report: Report
) -> None:
    two_epochs = build_report([str(two_epoch_logs["stage_diagnosis"])])
    twice, once = only_stage(two_epochs), only_stage(report)

    assert twice.epochs == [2]
    assert twice.runs == 2 * once.runs
    assert {s: p.count for s, p in twice.stages.items()} == {
        s: 2 * p.count for s, p in once.stages.items()
    }
    assert [(d.id, d.missed) for d in twice.missed] == [
        (d.id, 2 * d.missed) for d in once.missed
    ]
    # A replay answers alike in every epoch: the second adds no evidence, so
    # the intervals, clustered by sample, are those of one epoch.
    assert twice.samples == once.samples == len(STAGE_CASES)
    for stage, proportion in twice.stages.items():
        assert proportion.effective_total == once.stages[stage].total
        assert (proportion.low, proportion.high) == pytest.approx(
            (once.stages[stage].low, once.stages[stage].high), abs=1e-12
        )
    assert "the sample as the cluster" in report_page(two_epochs).summary[0]
    assert "cluster" not in report_page(report).summary[0]


@pytest.fixture(scope="session")
def stage_parts(
    offline_logs: OfflineLogs, tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    return split_into_parts(offline_logs.stage, tmp_path_factory.mktemp("parts"), 3)


def test_the_parts_of_a_run_are_one_eval_read_once(
    stage_parts: list[str], report: Report, tmp_path: Path
) -> None:
    parts = build_report(stage_parts)
    # The same figures, whatever the evals' labels.
    assert replace(only_stage(parts), evals=[]) == replace(only_stage(report), evals=[])
    assert [log.part for log in parts.logs] == [LogPart(k, 3) for k in (1, 2, 3)]
    (summary,) = parts.evals
    assert summary.logs == stage_parts and summary.name.endswith("(3 parts)")
    assert report_page(parts).summary[0].startswith("1 eval in 3 logs, ")
    *_, evals_read = report_page(parts).sections[0].tables
    assert evals_read.notes == [f"E1: 3 parts, {stage_parts[0]} to {stage_parts[2]}"]
    assert eval_warnings(parts) == []

    copy = tmp_path / "copy-of-part-1.eval"
    shutil.copyfile(stage_parts[0], copy)
    twice = build_report([*stage_parts, str(copy)])
    assert only_stage(twice) == only_stage(parts)
    superseded = "(1 log superseded by a newer copy of the same eval, not counted), "
    assert report_page(twice).summary[0].startswith(f"1 eval in 4 logs {superseded}")


def test_logs_without_tracegrade_scores_are_an_error(tmp_path: Path) -> None:
    # replay() leaves the output empty, with no model call.
    task = Task(dataset=[Sample(input="x", target="")], solver=replay(), scorer=match())
    (log,) = eval(task, display="none", log_dir=str(tmp_path), log_realtime=False)
    with pytest.raises(ReportError, match=r"no tracegrade scores .*found: match"):
        build_report([log.location])


def rewritten(
    source: str, tmp_path: Path, sample_id: str, key: str, **changes: Any
) -> str:
    """The log with one sample's score changed; a metadata key given None goes."""
    log = read_eval_log(source)
    (sample,) = [sample for sample in log.samples or [] if sample.id == sample_id]
    assert sample.scores is not None
    logged = sample.scores[key]
    if given := changes.get("metadata"):
        metadata = {**(logged.metadata or {}), **given}
        changes["metadata"] = {
            k: v for k, v in metadata.items() if k not in given or v is not None
        }
    sample.scores[key] = logged.model_copy(update=changes)
    # Inspect lists .json logs named so: a timestamp first.
    path = tmp_path / f"2026-01-01T00-00-00+00-00_rewritten-{sample_id}.json"
    write_eval_log(log, str(path))
    return str(path)


def test_a_same_named_score_without_tracegrade_metadata_is_ignored(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    path = rewritten(
        offline_logs.stage, tmp_path, "lucky-answer-gap", "stage_diagnosis", metadata={}
    )
    result = build_report([path])
    (log,) = result.logs

    # Not a tracegrade score, so the run has none: counted, not diagnosed.
    assert only_stage(result).runs == len(STAGE_CASES)
    assert Undiagnosed("no-score", 1) in only_stage(result).not_diagnosed
    assert log.samples_without_tracegrade_score == 1
    assert log.other_scorers == ["stage_diagnosis"]


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"value": {"membership": False, "order": True}}, "order passes without"),
        # A score written before 0.1.0: refused, saying how to score again.
        (
            {"metadata": {"itemised": None}},
            r"needs metadata itemised, .*`inspect score LOG --scorer "
            r"tracegrade/ordered_extraction`\)$",
        ),
    ],
)
def test_a_malformed_score_names_the_sample(
    offline_logs: OfflineLogs, tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    """Stage scores: test_schema's readers' table."""
    path = rewritten(
        offline_logs.extraction, tmp_path, "reversed", "ordered_extraction", **changes
    )
    with pytest.raises(ReportError, match=rf'sample "reversed" epoch 1.*{problem}'):
        build_report([path])


def test_wilson_interval_is_scipys() -> None:
    from scipy.stats import binomtest  # type: ignore[import-untyped]

    for trials in [1, 2, 7, 29, 263, 99_999]:
        for successes in range(0, trials + 1, max(1, trials // 10)):
            expected = binomtest(successes, trials).proportion_ci(method="wilson")
            assert wilson(successes / trials, trials) == pytest.approx(
                (expected.low, expected.high), abs=1e-12
            )


@pytest.mark.parametrize(
    ("clusters", "effective"),
    [
        # One epoch each: every run is independent.
        ([(1, 1), (0, 1), (1, 1), (1, 1)], 4.0),
        # Epochs that always agree: each sample counts once.
        ([(3, 3), (0, 3), (3, 3), (0, 3)], 4.0),
        # Epochs as varied as the runs overall: no less than the runs.
        ([(1, 3), (2, 3), (1, 3), (2, 3)], 12.0),
        # All or none of the runs: no variance to weigh, the samples count.
        ([(0, 3), (0, 3)], 2.0),
    ],
)
def test_effective_trials_lie_between_the_samples_and_the_runs(
    clusters: list[tuple[int, int]], effective: float
) -> None:
    assert effective_trials(clusters) == effective


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
    """Both tasks over two epochs; the .json logs rewritten from .eval,
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
    assert [s.epochs for s in streamed.stage_diagnosis] == [[2]]
    assert streamed.ordered_extraction[0].itemised > 0
    if form == "json":  # NaN, as Inspect writes it, is read as Inspect reads it
        assert all(b"NaN" in Path(log).read_bytes() for log in epoch_runs[form])
        assert [log.other_scorers for log in streamed.logs] == [["other"]] * 2


def test_a_sample_logged_twice_counts_once_as_its_last(
    epoch_runs: dict[str, list[str]], tmp_path: Path
) -> None:
    source = next(log for log in epoch_runs["eval"] if "stage" in log)
    path = shutil.copy(source, tmp_path)
    name = "samples/lucky-answer-gap_epoch_1.json"
    with zipfile.ZipFile(source) as old:
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
