"""The comparison as one `Page` for the terminal, Markdown and HTML (with a
transition heatmap per score): the verdict first, each long list cut to
`show` rows, read back from disk only as far as shown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from ..report.page import Page, Section, Table
from ..report.runs import Undiagnosed, why_text
from ..report.thresholds import OVER_ALL_RUNS
from ..scorers.explain import list_ids, show_id
from .build import Comparison
from .pairing import EXTRACTION, STAGE, lost_text
from .stats import SIGN, discordant_needed, format_p

ARROW = "\u2192"
_STATES = {
    STAGE: "States: the stage (retrieval, generation, pass, unresolved); data "
    "error: unscored, the sample's data is at fault; no score: the sample is "
    "in the log without this score (it errored before scoring), or its eval "
    "stopped before running it.",
    EXTRACTION: "States: pass: every ID kept, in source order; order fail: "
    "every ID kept, order lost; membership fail: an ID dropped, invented or "
    "repeated, or the answer unreadable (order fails too); data error: "
    "unscored; no score: the sample is in the log without this score, or its "
    "eval stopped before running it.",
}
_TESTS = ["score", "outcome", "test", "pairs", "samples", "BASE", "NEW"]
_TESTS += ["b", "c", "fell", "rose", "p", "change", "verdict"]
_FIGURES = ["score", "figure", "pairs", "samples", "BASE", "NEW", "change"]
_FIGURES += ["fell", "rose", "p", "verdict"]


def verdict_lines(comparison: Comparison) -> list[str]:
    """The gate's verdict, then each thing that failed it or was checked."""
    verdict = comparison["verdict"]
    asked = ", ".join(verdict["asked"])
    head = "Gate failed" if verdict["failed"] else "Gate passed"
    head = f"{head} ({asked})" if asked else "No gate asked"
    return [head, *verdict["failed_on"], *verdict["checked"]]


def all_warnings(comparison: Comparison) -> list[str]:
    """The comparison's warnings, then each pair's, named by the pair when
    there are several."""
    several = len(comparison.pairs) > 1
    return [*comparison["warnings"]] + [
        f"{pair['name']}: {warning}" if several else warning
        for pair in comparison.pairs
        for warning in pair["warnings"]
    ]


def comparison_page(comparison: Comparison, show: int, option: str = "--show") -> Page:
    """The verdict, what was compared, then a section per pair of evals
    (each list cut to `show` rows, set by `option`), then the evals."""
    head, *reasons = verdict_lines(comparison)
    asked = comparison["verdict"]["asked"]
    sections = [Section(None, [_thresholds(comparison["thresholds"])])]
    for index, pair in enumerate(comparison.pairs):
        several = len(comparison.pairs) > 1
        first, rest, notes = _pair_tables(pair, comparison["alpha"], show, option)
        if several:
            notes = [f"{pair['name']}, {note}" for note in notes]
        sections.append(
            Section(
                pair["name"] if several else None,
                _named(first, pair["name"], index, several),
                notes,
                _named(rest, pair["name"], index, several),
            )
        )
    sections.append(Section(None, [_evals(comparison)]))
    return Page(
        command="tracegrade compare",
        verdict=head,
        reasons=reasons,
        failed=comparison["verdict"]["failed"] if asked else None,
        summary=[_summary(comparison), f"Regressions: {_regressions(comparison)}"],
        headlines=[],
        warnings=all_warnings(comparison),
        sections=sections,
    )


def _named(tables: list[Table], name: str, index: int, several: bool) -> list[Table]:
    """Tables with rows; with several pairs, each named by its pair."""
    if not several:
        return [table for table in tables if table.rows]
    return [
        Table(
            **{**vars(t), "key": f"{index + 1}-{t.key}", "title": f"{name}: {t.title}"}
        )
        for t in tables
        if t.rows
    ]


