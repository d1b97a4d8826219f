"""The comparison as one report `Page`; long lists read only as far as shown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

from ..report.page import Page, Section, Table
from ..report.runs import Undiagnosed, plural, why_text
from ..report.thresholds import OVER_ALL_RUNS
from ..scorers.explain import list_ids, show_id
from .build import SIDES, Comparison, lost_entries
from .pairing import EXTRACTION, LISTS, STAGE, lost_text
from .stats import SIGN, discordant_needed, format_p

ARROW = "\u2192"
_LEGEND = {
    "summary": "pairs: sample-epochs in both runs. changed: pairs whose state "
    "changed. worse: stage regressions (pass to retrieval or generation), or "
    "extraction pairs that lost membership or order; better: the reverse. "
    "lost: runs with a result in BASE and none in NEW, by their states; the "
    "gate counts them.",
    "runs": "runs: every sample-epoch under the score. diagnosed: runs with a "
    "result (a stage, a grade); the rest, and why. The tests weigh only pairs "
    "with a result on both sides.",
    STAGE: "States: the stage; data error: the sample's data is at fault; no "
    "score: the sample errored before scoring, or its eval stopped first.",
    EXTRACTION: "States: pass: every ID kept, in order; order fail: order "
    "lost; membership fail: an ID dropped, invented or repeated, or the "
    "answer unreadable; data error; no score.",
    "tests": "Over the pairs with a result in both runs. b: pairs with the "
    "outcome in BASE only; c: in NEW only. p: the exact McNemar test (one "
    "epoch), or the exact sign test of the samples whose share of epochs "
    "with the outcome fell or rose. change: (c - b) / pairs, in percentage "
    "points.",
    "figures": "Over the pairs where both runs have the figure ({step}_recall: "
    "a pipeline step's). BASE and NEW: its mean; change: NEW minus BASE, in "
    "percentage points; fell and rose: the samples whose mean fell or rose; "
    "p: the exact sign test of them. Gated only with --gate.",
    "one-run": "Not paired, so not compared, but counted.",
    "ids": "newly missing: pairs whose NEW run missed the required ID and "
    "whose BASE run did not; newly found: the reverse.",
    "logs": "samples: sample-epochs in the log. no score: samples with no "
    "tracegrade score. part: the log's part of a run `tracegrade score` split.",
    "evals": "An eval is a log, the newest of a retried eval, or the parts of "
    "a split run; evals pair by task and model.",
}
# What a list of changed pairs holds, after its title.
_ABOUT = {
    "lost_runs": " (a result in BASE, none in NEW)",
    "regressions": f" (pass {ARROW} retrieval or generation)",
    "fixes": " (now pass)",
}


def verdict_lines(comparison: Comparison) -> list[str]:
    """The gate's verdict, then each thing that failed it or was checked."""
    verdict = comparison["verdict"]
    asked = ", ".join(verdict["asked"])
    head = "Gate failed" if verdict["failed"] else "Gate passed"
    head = f"{head} ({asked})" if asked else "No gate asked"
    return [head, *verdict["failed_on"], *verdict["checked"]]


def all_warnings(comparison: Comparison) -> list[str]:
    """The comparison's warnings, then each pair's (named, when several)."""
    several = len(comparison["pairs"]) > 1
    return [*comparison["warnings"]] + [
        f"{pair['name']}: {warning}" if several else warning
        for pair in comparison["pairs"]
        for warning in pair["warnings"]
    ]


