"""A `Comparison` as presentation-neutral tables, for the terminal and HTML.

Both renderings take these, as `tracegrade report`'s do its
`report_tables`, so the page and the terminal never disagree. Long lists
(the changed samples, the samples in one run only) are cut to `show` rows
in the terminal, with the count of the rest in the caption; the HTML page
lists them all, and so does the JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..report.build import Table, logs_read
from ..scorers.explain import list_ids
from .build import Comparison, SideSummary
from .pairing import (
    EXTRACTION,
    Change,
    ExtractionComparison,
    ScoreComparison,
    StageComparison,
)
from .stats import McNemar, discordant_needed, format_p

ARROW = "\u2192"

STATE_MEANINGS = {
    "stage_diagnosis": (
        "States: the stage (retrieval, generation, pass, unresolved); data "
        "error: unscored, the sample's data is at fault; no score: the sample "
        "is in the log without this score (it errored before scoring)."
    ),
    EXTRACTION: (
        "States: pass: every ID kept, in source order; order fail: every ID "
        "kept, order lost; membership fail: an ID dropped, invented or "
        "repeated, or the answer unreadable (order fails too); data error: "
        "unscored; no score: the sample is in the log without this score."
    ),
}


def summary_line(comparison: Comparison) -> str:
    """One line: what was compared with what, and the significance level."""
    pairs = sum(c.pairs for c in _compared(comparison))
    return (
        f"BASE {_side(comparison.base)} against NEW {_side(comparison.new)}; "
        f"{pairs} pairs ({comparison.unit}s in both, by sample id and epoch); "
        f"alpha = {comparison.alpha:g}."
    )


def _side(side: SideSummary) -> str:
    return f"{Path(side.path).name} ({logs_read(side.logs)}; {', '.join(side.models)})"


def _compared(comparison: Comparison) -> list[StageComparison | ExtractionComparison]:
    return [*comparison.stage_diagnosis, *comparison.ordered_extraction]


def gate_line(comparison: Comparison) -> str:
    """What `--fail-on-regression` would decide, in one sentence."""
    gate = comparison.gate
    regressions = f"{gate.regressions} regression{'s' if gate.regressions != 1 else ''}"
    if gate.significant:
        return (
            f"{regressions}; significantly worse at alpha = {gate.alpha:g}: "
            f"{'; '.join(gate.significant)}."
        )
    return (
        f"{regressions}; none significant at alpha = {gate.alpha:g} "
        f"(tested: {'; '.join(gate.outcomes)})."
    )


def test_notes(comparison: Comparison) -> list[str]:
    """Each test's plain sentence, named by score and outcome."""
    return [
        f"{c.score} {t.outcome}: {t.note}"
        for c in _compared(comparison)
        for t in c.tests
    ]


def comparison_tables(comparison: Comparison, show: int | None = None) -> list[Table]:
    """The tables, in display order; lists with no rows are left out.

    `show` cuts each list of samples or IDs to that many rows (None: all).
    """
    compared = _compared(comparison)
    tables = [_summary_table(compared)]
    tables.extend(_transition_table(c) for c in compared)
    tables.append(_tests_table(comparison))
    for c in comparison.stage_diagnosis:
        tables.append(
            _changes_table(
                c,
                "regressions",
                f"Regressions: {c.score} (pass {ARROW} retrieval or generation)",
                c.regressions,
                show,
            )
        )
        tables.append(
            _changes_table(c, "fixes", f"Fixes: {c.score} (now pass)", c.fixes, show)
        )
        tables.append(_ids_table(c, show))
    for e in comparison.ordered_extraction:
        for key, title, changes in (
            ("lost-membership", "Lost membership", e.lost_membership),
            ("gained-membership", "Gained membership", e.gained_membership),
            ("lost-order", "Lost order", e.lost_order),
            ("gained-order", "Gained order", e.gained_order),
        ):
            tables.append(_changes_table(e, key, f"{title}: {e.score}", changes, show))
    tables.append(_one_run_table(compared, show))
    tables.append(_logs_table(comparison))
    return [table for table in tables if table.rows]


