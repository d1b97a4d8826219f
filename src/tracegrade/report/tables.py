"""A `Report` as a `Page` of tables. Rows name their eval (E1, E2, ...),
task and model; the headline and the first table say how many runs
there were and why some got no stage, so no share is read without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..logs.evals import missing_parts_text, superseded_note, unused_reducer
from ..logs.scores import LogSummary
from ..schema import EXTRACTION_SCORER, STAGE_SCORER
from ..scorers.explain import show_id
from .aggregate import ExtractionSummary, Report, StageSummary
from .page import Page, Section, Table
from .runs import why_text
from .shares import Proportion
from .thresholds import OVER_ALL_RUNS, ThresholdCheck, threshold_line


def percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


def share_with_interval(proportion: Proportion) -> str:
    """ "57.1% [39.1, 73.5]": the share and its interval bounds, in percent."""
    if proportion.share is None or proportion.low is None or proportion.high is None:
        return "n/a"
    return (
        f"{percent(proportion.share)} "
        f"[{100 * proportion.low:.1f}, {100 * proportion.high:.1f}]"
    )


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def headline(summary: StageSummary | ExtractionSummary) -> str:
    """The summary in one line, every share beside the runs it rests on and
    the runs left out."""
    name = f"{eval_label(summary)} ({summary.task}, {summary.model})"
    if isinstance(summary, StageSummary):
        passed = summary.stages["pass"]
        shares = (
            f"pass {passed.count} of {_plural(summary.runs, 'run')}: "
            f"{summary.diagnosed} diagnosed"
        )
        if summary.diagnosed:
            shares += f", {share_with_interval(passed)} of them pass"
        missing, undiagnosed, word = (
            summary.runs - summary.diagnosed,
            summary.not_diagnosed,
            "diagnosed",
        )
    else:
        shares = (
            f"membership {summary.membership.count} and order "
            f"{summary.order.count} of {_plural(summary.runs, 'run')}: "
            f"{summary.graded} graded"
        )
        if summary.graded:
            shares += (
                f", membership {share_with_interval(summary.membership)} and "
                f"order {share_with_interval(summary.order)} of them"
            )
        missing, undiagnosed, word = (
            summary.runs - summary.graded,
            summary.not_graded,
            "graded",
        )
    if missing:
        shares += f"; {missing} not {word}: {why_text(undiagnosed)}"
    return f"{name}: {shares}."


def headlines(report: Report) -> list[str]:
    """Every summary's `headline`, in the order of the tables."""
    return [headline(summary) for summary in report.summaries]


def gate_lines(report: Report) -> list[str]:
    """The verdict of `--fail-under`: each threshold not met, or that all
    were; none when no threshold was asked."""
    if not report.thresholds:
        return []
    failed = [check for check in report.thresholds if not check.met]
    if failed:
        return [
            f"Gate failed: {len(failed)} of {len(report.thresholds)} thresholds "
            f"not met (--fail-under, {OVER_ALL_RUNS}).",
            *(f"Not met: {threshold_line(check)}." for check in failed),
        ]
    return [
        f"Gate passed: all {len(report.thresholds)} thresholds met "
        f"(--fail-under, {OVER_ALL_RUNS})."
    ]


def interval_note(report: Report) -> str:
    note = (
        f"Counted per {report.unit}; [low, high] are "
        f"{round(100 * report.confidence)}% Wilson score intervals"
    )
    if any(summary.epochs != [1] for summary in report.summaries):
        note += (
            ", with the sample as the cluster where it ran several epochs "
            "(its epochs are not independent evidence)"
        )
    return note + "."


def evals_read(report: Report) -> str:
    """ "3 evals in 4 logs (1 log superseded by its retry, not counted)"."""
    evals = len(report.evals)
    logs = len(report.logs) + len(report.superseded)
    text = (
        f"{evals} eval{'s' if evals != 1 else ''} in "
        f"{logs} log{'s' if logs != 1 else ''}"
    )
    note = superseded_note(report.superseded)
    if report.pooled:
        text += ", pooled by task, model and score"
    return f"{text} ({note})" if note else text