def _summary(comparison: Comparison) -> str:
    def side(summary: dict[str, Any]) -> str:
        evals = len(summary["evals"])
        return f"{Path(summary['path']).name} ({evals} eval{'s' * (evals != 1)})"

    pairs = sum(c["pairs"] for pair in comparison.pairs for c in _scores(pair))
    evals = len(comparison.pairs)
    return (
        f"BASE {side(comparison['base'])} against NEW {side(comparison['new'])}; "
        f"{evals} pair{'s' * (evals != 1)} of evals, {pairs} pairs of "
        f"sample-epochs (by sample id and epoch); alpha = {comparison['alpha']}."
    )


def _regressions(comparison: Comparison) -> str:
    """The regressions; without the gate asked, what the gate would count."""
    gate = comparison["gate"]
    count = gate["regressions"]
    text = f"{count} regression{'s' * (count != 1)}"
    if gate["regressed"]:
        text += f" ({'; '.join(gate['regressed'])})"
    if "--fail-on-regression" in comparison["verdict"]["asked"]:
        return text + "."
    if gate["significant"]:
        text += f"; significantly worse at alpha = {gate['alpha']}: "
        text += "; ".join(gate["significant"])
    else:
        text += f"; none significant at alpha = {gate['alpha']} "
        text += f"(tested: {'; '.join(gate['outcomes'])})"
    lost = [f"lost results: {entry}" for entry in gate["lost_results"]]
    lost += gate["failed_evals"] + gate["missing_evals"]
    counted = "" if gate["lost_gated"] else ", not gated (--allow-lost)"
    return text + (f"; {'; '.join(lost)}{counted}." if lost else "; no result lost.")


def _scores(pair: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pair[STAGE], *pair[EXTRACTION]]


def figure_name(figure: str) -> str:
    return f"context {figure}" if figure in ("recall", "precision") else figure


