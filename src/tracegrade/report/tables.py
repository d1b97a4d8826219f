"""A `Report` as presentation-neutral tables, for the terminal and HTML.

Both renderings take these tables, so the page and the terminal never
disagree. Rows name their eval by its label (E1, E2, ...); the table of
evals says which logs each label stands for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..logs.evals import missing_parts_text, superseded_note, unused_reducer
from ..logs.scores import EXTRACTION_SCORER, STAGE_SCORER, LogSummary
from ..scorers.explain import show_id
from .aggregate import ExtractionSummary, Report, StageSummary
from .shares import Proportion


@dataclass(frozen=True)
class Table:
    """A titled table of display strings; `numeric` marks right-aligned columns."""

    key: str
    title: str
    caption: str
    columns: list[str]
    numeric: list[bool]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    """Lines shown under the caption, one each (the logs of each eval)."""


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


def interval_note(report: Report) -> str:
    note = (
        f"Counted per {report.unit}; [low, high] are "
        f"{round(100 * report.confidence)}% Wilson score intervals"
    )
    summaries: list[StageSummary | ExtractionSummary] = [
        *report.stage_diagnosis,
        *report.ordered_extraction,
    ]
    if any(summary.epochs != [1] for summary in summaries):
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
            warnings.append(
                f"{summary.label} ({summary.name}) has status "
                f"{summary.status!r}; only its logged samples are counted."
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
    return [eval_label(summary)]


# A row names its eval by label alone: the table of evals gives each
# label's task, model and logs, which would not fit beside the figures.
_ROW_COLUMNS = ["eval"]
_ROW_NUMERIC = [False]


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in display order; empty sections are left out."""
    note = interval_note(report)
    ci = f"share [{round(100 * report.confidence)}% CI]"
    tables: list[Table] = []
    if report.stage_diagnosis:
        tables.append(
            Table(
                key="stages",
                title="Stage shares",
                caption=f"Of runs that got a stage; unscored runs excluded. {note}",
                columns=[*_ROW_COLUMNS, "stage", "runs", "of", ci],
                numeric=[*_ROW_NUMERIC, False, True, True, True],
                rows=[
                    [
                        *_row_start(s),
                        stage,
                        str(p.count),
                        str(p.total),
                        share_with_interval(p),
                    ]
                    for s in report.stage_diagnosis
                    for stage, p in s.stages.items()
                ],
            )
        )
        tables.append(
            Table(
                key="lucky",
                title="Lucky answers",
                caption="Runs labelled correct whose required evidence never "
                "reached the context (stage retrieval), of all diagnosed runs "
                f"labelled correct. {note}",
                columns=[*_ROW_COLUMNS, "lucky", "of", ci],
                numeric=[*_ROW_NUMERIC, True, True, True],
                rows=[
                    [
                        *_row_start(s),
                        str(s.lucky.count),
                        str(s.lucky.total),
                        share_with_interval(s.lucky),
                    ]
                    for s in report.stage_diagnosis
                ],
            )
        )
        tables.append(
            Table(
                key="context",
                title="Context recall and precision",
                caption="recall: the mean share of each run's unique required "
                "IDs that reached its context, over the runs with a required "
                "set and a context. precision: the mean share of each run's "
                "unique context IDs that were required (a repeated ID is one "
                "document), over the runs whose context held an ID and was "
                "judged (an empty required list gives 0). Labelled or not: the "
                "logged context_recall and context_precision metrics cover the "
                "scored runs only. Means; no interval.",
                columns=[
                    *_ROW_COLUMNS,
                    "recall",
                    "recall runs",
                    "precision",
                    "precision runs",
                ],
                numeric=[*_ROW_NUMERIC, True, True, True, True],
                rows=[
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
        )
    summaries: list[StageSummary | ExtractionSummary] = [
        *report.stage_diagnosis,
        *report.ordered_extraction,
    ]
    error_rows = [
        [*_row_start(s), error.kind, error.side, str(error.count), str(s.runs)]
        for s in summaries
        for error in s.errors
    ]
    if error_rows:
        tables.append(
            Table(
                key="errors",
                title="Errors by kind",
                caption="side data: the sample's data is at fault, so it is "
                "unscored. side run: the sample errored before it had an "
                "answer, so it is unscored. side answer: the model's answer "
                "broke the answer contract and fails both criteria. Counted "
                f"per {report.unit}.",
                columns=[*_ROW_COLUMNS, "kind", "side", "runs", "of"],
                numeric=[*_ROW_NUMERIC, False, False, True, True],
                rows=error_rows,
            )
        )
    for kind in ("missed", "dropped", "invented"):
        table = _id_table(report, kind)
        if table is not None:
            tables.append(table)
    if report.ordered_extraction:
        tables.append(
            Table(
                key="extraction",
                title="Membership versus order",
                caption="Accuracy over graded runs; answer failures count as "
                "failures. gap = membership minus order accuracy: the runs "
                f"that kept every ID but lost the source order. {note}",
                columns=[*_ROW_COLUMNS, "graded", "membership", "order", "gap"],
                numeric=[*_ROW_NUMERIC, True, True, True, True],
                rows=[
                    [
                        *_row_start(s),
                        str(s.graded),
                        share_with_interval(s.membership),
                        share_with_interval(s.order),
                        share_with_interval(s.gap),
                    ]
                    for s in report.ordered_extraction
                ],
            )
        )
    tables.append(_evals_table(report))
    return tables


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
        numeric=[False, False, False, False, True, True, True],
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


def _id_table(report: Report, kind: str) -> Table | None:
    """The most often `kind` IDs of every summary; None if none."""
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
        return None
    words = _ID_WORDS[kind]
    distinct = "; ".join(f"{r.distinct} in {eval_label(r.summary)}" for r in rankings)
    return Table(
        key=kind,
        title=id_count_title(kind, report.top),
        caption=f"{words.caption} Distinct IDs ever {kind}: {distinct}.",
        columns=[*_ROW_COLUMNS, *words.columns, "rate"],
        numeric=[*_ROW_NUMERIC, False, True, True, True],
        rows=rows,
    )


__all__ = [
    "IdRanking",
    "RankedID",
    "Table",
    "eval_label",
    "eval_warnings",
    "evals_read",
    "id_count_title",
    "id_rankings",
    "interval_note",
    "percent",
    "report_tables",
    "share_with_interval",
]