def eval_warnings(report: Report) -> list[str]:
    """One line per eval that did not complete, and per eval of stage
    scores that asked for an epochs reducer (which they do not use)."""
    warnings = []
    staged = {label for s in report.stage_diagnosis for label in s.evals}
    logs = {log.path: log for log in report.logs}
    for summary in report.evals:
        unused = unused_reducer(summary.label, summary.epochs_reducer)
        if unused and summary.label in staged:
            warnings.append(unused)
        if summary.missing_count:
            missing = missing_parts_text(summary.missing_parts, summary.missing_count)
            warnings.append(
                f"{summary.label} ({summary.name}) is missing {missing}; its "
                "figures cover only the parts read."
            )
        elif summary.status != "success":
            not_run = sum(logs[path].not_run for path in summary.logs if path in logs)
            never = (
                f"; the {_plural(not_run, 'sample-epoch')} it never ran count as "
                "runs not diagnosed"
                if not_run
                else ""
            )
            warnings.append(
                f"{summary.label} ({summary.name}) has status "
                f"{summary.status!r}{never}."
            )
    return warnings


def eval_label(summary: StageSummary | ExtractionSummary) -> str:
    """E1, or E1+E2 for pooled evals; with the score name when a log holds
    several tracegrade scores of one kind (`stage_diagnosis1` after
    `inspect score --action append`)."""
    label = "+".join(summary.evals)
    if summary.scorer in (STAGE_SCORER, EXTRACTION_SCORER):
        return label
    return f"{label} [{summary.scorer}]"


def _row_start(summary: StageSummary | ExtractionSummary) -> list[str]:
    return [eval_label(summary), summary.task, summary.model]


# A row names its eval by label, task and model; the table of evals gives
# each label's logs.
_ROW_COLUMNS = ["eval", "task", "model"]
_CONSTANT = [*_ROW_COLUMNS, "score"]
"""Columns the terminal leaves out when they hold one value (one eval)."""


def _of_all(count: int, runs: int) -> str:
    return percent(count / runs if runs else None)


def _runs_table(report: Report) -> Table:
    # In the order of the evals, as the table of evals.
    summaries = sorted(report.summaries, key=lambda s: int(s.evals[0][1:]))
    rows = []
    for s in summaries:
        if isinstance(s, StageSummary):
            got, undiagnosed = s.diagnosed, s.not_diagnosed
        else:
            got, undiagnosed = s.graded, s.not_graded
        rows.append(
            [
                *_row_start(s),
                s.scorer,
                str(s.runs),
                str(got),
                str(s.runs - got),
                why_text(undiagnosed) or "none",
            ]
        )
    return _table(
        "runs",
        "Runs",
        "runs: every sample-epoch of the eval, with a result or not. "
        "diagnosed: runs that got a stage (extraction: a grade, answer "
        "failures included); every share below is of these, and says so. "
        "not diagnosed: runs with no result, and why: a data error (the "
        "sample's data is at fault), a sample error (the sample errored before "
        "it had an answer, scored so or not scored at all), a run logged "
        "without the score, or one its eval never ran (it stopped).",
        ["score", "runs", "diagnosed", "not diagnosed", "why"],
        rows,
    )


def thresholds_table(checks: list[ThresholdCheck]) -> Table:
    """The `--fail-under` checks, each against one eval's score."""
    return _table(
        "thresholds",
        "Thresholds (--fail-under)",
        f"Each value is {OVER_ALL_RUNS}. The gate fails when a value is under "
        "its threshold.",
        ["score", "metric", "runs", "value", "threshold", "met"],
        [
            [
                check.eval,
                check.task,
                check.model,
                check.score,
                check.metric,
                str(check.runs),
                "none" if check.value is None else f"{check.value:.4f}",
                f"{check.threshold:g}",
                "yes" if check.met else "NO",
            ]
            for check in checks
        ],
    )


