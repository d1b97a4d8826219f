"""`--html`: the page with plotly charts, plotly.js inline (opens offline)."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from ..schema import STAGES
from ..scorers.explain import show_id
from .aggregate import Proportion, Report
from .page import page_html
from .runs import Undiagnosed, why_text
from .tables import ID_TABLES, TABLES, Summary, eval_label, ranked_ids, report_page

STAGE_COLOURS = {
    "retrieval": "#d62728",
    "generation": "#ff7f0e",
    "pass": "#2ca02c",
    "unresolved": "#9a9a9a",
    "not diagnosed": "#3b3b3b",
}
CRITERION_COLOURS = {"membership": "#1f77b4", "order": "#17becf", "gap": "#9467bd"}
# Per kind: colour, subtitle, axis titles, hover text of (count) of (of).
_ID_CHARTS = {
    "missed": (
        STAGE_COLOURS["retrieval"],
        "diagnosed runs whose context lacked the required ID",
        ("document ID", "diagnosed runs missing it"),
        "missed in {} of {} runs that required it",
    ),
    "dropped": (
        "#8c564b",
        "itemised answers that left out the source ID",
        ("ID", "answers dropping it"),
        "dropped by {} of {} itemised answers whose source held it",
    ),
    "invented": (
        "#e377c2",
        "itemised answers holding an ID their source did not",
        ("ID", "answers inventing it"),
        "invented by {} of {} itemised answers",
    ),
}
LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "height": 420,
    "margin": {"l": 60, "r": 20, "t": 100, "b": 80},
    "bargap": 0.35,
    "legend": {"orientation": "h", "y": -0.2},
}


def plot_text(text: str) -> str:
    """`text` safe in plotly's labels, which read a little HTML."""
    return html.escape(text, quote=False)


def chart_title(text: str, subtitle: str) -> dict[str, Any]:
    """Left-aligned and below the top edge, clear of the mode bar."""
    return {"text": text, "subtitle": {"text": subtitle}, "x": 0.02, "y": 0.93}


def chart_html(figure: Any, key: str) -> str:
    """A figure as a chart section; the page's head holds plotly.js."""
    div: str = figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        config={"displaylogo": False, "responsive": True},
        div_id=f"chart-{key}",
    )
    return f'<section class="chart">{div}</section>'


def _label(s: Summary) -> str:
    return f"{plot_text(eval_label(s))} {plot_text(s.model)}<br>{plot_text(s.task)}"


def _of_all(count: int, runs: int) -> float | None:
    return 100 * count / runs if runs else None


def _interval(p: Proportion) -> str:
    if p.share is None or p.low is None or p.high is None:
        return "no runs"
    return (
        f"{p.count} of {p.total}: {100 * p.share:.1f}% "
        f"(95% CI {100 * p.low:.1f}% to {100 * p.high:.1f}%)"
    )


def _left_out(runs: int, undiagnosed: list[Undiagnosed]) -> str:
    count = sum(item.count for item in undiagnosed)
    if not count:
        return "none"
    return f"{count} of {runs} runs: {plot_text(why_text(undiagnosed))}"


def _stages_figure(report: Report) -> Any:
    rows = report.stage_diagnosis
    figure = go.Figure()
    for name, colour in STAGE_COLOURS.items():
        if name in STAGES:
            counts = [s.stages[name].count for s in rows]
            hover = [
                f"{s.stages[name].count} of {s.runs} runs; of the diagnosed, "
                + _interval(s.stages[name])
                for s in rows
            ]
        else:
            counts = [s.runs - s.diagnosed for s in rows]
            hover = [_left_out(s.runs, s.not_diagnosed) for s in rows]
        figure.add_bar(
            name=name,
            x=[_label(s) for s in rows],
            y=[_of_all(n, s.runs) for n, s in zip(counts, rows, strict=True)],
            text=[str(n) for n in counts],
            textposition="inside",
            textangle=0,
            customdata=hover,
            hovertemplate=f"{name}: %{{customdata}}<extra></extra>",
            marker_color=colour,
        )
    return figure.update_layout(
        LAYOUT,
        title=chart_title(
            "Stages per task and model",
            "share of every run; not diagnosed: runs with no stage (sample "
            "errors, data errors, runs never run); bar labels are run counts",
        ),
        barmode="stack",
        # Small segments keep a readable count rather than shrinking it away.
        uniformtext={"minsize": 11, "mode": "show"},
        yaxis={"title": "share of all runs (%)", "range": [0, 100]},
        xaxis={"type": "category"},
    )


