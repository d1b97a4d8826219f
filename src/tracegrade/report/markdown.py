"""`--markdown`: a summary as GitHub-flavoured Markdown, for CI.

`tracegrade report --markdown` and `tracegrade compare --markdown` print
it on stdout, to append to `$GITHUB_STEP_SUMMARY` or post as a
pull-request comment. The verdict comes first (the gate passed or failed,
and why), then the headline figures, then the tables the terminal shows,
from the same presentation-neutral `Table`s, so no rendering disagrees.

However large the run, the page stays under `COMMENT_LIMIT` characters,
GitHub's limit for a comment body: blocks are added in order while they
fit, a table or list that does not fit whole keeps the rows that do, and
the page ends by saying what it left out (`--json` lists everything).
Every cell is escaped, so an ID holding `|`, `*` or `<` shows as it is
and cannot break the table or inject markup (nor `@name` mention anyone,
nor `#12` link an issue), and cut to `CELL_LIMIT` characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .aggregate import Report
from .tables import (
    Table,
    eval_warnings,
    evals_read,
    gate_lines,
    headlines,
    interval_note,
    report_tables,
)

COMMENT_LIMIT: Final = 65_536
"""GitHub's limit on a comment's characters (a step summary takes 1 MiB)."""
CELL_LIMIT: Final = 300
"""The most characters of one cell or one line of text shown."""
_FOOTER_ROOM: Final = 3_000
_REQUIRED_LINES: Final = 40
_LISTED_LEFT_OUT: Final = 20
# Inline markup: emphasis, code, links, tables, strikethrough.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# What starts a list or a rule at a line's start (`#` and `>`, a heading
# and a quote, are entities below).
_BLOCK_START = re.compile(r"^(\d{0,9})([.)])(?=\s|$)|^()([+=-])")
# GitHub links a mention (@name) and an issue (#12) even when escaped.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;", "#": "&#35;"}


def escape(text: str, limit: int = CELL_LIMIT, *, line: bool = False) -> str:
    """`text` as literal Markdown on one line: `&`, `<`, `>`, `@` and `#`
    as HTML entities, inline markup backslash-escaped, and whitespace runs
    as one space; cut to `limit` characters with an ellipsis. `line`: it
    starts a line (or a list item), where `-` or `1.` would start a list."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "\u2026"
    flat = _SPECIAL.sub(r"\\\1", flat)
    if line:
        flat = _BLOCK_START.sub(
            lambda found: f"{found[1] or ''}\\{found[2] or found[4]}", flat, count=1
        )
    return "".join(_ENTITIES.get(char, char) for char in flat)


@dataclass(frozen=True)
class _Block:
    """Text that can be cut: a head, items (a table's rows, a list's
    lines), each made only when it is shown, and a tail; `notes` follow
    only when every item is shown (the table of evals' log paths)."""

    what: str
    unit: str
    head: str
    items: Sequence[Any]
    item_text: Callable[[Any], str]
    tail: str
    notes: str = ""

    def fit(self, room: int) -> tuple[str, int] | None:
        """The text with as many items as fit in `room`, and how many;
        None when not even the first does (or, with none, the rest)."""
        size = len(self.head) + len(self.tail)
        lines: list[str] = []
        for item in self.items:
            line = self.item_text(item) + "\n"
            if size + len(line) > room:
                break
            lines.append(line)
            size += len(line)
        if size > room or (self.items and not lines):
            return None
        whole = len(lines) == len(self.items)
        notes = self.notes if whole and size + len(self.notes) <= room else ""
        return self.head + "".join(lines) + self.tail + notes, len(lines)


def _row(row: Sequence[str]) -> str:
    return "| " + " | ".join(map(escape, row)) + " |"