def report_page(report: Report) -> Page:
    """The report: the gate's verdict when thresholds were asked, what was
    read, each summary's headline, the warnings, then the tables."""
    verdict = gate_lines(report) or [
        "No gate asked",
        "no --fail-under threshold: the report gates nothing",
    ]
    samples = sum(log.samples for log in report.logs)
    return Page(
        command="tracegrade report",
        verdict=verdict[0],
        reasons=verdict[1:],
        failed=(
            None
            if not report.thresholds
            else not all(check.met for check in report.thresholds)
        ),
        summary=[
            f"{evals_read(report)}, {samples} sample-epochs. {interval_note(report)}"
        ],
        headlines=headlines(report),
        warnings=eval_warnings(report),
        sections=[Section(None, report_tables(report))],
        quiet_verdict=True,
    )


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in display order; empty sections are left out."""
    tables: list[Table] = [_runs_table(report)]
    if report.thresholds:
        tables.append(thresholds_table(report.thresholds))
    if report.stage_diagnosis:
        tables += _stage_tables(report)
        tables += pipeline_tables(report.stage_diagnosis)
    tables += _errors_table(report)
    for kind in ("missed", "dropped", "invented"):
        tables += _id_table(report, kind)
    if report.ordered_extraction:
        tables.append(_extraction_table(report))
    tables.append(_evals_table(report))
    return tables


def _table(
    key: str,
    title: str,
    caption: str,
    columns: list[str],
    rows: list[list[str]],
) -> Table:
    """A table of rows that start with their eval (`_row_start`)."""
    return Table(
        constant=_CONSTANT,
        key=key,
        title=title,
        caption=caption,
        columns=[*_ROW_COLUMNS, *columns],
        rows=rows,
    )


def _stage_tables(report: Report) -> list[Table]:
    # The intervals are said once, in the page's summary.
    ci = f"share [{round(100 * report.confidence)}% CI]"
    stages = _table(
        "stages",
        "Stage shares",
        "runs: runs in the stage; of: the runs diagnosed, which the share and "
        "its interval are of; of all runs: the runs in the stage over every "
        "run, those not diagnosed (table Runs) included.",
        ["stage", "runs", "of", ci, "of all runs"],
        [
            [
                *_row_start(s),
                stage,
                str(p.count),
                str(p.total),
                share_with_interval(p),
                _of_all(p.count, s.runs),
            ]
            for s in report.stage_diagnosis
            for stage, p in s.stages.items()
        ],
    )
    lucky = _table(
        "lucky",
        "Lucky answers",
        "Runs labelled correct whose required evidence never reached the "
        "context (stage retrieval), of all diagnosed runs labelled correct.",
        ["lucky", "of", ci],
        [
            [
                *_row_start(s),
                str(s.lucky.count),
                str(s.lucky.total),
                share_with_interval(s.lucky),
            ]
            for s in report.stage_diagnosis
        ],
    )
    context = _table(
        "context",
        "Context recall and precision",
        "recall: the mean share of each run's unique required IDs that "
        "reached its context, over the runs with a required set and a "
        "context. precision: the mean share of each run's unique context IDs "
        "that were required (a repeated ID is one document), over the runs "
        "whose context held an ID and was judged (an empty required list "
        "gives 0). Labelled or not: the logged context_recall and "
        "context_precision metrics cover the scored runs only. Means; no "
        "interval. Runs with no figure (a sample error has no context) are in "
        "the Runs table.",
        ["recall", "recall runs", "precision", "precision runs"],
        [
            [
                *_row_start(s),
                percent(s.recall),
                str(s.recall_runs),
                percent(s.precision),
                str(s.precision_runs),
            ]
            for s in report.stage_diagnosis
        ],
    )
    return [stages, lucky, context]


def _errors_table(report: Report) -> list[Table]:
    rows = [
        [*_row_start(s), error.kind, error.side, str(error.count), str(s.runs)]
        for s in report.summaries
        for error in s.errors
    ]
    if not rows:
        return []
    caption = (
        "side data: the sample's data is at fault, so it is unscored. side "
        "run: the sample errored before it had an answer, so it is unscored. "
        "side answer: the model's answer broke the answer contract and fails "
        f"both criteria. Counted per {report.unit}."
    )
    columns = ["kind", "side", "runs", "of"]
    return [_table("errors", "Errors by kind", caption, columns, rows)]


_OF_ALL = ("membership of all runs", "order of all runs")


def _extraction_table(report: Report) -> Table:
    return _table(
        "extraction",
        "Membership versus order",
        "Accuracy over graded runs; answer failures count as failures. gap = "
        "membership minus order accuracy: the runs that kept every ID but "
        "lost the source order. of all runs: membership and order over every "
        "run, those not graded (table Runs) included.",
        [*("runs", "graded", "membership", "order", "gap"), *_OF_ALL],
        [
            [
                *_row_start(s),
                str(s.runs),
                str(s.graded),
                share_with_interval(s.membership),
                share_with_interval(s.order),
                share_with_interval(s.gap),
                _of_all(s.membership.count, s.runs),
                _of_all(s.order.count, s.runs),
            ]
            for s in report.ordered_extraction
        ],
    )


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def pipeline_tables(summaries: list[StageSummary]) -> list[Table]:
    """ "Where missing documents were lost", per step and at the prompt's
    cut, for the summaries whose runs carried the pipeline's steps."""
    with_steps = [(s, s.pipeline) for s in summaries if s.pipeline is not None]
    if not with_steps:
        return []
    depth = with_steps[0][1].ndcg_depth
    near = with_steps[0][1].context.near
    rows = []
    for s, losses in with_steps:
        for step in losses.steps:
            figures = [percent(step.recall), _figure(step.mrr), _figure(step.ndcg)]
            lost = [str(step.lost), percent(step.lost_share)]
            rows.append([*_row_start(s), step.step, *lost, *figures, str(step.runs)])
        context = losses.context
        lost = [str(context.lost), percent(context.share)]
        rows.append([*_row_start(s), "context", *lost, "", "", "", str(losses.runs)])
    steps = _table(
        "pipeline",
        "Where missing documents were lost",
        "Over the diagnosed runs whose records carried the pipeline's steps "
        "(runs with steps), each missing required ID counted at the step that "
        "took the last output holding it. lost: missing IDs lost at the step; "
        "share: of all the missing IDs of those runs. context: no step dropped "
        "the ID, but it was ranked below the cut that fills the prompt. "
        f"recall, MRR and nDCG@{depth}: the step's output against the required "
        "IDs, means over the diagnosed runs that have the step (runs), as "
        "trec_eval computes them.",
        ["step", "lost", "share", "recall", "MRR", f"nDCG@{depth}", "runs"],
        rows,
    )
    cut = _table(
        "cut",
        "Lost at the prompt's cut",
        "The missing IDs every step kept but the prompt did not hold (lost at "
        "context): the rank where each was last seen, in the last step's "
        "output; the cut is the run's context size. within "
        f"{near} of the cut: last seen at most {near} ranks below it, where a "
        "slightly larger k would have kept it.",
        ["lost at the cut", "median last rank", f"within {near} of the cut"],
        [
            [
                *_row_start(s),
                str(losses.context.lost),
                _median(losses.context.median_last_rank),
                str(losses.context.near_the_cut),
            ]
            for s, losses in with_steps
        ],
    )
    return [steps, cut]