def comparison_page(comparison: Comparison, show: int, option: str = "--show") -> Page:
    """The verdict, what was compared, a section per pair of evals (lists cut
    to `show` rows, set by `option`), then the evals."""
    head, *reasons = verdict_lines(comparison)
    pairs = comparison["pairs"]
    verdict, gate = comparison["verdict"], comparison["gate"]
    sections = [Section(None, [_thresholds(comparison["thresholds"])])]
    for index, pair in enumerate(pairs, start=1):
        first, rest, notes = _pair_tables(pair, comparison["alpha"], show, option)
        name = pair["name"] if len(pairs) > 1 else None
        if name:
            notes = [f"{name}, {note}" for note in notes]
            first, rest = ([_named(t, index, name) for t in ts] for ts in (first, rest))
        sections.append(Section(name, first, notes, rest))
    sections.append(Section(None, [_evals(comparison)]))
    regressions = plural(gate["regressions"], "regression")
    if gate["regressed"]:
        regressions += f" ({'; '.join(gate['regressed'])})"
    gated = "--fail-on-regression" in verdict["asked"]
    regressions += "." if gated else _would_gate(gate)
    sides = [
        f"{Path(side['path']).name} ({plural(len(side['evals']), 'eval')})"
        for side in (comparison["base"], comparison["new"])
    ]
    compared = sum(c["pairs"] for pair in pairs for c in _scores(pair))
    summary = (
        f"BASE {sides[0]} against NEW {sides[1]}; {plural(len(pairs), 'pair')} of "
        f"evals, {compared} pairs of sample-epochs (by sample id and epoch); "
        f"alpha = {comparison['alpha']}."
    )
    failed = verdict["failed"] if verdict["asked"] else None
    summaries = [summary, f"Regressions: {regressions}"]
    warnings = all_warnings(comparison)
    return Page(
        "tracegrade compare", head, reasons, failed, summaries, [], warnings, sections
    )


def _named(table: Table, index: int, name: str) -> Table:
    return replace(table, key=f"{index}-{table.key}", title=f"{name}: {table.title}")


def _would_gate(gate: dict[str, Any]) -> str:
    if gate["significant"]:
        text = f"; significantly worse at alpha = {gate['alpha']}: "
        text += "; ".join(gate["significant"])
    else:
        text = f"; none significant at alpha = {gate['alpha']} "
        text += f"(tested: {'; '.join(gate['outcomes'])})"
    lost = lost_entries(gate)
    counted = "" if gate["lost_gated"] else ", not gated (--allow-lost)"
    return text + (f"; {'; '.join(lost)}{counted}." if lost else "; no result lost.")


def _scores(pair: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pair[STAGE], *pair[EXTRACTION]]


def _pp(value: float | None, spec: str = "+.1f", unit: str = " pp") -> str:
    return "n/a" if value is None else f"{100 * value:{spec}}{unit}"


def _figure(name: str) -> str:
    return f"context {name}" if name in ("recall", "precision") else name


def _pair_tables(
    pair: dict[str, Any], alpha: float, show: int, option: str
) -> tuple[list[Table], list[Table], list[str]]:
    scores = _scores(pair)
    tests = [(c["score"], t) for c in scores for t in c["tests"]]
    figures = [(c["score"], f) for c in pair[STAGE] for f in c["figures"]]
    first = [_pairs(scores), _runs(scores), *map(_transitions, scores)]
    first += [_tests(tests, alpha), _figures(figures)]
    notes = [f"{score} {t['outcome']}: {t['note']}" for score, t in tests]
    notes += [f"{score} {_figure(f['figure'])}: {f['note']}" for score, f in figures]
    lists = [(c, "lost_runs") for c in scores]
    lists += [(c, key) for c in scores for key in LISTS[c["kind"]]]
    rest = [_changes(c, key, show, option) for c, key in lists]
    rest += [_ids(c, show, option) for c in pair[STAGE]]
    rest += [_one_run(scores, show, option), _logs(pair)]
    return [t for t in first if t.rows], [t for t in rest if t.rows], notes


def _pairs(scores: list[dict[str, Any]]) -> Table:
    rows = []
    for c in scores:
        changed = c["pairs"] - sum(row[i] for i, row in enumerate(c["transitions"]))
        moved = _row(c["pairs"], changed, c["worse"], c["better"])
        alone = _row(len(c["only_in_base"]), len(c["only_in_new"]))
        rows.append([c["score"], *moved, lost_text(c["lost_from"]), *alone])
    columns = ["score", "pairs", "changed", "worse", "better", "lost"]
    columns += ["only in BASE", "only in NEW"]
    legend = _LEGEND["summary"]
    return Table("summary", "Pairs", legend, columns, rows, constant=["score"])


