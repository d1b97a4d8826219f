"""One page model for `report` and `compare`; terminal, Markdown, HTML."""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text

# A count, a share with its interval, a p-value or a change; "n/a" when none.
_FIGURE = re.compile(
    r"n/a|none|[+-]?\d+(\.\d+)?(e[+-]?\d+)?( ?%| pp)?( \[[\d.]+, [\d.]+\])?"
)


@dataclass(frozen=True)
class Table:
    """A titled table of display strings, shown `briefly` unless `--verbose`."""

    key: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    brief: list[str] | None = None
    brief_rows: list[int] | None = None
    constant: list[str] = field(default_factory=list)
    detail: bool = False
    cut: str = ""

    @property
    def numeric(self) -> list[bool]:
        """Right-aligned, never broken: columns of figures, "n/a" or "none"."""
        return [
            any(re.search(r"\d", cell) for cell in column)
            and all(_FIGURE.fullmatch(cell) for cell in column if cell)
            for column in zip(*self.rows, strict=True)
        ]

    def briefly(self) -> Table:
        """The brief columns and rows; one-valued `constant` columns go."""
        columns = self.columns if self.brief is None else self.brief
        rows = self.rows
        if self.brief_rows is not None:
            rows = [rows[i] for i in self.brief_rows]
        title, index = self.title, self.columns.index
        same = [
            column
            for column in self.constant
            if column in self.columns and len({row[index(column)] for row in rows}) == 1
        ]
        if same and same[0] == self.constant[0]:
            columns = [column for column in columns if column not in same]
            title += f": {rows[0][index(same[0])]}"
        kept = [index(column) for column in columns]
        rows = [[row[i] for i in kept] for row in rows]
        return replace(self, title=title, columns=columns, rows=rows)


@dataclass(frozen=True)
class Section:
    """Tables under one heading: `tables`, `notes`, then `more` tables."""

    title: str | None
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    more: list[Table] = field(default_factory=list)


@dataclass(frozen=True)
class Page:
    """What a command shows, the verdict first (`failed` None: no gate)."""

    command: str
    verdict: str
    reasons: list[str]
    failed: bool | None
    summary: list[str]
    headlines: list[str]
    warnings: list[str]
    sections: list[Section]
    quiet_verdict: bool = False


def print_page(page: Page, console: Console, *, verbose: bool = False) -> None:
    """The page on the terminal: verdict, summary, then the tables."""
    style = {True: "bold red", False: "bold green", None: "bold"}[page.failed]
    lines = [*page.summary, *(f"- {line}" for line in page.headlines)]
    first: str | tuple[str, str] = (page.verdict, style)
    if page.quiet_verdict and page.failed is None:
        # No gate asked, and nothing to say of it: the summary comes first.
        first = lines.pop(0) if page.summary else ""
    else:
        lines[:0] = [f"- {reason}" for reason in page.reasons]
    console.print(Text.assemble((page.command, "bold"), ": ", first))
    for line in lines:
        console.print(Text(line))
    for warning in page.warnings:
        console.print(Text.assemble(("warning", "yellow"), f": {warning}"))
    for section in page.sections:
        if section.title is not None:
            console.print()
            console.rule(Text(section.title, style="bold"))
        for table in section.tables:
            print_table(console, table, verbose=verbose)
        if verbose and section.notes:
            console.print()
            console.print(*(Text(f"- {note}") for note in section.notes), sep="\n")
        for table in section.more:
            print_table(console, table, verbose=verbose)
    if not verbose:
        console.print(
            "\n--verbose: what each column means, and every table.", style="dim"
        )


def print_table(console: Console, table: Table, *, verbose: bool = False) -> None:
    """One table, as records where rich would crop it; legend if `verbose`."""
    if not table.rows or (table.detail and not verbose):
        return
    shown = table if verbose else table.briefly()
    console.print()
    # Its own line: rich would wrap a table's title to the table's width.
    console.print(Text(shown.title, style="bold"))
    # Measured as if the terminal had no edge: rich clamps a measure to it.
    unbounded = console.options.update_width(sys.maxsize)
    # Whole cells if either spacing fits them, else wrapped, else records.
    tables = [_rich_table(shown, tight=tight) for tight in (False, True)]
    sizes = [(Measurement.get(console, unbounded, t), t) for t in tables]
    fitting = [t for size, t in sizes if size.maximum <= console.width]
    fitting += [t for size, t in sizes if size.minimum <= console.width]
    if fitting:
        console.print(fitting[0])
    for row in [] if fitting else shown.rows:
        # Each row as lines of `column  value`, for a terminal too narrow.
        record = RichTable.grid(padding=(0, 2))
        record.add_column(style="dim", no_wrap=True)
        record.add_column(overflow="fold")
        for column, cell in zip(shown.columns, row, strict=True):
            record.add_row(Text(column), Text(cell))
        console.print(Padding(record, (0, 0, 1, 2), expand=False))
    if verbose or table.cut:
        # The caption as wide as the terminal, not the table.
        console.print(Text(table.caption if verbose else table.cut, style="dim"))
    for note in table.notes:
        # Unbroken, so that a log's path can be copied from the terminal.
        console.print(Text(note, style="dim"), soft_wrap=True)