def _pp(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


def _p(value: float | None) -> str:
    return "n/a" if value is None else format_p(value)


def _pair_tables(
    pair: dict[str, Any], alpha: float, show: int, option: str
) -> tuple[list[Table], list[Table], list[str]]:
    """The counts and tests, then the lists, then the tests' sentences."""
    scores = _scores(pair)
    first = [_pairs(scores), _runs(scores)] + [_transitions(c) for c in scores]
    tests = [(c["score"], t) for c in scores for t in c["tests"]]
    figures = [(c["score"], f) for c in pair[STAGE] for f in c["figures"]]
    first += [_tests(tests, alpha), _figures(figures)]
    notes = [f"{score} {t['outcome']}: {t['note']}" for score, t in tests]
    notes += [
        f"{score} {figure_name(f['figure'])}: {f['note']}" for score, f in figures
    ]
    lists = [
        (c, "lost", f"Lost results: {c['score']} (a result in BASE, none in NEW)")
        for c in scores
    ]
    for c in pair[STAGE]:
        regressed = f"Regressions: {c['score']} (pass {ARROW} retrieval or generation)"
        lists += [
            (c, "regressions", regressed),
            (c, "fixes", f"Fixes: {c['score']} (now pass)"),
        ]
    for c in pair[EXTRACTION]:
        for key in (
            "lost_membership",
            "gained_membership",
            "lost_order",
            "gained_order",
        ):
            title = key.replace("_", " ").capitalize()
            lists.append((c, key, f"{title}: {c['score']}"))
    rest = [_changes(c, key, title, show, option) for c, key, title in lists]
    rest += [_ids(c, show, option) for c in pair[STAGE]]
    rest += [_one_run(scores, show, option), _logs(pair)]
    return first, rest, notes


def _pairs(scores: list[dict[str, Any]]) -> Table:
    rows = [
        [
            c["score"],
            str(c["pairs"]),
            str(
                c["pairs"]
                - sum(c["transitions"][i][i] for i in range(len(c["states"])))
            ),
            str(c["worse"]),
            str(c["better"]),
            lost_text(c["lost_from"]),
            str(len(c["only_in_base"])),
            str(len(c["only_in_new"])),
        ]
        for c in scores
    ]
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


def _runs(scores: list[dict[str, Any]]) -> Table:
    rows = []
    for c in scores:
        for side in ("BASE", "NEW"):
            runs = c[f"{side.lower()}_runs"]
            why = [Undiagnosed(**item) for item in runs["not_diagnosed"]]
            counts = [runs["runs"], runs["diagnosed"], runs["runs"] - runs["diagnosed"]]
            rows.append([c["score"], side, *map(str, counts), why_text(why) or "none"])
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


def _transitions(c: dict[str, Any]) -> Table:
    states, counts = c["states"], c["transitions"]
    totals = [sum(row[j] for row in counts) for j in range(len(states))]
    rows = [
        [s, *map(str, row), str(sum(row))]
        for s, row in zip(states, counts, strict=True)
    ]
    rows.append(["total", *map(str, totals), str(sum(totals))])
    # Briefly, without the states no pair is in on either side.
    held = [i for i in range(len(states)) if totals[i] or sum(counts[i])]
    return Table(
        key=f"transitions-{c['score']}",
        title=f"Transitions: {c['score']}",
        caption="Pairs by state in BASE (rows) and in NEW (columns); the "
        f"diagonal is unchanged. {_STATES[c['kind']]}",
        columns=["BASE \\ NEW", *states, "total"],
        rows=rows,
        brief=["BASE \\ NEW", *(states[i] for i in held), "total"],
        brief_rows=[*held, len(states)],
    )


def _tests(tests: list[tuple[str, dict[str, Any]]], alpha: float) -> Table:
    unit = "samples" if any(t["test"] == SIGN for _, t in tests) else "pairs"
    rows = [
        [score, t["outcome"], "sign" if t["test"] == SIGN else "McNemar"]
        + [str(t[k]) for k in ("pairs", "samples", "base_count", "new_count")]
        + [str(t[k]) for k in ("b", "c", "fell", "rose")]
        + [_p(t["p_value"]), _pp(t["difference"]), t["verdict"]]
        for score, t in tests
    ]
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
        "(c - b) / pairs, in percentage points. With fewer than "
        f"{discordant_needed(alpha)} changed {unit} no split can reach alpha = "
        f"{alpha}: too few to tell.",
        columns=_TESTS,
        rows=rows,
        # One epoch: samples, fell and rose say again pairs, b and c.
        brief=None
        if unit == "samples"
        else [c for c in _TESTS if c not in ("test", "samples", "fell", "rose")],
    )


