"""The report's figures, from logs made by really running the offline tasks.

Every expected figure is derived here independently of the logs: from the
packaged fixture files and the pure core (`diagnose_stage`,
`grade_extraction`), or from the metrics Inspect itself logged.
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from inspect_ai import Task, eval, score, task_with
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.scorer import match

from tests.support import split_into_parts
from tracegrade import (
    InvalidRecord,
    diagnose_stage,
    grade_extraction,
    ordered_extraction_recorded,
    stage_diagnosis,
    stage_diagnosis_scorer,
)
from tracegrade.core import has_duplicates
from tracegrade.core.errors import quote
from tracegrade.datasets import packaged_fixture, read_fixture_cases
from tracegrade.logs.evals import find_logs
from tracegrade.logs.scores import LogError, LogPart, LogScores, read_log
from tracegrade.report.aggregate import (
    ExtractionSummary,
    Report,
    ReportError,
    StageSummary,
    build_report,
)
from tracegrade.report.runs import Undiagnosed
from tracegrade.report.shares import (
    Proportion,
    effective_trials,
    effective_wilson_interval,
    wilson_interval,
)
from tracegrade.report.tables import (
    eval_label,
    eval_warnings,
    evals_read,
    interval_note,
)
from tracegrade.tasks import replay

STAGE_CASES = read_fixture_cases(packaged_fixture("stage_diagnosis.jsonl"))
EXTRACTION_CASES = read_fixture_cases(packaged_fixture("ordered_extraction.jsonl"))
# Inspect names .json logs it lists by this pattern (a timestamp first).
JSON_LOG_NAME = "2026-01-01T00-00-00+00-00_{}.json"


@dataclass
class ExpectedStages:
    stages: Counter[str] = field(default_factory=Counter)
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    lucky: int = 0
    labelled_correct: int = 0
    missed: Counter[str] = field(default_factory=Counter)
    required: Counter[str] = field(default_factory=Counter)


def expected_stages() -> ExpectedStages:
    expected = ExpectedStages()
    for case in STAGE_CASES:
        try:
            result = diagnose_stage(case.input)
        except InvalidRecord:
            expected.errors["invalid-input", "data"] += 1
            continue
        if "error" in result:
            expected.errors["answer-label", "data"] += 1
            continue
        stage = result["stage"]
        expected.stages[stage] += 1
        if "missing" not in result:
            continue
        correct = case.input.get("correct") is True
        expected.required.update(set(case.input["required"]))
        expected.labelled_correct += correct
        if stage == "retrieval":
            expected.missed.update(result["missing"])
            expected.lucky += correct
    return expected


@dataclass
class ExpectedExtraction:
    graded: int = 0
    membership: int = 0
    order: int = 0
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    itemised: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    in_source: Counter[str] = field(default_factory=Counter)
    invented: Counter[str] = field(default_factory=Counter)


def expected_extraction() -> ExpectedExtraction:
    expected = ExpectedExtraction()
    for case in EXTRACTION_CASES:
        try:
            result = grade_extraction(case.input)
        except InvalidRecord:
            expected.errors["invalid-input", "data"] += 1
            continue
        if "error" in result:
            if has_duplicates(case.input["source"]):
                expected.errors["duplicate-source-id", "data"] += 1
            else:
                # A repeated answer ID fails both criteria but is graded.
                expected.errors["duplicate-answer-id", "answer"] += 1
                expected.graded += 1
            continue
        expected.graded += 1
        expected.membership += result["membership"]
        expected.order += result["order"]
        # Only answers graded on membership and order are itemised.
        source, answer = case.input["source"], case.input["answer"]
        expected.itemised += 1
        expected.in_source.update(source)
        expected.dropped.update(i for i in source if i not in answer)
        expected.invented.update(i for i in answer if i not in source)
    return expected


def run(tasks: list[Task], log_dir: Path, epochs: int = 1) -> list[EvalLog]:
    # Nothing watches these evals live: the buffer of each sample's events
    # that `inspect view` reads while one runs would be cost alone.
    logs = eval(
        tasks,
        display="none",
        log_dir=str(log_dir),
        epochs=epochs,
        log_realtime=False,
    )
    for log in logs:
        assert log.status == "success", log.error
    return logs


@dataclass(frozen=True)
class OfflineLogs:
    log_dir: Path
    stage: str
    extraction: str


@pytest.fixture(scope="session")
def offline_logs(tmp_path_factory: pytest.TempPathFactory) -> OfflineLogs:
    log_dir = tmp_path_factory.mktemp("offline-logs")
    stage, extraction = run(
        [stage_diagnosis(dataset="edge-cases"), ordered_extraction_recorded()], log_dir
    )
    return OfflineLogs(log_dir, stage.location, extraction.location)


@pytest.fixture(scope="session")
def report(offline_logs: OfflineLogs) -> Report:
    return build_report([str(offline_logs.log_dir)])


@dataclass(frozen=True)
class MoreStageEvals:
    """Other evals of the packaged stage task, each in its own log."""

    two_epochs: str
    again: str
    halves: tuple[str, str]


@pytest.fixture(scope="module")
def more_stage_evals(tmp_path_factory: pytest.TempPathFactory) -> MoreStageEvals:
    """The stage task over two epochs, once more as the offline logs ran
    it, and each half of its cases: one eval, the tests only read the logs."""
    directory = tmp_path_factory.mktemp("more-stage-evals")
    cases = Path(packaged_fixture("stage_diagnosis.jsonl"))
    lines = cases.read_text(encoding="utf-8").splitlines(keepends=True)
    halves = []
    for index, part in enumerate((lines[: len(lines) // 2], lines[len(lines) // 2 :])):
        path = directory / f"half{index}.jsonl"
        path.write_text("".join(part), encoding="utf-8")
        halves.append(stage_diagnosis(dataset=str(path)))
    # No epochs for the eval as a whole: each task's own count holds.
    # As in `run`, nothing watches it live.
    logs = eval(
        [
            task_with(stage_diagnosis(dataset="edge-cases"), epochs=2),
            stage_diagnosis(dataset="edge-cases"),
            *halves,
        ],
        display="none",
        log_dir=str(directory / "logs"),
        log_realtime=False,
    )
    for log in logs:
        assert log.status == "success", log.error
    two_epochs, again, *halved = logs
    return MoreStageEvals(
        two_epochs.location,
        again.location,
        (halved[0].location, halved[1].location),
    )


def figures(
    summaries: list[StageSummary],
) -> list[StageSummary]:
    """The summaries but for the labels of their evals, which number the
    evals of one report."""
    return [replace(summary, evals=[]) for summary in summaries]


def is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def only_stage(report: Report) -> StageSummary:
    (summary,) = report.stage_diagnosis
    return summary


def only_extraction(report: Report) -> ExtractionSummary:
    (summary,) = report.ordered_extraction
    return summary


def error_counts(summary: StageSummary | ExtractionSummary) -> Counter[tuple[str, str]]:
    return Counter({(e.kind, e.side): e.count for e in summary.errors})


def test_stage_figures_match_the_core_on_the_fixture(report: Report) -> None:
    expected = expected_stages()
    summary = only_stage(report)
    diagnosed = sum(expected.stages.values())

    assert (summary.task, summary.model, summary.scorer) == (
        "tracegrade/stage_diagnosis",
        "none/none",
        "stage_diagnosis",
    )
    assert summary.runs == len(STAGE_CASES)
    assert summary.diagnosed == diagnosed
    assert {stage: p.count for stage, p in summary.stages.items()} == {
        stage: expected.stages[stage]
        for stage in ("retrieval", "generation", "pass", "unresolved")
    }
    assert {p.total for p in summary.stages.values()} == {diagnosed}
    assert (summary.lucky.count, summary.lucky.total) == (
        expected.lucky,
        expected.labelled_correct,
    )
    assert error_counts(summary) == expected.errors
    assert summary.distinct_missed == len(expected.missed)


def test_most_missed_ids_are_ranked_by_count_then_id(report: Report) -> None:
    expected = expected_stages()
    ranked = sorted(expected.missed.items(), key=lambda item: (-item[1], item[0]))
    summary = only_stage(report)

    assert [(d.id, d.missed, d.required) for d in summary.missed] == [
        (document_id, missed, expected.required[document_id])
        for document_id, missed in ranked[:10]
    ]


def test_top_limits_the_missed_ids(offline_logs: OfflineLogs, report: Report) -> None:
    top_two = build_report([offline_logs.stage], top=2)

    assert only_stage(top_two).missed == only_stage(report).missed[:2]
    assert only_stage(top_two).distinct_missed == only_stage(report).distinct_missed


def test_extraction_figures_match_the_core_on_the_fixture(report: Report) -> None:
    expected = expected_extraction()
    summary = only_extraction(report)

    assert summary.runs == len(EXTRACTION_CASES)
    assert summary.graded == expected.graded
    assert (summary.membership.count, summary.membership.total) == (
        expected.membership,
        expected.graded,
    )
    assert (summary.order.count, summary.order.total) == (
        expected.order,
        expected.graded,
    )
    # Order implies membership, so the gap counts membership-only runs.
    assert summary.gap.count == expected.membership - expected.order
    assert summary.gap.share == pytest.approx(
        summary.membership.share - summary.order.share  # type: ignore[operator]
    )
    assert error_counts(summary) == expected.errors


def ranked(counter: Counter[str], top: int = 10) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


def test_most_often_dropped_and_invented_ids_match_the_fixture(
    report: Report,
) -> None:
    expected = expected_extraction()
    summary = only_extraction(report)

    assert summary.itemised == expected.itemised
    assert [(d.id, d.dropped, d.in_source) for d in summary.dropped] == [
        (document_id, dropped, expected.in_source[document_id])
        for document_id, dropped in ranked(expected.dropped)
    ]
    assert [(i.id, i.invented) for i in summary.invented] == ranked(expected.invented)
    assert summary.distinct_dropped == len(expected.dropped)
    assert summary.distinct_invented == len(expected.invented)
    # The look-alikes stay apart: composed é dropped, decomposed é invented.
    assert "\u00e9" in {d.id for d in summary.dropped}
    assert "e\u0301" in {i.id for i in summary.invented}


def test_top_limits_dropped_and_invented_ids(
    offline_logs: OfflineLogs, report: Report
) -> None:
    top_two = only_extraction(build_report([offline_logs.extraction], top=2))
    full = only_extraction(report)

    assert top_two.dropped == full.dropped[:2]
    assert top_two.invented == full.invented[:2]
    assert len(top_two.dropped) == len(top_two.invented) == 2
    assert top_two.distinct_dropped == full.distinct_dropped


def without_key(source: str, key: str, path: Path) -> str:
    """A copy of the log as tracegrade wrote it before its scores held `key`."""
    log = read_eval_log(source)
    for sample in log.samples or []:
        for logged in (sample.scores or {}).values():
            assert logged.metadata is not None
            logged.metadata.pop(key, None)
    write_eval_log(log, str(path))
    return str(path)


def test_a_score_from_before_0_1_0_without_itemised_says_how_to_score_again(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    path = without_key(
        offline_logs.extraction, "itemised", tmp_path / JSON_LOG_NAME.format("old")
    )
    with pytest.raises(
        ReportError,
        match=r'epoch 1, score "ordered_extraction": a scored extraction score '
        r"needs metadata itemised, .*`inspect score LOG --scorer "
        r"tracegrade/ordered_extraction`\)$",
    ):
        build_report([path])


@pytest.mark.parametrize("keys", [["precision"], ["recall", "precision"]])
def test_recall_and_precision_an_older_score_lacks_come_from_its_record(
    offline_logs: OfflineLogs, report: Report, tmp_path: Path, keys: list[str]
) -> None:
    path = offline_logs.stage
    for key in keys:
        path = without_key(path, key, tmp_path / JSON_LOG_NAME.format(key))

    older, now = only_stage(build_report([path])), only_stage(report)
    assert (older.recall, older.recall_runs) == (now.recall, now.recall_runs)
    assert (older.precision, older.precision_runs) == (
        now.precision,
        now.precision_runs,
    )
    assert now.precision_runs > 0


def test_a_score_whose_record_cannot_give_its_precision_says_how_to_score_again(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    log = read_eval_log(offline_logs.stage)
    for sample in log.samples or []:
        for logged in (sample.scores or {}).values():
            assert logged.metadata is not None
            logged.metadata.pop("precision", None)
            logged.metadata["record"] = "lost"
    path = tmp_path / JSON_LOG_NAME.format("no-record")
    write_eval_log(log, str(path))

    with pytest.raises(
        ReportError,
        match=r"needs metadata precision, and its record cannot give it, got "
        r'"lost": score the log again \(`inspect score LOG --scorer '
        r"tracegrade/stage_diagnosis`\)$",
    ):
        build_report([str(path)])


def test_figures_agree_with_the_metrics_inspect_logged(
    offline_logs: OfflineLogs, report: Report
) -> None:
    stage_results = read_eval_log(offline_logs.stage, header_only=True).results
    extraction_results = read_eval_log(
        offline_logs.extraction, header_only=True
    ).results
    assert stage_results is not None and extraction_results is not None
    stage_metrics = stage_results.scores[0].metrics
    accuracy = {
        s.name: s.metrics["accuracy"].value
        for s in extraction_results.scores
        if "accuracy" in s.metrics
    }

    summary = only_stage(report)
    for stage, proportion in summary.stages.items():
        assert proportion.share == pytest.approx(stage_metrics[stage].value)
    assert summary.lucky.count == stage_metrics["lucky_answers"].value
    # Recall is every run's with a required set and a context, labelled or
    # not; the metric sees only the scored ones (Inspect gives no unscored
    # run to a metric). Both are summed as exactly: the same bits.
    log = read_eval_log(offline_logs.stage)
    recalls = {
        sample.id: (score.metadata or {})["recall"]
        for sample in log.samples or []
        for score in (sample.scores or {}).values()
        if (score.metadata or {}).get("recall") is not None
    }
    unscored = {
        sample.id
        for sample in log.samples or []
        if sample.scores and is_nan(sample.scores["stage_diagnosis"].value)
    }
    diagnosed = summary.diagnosed - summary.stages["unresolved"].count
    assert summary.recall_runs == len(recalls) > diagnosed
    assert summary.recall == math.fsum(recalls.values()) / len(recalls)
    metric = [recall for key, recall in recalls.items() if key not in unscored]
    assert len(metric) == diagnosed
    assert stage_metrics["context_recall"].value == math.fsum(metric) / len(metric)
    # Precision the same way: every run's whose context held an ID, and
    # the metric over the scored ones.
    precisions = {
        sample.id: (score.metadata or {})["precision"]
        for sample in log.samples or []
        for score in (sample.scores or {}).values()
        if (score.metadata or {}).get("precision") is not None
    }
    assert summary.precision_runs == len(precisions) > 0
    assert summary.precision == math.fsum(precisions.values()) / len(precisions)
    scored = [p for key, p in precisions.items() if key not in unscored]
    assert len(scored) < len(precisions)
    assert stage_metrics["context_precision"].value == math.fsum(scored) / len(scored)
    extraction = only_extraction(report)
    assert extraction.membership.share == pytest.approx(accuracy["membership"])
    assert extraction.order.share == pytest.approx(accuracy["order"])


def test_intervals_are_wilson_intervals_of_the_counts(report: Report) -> None:
    for proportion in only_stage(report).stages.values():
        assert (proportion.low, proportion.high) == wilson_interval(
            proportion.count, proportion.total
        )


def test_log_summaries_account_for_every_sample(
    offline_logs: OfflineLogs, report: Report
) -> None:
    by_path = {log.path: log for log in report.logs}
    assert set(by_path) == {offline_logs.stage, offline_logs.extraction}
    stage_log = by_path[offline_logs.stage]
    assert (stage_log.status, stage_log.epochs) == ("success", 1)
    assert stage_log.samples == stage_log.tracegrade_scores == len(STAGE_CASES)
    assert stage_log.samples_without_tracegrade_score == 0
    assert stage_log.other_scorers == []


def test_each_sample_epoch_counts(
    more_stage_evals: MoreStageEvals, report: Report
) -> None:
    twice = only_stage(build_report([more_stage_evals.two_epochs]))
    once = only_stage(report)

    assert twice.epochs == [2]
    assert twice.runs == 2 * once.runs
    assert {s: p.count for s, p in twice.stages.items()} == {
        s: 2 * p.count for s, p in once.stages.items()
    }
    assert twice.lucky.count == 2 * once.lucky.count
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
    assert "the sample as the cluster" in interval_note(
        build_report([more_stage_evals.two_epochs])
    )
    assert "cluster" not in interval_note(report)


def test_two_evals_of_one_task_and_model_are_two_rows(
    offline_logs: OfflineLogs, report: Report, more_stage_evals: MoreStageEvals
) -> None:
    """`inspect eval` run twice on one file: two evals, never summed."""
    both = build_report([offline_logs.stage, more_stage_evals.again])

    first, second = both.stage_diagnosis
    assert (first.evals, second.evals) == (["E1"], ["E2"])
    assert first == replace(only_stage(report), evals=["E1"])
    assert replace(second, evals=["E1"]) == first
    assert evals_read(both) == "2 evals in 2 logs"


def test_pool_refuses_evals_that_scored_the_same_samples(
    offline_logs: OfflineLogs, more_stage_evals: MoreStageEvals
) -> None:
    with pytest.raises(
        ReportError,
        match=r"--pool: evals E1 and E2 \(tracegrade/stage_diagnosis, none/none, "
        rf'score "stage_diagnosis"\) both scored {len(STAGE_CASES)} sample ids',
    ):
        build_report([offline_logs.stage, more_stage_evals.again], pool=True)


def test_pool_pools_evals_of_different_samples(
    report: Report, more_stage_evals: MoreStageEvals
) -> None:
    """Two halves of the packaged cases, run as two evals, pool to the
    figures of the whole."""
    pooled = build_report(list(more_stage_evals.halves), pool=True)

    (summary,) = pooled.stage_diagnosis
    whole = only_stage(report)
    assert summary.evals == ["E1", "E2"]
    assert summary.stages == whole.stages
    assert summary.lucky == whole.lucky
    assert summary.recall == whole.recall
    assert summary.precision == whole.precision
    assert evals_read(pooled) == "2 evals in 2 logs, pooled by task, model and score"


FLAKY_TASK = """
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import solver