def _row(*cells: Any) -> list[str]:
    return [str(cell) for cell in cells]


def _runs(scores: list[dict[str, Any]]) -> Table:
    rows = []
    for c, side in ((c, side) for c in scores for side in ("BASE", "NEW")):
        runs = c[f"{side.lower()}_runs"]
        why = why_text([Undiagnosed(**item) for item in runs["not_diagnosed"]])
        counts = _row(runs["runs"], runs["diagnosed"], runs["runs"] - runs["diagnosed"])
        rows.append([c["score"], side, *counts, why or "none"])
    columns = ["score", "side", "runs", "diagnosed", "not diagnosed", "why"]
    return Table("runs", "Runs", _LEGEND["runs"], columns, rows, constant=["score"])


def _transitions(c: dict[str, Any]) -> Table:
    states, counts = c["states"], c["transitions"]
    totals = [sum(column) for column in zip(*counts, strict=True)]
    rows = [[s, *_row(*r), str(sum(r))] for s, r in zip(states, counts, strict=True)]
    rows.append(["total", *_row(*totals), str(sum(totals))])
    # Briefly, without the states no pair is in on either side.
    held = [i for i in range(len(states)) if totals[i] or sum(counts[i])]
    kept = [*held, len(states)]
    caption = "Pairs by state in BASE (rows) and in NEW (columns); the diagonal "
    caption += f"is unchanged. {_LEGEND[c['kind']]}"
    columns = ["BASE \\ NEW", *states, "total"]
    brief = ["BASE \\ NEW", *(states[i] for i in held), "total"]
    key, title = f"transitions-{c['score']}", f"Transitions: {c['score']}"
    return Table(key, title, caption, columns, rows, brief=brief, brief_rows=kept)


def _tests(tests: list[tuple[str, dict[str, Any]]], alpha: float) -> Table:
    unit = "samples" if any(t["test"] == SIGN for _, t in tests) else "pairs"
    columns = ["score", "outcome", "test", "pairs", "samples", "BASE", "NEW"]
    columns += ["b", "c", "fell", "rose", "p", "change", "verdict"]
    counts = ("pairs", "samples", "base_count", "new_count", "b", "c", "fell", "rose")
    rows = [
        [score, t["outcome"], "sign" if t["test"] == SIGN else "McNemar"]
        + [str(t[key]) for key in counts]
        + [format_p(t["p_value"]), _pp(t["difference"]), t["verdict"]]
        for score, t in tests
    ]
    needed = discordant_needed(alpha)
    caption = f"{_LEGEND['tests']} With fewer than {needed} changed {unit} no split "
    caption += f"can reach alpha = {alpha}: too few to tell."
    # One epoch: samples, fell and rose say again pairs, b and c.
    brief = [c for c in columns if c not in ("test", "samples", "fell", "rose")]
    brief = columns if unit == "samples" else brief
    return Table(
        "tests", "Significance", caption, columns, rows, brief=brief, constant=["score"]
    )


def _figures(figures: list[tuple[str, dict[str, Any]]]) -> Table:
    columns = ["score", "figure", "pairs", "samples", "BASE", "NEW", "change"]
    columns += ["fell", "rose", "p", "verdict"]
    rows = []
    for score, f in figures:
        counts = _row(f["pairs"], f["samples"])
        means = [_pp(f[key], ".1f", "%") for key in ("base_mean", "new_mean")]
        means.append(_pp(f["difference"]))
        test = [*_row(f["fell"], f["rose"]), format_p(f["p_value"]), f["verdict"]]
        rows.append([score, _figure(f["figure"]), *counts, *means, *test])
    # One epoch: a pair is a sample.
    one = all(f["samples"] == f["pairs"] for _, f in figures)
    brief = [c for c in columns if c != "samples"] if one else None
    title, legend = "Context recall and precision", _LEGEND["figures"]
    return Table(
        "figures", title, legend, columns, rows, brief=brief, constant=["score"]
    )