def _figures(figures: list[tuple[str, dict[str, Any]]]) -> Table:
    def mean(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    rows = [
        [
            score,
            figure_name(f["figure"]),
            str(f["pairs"]),
            str(f["samples"]),
            mean(f["base_mean"]),
            mean(f["new_mean"]),
            _pp(f["difference"]),
            str(f["fell"]),
            str(f["rose"]),
            _p(f["p_value"]),
            f["verdict"],
        ]
        for score, f in figures
    ]
    return Table(
        key="figures",
        constant=["score"],
        title="Context recall and precision",
        caption="Over the pairs where both runs have the figure (recall: "
        "something required and a context; precision: a context holding an "
        "ID; {step}_recall: a pipeline step's recall, where both runs have "
        "that step), labelled or not. BASE and NEW: the figure's mean over "
        "those pairs; change: NEW minus BASE, in percentage points. fell and "
        "rose count the samples whose mean over their paired epochs fell or "
        "rose; p is the exact sign test of them (the sample as the unit); too "
        "few to tell as under Significance. Gated only with --gate.",
        columns=_FIGURES,
        rows=rows,
        # One epoch: a pair is a sample.
        brief=None
        if any(f["samples"] != f["pairs"] for _, f in figures)
        else [c for c in _FIGURES if c != "samples"],
    )


def _cut(
    rows: Iterable[list[str]], total: int, what: str, show: int, option: str
) -> tuple[list[list[str]], str, str]:
    """The first `show` rows (only those made), the count, and the cut."""
    count = f"{total} {what}."
    if total <= show:
        return list(rows), count, ""
    cut = f"{count} The first {show} are shown ({option}); --json lists all."
    return list(islice(rows, show)), cut, cut


def _sample(sample_id: int | str) -> str:
    """A sample id quoted as an ID is, and a string of digits quoted, so
    the string "7" and the integer 7 differ."""
    if isinstance(sample_id, int):
        return str(sample_id)
    if sample_id.isascii() and sample_id.isdigit():
        return f'"{sample_id}"'
    return show_id(sample_id)


def _ids_text(ids: list[str] | None) -> str:
    return "" if ids is None else list_ids(ids) if ids else "none"


def _changes(c: dict[str, Any], key: str, title: str, show: int, option: str) -> Table:
    stage = c["kind"] == STAGE
    changes = c[key if key != "lost" else "lost_runs"]

    def rows() -> Iterator[list[str]]:
        for change in changes:
            base, new = change["base"], change["new"]
            cells = [_sample(change["id"]), str(change["epoch"])]
            cells.append(f"{base['state']} {ARROW} {new['state']}")
            if stage:
                cells += [_ids_text(base["missing"]), _ids_text(new["missing"])]
            yield [*cells, base["explanation"] or "", new["explanation"] or ""]

    shown, caption, cut = _cut(rows(), len(changes), "pairs", show, option)
    brief = ["sample", "epoch", f"BASE {ARROW} NEW"]
    brief += ["missing in BASE", "missing in NEW"] if stage else []
    return Table(
        key=f"{key.replace('_', '-')}-{c['score']}",
        title=title,
        caption=caption,
        columns=[*brief, "BASE explanation", "NEW explanation"],
        rows=shown,
        brief=brief,
        cut=cut,
    )


def _ids(c: dict[str, Any], show: int, option: str) -> Table:
    missing = {i["id"]: i["count"] for i in c["newly_missing"]}
    found = {i["id"]: i["count"] for i in c["newly_found"]}
    ordered = sorted(
        missing.keys() | found.keys(),
        key=lambda i: (-missing.get(i, 0), -found.get(i, 0), i),
    )
    rows = ([show_id(i), str(missing.get(i, 0)), str(found.get(i, 0))] for i in ordered)
    shown, count, _ = _cut(rows, len(ordered), "document IDs changed", show, option)
    return Table(
        key=f"ids-{c['score']}",
        title=f"Document IDs newly missing and newly found: {c['score']}",
        caption=f"Over the {c['ids_compared']} pairs diagnosed retrieval, "
        "generation or pass in both runs. newly missing: pairs whose NEW run "
        "missed the required ID and whose BASE run did not; newly found: the "
        f"reverse. {count}",
        columns=["document", "newly missing", "newly found"],
        rows=shown,
        detail=True,
    )


def _one_run(scores: list[dict[str, Any]], show: int, option: str) -> Table:
    lists = [
        (c["score"], side, c[f"only_in_{side.lower()}"])
        for c in scores
        for side in ("BASE", "NEW")
    ]
    rows = (
        [score, side, _sample(ref["id"]), str(ref["epoch"]), Path(ref["log"]).name]
        for score, side, refs in lists
        for ref in refs
    )
    total = sum(len(refs) for _, _, refs in lists)
    shown, count, cut = _cut(
        rows, total, "sample-epochs are in one run only", show, option
    )
    return Table(
        key="one-run",
        constant=["score"],
        title="Samples in one run only",
        caption=f"{count} They are not paired, so not compared, but counted: a "
        "sample added or dropped, an epoch run in one run only, or a part of a "
        "split run not given.",
        columns=["score", "only in", "sample", "epoch", "log"],
        rows=shown,
        cut=cut,
    )


def _logs(pair: dict[str, Any]) -> Table:
    sides = {path: "BASE" for path in pair["base"]["logs"]}
    sides |= {path: "NEW" for path in pair["new"]["logs"]}
    rows = [
        [
            sides.get(log["path"], ""),
            Path(log["path"]).name,
            ""
            if log["part"] is None
            else f"{log['part']['index']} of {log['part']['count']}",
            log["status"],
            str(log["epochs"]),
            str(log["samples"]),
            str(log["samples_without_tracegrade_score"]),
        ]
        for log in pair["logs"]
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


def _evals(comparison: Comparison) -> Table:
    paired = {
        (side, pair[side.lower()]["key"]): pair["name"]
        for pair in comparison.pairs
        for side in ("BASE", "NEW")
    }
    infos = [
        (side, e) for side in ("BASE", "NEW") for e in comparison[side.lower()]["evals"]
    ]
    rows = [
        [
            side,
            e["name"],
            e["task"],
            e["model"],
            e["status"],
            str(e["epochs"]),
            paired.get((side, e["key"]), "not paired"),
        ]
        for side, e in infos
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
            comparison["only_in_base"]
            or comparison["only_in_new"]
            or any(e["status"] != "success" for _, e in infos)
        ),
    )


def _thresholds(checks: list[dict[str, Any]]) -> Table:
    """The `--fail-under` checks, each against a NEW eval's score."""
    return Table(
        key="thresholds",
        title="Thresholds (--fail-under)",
        caption=f"Each value is {OVER_ALL_RUNS}. The gate fails when a value is "
        "under its threshold.",
        columns=[
            "eval",
            "task",
            "model",
            "score",
            "metric",
            "runs",
            "value",
            "threshold",
            "met",
        ],
        rows=[
            [
                c["eval"],
                c["task"],
                c["model"],
                c["score"],
                c["metric"],
                str(c["runs"]),
                "none" if c["value"] is None else f"{c['value']:.4f}",
                f"{c['threshold']:g}",
                "yes" if c["met"] else "NO",
            ]
            for c in checks
        ],
    )


def render_html(comparison: Comparison, show: int) -> str:
    """The page as one self-contained HTML file (plotly.js inline), with a
    transition heatmap per score before each pair's tables."""
    import plotly.graph_objects as go  # type: ignore[import-untyped]
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    from ..report.html import LAYOUT, chart_html, chart_title, plot_text
    from ..report.page import page_html

    page = comparison_page(comparison, show, "--html-show")
    charts: list[list[str]] = [[] for _ in page.sections]
    for index, pair in enumerate(comparison.pairs):
        for c in _scores(pair):
            states, counts = c["states"], c["transitions"]
            hover = [
                [
                    f"BASE {plot_text(base)} {ARROW} NEW {plot_text(new)}: "
                    f"{count} pair{'s' * (count != 1)}"
                    for new, count in zip(states, row, strict=True)
                ]
                for base, row in zip(states, counts, strict=True)
            ]
            figure = go.Figure(
                go.Heatmap(
                    z=counts,
                    x=states,
                    y=states,
                    text=[[str(count) for count in row] for row in counts],
                    texttemplate="%{text}",
                    customdata=hover,
                    hovertemplate="%{customdata}<extra></extra>",
                    colorscale="Blues",
                    zmin=0,
                    showscale=False,
                )
            )
            subtitle = (
                f"{c['pairs']} pairs; rows BASE, columns NEW; the diagonal is unchanged"
            )
            figure.update_layout(
                LAYOUT,
                title=chart_title(f"Transitions: {plot_text(c['score'])}", subtitle),
                xaxis={"type": "category", "title": "NEW", "side": "bottom"},
                # The first state on top, as in the table.
                yaxis={"type": "category", "title": "BASE", "autorange": "reversed"},
            )
            key = f"transitions-{index + 1}-{c['score']}"
            charts[index + 1].append(chart_html(figure, key))
    return page_html(page, charts, get_plotlyjs())
