"""A `Comparison` as a `Page` of tables: a section per pair of evals, each
long list cut to `show` rows (only those read back from its spool).
IDs and sample ids are quoted, so an empty ID or a trailing space shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice
from pathlib import Path

from ..report.aggregate import EvalInfo
from ..report.page import Page, Section, Table
from ..report.runs import why_text
from ..report.tables import thresholds_table
from ..scorers.explain import list_ids, show_id
from .build import Comparison, EvalPair, SideSummary
from .pairing import (
    EXTRACTION,
    Change,
    ExtractionComparison,
    SampleRef,
    ScoreComparison,
    StageComparison,
    lost_text,
)
from .spool import SortedSpool
from .stats import (
    MCNEMAR,
    SIGN,
    FigureTest,
    PairedTest,
    discordant_needed,
    format_p,
)

ARROW = "\u2192"
HTML_SHOW = 1000
"""How many rows of each list the HTML page shows by default."""

STATE_MEANINGS = {
    "stage_diagnosis": (
        "States: the stage (retrieval, generation, pass, unresolved); data "
        "error: unscored, the sample's data is at fault; no score: the sample "
        "is in the log without this score (it errored before scoring), or its "
        "eval stopped before running it."
    ),
    EXTRACTION: (
        "States: pass: every ID kept, in source order; order fail: every ID "
        "kept, order lost; membership fail: an ID dropped, invented or "
        "repeated, or the answer unreadable (order fails too); data error: "
        "unscored; no score: the sample is in the log without this score, or "
        "its eval stopped before running it."
    ),
}


def summary_line(comparison: Comparison) -> str:
    """One line: what was compared with what, and the significance level."""
    pairs = sum(c.pairs for pair in comparison.pairs for c in _compared(pair))
    evals = len(comparison.pairs)
    return (
        f"BASE {_side(comparison.base)} against NEW {_side(comparison.new)}; "
        f"{evals} pair{'s' if evals != 1 else ''} of evals, {pairs} pairs of "
        f"{comparison.unit}s (by sample id and epoch); alpha = {comparison.alpha}."
    )


def _side(side: SideSummary) -> str:
    evals = len(side.evals)
    return f"{Path(side.path).name} ({evals} eval{'s' if evals != 1 else ''})"


def _compared(pair: EvalPair) -> list[StageComparison | ExtractionComparison]:
    return [*pair.stage_diagnosis, *pair.ordered_extraction]


def all_warnings(comparison: Comparison) -> list[str]:
    """The comparison's warnings, then each pair's, named by the pair
    when there are several."""
    several = len(comparison.pairs) > 1
    return [*comparison.warnings] + [
        f"{pair.name}: {warning}" if several else warning
        for pair in comparison.pairs
        for warning in pair.warnings
    ]


def gate_line(comparison: Comparison, *, counts_only: bool = False) -> str:
    """What `--fail-on-regression` counts, in one sentence; `counts_only`,
    the regressions alone (the verdict says the rest)."""
    gate = comparison.gate
    regressions = f"{gate.regressions} regression{'s' if gate.regressions != 1 else ''}"
    if gate.regressed:
        regressions += f" ({'; '.join(gate.regressed)})"
    if counts_only:
        return regressions + "."
    if gate.significant:
        regressions += (
            f"; significantly worse at alpha = {gate.alpha}: "
            f"{'; '.join(gate.significant)}"
        )
    else:
        regressions += (
            f"; none significant at alpha = {gate.alpha} "
            f"(tested: {'; '.join(gate.outcomes)})"
        )
    lost = [
        *(f"lost results: {entry}" for entry in gate.lost_results),
        *gate.failed_evals,
        *gate.missing_evals,
    ]
    if lost:
        counted = "" if gate.lost_gated else ", not gated (--allow-lost)"
        regressions += f"; {'; '.join(lost)}{counted}"
    else:
        regressions += "; no result lost"
    return regressions + "."


def verdict_lines(comparison: Comparison) -> list[str]:
    """The gate's verdict first, then why: each thing that failed it, or
    what it checked."""
    verdict = comparison.verdict
    asked = f" ({', '.join(verdict.asked)})" if verdict.asked else ""
    if not verdict.asked:
        head = "No gate asked"
    elif verdict.failed:
        head = f"Gate failed{asked}"
    else:
        head = f"Gate passed{asked}"
    return [head, *verdict.failed_on, *verdict.checked]


def test_notes(comparison: Comparison, pair: EvalPair) -> list[str]:
    """Each test's plain sentence, named by score and outcome (and by the
    pair, when there are several)."""
    prefix = f"{pair.name}, " if len(comparison.pairs) > 1 else ""
    notes = [
        f"{prefix}{c.score} {t.outcome}: {t.note}"
        for c in _compared(pair)
        for t in c.tests
    ]
    notes += [
        f"{prefix}{c.score} {figure_name(f)}: {f.note}"
        for c in pair.stage_diagnosis
        for f in c.figures
    ]
    return notes


def comparison_page(
    comparison: Comparison, show: int | None = None, option: str = "--show"
) -> Page:
    """The comparison: the gate's verdict, what was compared, then a section
    per pair of evals (each list cut to `show` rows, set by `option`), then
    the evals."""
    head, *reasons = verdict_lines(comparison)
    verdict = comparison.verdict
    gated = "--fail-on-regression" in verdict.asked
    sections = [Section(None, gate_tables(comparison))]
    for pair in comparison.pairs:
        first, rest = comparison_tables(comparison, pair, show, option)
        title = pair.name if len(comparison.pairs) > 1 else None
        sections.append(Section(title, first, test_notes(comparison, pair), rest))
    sections.append(Section(None, [evals_table(comparison)]))
    return Page(
        command="tracegrade compare",
        verdict=head,
        reasons=reasons,
        failed=verdict.failed if verdict.asked else None,
        summary=[
            summary_line(comparison),
            f"Regressions: {gate_line(comparison, counts_only=gated)}",
        ],
        headlines=[],
        warnings=all_warnings(comparison),
        sections=sections,
    )


def comparison_tables(
    comparison: Comparison,
    pair: EvalPair,
    show: int | None = None,
    option: str = "--show",
) -> tuple[list[Table], list[Table]]:
    """One pair's tables, the counts and tests first, then the lists cut to
    `show` rows (set by `option`); tables with no rows are left out."""
    index = comparison.pairs.index(pair)
    first, rest = _pair_tables(comparison, pair, _Cut(show, option))

    def named(tables: list[Table]) -> list[Table]:
        if len(comparison.pairs) == 1:
            return [table for table in tables if table.rows]
        return [
            replace(
                table,
                key=f"{index + 1}-{table.key}",
                title=f"{pair.name}: {table.title}",
            )
            for table in tables
            if table.rows
        ]

    return named(first), named(rest)


def _pair_tables(
    comparison: Comparison, pair: EvalPair, show: _Cut
) -> tuple[list[Table], list[Table]]:
    compared = _compared(pair)
    first = [_summary_table(compared), _runs_table(compared)]
    first += [_transition_table(c) for c in compared]
    first += [_tests_table(comparison, pair), _figures_table(pair)]
    rest = [
        _changes_table(
            c,
            "lost",
            f"Lost results: {c.score} (a result in BASE, none in NEW)",
            c.lost_runs,
            show,
        )
        for c in compared
    ]
    for c in pair.stage_diagnosis:
        regressions = f"Regressions: {c.score} (pass {ARROW} retrieval or generation)"
        rest.append(_changes_table(c, "regressions", regressions, c.regressions, show))
        rest.append(
            _changes_table(c, "fixes", f"Fixes: {c.score} (now pass)", c.fixes, show)
        )
    for e in pair.ordered_extraction:
        for key, title, changes in (
            ("lost-membership", "Lost membership", e.lost_membership),
            ("gained-membership", "Gained membership", e.gained_membership),
            ("lost-order", "Lost order", e.lost_order),
            ("gained-order", "Gained order", e.gained_order),
        ):
            rest.append(_changes_table(e, key, f"{title}: {e.score}", changes, show))
    rest += [_ids_table(c, show) for c in pair.stage_diagnosis]
    rest += [_one_run_table(compared, show), _logs_table(pair)]
    return first, rest


def gate_tables(comparison: Comparison) -> list[Table]:
    """The `--fail-under` checks of NEW's evals, when asked."""
    if not comparison.thresholds:
        return []
    return [thresholds_table(comparison.thresholds)]