def _median(rank: float | None) -> str:
    if rank is None:
        return "n/a"
    return str(int(rank)) if rank.is_integer() else f"{rank:.1f}"


def _evals_table(report: Report) -> Table:
    logs = {log.path: log for log in report.logs}
    rows = []
    notes = []
    for summary in report.evals:
        read: list[LogSummary] = [logs[path] for path in summary.logs]
        rows.append(
            [
                summary.label,
                summary.task,
                summary.model,
                summary.status,
                str(summary.epochs),
                str(sum(log.samples for log in read)),
                str(sum(log.samples_without_tracegrade_score for log in read)),
            ]
        )
        notes.append(f"{summary.label}: {_logs_of(summary.logs)}")
    caption = (
        "samples: sample-epochs in its logs. no score: samples with no "
        "tracegrade score, such as one that errored before scoring. An eval "
        "is one log, the newest of a retried eval, or the parts of a run "
        "`tracegrade score` split; its logs are listed below."
    )
    note = superseded_note(report.superseded)
    if note:
        superseded = ", ".join(Path(s.path).name for s in report.superseded)
        caption += f" {note[0].upper()}{note[1:]}: {superseded}."
    return Table(
        key="evals",
        title="Evals read",
        caption=caption,
        columns=["eval", "task", "model", "status", "epochs", "samples", "no score"],
        rows=rows,
        notes=notes,
    )