def _summary_table(compared: Sequence[StageComparison | ExtractionComparison]) -> Table:
    rows = []
    for c in compared:
        if isinstance(c, StageComparison):
            worse, better = len(c.regressions), len(c.fixes)
        else:
            worse = len(_pairs(c.lost_membership, c.lost_order))
            better = len(_pairs(c.gained_membership, c.gained_order))
        changed = c.pairs - sum(c.transitions[i][i] for i in range(len(c.states)))
        rows.append(
            [
                c.score,
                str(c.pairs),
                str(changed),
                str(worse),
                str(better),
                str(len(c.only_in_base)),
                str(len(c.only_in_new)),
            ]
        )
    return Table(
        key="summary",
        title="Pairs",
        caption="pairs: sample-epochs in both runs. changed: pairs whose state "
        "changed. worse: stage regressions (pass to retrieval or generation), "
        "or extraction pairs that lost membership or order. better: stage "
        "fixes (pass in NEW, not in BASE), or extraction pairs that gained "
        "membership or order. Samples in one run only are listed below.",
        columns=[
            "score",
            "pairs",
            "changed",
            "worse",
            "better",
            "only in BASE",
            "only in NEW",
        ],
        numeric=[False, *[True] * 6],
        rows=rows,
    )


def _pairs(*lists: list[Change]) -> set[tuple[int | str, int]]:
    return {(change.id, change.epoch) for changes in lists for change in changes}


def _transition_table(c: ScoreComparison) -> Table:
    totals = [sum(row[j] for row in c.transitions) for j in range(len(c.states))]
    rows = [
        [state, *map(str, counts), str(sum(counts))]
        for state, counts in zip(c.states, c.transitions, strict=True)
    ]
    rows.append(["total", *map(str, totals), str(sum(totals))])
    return Table(
        key=f"transitions-{c.score}",
        title=f"Transitions: {c.score}",
        caption=f"Pairs by state in BASE (rows) and in NEW (columns); the "
        f"diagonal is unchanged. {STATE_MEANINGS[c.kind]}",
        columns=["BASE \\ NEW", *c.states, "total"],
        numeric=[False, *[True] * (len(c.states) + 1)],
        rows=rows,
    )


def _tests_table(comparison: Comparison) -> Table:
    rows = [_test_row(c.score, test) for c in _compared(comparison) for test in c.tests]
    needed = discordant_needed(comparison.alpha)
    return Table(
        key="tests",
        title="Significance (exact McNemar)",
        caption="Over the pairs with a stage (or a grade) in both runs. b: pairs "
        "with the outcome in BASE only; c: in NEW only. p: two-sided exact "
        "McNemar test, the binomial test of b in b + c at 1/2. change: NEW share "
        "minus BASE share, (c - b) / pairs, in percentage points. With fewer "
        f"than {needed} changed pairs no split can reach alpha = "
        f"{comparison.alpha:g}: too few to tell.",
        columns=[
            "score",
            "outcome",
            "pairs",
            "BASE",
            "NEW",
            "b",
            "c",
            "p",
            "change",
            "verdict",
        ],
        numeric=[False, False, *[True] * 7, False],
        rows=rows,
    )


def _test_row(score: str, test: McNemar) -> list[str]:
    return [
        score,
        test.outcome,
        str(test.pairs),
        str(test.base_count),
        str(test.new_count),
        str(test.b),
        str(test.c),
        "n/a" if test.p_value is None else format_p(test.p_value),
        "n/a" if test.difference is None else f"{100 * test.difference:+.1f} pp",
        test.verdict.value,
    ]


def _cut(
    rows: list[list[str]], show: int | None, what: str
) -> tuple[list[list[str]], str]:
    """The first `show` rows, and a caption sentence saying how many there are."""
    count = f"{len(rows)} {what}."
    if show is None or len(rows) <= show:
        return rows, count
    return rows[
        :show
    ], f"{count} The first {show} are shown (--show); --json lists all."