def evals_table(comparison: Comparison) -> Table:
    """Every eval found on either side, and what it was paired with."""
    paired = {
        (side, info.key): pair.name
        for pair in comparison.pairs
        for side, info in (("BASE", pair.base), ("NEW", pair.new))
    }
    rows = [
        [
            side,
            info.name,
            info.task,
            info.model,
            info.status,
            str(info.epochs),
            paired.get((side, info.key), "not paired"),
        ]
        for side, summary in (("BASE", comparison.base), ("NEW", comparison.new))
        for info in summary.evals
    ]
    return Table(
        key="evals",
        title="Evals",
        caption="An eval is one log, the newest of a retried eval (older logs "
        "are superseded and not read), or the parts of a run `tracegrade "
        "score` split. Evals are paired by task and model; one eval on each "
        "side is paired whatever it ran.",
        columns=["side", "eval", "task", "model", "status", "epochs", "paired as"],
        rows=rows,
        # Shown without --verbose when an eval is not paired, or did not finish.
        detail=not (
            comparison.only_in_base
            or comparison.only_in_new
            or any(info.status != "success" for info in _infos(comparison))
        ),
    )


def _infos(comparison: Comparison) -> list[EvalInfo]:
    return [*comparison.base.evals, *comparison.new.evals]


def _summary_table(compared: Sequence[StageComparison | ExtractionComparison]) -> Table:
    rows = []
    for c in compared:
        changed = c.pairs - sum(c.transitions[i][i] for i in range(len(c.states)))
        rows.append(
            [
                c.score,
                str(c.pairs),
                str(changed),
                str(c.worse),
                str(c.better),
                lost_text(c.lost_from),
                str(len(c.only_in_base)),
                str(len(c.only_in_new)),
            ]
        )
    return Table(
        key="summary",
        constant=["score"],
        title="Pairs",
        caption="pairs: sample-epochs in both runs. changed: pairs whose state "
        "changed. worse: stage regressions (pass to retrieval or generation), "
        "or extraction pairs that lost membership or order. better: stage "
        "fixes (pass in NEW, not in BASE), or extraction pairs that gained "
        "membership or order. lost: runs with a result (a stage, a grade) in "
        "BASE and none in NEW (a data error, no score, or not in NEW at all), "
        "by their states; the gate counts them. Samples in one run only are "
        "listed below.",
        columns=[
            "score",
            "pairs",
            "changed",
            "worse",
            "better",
            "lost",
            "only in BASE",
            "only in NEW",
        ],
        rows=rows,
    )


