"""A `Report` as one self-contained HTML file with plotly charts, plotly.js
inline so that it opens offline; the page is the terminal's `report_page`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from ..schema import STAGES
from ..scorers.explain import show_id
from .aggregate import ExtractionSummary, Report, StageSummary
from .page import page_html
from .runs import Undiagnosed, why_text
from .shares import Proportion
from .tables import eval_label, id_count_title, id_rankings, report_page

STAGE_COLOURS = {
    "retrieval": "#d62728",
    "generation": "#ff7f0e",
    "pass": "#2ca02c",
    "unresolved": "#9a9a9a",
}
NOT_DIAGNOSED_COLOUR = "#3b3b3b"
"""Runs with no stage: dark, apart from every stage's colour."""
CRITERION_COLOURS = {"membership": "#1f77b4", "order": "#17becf", "gap": "#9467bd"}
ID_COLOURS = {"dropped": "#8c564b", "invented": "#e377c2"}
_WHOLE_TICKS_UP_TO = 10
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}
LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "height": 420,
    "margin": {"l": 60, "r": 20, "t": 100, "b": 80},
    "bargap": 0.35,
    "legend": {"orientation": "h", "y": -0.2},
}


def plot_text(text: str) -> str:
    """`text` safe in plotly's labels, which read a little HTML (and decode
    no `&quot;`, so quotes stay)."""
    return html.escape(text, quote=False)


def group_label(summary: StageSummary | ExtractionSummary) -> str:
    return (
        f"{plot_text(eval_label(summary))} {plot_text(summary.model)}"
        f"<br>{plot_text(summary.task)}"
    )


def chart_title(text: str, subtitle: str) -> dict[str, Any]:
    """A chart title and subtitle, left-aligned and below the top edge,
    clear of the mode bar."""
    return {"text": text, "subtitle": {"text": subtitle}, "x": 0.02, "y": 0.93}


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _error_bars(proportions: Sequence[Proportion]) -> dict[str, Any]:
    """Asymmetric error bars from the Wilson bounds, in percent."""
    above = []
    below = []
    for p in proportions:
        if p.share is None or p.low is None or p.high is None:
            above.append(0.0)
            below.append(0.0)
        else:
            above.append(100 * (p.high - p.share))
            below.append(100 * (p.share - p.low))
    return {"type": "data", "symmetric": False, "array": above, "arrayminus": below}


def _interval_text(p: Proportion) -> str:
    if p.share is None or p.low is None or p.high is None:
        return "no runs"
    return (
        f"{p.count} of {p.total}: {100 * p.share:.1f}% "
        f"(95% CI {100 * p.low:.1f}% to {100 * p.high:.1f}%)"
    )


def _of_all(count: int, runs: int) -> float | None:
    return 100 * count / runs if runs else None


def _left_out(runs: int, undiagnosed: list[Undiagnosed]) -> str:
    count = sum(item.count for item in undiagnosed)
    if not count:
        return "none"
    return f"{count} of {runs} runs: {plot_text(why_text(undiagnosed))}"


