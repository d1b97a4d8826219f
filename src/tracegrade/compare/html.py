"""A `Comparison` as one self-contained HTML page: a transition heatmap per
score, then the tables, each list cut to `--html-show` rows so that a
browser opens it; plotly.js inline, so it opens offline.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from ..report.html import LAYOUT, chart_html, chart_title, plot_text
from ..report.page import page_html
from .build import Comparison
from .pairing import ScoreComparison
from .tables import ARROW, HTML_SHOW, comparison_page

# White for no pairs, darkening with the count.
_COLOURS = "Blues"


def transition_figure(compared: ScoreComparison) -> Any:
    """The transition matrix as a heatmap: BASE states down, NEW across,
    each cell labelled with its count of pairs."""
    counts = compared.transitions
    hover = [
        [
            f"BASE {plot_text(base)} {ARROW} NEW {plot_text(new)}: {count} "
            f"pair{'s' if count != 1 else ''}"
            for new, count in zip(compared.states, row, strict=True)
        ]
        for base, row in zip(compared.states, counts, strict=True)
    ]
    figure = go.Figure(
        go.Heatmap(
            z=counts,
            x=compared.states,
            y=compared.states,
            text=[[str(count) for count in row] for row in counts],
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=_COLOURS,
            zmin=0,
            showscale=False,
        )
    )
    figure.update_layout(
        LAYOUT,
        title=chart_title(
            f"Transitions: {plot_text(compared.score)}",
            f"{compared.pairs} pairs; rows BASE, columns NEW; "
            "the diagonal is unchanged",
        ),
        xaxis={"type": "category", "title": "NEW", "side": "bottom"},
        # The first state on top, as in the table.
        yaxis={"type": "category", "title": "BASE", "autorange": "reversed"},
    )
    return figure


def render_html(comparison: Comparison, show: int = HTML_SHOW) -> str:
    """The whole page: the gate's verdict and why, then per pair of evals
    its heatmaps, the tests' sentences and its tables (each list cut to
    `show` rows); then the evals."""
    page = comparison_page(comparison, show, "--html-show")
    charts: list[list[str]] = [[] for _ in page.sections]
    for index, pair in enumerate(comparison.pairs):
        charts[index + 1] = [
            chart_html(transition_figure(c), f"transitions-{index + 1}-{c.score}")
            for c in [*pair.stage_diagnosis, *pair.ordered_extraction]
        ]
    return page_html(page, charts, get_plotlyjs())


__all__ = ["render_html", "transition_figure"]
