"""`tracegrade compare --markdown`: the comparison as GitHub-flavoured
Markdown, for `$GITHUB_STEP_SUMMARY` or a pull-request comment.

The gate's verdict comes first (passed or failed, and why), then what
was compared, then per pair of evals its key tables: the pairs with the
lost results, the runs of each side, the tests, and the lists of lost
results and regressions; then the rest of the terminal's tables while
they fit. The page is built by `report.markdown.MarkdownPage`, which
keeps it under GitHub's comment limit and says what it left out.
"""

from __future__ import annotations

from typing import Final

from ..report.markdown import COMMENT_LIMIT, MarkdownPage
from .build import Comparison
from .tables import (
    all_warnings,
    comparison_tables,
    evals_table,
    gate_line,
    gate_tables,
    summary_line,
    test_notes,
    verdict_lines,
)

# The tables every pair shows first, in this order; the rest follow.
_KEY_TABLES: Final = ("summary", "runs", "tests", "lost", "regressions")


def compare_markdown(
    comparison: Comparison, show: int, limit: int = COMMENT_LIMIT
) -> str:
    """The page; each list cut to `show` rows (`--show`), as the terminal."""
    page = MarkdownPage("tracegrade compare", limit)
    head, *reasons = verdict_lines(comparison)
    page.verdict(head, reasons)
    page.paragraph(summary_line(comparison))
    page.paragraph(f"Regressions: {gate_line(comparison)}")
    page.bullets("the warnings", all_warnings(comparison), prefix="warning:")
    for table in gate_tables(comparison):
        page.table(table)
    several = len(comparison.pairs) > 1
    for pair in comparison.pairs:
        tables = comparison_tables(comparison, pair, show)

        def rank(key: str) -> int:
            bare = key.split("-", 1)[1] if several else key
            for index, first in enumerate(_KEY_TABLES):
                if bare == first or bare.startswith(f"{first}-"):
                    return index
            return len(_KEY_TABLES)

        ordered = sorted(tables, key=lambda table: rank(table.key))
        key_count = sum(rank(table.key) < len(_KEY_TABLES) for table in tables)
        for table in ordered[:key_count]:
            page.table(table)
        page.bullets(f"the test notes of {pair.name}", test_notes(comparison, pair))
        for table in ordered[key_count:]:
            page.table(table)
    page.table(evals_table(comparison))
    return page.render()


__all__ = ["compare_markdown"]