from tracegrade import stage_diagnosis_scorer
from tracegrade.tasks import replay


@solver
def flaky():
    # Sample b fails the first time it runs, as a flaky retriever would.
    async def solve(state, generate):
        marker = Path(__file__).parent / "failed-once"
        if state.sample_id == "b" and not marker.exists():
            marker.touch()
            raise RuntimeError("the retriever timed out")
        return state

    return solve


@task
def flaky_runs():
    return Task(
        dataset=[
            Sample(
                id=sample_id,
                input="q",
                metadata={"required": ["D1"], "context": ["D1"], "correct": True},
            )
            for sample_id in "abc"
        ],
        solver=[flaky(), replay()],
        scorer=stage_diagnosis_scorer(context_key="context"),
    )
"""


def test_a_retried_eval_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed log and its `eval-retry` share a task id: only the newest
    is counted, and the report says why the other is not."""
    from inspect_ai import eval_retry

    (tmp_path / "flaky.py").write_text(FLAKY_TASK, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    logs = str(tmp_path / "logs")
    (failed,) = eval("flaky.py", display="none", log_dir=logs, log_realtime=False)
    assert failed.status == "error"
    (retried,) = eval_retry(failed.location, display="none", log_dir=logs)
    assert retried.status == "success"
    result = build_report([logs])

    (summary,) = result.stage_diagnosis
    assert summary.runs == 3
    assert summary.stages["pass"].count == 3
    assert [s.path for s in result.superseded] == [failed.location]
    assert result.superseded[0].by == retried.location
    assert evals_read(result) == (
        "1 eval in 2 logs (1 log superseded by its retry, not counted)"
    )


@pytest.fixture(scope="session")
def stage_parts(
    offline_logs: OfflineLogs, tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    return split_into_parts(offline_logs.stage, tmp_path_factory.mktemp("parts"), 3)


def test_the_parts_of_a_run_are_one_eval(
    stage_parts: list[str], report: Report
) -> None:
    pooled = build_report(stage_parts)

    assert figures(pooled.stage_diagnosis) == figures(report.stage_diagnosis)
    assert [log.part for log in pooled.logs] == [LogPart(k, 3) for k in (1, 2, 3)]
    (summary,) = pooled.evals
    assert summary.logs == stage_parts
    assert summary.name.endswith("(3 parts)")
    assert sum(log.samples for log in pooled.logs) == len(STAGE_CASES)
    assert evals_read(pooled) == "1 eval in 3 logs"
    assert eval_warnings(pooled) == []


def test_a_missing_part_is_warned_of_in_one_line(stage_parts: list[str]) -> None:
    first, _, last = stage_parts
    result = build_report([first, last])
    (warning,) = eval_warnings(result)

    (summary,) = result.evals
    assert summary.status == "incomplete"
    assert warning == (
        f"E1 ({summary.name}) is missing part 2; its figures cover only the parts read."
    )


def test_a_header_claiming_a_billion_parts_lists_a_few(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    """A part count comes from a header anyone can edit: what it makes the
    reader list (and allocate) is bounded."""
    log = read_eval_log(offline_logs.stage)
    log.eval.metadata = {"tracegrade_part": {"index": 1, "count": 1_000_000_000}}
    path = tmp_path / JSON_LOG_NAME.format("billion-parts")
    write_eval_log(log, str(path))
    result = build_report([str(path)])
    (warning,) = eval_warnings(result)

    (summary,) = result.evals
    assert summary.missing_count == 999_999_999
    assert summary.missing_parts == list(range(2, 12))
    assert (
        "is missing 999,999,999 parts (2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and " in warning
    )
    assert "999,999,989 more)" in warning


def test_a_part_read_twice_is_counted_once(
    stage_parts: list[str], report: Report, tmp_path: Path
) -> None:
    copy = tmp_path / "copy-of-part-1.eval"
    shutil.copyfile(stage_parts[0], copy)
    result = build_report([*stage_parts, str(copy)])

    assert figures(result.stage_diagnosis) == figures(report.stage_diagnosis)
    (superseded,) = result.superseded
    assert {superseded.path, superseded.by} == {stage_parts[0], str(copy)}
    assert not superseded.retry
    assert evals_read(result) == (
        "1 eval in 4 logs (1 log superseded by a newer copy of the same eval, "
        "not counted)"
    )


def test_logs_that_are_not_parts_say_nothing_of_parts(report: Report) -> None:
    assert evals_read(report) == "2 evals in 2 logs"
    assert [log.part for log in report.logs] == [None, None]
    assert eval_warnings(report) == []


def test_a_malformed_part_number_is_no_part(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    log = read_eval_log(offline_logs.stage)
    log.eval.metadata = {"tracegrade_part": {"index": 4, "count": 3}}
    path = tmp_path / JSON_LOG_NAME.format("bad-part")
    write_eval_log(log, str(path))
    (summary,) = build_report([str(path)]).logs

    assert summary.part is None
    assert eval_warnings(build_report([str(path)])) == []


def test_json_logs_read_like_eval_logs(
    offline_logs: OfflineLogs, report: Report, tmp_path: Path
) -> None:
    json_log = tmp_path / JSON_LOG_NAME.format("stage-diagnosis")
    write_eval_log(read_eval_log(offline_logs.stage), str(json_log))

    assert find_logs([tmp_path]) == [str(json_log)]
    assert figures(build_report([str(json_log)]).stage_diagnosis) == figures(
        report.stage_diagnosis
    )


def test_an_appended_score_is_reported_on_its_own(
    offline_logs: OfflineLogs, report: Report, tmp_path: Path
) -> None:
    rescored = score(
        read_eval_log(offline_logs.stage),
        stage_diagnosis_scorer(),
        action="append",
        display="none",
    )
    path = tmp_path / JSON_LOG_NAME.format("rescored")
    write_eval_log(rescored, str(path))
    first, appended = build_report([str(path)]).stage_diagnosis

    assert (first.scorer, appended.scorer) == ("stage_diagnosis", "stage_diagnosis1")
    assert eval_label(appended) == "E1 [stage_diagnosis1]"
    assert appended.stages == first.stages == only_stage(report).stages


def test_logs_without_tracegrade_scores_are_an_error(tmp_path: Path) -> None:
    # replay() leaves the output empty, with no model call.
    other = Task(
        dataset=[Sample(input="x", target="")], solver=replay(), scorer=match()
    )
    (log,) = run([other], tmp_path)

    with pytest.raises(
        ReportError, match=r"no tracegrade scores .*scores found: match"
    ):
        build_report([log.location])


def rewritten(
    source: str,
    tmp_path: Path,
    sample_id: str,
    key: str,
    metadata_update: dict[str, object] | None = None,
    **changes: object,
) -> str:
    """A copy of the log `source` with one sample's score changed (and
    entries of its metadata, by `metadata_update`)."""
    log = read_eval_log(source)
    assert log.samples is not None
    (sample,) = [s for s in log.samples if s.id == sample_id]
    assert sample.scores is not None
    if metadata_update is not None:
        metadata = {**(sample.scores[key].metadata or {}), **metadata_update}
        changes = {**changes, "metadata": metadata}
    sample.scores[key] = sample.scores[key].model_copy(update=changes)
    path = tmp_path / JSON_LOG_NAME.format(f"rewritten-{sample_id}")
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
    ("task", "sample", "value", "problem"),
    [
        (
            "stage",
            "lucky-answer-gap",
            "x",
            r'sample "lucky-answer-gap" epoch 1, score "stage_diagnosis": .*got "x"$',
        ),
        # Order without membership.
        (
            "extraction",
            "reversed",
            {"membership": False, "order": True},
            r'sample "reversed" epoch 1.*order passes without',
        ),
    ],
)
def test_a_malformed_value_names_the_sample(
    offline_logs: OfflineLogs,
    tmp_path: Path,
    task: str,
    sample: str,
    value: object,
    problem: str,
) -> None:
    source = offline_logs.stage if task == "stage" else offline_logs.extraction
    scorer = "stage_diagnosis" if task == "stage" else "ordered_extraction"
    path = rewritten(source, tmp_path, sample, scorer, value=value)
    with pytest.raises(ReportError, match=problem):
        build_report([path])


@pytest.mark.parametrize(
    ("metadata_changes", "problem"),
    [
        ({"itemised": None}, r"itemised must be an object, got null$"),
        ({"itemised": {"dropped": "C", "invented": []}}, r'got "C" and \[\]$'),
        ({"record": {"answer": ["A", "B"]}}, r"record\.source, got null$"),
        (
            {"itemised": {"dropped": [], "invented": [], "kept_in_order": -1}},
            "got null and -1$",
        ),
    ],
    ids=["itemised null", "dropped not a list", "no source", "kept_in_order negative"],
)
def test_a_malformed_itemisation_names_the_sample(
    offline_logs: OfflineLogs,
    tmp_path: Path,
    metadata_changes: dict[str, object],
    problem: str,
) -> None:
    path = rewritten(
        *(offline_logs.extraction, tmp_path, "missing-id", "ordered_extraction"),
        metadata_update=metadata_changes,
    )
    with pytest.raises(ReportError, match=rf'sample "missing-id" epoch 1.*{problem}'):
        build_report([path])


def test_a_directory_without_logs_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("{}")

    with pytest.raises(LogError, match="no Inspect logs"):
        find_logs([tmp_path])


def test_a_file_that_is_not_a_log_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"not a zip file")

    with pytest.raises(LogError, match=r"cannot read .*broken\.eval"):
        read_log(str(broken))


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table II,
        # method 3 (score interval without continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # Symmetric about one half, and exact at n successes.
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
    ],
)
def test_wilson_interval_matches_published_values(
    successes: int, trials: int, low: float, high: float
) -> None:
    computed = wilson_interval(successes, trials)

    assert computed == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_interval_is_scipys() -> None:
    """The report computes the interval itself (scipy costs its start-up
    more than a large log does); scipy's is the reference."""
    from scipy.stats import binomtest  # type: ignore[import-untyped]

    for trials in [*range(1, 41), 263, 1000, 99_999]:
        for successes in range(0, trials + 1, max(1, trials // 25)):
            expected = binomtest(successes, trials).proportion_ci(method="wilson")
            assert wilson_interval(successes, trials) == (
                pytest.approx(expected.low, abs=1e-12),
                pytest.approx(expected.high, abs=1e-12),
            )


@pytest.mark.parametrize(("successes", "trials"), [(0, 1), (3, 7), (20, 20), (81, 263)])
def test_the_effective_interval_is_wilsons_at_whole_trials(
    successes: int, trials: int
) -> None:
    assert effective_wilson_interval(successes / trials, trials) == pytest.approx(
        wilson_interval(successes, trials), abs=1e-12
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
        ([(2, 2)], 1.0),
    ],
)
def test_effective_trials_lie_between_the_samples_and_the_runs(
    clusters: list[tuple[int, int]], effective: float
) -> None:
    assert effective_trials(clusters) == effective


def test_partly_alike_epochs_narrow_the_interval_between_the_bounds() -> None:
    clusters = [(3, 3), (2, 3), (0, 3), (1, 3), (3, 3), (0, 3)]
    clustered = Proportion.of(9, 18, clusters)
    assert clustered.effective_total is not None
    assert 6 < clustered.effective_total < 18
    as_runs, as_samples = Proportion.of(9, 18), effective_wilson_interval(0.5, 6)
    assert clustered.low is not None and as_runs.low is not None
    assert as_samples[0] < clustered.low < as_runs.low


def test_wilson_interval_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="at least one trial"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match=r"successes must lie in 0\.\.3, got 4"):
        wilson_interval(4, 3)