_UNSCORED = "samples_without_tracegrade_score"
_IDS_CHANGED = ("document ID changed", "document IDs changed")
_IN_ONE_RUN = ("sample-epoch is in one run only", "sample-epochs are in one run only")


def _cut(
    rows: Iterable[list[str]], total: int, what: tuple[str, str], show: int, option: str
) -> tuple[list[list[str]], str, str]:
    """The first `show` rows (only those made), the count, and the cut."""
    count = f"{total} {what[total != 1]}."
    if total <= show:
        return list(rows), count, ""
    cut = f"{count} The first {show} are shown ({option}); --json lists all."
    return list(islice(rows, show)), cut, cut


def _sample(sample_id: int | str) -> str:
    # As an ID is quoted, and a string of digits too: "7" is not 7.
    if isinstance(sample_id, int):
        return str(sample_id)
    if sample_id.isascii() and sample_id.isdigit():
        return f'"{sample_id}"'
    return show_id(sample_id)


def _ids_text(ids: list[str] | None) -> str:
    return "" if ids is None else list_ids(ids) if ids else "none"


def _changes(c: dict[str, Any], key: str, show: int, option: str) -> Table:
    stage = c["kind"] == STAGE
    brief = ["sample", "epoch", f"BASE {ARROW} NEW"]
    brief += ["missing in BASE", "missing in NEW"] if stage else []

    def row(x: dict[str, Any]) -> list[str]:
        base, new = x["base"], x["new"]
        moved = f"{base['state']} {ARROW} {new['state']}"
        ids = [_ids_text(base["missing"]), _ids_text(new["missing"])] if stage else []
        said = [base["explanation"] or "", new["explanation"] or ""]
        return [_sample(x["id"]), str(x["epoch"]), moved, *ids, *said]

    shown, caption, cut = _cut(
        map(row, c[key]), len(c[key]), ("pair", "pairs"), show, option
    )
    name = "lost" if key == "lost_runs" else key.replace("_", "-")
    title = "Lost results" if key == "lost_runs" else key.replace("_", " ").capitalize()
    columns = [*brief, "BASE explanation", "NEW explanation"]
    title = f"{title}: {c['score']}{_ABOUT.get(key, '')}"
    return Table(
        f"{name}-{c['score']}", title, caption, columns, shown, brief=brief, cut=cut
    )


def _ids(c: dict[str, Any], show: int, option: str) -> Table:
    missing = Counter({i["id"]: i["count"] for i in c["newly_missing"]})
    found = Counter({i["id"]: i["count"] for i in c["newly_found"]})
    # Every ID in either (each counts at least 1), most newly missing first.
    ordered = sorted(missing | found, key=lambda i: (-missing[i], -found[i], i))
    rows = ([show_id(i), str(missing[i]), str(found[i])] for i in ordered)
    shown, count, _ = _cut(rows, len(ordered), _IDS_CHANGED, show, option)
    title = f"Document IDs newly missing and newly found: {c['score']}"
    caption = f"Over the {c['ids_compared']} pairs diagnosed retrieval, generation "
    caption += f"or pass in both runs. {_LEGEND['ids']} {count}"
    columns = ["document", "newly missing", "newly found"]
    return Table(f"ids-{c['score']}", title, caption, columns, shown, detail=True)


def _one_run(scores: list[dict[str, Any]], show: int, option: str) -> Table:
    lists = [(c, side, c[f"only_in_{side.lower()}"]) for c in scores for side in SIDES]
    rows = (
        [c["score"], side, _sample(x["id"]), str(x["epoch"]), Path(x["log"]).name]
        for c, side, listed in lists
        for x in listed
    )
    total = sum(len(listed) for _, _, listed in lists)
    shown, count, cut = _cut(rows, total, _IN_ONE_RUN, show, option)
    title, caption = "Samples in one run only", f"{count} {_LEGEND['one-run']}"
    columns = ["score", "only in", "sample", "epoch", "log"]
    return Table("one-run", title, caption, columns, shown, constant=["score"], cut=cut)