def _rich_table(spec: Table, *, tight: bool) -> Any:
    """`tight`: one space between columns."""
    table = RichTable(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=tight
    )
    for column, numeric, cells in zip(
        spec.columns, spec.numeric, zip(*spec.rows, strict=True), strict=True
    ):
        # A figure never breaks; text wraps between words, a word folds past 32.
        words = cells if numeric else [word for cell in cells for word in cell.split()]
        widest = max(map(len, words), default=0)
        heading = max(map(len, column.split()), default=0)
        narrowest = max(widest if numeric else min(widest, 32), heading)
        # Rich re-widens a column under min_width past the edge: only wrapping narrows.
        table.add_column(
            column,
            justify="right" if numeric else "left",
            overflow="fold",
            min_width=narrowest,
            no_wrap=narrowest >= max(map(len, [column, *cells])),
        )
    for row in spec.rows:
        # Text, not markup: an ID or a task may hold square brackets.
        table.add_row(*map(Text, row))
    return table


COMMENT_LIMIT: Final = 65_536  # GitHub's for a comment (a step summary: 1 MiB)
_FOOTER_ROOM: Final = 3_000
_REQUIRED_LINES: Final = 40
_LISTED_LEFT_OUT: Final = 20
# Inline markup: emphasis, code, links, tables, strikethrough.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# What starts a list or a rule at a line's start (`#` and `>` are entities below).
_BLOCK_START = re.compile(r"^(\d{0,9})([.)])(?=\s|$)|^()([+=-])")
# GitHub links a mention (@name) and an issue (#12) even when escaped.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;", "#": "&#35;"}


def escape(text: str, limit: int = 300, *, line: bool = False) -> str:
    """`text` as literal Markdown on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "\u2026"
    flat = _SPECIAL.sub(r"\\\1", flat)
    if line:
        flat = _BLOCK_START.sub(
            lambda found: f"{found[1] or ''}\\{found[2] or found[4]}", flat, count=1
        )
    return "".join(_ENTITIES.get(char, char) for char in flat)


def _row(row: Sequence[str]) -> str:
    return "| " + " | ".join(map(escape, row)) + " |\n"


def _items(items: Sequence[str], bold: str = "") -> list[str]:
    return [f"- {bold}{escape(i, 1_000, line=not bold)}\n" for i in items]


class MarkdownPage:
    """A page rendered under `limit` characters, saying what it left out."""

    def __init__(self, title: str, limit: int = COMMENT_LIMIT) -> None:
        self.limit = limit
        self.required = [f"## {escape(title)}", ""]
        # Blocks: what, unit, head, lines, tail, notes (shown under every line).
        self.blocks: list[tuple[str, str, str, list[str], str, str]] = []

    def verdict(self, head: str, reasons: Sequence[str]) -> None:
        """The gate's verdict, in bold, and why: always shown, first."""
        self.required += [f"**{escape(head, limit=1_000)}**", ""]
        self.required += [i[:-1] for i in _items(reasons[:_REQUIRED_LINES])]
        if (more := len(reasons) - _REQUIRED_LINES) > 0:
            self.required.append(f"- ... and {more} more (--json lists all)")
        self.required.append("")

    def table(self, table: Table) -> None:
        """A table with rows; one with none is left out."""
        if not table.rows:
            return
        align = ["---:" if numeric else "---" for numeric in table.numeric]
        head = f"### {escape(table.title)}\n\n{_row(table.columns)}{_row(align)}"
        tail = f"\n{escape(table.caption, limit=2_000, line=True)}\n\n"
        notes = "".join(_items(table.notes))
        rows = list(map(_row, table.rows))
        what = f"table {table.title!r}"
        self.blocks.append((what, "rows", head, rows, tail, notes and notes + "\n"))

    def render(self) -> str:
        """Every required line and the blocks that fit, then what was left out."""
        parts = ["\n".join(self.required) + "\n"]
        room = self.limit - _FOOTER_ROOM - len(parts[0])
        left_out: list[str] = []
        for what, unit, head, lines, tail, notes in self.blocks:
            size, shown = len(head) + len(tail), 0
            while shown < len(lines) and size + len(lines[shown]) <= room:
                size += len(lines[shown])
                shown += 1
            if size > room or (lines and not shown):
                left_out.append(f"{what} (all {len(lines)} {unit})")
                continue
            if shown < len(lines):
                left_out.append(f"{what}: {len(lines) - shown} of {len(lines)} {unit}")
            elif size + len(notes) <= room:
                size += len(notes)
                tail += notes
            parts.append(head + "".join(lines[:shown]) + tail)
            room -= size
        if left_out:
            more = len(left_out) - _LISTED_LEFT_OUT
            note = (
                f"Left out to stay under {self.limit:,} characters (GitHub's "
                f"limit for a comment): {'; '.join(left_out[:_LISTED_LEFT_OUT])}"
                + (f"; and {more} more" if more > 0 else "")
                + ". --json lists everything."
            )
            parts.append("\n" + escape(note, limit=_FOOTER_ROOM - 10) + "\n")
        return "".join(parts)