def test_a_proportion_of_nothing_has_no_share() -> None:
    assert Proportion.of(0, 0) == Proportion(0, 0, None, None, None)
    proportion = Proportion.of(3, 4)
    assert proportion.share == 0.75
    assert proportion.low is not None and proportion.high is not None
    assert proportion.low < 0.75 < proportion.high


def test_log_scores_keep_the_scoreless_samples_only_when_asked(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    """Compare pairs a sample without a tracegrade score as "no score" and
    needs its id; the report only counts it."""
    path = rewritten(
        offline_logs.stage, tmp_path, "lucky-answer-gap", "stage_diagnosis", metadata={}
    )
    counted = LogScores(read_log(path))
    kept = LogScores(read_log(path), keep_scoreless=True)
    yielded = [(sample.id, name, scorer) for sample, name, scorer, _ in counted]
    assert [(sample.id, name) for sample, name, _, _ in kept] == [
        (sample_id, name) for sample_id, name, _ in yielded
    ]
    assert {scorer for _, _, scorer in yielded} == {"stage_diagnosis"}
    assert "lucky-answer-gap" not in {sample_id for sample_id, _, _ in yielded}
    assert counted.scoreless is None
    assert kept.scoreless == [("lucky-answer-gap", 1, False)]
    assert counted.summary() == kept.summary()
    assert counted.summary().samples_without_tracegrade_score == 1
    assert counted.summary().samples == len(yielded) + 1


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("recall", None, "recall must be a share"),
        ("recall", 1.5, r"got 1\.5"),
        ("precision", 1.5, r"got 1\.5"),
    ],
)
def test_a_share_not_in_zero_to_one_names_the_sample(
    offline_logs: OfflineLogs, tmp_path: Path, key: str, value: object, problem: str
) -> None:
    """On a diagnosed score, where the share is needed."""
    samples = read_eval_log(offline_logs.stage).samples or []
    passed = next(
        s.id
        for s in samples
        if s.scores and s.scores["stage_diagnosis"].value == "pass"
    )
    path = rewritten(
        *(offline_logs.stage, tmp_path, str(passed), "stage_diagnosis"),
        metadata_update={key: value},
    )
    with pytest.raises(ReportError, match=rf"sample {quote(passed)} .*{problem}"):
        build_report([path])