def _logs(pair: dict[str, Any]) -> Table:
    sides = {path: side for side in SIDES for path in pair[side.lower()]["logs"]}
    rows = []
    for log in pair["logs"]:
        part = "" if log["part"] is None else "{index} of {count}".format(**log["part"])
        counts = [log[key] for key in ("epochs", "samples", _UNSCORED)]
        side, name = sides.get(log["path"], ""), Path(log["path"]).name
        rows.append([side, name, part, log["status"], *_row(*counts)])
    columns = ["side", "log", "part", "status", "epochs", "samples", "no score"]
    return Table("logs", "Logs read", _LEGEND["logs"], columns, rows, detail=True)


def _evals(comparison: Comparison) -> Table:
    paired = {
        (side, pair[side.lower()]["key"]): pair["name"]
        for pair in comparison["pairs"]
        for side in SIDES
    }
    evals = [(side, e) for side in SIDES for e in comparison[side.lower()]["evals"]]
    keys = ("name", "task", "model", "status", "epochs")
    rows = [
        [side, *_row(*(e[k] for k in keys)), paired.get((side, e["key"]), "not paired")]
        for side, e in evals
    ]
    columns = ["side", "eval", "task", "model", "status", "epochs", "paired as"]
    # Shown without --verbose when an eval is not paired, or did not finish.
    shown = any(e["status"] != "success" for _, e in evals) or len(paired) < len(evals)
    return Table("evals", "Evals", _LEGEND["evals"], columns, rows, detail=not shown)


def _thresholds(checks: list[dict[str, Any]]) -> Table:
    columns = ["eval", "task", "model", "score", "metric", "runs", "value"]
    rows = [
        [c[key] for key in columns[:5]]
        + [str(c["runs"]), "none" if c["value"] is None else f"{c['value']:.4f}"]
        + [f"{c['threshold']:g}", "yes" if c["met"] else "NO"]
        for c in checks
    ]
    caption = f"Each value is {OVER_ALL_RUNS}. The gate fails under its threshold."
    title = "Thresholds (--fail-under)"
    return Table("thresholds", title, caption, [*columns, "threshold", "met"], rows)


def render_html(comparison: Comparison, show: int) -> str:
    """The page as one self-contained HTML file (plotly.js inline), with a
    transition heatmap per score before each pair's tables."""
    import plotly.graph_objects as go  # type: ignore[import-untyped]
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    from ..report.html import LAYOUT, chart_html, chart_title, plot_text
    from ..report.page import page_html

    page = comparison_page(comparison, show, "--html-show")
    charts: list[list[str]] = [[] for _ in page.sections]
    for index, pair in enumerate(comparison["pairs"], start=1):
        for c in _scores(pair):
            states, counts = c["states"], c["transitions"]
            heatmap = go.Heatmap(
                z=counts,
                x=states,
                y=states,
                text=[_row(*row) for row in counts],
                texttemplate="%{text}",
                customdata=[[plural(count, "pair") for count in row] for row in counts],
                hovertemplate=f"BASE %{{y}} {ARROW} NEW %{{x}}: %{{customdata}}"
                "<extra></extra>",
                colorscale="Blues",
                zmin=0,
                showscale=False,
            )
            title = f"Transitions: {plot_text(c['score'])}"
            about = f"{c['pairs']} pairs; rows BASE, columns NEW; the diagonal is "
            figure = go.Figure(heatmap).update_layout(
                LAYOUT,
                title=chart_title(title, f"{about}unchanged"),
                xaxis={"type": "category", "title": "NEW", "side": "bottom"},
                # The first state on top, as in the table.
                yaxis={"type": "category", "title": "BASE", "autorange": "reversed"},
            )
            key = f"transitions-{index}-{c['score']}"
            charts[index].append(chart_html(figure, key))
    return page_html(page, charts, get_plotlyjs())