def _runs_table(compared: Sequence[StageComparison | ExtractionComparison]) -> Table:
    rows = [
        [
            c.score,
            side,
            str(counted.runs),
            str(counted.diagnosed),
            str(counted.runs - counted.diagnosed),
            why_text(counted.not_diagnosed) or "none",
        ]
        for c in compared
        for side, counted in (("BASE", c.base_runs), ("NEW", c.new_runs))
    ]
    return Table(
        key="runs",
        constant=["score"],
        title="Runs",
        caption="runs: every sample-epoch of the eval under the score, paired "
        "or not. diagnosed: runs with a result (a stage; extraction: a grade). "
        "not diagnosed: runs with none, and why: a data error, a sample error, "
        "a run logged without the score, or one its eval never ran. The tests "
        "weigh only pairs with a result on both sides; a run BASE diagnosed "
        "and NEW did not is a lost result (table Pairs).",
        columns=["score", "side", "runs", "diagnosed", "not diagnosed", "why"],
        rows=rows,
    )


def _transition_table(c: ScoreComparison) -> Table:
    totals = [sum(row[j] for row in c.transitions) for j in range(len(c.states))]
    rows = [
        [state, *map(str, counts), str(sum(counts))]
        for state, counts in zip(c.states, c.transitions, strict=True)
    ]
    rows.append(["total", *map(str, totals), str(sum(totals))])
    # Briefly, without the states no pair is in on either side.
    held = [i for i in range(len(c.states)) if totals[i] or sum(c.transitions[i])]
    return Table(
        key=f"transitions-{c.score}",
        title=f"Transitions: {c.score}",
        caption=f"Pairs by state in BASE (rows) and in NEW (columns); the "
        f"diagonal is unchanged. {STATE_MEANINGS[c.kind]}",
        columns=["BASE \\ NEW", *c.states, "total"],
        rows=rows,
        brief=["BASE \\ NEW", *(c.states[i] for i in held), "total"],
        brief_rows=[*held, len(c.states)],
    )