def _table_block(table: Table) -> _Block:
    align = ["---:" if numeric else "---" for numeric in table.numeric]
    head = "\n".join(
        [
            f"### {escape(table.title)}",
            "",
            "| " + " | ".join(escape(column) for column in table.columns) + " |",
            "| " + " | ".join(align) + " |",
            "",
        ]
    )
    notes = "".join(f"- {escape(n, limit=1_000, line=True)}\n" for n in table.notes)
    return _Block(
        what=f"table {table.title!r}",
        unit="rows",
        head=head,
        items=table.rows,
        item_text=_row,
        tail=f"\n{escape(table.caption, limit=2_000, line=True)}\n\n",
        notes=f"{notes}\n" if notes else "",
    )


class MarkdownPage:
    """A page built block by block, rendered under `limit` characters."""

    def __init__(self, title: str, limit: int = COMMENT_LIMIT) -> None:
        self.limit = limit
        self.required = [f"## {escape(title)}", ""]
        self.blocks: list[_Block] = []

    def verdict(self, head: str, reasons: Sequence[str]) -> None:
        """The gate's verdict, in bold, and why: always shown, first."""
        self.required.append(f"**{escape(head, limit=1_000)}**")
        self.required.append("")
        shown = reasons[:_REQUIRED_LINES]
        self.required += [
            f"- {escape(reason, limit=1_000, line=True)}" for reason in shown
        ]
        if len(reasons) > len(shown):
            self.required.append(
                f"- ... and {len(reasons) - len(shown)} more (--json lists all)"
            )
        self.required.append("")

    def paragraph(self, text: str) -> None:
        line = escape(text, limit=2_000, line=True)
        self.blocks.append(_Block("a paragraph", "line", "", [line], str, "\n"))

    def bullets(self, what: str, items: Sequence[str], prefix: str = "") -> None:
        """A list; `prefix` (e.g. "warning: ") is shown in bold."""
        if not items:
            return
        bold = f"**{escape(prefix.strip())}** " if prefix else ""

        def line(item: str) -> str:
            return f"- {bold}{escape(item, limit=1_000, line=not bold)}"

        self.blocks.append(_Block(what, "lines", "", items, line, "\n"))

    def table(self, table: Table) -> None:
        self.blocks.append(_table_block(table))

    def render(self) -> str:
        """The page, every required line and the blocks that fit, then what
        was left out."""
        parts = ["\n".join(self.required) + "\n"]
        used = len(parts[0])
        budget = self.limit - _FOOTER_ROOM
        left_out: list[str] = []
        for block in self.blocks:
            count = len(block.items)
            fitted = block.fit(budget - used)
            if fitted is None:
                left_out.append(f"{block.what} (all {count} {block.unit})")
                continue
            text, shown = fitted
            parts.append(text)
            used += len(text)
            if shown < count:
                left_out.append(
                    f"{block.what}: {count - shown} of {count} {block.unit}"
                )
        if left_out:
            listed = left_out[:_LISTED_LEFT_OUT]
            more = len(left_out) - len(listed)
            note = (
                f"Left out to stay under {self.limit:,} characters (GitHub's "
                f"limit for a comment): {'; '.join(listed)}"
                + (f"; and {more} more" if more else "")
                + ". --json lists everything."
            )
            parts.append("\n" + escape(note, limit=_FOOTER_ROOM - 10) + "\n")
        return "".join(parts)


def report_markdown(report: Report, limit: int = COMMENT_LIMIT) -> str:
    """`tracegrade report --markdown`: the gate's verdict when thresholds
    were asked, each summary's headline, the warnings, then the tables."""
    page = MarkdownPage("tracegrade report", limit)
    verdict = gate_lines(report)
    if verdict:
        page.verdict(verdict[0], verdict[1:])
    else:
        page.verdict(
            "No gate asked", ["no --fail-under threshold: the report gates nothing"]
        )
    samples = sum(log.samples for log in report.logs)
    page.paragraph(
        f"{evals_read(report)}, {samples} sample-epochs. {interval_note(report)}"
    )
    page.bullets("the headlines", headlines(report))
    page.bullets("the warnings", eval_warnings(report), prefix="warning:")
    for table in report_tables(report):
        page.table(table)
    return page.render()


__all__ = [
    "CELL_LIMIT",
    "COMMENT_LIMIT",
    "MarkdownPage",
    "escape",
    "report_markdown",
]