def _ids(ids: list[str] | None) -> str:
    if ids is None:
        return ""
    return list_ids(ids) if ids else "none"


def _changes_table(
    c: ScoreComparison, key: str, title: str, changes: list[Change], show: int | None
) -> Table:
    stage = isinstance(c, StageComparison)
    rows = []
    for change in changes:
        row = [
            str(change.id),
            str(change.epoch),
            f"{change.base.state} {ARROW} {change.new.state}",
        ]
        if stage:
            row += [_ids(change.base.missing), _ids(change.new.missing)]
        row += [change.base.explanation or "", change.new.explanation or ""]
        rows.append(row)
    shown, count = _cut(rows, show, "pairs")
    columns = ["sample", "epoch", f"BASE {ARROW} NEW"]
    if stage:
        columns += ["missing in BASE", "missing in NEW"]
    columns += ["BASE explanation", "NEW explanation"]
    return Table(
        key=f"{key}-{c.score}",
        title=title,
        caption=count,
        columns=columns,
        numeric=[False, True, *[False] * (len(columns) - 2)],
        rows=shown,
    )


def _ids_table(c: StageComparison, show: int | None) -> Table:
    missing = {i.id: i.count for i in c.newly_missing}
    found = {i.id: i.count for i in c.newly_found}
    ordered = sorted(
        missing.keys() | found.keys(),
        key=lambda i: (-missing.get(i, 0), -found.get(i, 0), i),
    )
    rows = [[i, str(missing.get(i, 0)), str(found.get(i, 0))] for i in ordered]
    shown, count = _cut(rows, show, "document IDs changed")
    return Table(
        key=f"ids-{c.score}",
        title=f"Document IDs newly missing and newly found: {c.score}",
        caption=f"Over the {c.ids_compared} pairs diagnosed retrieval, generation "
        "or pass in both runs. newly missing: pairs whose NEW run missed the "
        "required ID and whose BASE run did not; newly found: the reverse. "
        f"{count}",
        columns=["document", "newly missing", "newly found"],
        numeric=[False, True, True],
        rows=shown,
    )


def _one_run_table(
    compared: Sequence[StageComparison | ExtractionComparison], show: int | None
) -> Table:
    rows = [
        [c.score, side, str(ref.id), str(ref.epoch), Path(ref.log).name]
        for c in compared
        for side, refs in (("BASE", c.only_in_base), ("NEW", c.only_in_new))
        for ref in refs
    ]
    shown, count = _cut(rows, show, "sample-epochs are in one run only")
    return Table(
        key="one-run",
        title="Samples in one run only",
        caption=f"{count} They are not paired, so not compared, but counted: "
        "a sample added or dropped, an epoch run in one run only, or a part of a "
        "split run not given.",
        columns=["score", "only in", "sample", "epoch", "log"],
        numeric=[False, False, False, True, False],
        rows=shown,
    )


def _logs_table(comparison: Comparison) -> Table:
    rows = [
        [
            side,
            Path(log.path).name,
            "" if log.part is None else f"{log.part.index} of {log.part.count}",
            log.task,
            log.model,
            log.status,
            str(log.epochs),
            str(log.samples),
            str(log.samples_without_tracegrade_score),
        ]
        for side, summary in (("BASE", comparison.base), ("NEW", comparison.new))
        for log in summary.logs
    ]
    return Table(
        key="logs",
        title="Logs read",
        caption="samples: sample-epochs in the log. no score: samples with no "
        "tracegrade score, such as one that errored before scoring. part: the "
        "log's part of a run split by `tracegrade score`; a side's logs are "
        "pooled.",
        columns=[
            "run",
            "log",
            "part",
            "task",
            "model",
            "status",
            "epochs",
            "samples",
            "no score",
        ],
        numeric=[False, False, True, False, False, False, True, True, True],
        rows=rows,
    )


__all__ = [
    "ARROW",
    "comparison_tables",
    "gate_line",
    "summary_line",
    "test_notes",
]
