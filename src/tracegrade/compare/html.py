"""A `Comparison` as one self-contained HTML page: a transition heatmap per
score, then every table of the terminal, each list cut to `show` rows
(`--html-show`, default `HTML_SHOW`) with the count of the rest: a page of
a million changed pairs would be one no browser opens, and the JSON lists
them all.

Built like `tracegrade report --html` (`report/html.py`): plotly.js inline
in the head, so the page opens offline, e.g. as a CI artifact.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from ..report.html import (
    LAYOUT,
    PAGE_STYLE,
    chart_html,
    chart_title,
    plot_text,
    table_html,
)
from .build import Comparison, EvalPair
from .pairing import ScoreComparison
from .tables import (
    ARROW,
    HTML_SHOW,
    comparison_tables,
    evals_table,
    gate_line,
    gate_tables,
    summary_line,
    test_notes,
    verdict_lines,
)

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
    `show` rows); then the evals and the thresholds."""
    warnings = "".join(
        f'<p class="warning">warning: {html.escape(warning)}</p>'
        for warning in comparison.warnings
    )
    sections = "".join(
        _pair_section(comparison, index, pair, show)
        for index, pair in enumerate(comparison.pairs)
    )
    head, *reasons = verdict_lines(comparison)
    verdict = (
        f'<p id="verdict"><strong>{html.escape(head)}</strong></p><ul>'
        + "".join(f"<li>{html.escape(reason)}</li>" for reason in reasons)
        + "</ul>"
    )
    thresholds = "".join(table_html(table) for table in gate_tables(comparison))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<title>tracegrade compare</title>"
        f"<style>{PAGE_STYLE}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script>'
        "</head><body>"
        "<h1>tracegrade compare</h1>"
        f"{verdict}"
        f'<p class="note">{html.escape(summary_line(comparison))}</p>'
        f"{warnings}"
        f'<p id="gate"><strong>Regressions:</strong> '
        f"{html.escape(gate_line(comparison))}</p>"
        f"{thresholds}"
        f"{sections}"
        f"{table_html(evals_table(comparison))}"
        "</body></html>\n"
    )


def _pair_section(comparison: Comparison, index: int, pair: EvalPair, show: int) -> str:
    compared = [*pair.stage_diagnosis, *pair.ordered_extraction]
    charts = [
        chart_html(transition_figure(c), f"transitions-{index + 1}-{c.score}")
        for c in compared
    ]
    if len(charts) % 2:
        charts[-1] = charts[-1].replace('class="chart"', 'class="chart wide"', 1)
    warnings = "".join(
        f'<p class="warning">warning: {html.escape(warning)}</p>'
        for warning in pair.warnings
    )
    notes = "".join(
        f"<li>{html.escape(note)}</li>" for note in test_notes(comparison, pair)
    )
    tables = "".join(
        table_html(table)
        for table in comparison_tables(comparison, pair, show, "--html-show")
    )
    return (
        f'<section class="pair"><h2>{html.escape(pair.name)}</h2>{warnings}'
        f'<div class="charts">{"".join(charts)}</div>'
        f'<section class="notes"><h3>What the tests say</h3><ul>{notes}</ul>'
        f"</section>{tables}</section>"
    )


def write_html(
    comparison: Comparison,
    path: Path,
    *,
    replace: bool = False,
    show: int = HTML_SHOW,
) -> None:
    """Write the page whole or not at all (see `tracegrade.outputs`);
    `replace` (`--force`) lets it replace a file already there."""
    from ..outputs import AtomicFile

    page = render_html(comparison, show)
    AtomicFile.write_text(str(path), page, replace=replace)


__all__ = ["render_html", "transition_figure", "write_html"]