def _tests_table(comparison: Comparison, pair: EvalPair) -> Table:
    tests = [(c.score, test) for c in _compared(pair) for test in c.tests]
    rows = [_test_row(score, test) for score, test in tests]
    needed = discordant_needed(comparison.alpha)
    unit = "samples" if any(test.test == SIGN for _, test in tests) else "pairs"
    return Table(
        key="tests",
        constant=["score"],
        title="Significance",
        caption="Over the pairs with a stage (or a grade) in both runs. b: pairs "
        "with the outcome in BASE only; c: in NEW only. With one epoch per "
        "sample, p is the exact McNemar test (the binomial test of b in b + c "
        "at 1/2); with several, the sample is the unit: fell and rose count "
        "the samples whose share of epochs with the outcome fell or rose, and "
        "p is the exact sign test of them. change: NEW share minus BASE share, "
        f"(c - b) / pairs, in percentage points. With fewer than {needed} "
        f"changed {unit} no split can reach alpha = {comparison.alpha}: too "
        "few to tell.",
        columns=_TEST_COLUMNS,
        rows=rows,
        # One epoch: samples, fell and rose say again pairs, b and c.
        brief=_TEST_BRIEF if unit == "pairs" else None,
    )


_TEST_COLUMNS = ["score", "outcome", "test", "pairs", "samples", "BASE", "NEW"]
_TEST_COLUMNS += ["b", "c", "fell", "rose", "p", "change", "verdict"]
_TEST_BRIEF = [c for c in _TEST_COLUMNS if c not in ("test", "samples", "fell", "rose")]


def _test_row(score: str, test: PairedTest) -> list[str]:
    return [
        score,
        test.outcome,
        "McNemar" if test.test == MCNEMAR else "sign",
        str(test.pairs),
        str(test.samples),
        str(test.base_count),
        str(test.new_count),
        str(test.b),
        str(test.c),
        str(test.fell),
        str(test.rose),
        "n/a" if test.p_value is None else format_p(test.p_value),
        "n/a" if test.difference is None else f"{100 * test.difference:+.1f} pp",
        test.verdict.value,
    ]


def _figures_table(pair: EvalPair) -> Table:
    figures = [(c.score, f) for c in pair.stage_diagnosis for f in c.figures]
    return Table(
        key="figures",
        constant=["score"],
        title="Context recall and precision",
        caption="Over the pairs where both runs have the figure (recall: "
        "something required and a context; precision: a context holding an "
        "ID; {step}_recall: a pipeline step's recall, where both runs have "
        "that step), labelled or not. BASE and NEW: the "
        "figure's mean over those pairs; change: NEW minus BASE, in "
        "percentage points. fell and rose count the samples whose mean over "
        "their paired epochs fell or rose; p is the exact sign test of them "
        "(the sample as the unit); too few to tell as under Significance. "
        "Gated only with --gate.",
        columns=_FIGURE_COLUMNS,
        rows=[_figure_row(score, figure) for score, figure in figures],
        # One epoch: a pair is a sample.
        brief=None
        if any(f.samples != f.pairs for _, f in figures)
        else [c for c in _FIGURE_COLUMNS if c != "samples"],
    )


_FIGURE_COLUMNS = ["score", "figure", "pairs", "samples", "BASE", "NEW", "change"]
_FIGURE_COLUMNS += ["fell", "rose", "p", "verdict"]


def figure_name(figure: FigureTest) -> str:
    """ "context recall", "context precision", or a step's "retriever_recall"."""
    if figure.figure in ("recall", "precision"):
        return f"context {figure.figure}"
    return figure.figure