def _extraction_figure(report: Report) -> Any:
    rows = report.ordered_extraction
    x = [_label(s) for s in rows]
    figure = go.Figure()
    for name, colour in CRITERION_COLOURS.items():
        shares: list[Proportion] = [getattr(s, name) for s in rows]
        up = [100 * ((p.high or 0.0) - (p.share or 0.0)) for p in shares]
        down = [100 * ((p.share or 0.0) - (p.low or 0.0)) for p in shares]
        bars = {"type": "data", "symmetric": False, "array": up, "arrayminus": down}
        figure.add_bar(
            name=name,
            x=x,
            y=[None if p.share is None else 100 * p.share for p in shares],
            error_y=bars,
            customdata=[_interval(p) for p in shares],
            hovertemplate=f"{name}: %{{customdata}}<extra></extra>",
            marker_color=colour,
        )
    figure.add_bar(
        name="not graded (of all runs)",
        x=x,
        y=[_of_all(s.runs - s.graded, s.runs) for s in rows],
        customdata=[_left_out(s.runs, s.not_graded) for s in rows],
        hovertemplate="not graded: %{customdata}<extra></extra>",
        marker_color=STAGE_COLOURS["not diagnosed"],
    )
    return figure.update_layout(
        LAYOUT,
        title=chart_title(
            "Membership versus order accuracy",
            "of graded runs; gap = membership minus order; error bars: 95% "
            "Wilson intervals; not graded: runs with no grade, of all runs",
        ),
        barmode="group",
        yaxis={"title": "share of graded runs (%)", "range": [0, 100]},
        xaxis={"type": "category"},
    )


def _id_figure(report: Report, kind: str) -> Any:
    colour, subtitle, (x_title, y_title), hover = _ID_CHARTS[kind]
    rankings = ranked_ids(report, kind)
    figure = go.Figure()
    for s, ids, _ in rankings:
        figure.add_bar(
            name=plot_text(f"{eval_label(s)} {s.model}"),
            x=[plot_text(show_id(i)) for i, _, _ in ids],
            y=[count for _, count, _ in ids],
            text=[str(count) for _, count, _ in ids],
            textposition="outside",
            customdata=[hover.format(count, of) for _, count, of in ids],
            hovertemplate="%{x}: %{customdata}<extra></extra>",
            # One series: the figure's own colour; several: plotly's.
            marker_color=colour if len(rankings) == 1 else None,
        )
    figure.update_layout(
        LAYOUT,
        title=chart_title(TABLES[kind][0].format(top=report.top), subtitle),
        barmode="group",
        showlegend=len(rankings) > 1,
        # IDs such as "01" and "1" are different IDs, not numbers.
        xaxis={"type": "category", "title": x_title},
        yaxis={"title": y_title},
    )
    if max((n for _, ids, _ in rankings for _, n, _ in ids), default=0) <= 10:
        # Counts are whole: no tick at 0.5 runs when the bars are short.
        figure.update_yaxes(tick0=0, dtick=1)
    return figure


def render_html(report: Report) -> str:
    """The whole page: charts first, then every table of the terminal's."""
    charts = []
    for key in ("stages", "missed", "extraction", "dropped", "invented"):
        if key == "stages" and report.stage_diagnosis:
            charts.append(chart_html(_stages_figure(report), key))
        elif key == "extraction" and report.ordered_extraction:
            charts.append(chart_html(_extraction_figure(report), key))
        # Like the tables, an ID chart with no IDs to show is left out.
        elif key in ID_TABLES and any(ids for _, ids, _ in ranked_ids(report, key)):
            charts.append(chart_html(_id_figure(report, key), key))
    return page_html(report_page(report), [charts], get_plotlyjs())