def stages_figure(summaries: Sequence[StageSummary]) -> Any:
    """Stacked shares of every run, one bar per eval: a segment per stage
    and one for the runs not diagnosed, so an eval that lost half its runs
    to errors is half a bar of stages, never a full one."""
    labels = [group_label(s) for s in summaries]
    figure = go.Figure()
    for stage in STAGES:
        proportions = [s.stages[stage] for s in summaries]
        figure.add_trace(
            go.Bar(
                name=stage,
                x=labels,
                y=[_of_all(s.stages[stage].count, s.runs) for s in summaries],
                text=[str(p.count) for p in proportions],
                textposition="inside",
                textangle=0,
                customdata=[
                    f"{s.stages[stage].count} of {s.runs} runs; of the "
                    f"diagnosed, {_interval_text(s.stages[stage])}"
                    for s in summaries
                ],
                hovertemplate=f"{stage}: %{{customdata}}<extra></extra>",
                marker_color=STAGE_COLOURS[stage],
            )
        )
    figure.add_trace(
        go.Bar(
            name="not diagnosed",
            x=labels,
            y=[_of_all(s.runs - s.diagnosed, s.runs) for s in summaries],
            text=[str(s.runs - s.diagnosed) for s in summaries],
            textposition="inside",
            textangle=0,
            customdata=[_left_out(s.runs, s.not_diagnosed) for s in summaries],
            hovertemplate="not diagnosed: %{customdata}<extra></extra>",
            marker_color=NOT_DIAGNOSED_COLOUR,
        )
    )
    figure.update_layout(
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
    return figure


@dataclass(frozen=True)
class _IdChart:
    """What differs between the charts of the three ID counts."""

    colour: str
    subtitle: str
    axis_titles: tuple[str, str]
    # Formatted with the ID's `count` and what it is counted `of`.
    hover: str


_ID_CHARTS = {
    "missed": _IdChart(
        # The colour of retrieval, the stage a miss causes.
        STAGE_COLOURS["retrieval"],
        "diagnosed runs whose context lacked the required ID",
        ("document ID", "diagnosed runs missing it"),
        "missed in {count} of {of} runs that required it",
    ),
    "dropped": _IdChart(
        ID_COLOURS["dropped"],
        "itemised answers that left out the source ID",
        ("ID", "answers dropping it"),
        "dropped by {count} of {of} itemised answers whose source held it",
    ),
    "invented": _IdChart(
        ID_COLOURS["invented"],
        "itemised answers holding an ID their source did not",
        ("ID", "answers inventing it"),
        "invented by {count} of {of} itemised answers",
    ),
}


def id_figure(report: Report, kind: str) -> Any:
    """Counts of the most often `kind` IDs (missed, dropped or invented),
    one bar series per task and model."""
    chart = _ID_CHARTS[kind]
    rankings = id_rankings(report, kind)
    figure = go.Figure()
    for ranking in rankings:
        name = f"{eval_label(ranking.summary)} {ranking.summary.model}"
        counts = [ranked.count for ranked in ranking.ids]
        figure.add_trace(
            go.Bar(
                name=plot_text(name),
                x=[plot_text(show_id(ranked.id)) for ranked in ranking.ids],
                y=counts,
                text=[str(count) for count in counts],
                textposition="outside",
                customdata=[
                    chart.hover.format(count=ranked.count, of=ranked.of)
                    for ranked in ranking.ids
                ],
                hovertemplate="%{x}: %{customdata}<extra></extra>",
                # One series: the figure's own colour; several: plotly's.
                marker_color=chart.colour if len(rankings) == 1 else None,
            )
        )
    figure.update_layout(
        LAYOUT,
        title=chart_title(id_count_title(kind, report.top), chart.subtitle),
        barmode="group",
        showlegend=len(rankings) > 1,
        # IDs such as "01" and "1" are different IDs, not numbers.
        xaxis={"type": "category", "title": chart.axis_titles[0]},
        yaxis={"title": chart.axis_titles[1]},
    )
    most = max((r.count for ranking in rankings for r in ranking.ids), default=0)
    if most <= _WHOLE_TICKS_UP_TO:
        # Counts are whole: no tick at 0.5 runs when the bars are short.
        figure.update_yaxes(tick0=0, dtick=1)
    return figure


def extraction_figure(summaries: Sequence[ExtractionSummary]) -> Any:
    """Membership and order accuracy, and their gap, with Wilson intervals."""
    labels = [group_label(s) for s in summaries]
    figure = go.Figure()
    criteria: list[tuple[str, list[Proportion]]] = [
        ("membership", [s.membership for s in summaries]),
        ("order", [s.order for s in summaries]),
        ("gap", [s.gap for s in summaries]),
    ]
    for name, proportions in criteria:
        figure.add_trace(
            go.Bar(
                name=name,
                x=labels,
                y=[_percent(p.share) for p in proportions],
                error_y=_error_bars(proportions),
                customdata=[_interval_text(p) for p in proportions],
                hovertemplate=f"{name}: %{{customdata}}<extra></extra>",
                marker_color=CRITERION_COLOURS[name],
            )
        )
    figure.add_trace(
        go.Bar(
            name="not graded (of all runs)",
            x=labels,
            y=[_of_all(s.runs - s.graded, s.runs) for s in summaries],
            customdata=[_left_out(s.runs, s.not_graded) for s in summaries],
            hovertemplate="not graded: %{customdata}<extra></extra>",
            marker_color=NOT_DIAGNOSED_COLOUR,
        )
    )
    figure.update_layout(
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
    return figure


def chart_html(figure: Any, key: str) -> str:
    """A figure as a chart section; the page's head holds plotly.js."""
    div: str = figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        config=_PLOT_CONFIG,
        div_id=f"chart-{key}",
    )
    return f'<section class="chart">{div}</section>'


def render_html(report: Report) -> str:
    """The whole page: charts first, then every table of the terminal report."""
    charts: list[str] = []
    if report.stage_diagnosis:
        charts.append(chart_html(stages_figure(report.stage_diagnosis), "stages"))
        # Like the tables, an ID chart with no IDs to show is left out.
        if any(ranking.ids for ranking in id_rankings(report, "missed")):
            charts.append(chart_html(id_figure(report, "missed"), "missed"))
    if report.ordered_extraction:
        extraction = report.ordered_extraction
        charts.append(chart_html(extraction_figure(extraction), "extraction"))
        # Like the tables, an ID chart with no IDs to show is left out.
        for kind in ("dropped", "invented"):
            if any(ranking.ids for ranking in id_rankings(report, kind)):
                charts.append(chart_html(id_figure(report, kind), kind))
    return page_html(report_page(report), [charts], get_plotlyjs())


__all__ = [
    "LAYOUT",
    "chart_html",
    "chart_title",
    "extraction_figure",
    "id_figure",
    "render_html",
    "stages_figure",
]