def _figure_row(score: str, figure: FigureTest) -> list[str]:
    def mean(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    return [
        score,
        figure_name(figure),
        str(figure.pairs),
        str(figure.samples),
        mean(figure.base_mean),
        mean(figure.new_mean),
        "n/a" if figure.difference is None else f"{100 * figure.difference:+.1f} pp",
        str(figure.fell),
        str(figure.rose),
        "n/a" if figure.p_value is None else format_p(figure.p_value),
        figure.verdict.value,
    ]


@dataclass(frozen=True)
class _Cut:
    """How many rows of a list to show, and the option that says so."""

    show: int | None
    option: str

    def rows(
        self, rows: Iterable[list[str]], total: int, what: str
    ) -> tuple[list[list[str]], str]:
        """The first `show` of `rows` (only those are made), and a caption
        sentence saying how many there are in all."""
        count = f"{total} {what}."
        if self.show is None or total <= self.show:
            return list(rows), count
        return list(islice(rows, self.show)), (
            f"{count} The first {self.show} are shown ({self.option}); --json "
            "lists all."
        )


def _ids(ids: list[str] | None) -> str:
    if ids is None:
        return ""
    return list_ids(ids) if ids else "none"


def _changes_table(
    c: ScoreComparison,
    key: str,
    title: str,
    changes: SortedSpool[Change],
    show: _Cut,
) -> Table:
    stage = isinstance(c, StageComparison)

    def row(change: Change) -> list[str]:
        cells = [
            _sample(change.id),
            str(change.epoch),
            f"{change.base.state} {ARROW} {change.new.state}",
        ]
        if stage:
            cells += [_ids(change.base.missing), _ids(change.new.missing)]
        return [*cells, change.base.explanation or "", change.new.explanation or ""]

    shown, count = show.rows(map(row, changes), len(changes), "pairs")
    brief = ["sample", "epoch", f"BASE {ARROW} NEW"]
    if stage:
        brief += ["missing in BASE", "missing in NEW"]
    columns = [*brief, "BASE explanation", "NEW explanation"]
    return Table(
        key=f"{key}-{c.score}",
        title=title,
        caption=count,
        columns=columns,
        rows=shown,
        brief=brief,
        cut=count if len(shown) < len(changes) else "",
    )


def _ids_table(c: StageComparison, show: _Cut) -> Table:
    missing = {i.id: i.count for i in c.newly_missing}
    found = {i.id: i.count for i in c.newly_found}
    ordered = sorted(
        missing.keys() | found.keys(),
        key=lambda i: (-missing.get(i, 0), -found.get(i, 0), i),
    )
    rows = ([show_id(i), str(missing.get(i, 0)), str(found.get(i, 0))] for i in ordered)
    shown, count = show.rows(rows, len(ordered), "document IDs changed")
    return Table(
        key=f"ids-{c.score}",
        title=f"Document IDs newly missing and newly found: {c.score}",
        caption=f"Over the {c.ids_compared} pairs diagnosed retrieval, generation "
        "or pass in both runs. newly missing: pairs whose NEW run missed the "
        "required ID and whose BASE run did not; newly found: the reverse. "
        f"{count}",
        columns=["document", "newly missing", "newly found"],
        rows=shown,
        detail=True,
    )


def _one_run_table(
    compared: Sequence[StageComparison | ExtractionComparison], show: _Cut
) -> Table:
    lists: list[tuple[str, str, SortedSpool[SampleRef]]] = [
        (c.score, side, refs)
        for c in compared
        for side, refs in (("BASE", c.only_in_base), ("NEW", c.only_in_new))
    ]
    rows = chain.from_iterable(
        (
            [score, side, _sample(ref.id), str(ref.epoch), Path(ref.log).name]
            for ref in refs
        )
        for score, side, refs in lists
    )
    total = sum(len(refs) for _, _, refs in lists)
    shown, count = show.rows(rows, total, "sample-epochs are in one run only")
    return Table(
        key="one-run",
        constant=["score"],
        title="Samples in one run only",
        caption=f"{count} They are not paired, so not compared, but counted: "
        "a sample added or dropped, an epoch run in one run only, or a part of a "
        "split run not given.",
        columns=["score", "only in", "sample", "epoch", "log"],
        rows=shown,
        cut=count if len(shown) < total else "",
    )


def _sample(sample_id: int | str) -> str:
    """A sample id as an ID is shown (`show_id`), and a string of digits
    quoted, so the string "7" and the integer 7 differ."""
    if isinstance(sample_id, int):
        return str(sample_id)
    if sample_id.isascii() and sample_id.isdigit():
        return f'"{sample_id}"'
    return show_id(sample_id)


def _logs_table(pair: EvalPair) -> Table:
    sides = {path: "BASE" for path in pair.base.logs} | {
        path: "NEW" for path in pair.new.logs
    }
    rows = [
        [
            sides.get(log.path, ""),
            Path(log.path).name,
            "" if log.part is None else f"{log.part.index} of {log.part.count}",
            log.status,
            str(log.epochs),
            str(log.samples),
            str(log.samples_without_tracegrade_score),
        ]
        for log in pair.logs
    ]
    return Table(
        key="logs",
        title="Logs read",
        caption="samples: sample-epochs in the log. no score: samples with no "
        "tracegrade score, such as one that errored before scoring. part: the "
        "log's part of a run split by `tracegrade score`.",
        columns=["side", "log", "part", "status", "epochs", "samples", "no score"],
        rows=rows,
        detail=True,
    )


__all__ = [
    "ARROW",
    "HTML_SHOW",
    "all_warnings",
    "comparison_page",
    "comparison_tables",
    "evals_table",
    "gate_line",
    "gate_tables",
    "summary_line",
    "test_notes",
    "verdict_lines",
]