def page_markdown(page: Page, limit: int = COMMENT_LIMIT) -> str:
    """`--markdown`: the page, the verdict first, under `limit` characters."""
    markdown = MarkdownPage(page.command, limit)
    markdown.verdict(page.verdict, page.reasons)
    blocks = markdown.blocks
    for line in page.summary:
        text = escape(line, limit=2_000, line=True) + "\n"
        blocks.append(("a paragraph", "line", "", [text], "\n", ""))

    def bullets(what: str, lines: list[str]) -> None:
        if lines:
            blocks.append((what, "lines", "", lines, "\n", ""))

    bullets("the headlines", _items(page.headlines))
    bullets("the warnings", _items(page.warnings, "**warning:** "))
    for section in page.sections:
        for table in section.tables:
            markdown.table(table)
        name = f" of {section.title}" if section.title else ""
        bullets(f"the test notes{name}", _items(section.notes))
        for table in section.more:
            markdown.table(table)
    return markdown.render()


PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #222; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; }
.note { color: #555; margin-top: 0; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.chart { border: 1px solid #ddd; border-radius: 6px; padding: 0.3rem; }
.chart.wide { grid-column: 1 / -1; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.25rem 0.6rem; }
th { background: #f4f4f4; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.caption { color: #555; font-size: 0.85rem; max-width: 60rem; }
.warning { color: #8a5a00; }
"""


def _list(items: Sequence[str], attributes: str = "") -> str:
    lines = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return f"<ul{attributes}>{lines}</ul>"


def table_html(table: Table) -> str:
    """A table as an HTML section, escaped, the same cells as the terminal's."""
    numeric = table.numeric

    def cells(tag: str, values: Sequence[str]) -> str:
        return "".join(
            f'<{tag} class="{"num" if number else "text"}">{html.escape(value)}</{tag}>'
            for value, number in zip(values, numeric, strict=True)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in table.rows)
    return (
        f'<section class="table" id="table-{table.key}">'
        f"<h2>{html.escape(table.title)}</h2>"
        f"<table><thead><tr>{cells('th', table.columns)}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
        f'<p class="caption">{html.escape(table.caption)}</p>'
        + (_list(table.notes, ' class="caption"') if table.notes else "")
        + "</section>"
    )


def page_html(page: Page, charts: Sequence[Sequence[str]], plotly_js: str) -> str:
    """The page as one HTML file; `charts[i]` go before section i's tables."""
    sections = []
    for section, shown in zip(page.sections, charts, strict=True):
        parts = [f"<h2>{html.escape(section.title)}</h2>" if section.title else ""]
        if shown:
            row = list(shown)
            if len(row) % 2:  # the last alone on its row: as wide as the page
                row[-1] = row[-1].replace('class="chart"', 'class="chart wide"', 1)
            parts.append(f'<div class="charts">{"".join(row)}</div>')
        if section.notes:
            parts.append('<section class="notes"><h3>What the tests say</h3>')
            parts.append(f"{_list(section.notes)}</section>")
        parts += [table_html(t) for t in [*section.tables, *section.more] if t.rows]
        sections.append(f'<section class="pair">{"".join(parts)}</section>')
    warnings = "".join(
        f'<p class="warning">warning: {html.escape(warning)}</p>'
        for warning in page.warnings
    )
    summary = "".join(f'<p class="note">{html.escape(s)}</p>' for s in page.summary)
    headlines = _list(page.headlines, ' id="headlines"') if page.headlines else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(page.command)}</title>"
        f"<style>{PAGE_STYLE}</style>"
        f'<script type="text/javascript">{plotly_js}</script>'
        f"</head><body><h1>{html.escape(page.command)}</h1>"
        f'<p id="verdict"><strong>{html.escape(page.verdict)}</strong></p>'
        f"{_list(page.reasons)}{summary}{headlines}{warnings}{''.join(sections)}"
        "</body></html>\n"
    )