def _logs_of(paths: list[str]) -> str:
    """An eval's logs: the one, or the first and last of its parts."""
    if len(paths) == 1:
        return paths[0]
    if len(paths) == 2:
        return f"{paths[0]} and {paths[1]}"
    return f"{len(paths)} parts, {paths[0]} to {paths[-1]}"


@dataclass(frozen=True)
class RankedID:
    """One of the most often counted IDs: counted `count` times of `of`."""

    id: str
    count: int
    of: int


@dataclass(frozen=True)
class IdRanking:
    """One summary's most often counted IDs of a kind, and how many
    distinct IDs were ever counted."""

    summary: StageSummary | ExtractionSummary
    ids: list[RankedID]
    distinct: int


def id_rankings(report: Report, kind: str) -> list[IdRanking]:
    """Each summary's most often `kind` IDs: missed, dropped or invented."""
    if kind == "missed":
        return [
            IdRanking(
                s,
                [RankedID(d.id, d.missed, d.required) for d in s.missed],
                s.distinct_missed,
            )
            for s in report.stage_diagnosis
        ]
    if kind == "dropped":
        return [
            IdRanking(
                s,
                [RankedID(d.id, d.dropped, d.in_source) for d in s.dropped],
                s.distinct_dropped,
            )
            for s in report.ordered_extraction
        ]
    if kind == "invented":
        # An invented ID is in no source: it is counted of all itemised answers.
        return [
            IdRanking(
                s,
                [RankedID(i.id, i.invented, s.itemised) for i in s.invented],
                s.distinct_invented,
            )
            for s in report.ordered_extraction
        ]
    raise ValueError(f"no ID count {kind!r}; there are missed, dropped, invented")


@dataclass(frozen=True)
class _IdWords:
    title: str
    columns: tuple[str, str, str]
    caption: str


_ID_WORDS = {
    "missed": _IdWords(
        "Most often missing document IDs",
        ("document", "missed", "required"),
        "missed: diagnosed runs whose context lacked the required ID; "
        "required: diagnosed runs that required it.",
    ),
    "dropped": _IdWords(
        "Most often dropped IDs",
        ("ID", "dropped", "in source"),
        "dropped: itemised answers that left out the source ID; in source: "
        "itemised answers whose source held it. Itemised: graded answers "
        "except those that repeat an ID or cannot be read, which fail both "
        "criteria with nothing compared.",
    ),
    "invented": _IdWords(
        "Most often invented IDs",
        ("ID", "invented", "of"),
        "invented: itemised answers that held the ID though their source did "
        "not; of: all itemised answers (graded, neither repeating an ID nor "
        "unreadable).",
    ),
}


def id_count_title(kind: str, top: int) -> str:
    """ "Most often dropped IDs (top 10)": the table's and the chart's title."""
    return f"{_ID_WORDS[kind].title} (top {top})"


def _id_table(report: Report, kind: str) -> list[Table]:
    """The most often `kind` IDs of every summary, if any."""
    rankings = id_rankings(report, kind)
    rows = [
        [
            *_row_start(ranking.summary),
            show_id(ranked.id),
            str(ranked.count),
            str(ranked.of),
            percent(ranked.count / ranked.of),
        ]
        for ranking in rankings
        for ranked in ranking.ids
    ]
    if not rows:
        return []
    words = _ID_WORDS[kind]
    distinct = "; ".join(f"{r.distinct} in {eval_label(r.summary)}" for r in rankings)
    caption = f"{words.caption} Distinct IDs ever {kind}: {distinct}."
    columns = [*words.columns, "rate"]
    return [_table(kind, id_count_title(kind, report.top), caption, columns, rows)]


__all__ = [
    "IdRanking",
    "RankedID",
    "Table",
    "eval_label",
    "eval_warnings",
    "evals_read",
    "gate_lines",
    "headline",
    "headlines",
    "id_count_title",
    "id_rankings",
    "interval_note",
    "percent",
    "report_page",
    "report_tables",
    "share_with_interval",
    "thresholds_table",
]
