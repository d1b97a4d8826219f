"""`tracegrade compare BASE NEW`: which samples got better or worse, and is it real?"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..compare.build import Comparison

REGRESSION_EXIT = 3
"""Exit code of `--fail-on-regression` when the gate fails; 1 and 2 are
taken by logs that cannot be compared and by usage errors."""


@click.command("compare")
@click.argument("base", metavar="BASE", type=click.Path(exists=True, path_type=str))
@click.argument("new", metavar="NEW", type=click.Path(exists=True, path_type=str))
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Significance level of the exact McNemar tests (p <= alpha).",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help=f"Exit {REGRESSION_EXIT} when NEW is significantly worse at --alpha "
    "(pass rate for stage diagnosis; membership or order for extraction).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="With --fail-on-regression: exit "
    f"{REGRESSION_EXIT} on any regression at all, significant or not.",
)
@click.option(
    "--show",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many rows of each list of samples or IDs the terminal shows "
    "(--json and --html list all).",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path),
    help="Also write the comparison, with transition heatmaps, as one "
    "self-contained HTML file.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --html file (never one of the logs).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the comparison as JSON on stdout instead of tables.",
)
def compare(
    base: str,
    new: str,
    alpha: float,
    fail_on_regression: bool,
    strict: bool,
    show: int,
    html_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Compare the tracegrade scores of two runs, sample by sample.

    BASE and NEW are each a log (.eval or .json, from `inspect eval` or
    `tracegrade score`) or a directory of logs, pooled: the parts of a run
    that `tracegrade score` split are one run. Samples are paired by sample
    id and epoch under each tracegrade score name found in both.

    Shows, per score: the transition matrix (BASE state by NEW state), the
    regressions (stage pass to retrieval or generation) and fixes with each
    run's missing IDs and explanation, the document IDs newly missing and
    newly found, the extraction samples that lost or gained membership and
    order, and the samples in one run only. Each paired binary outcome
    (pass, retrieval failure, membership, order) gets an exact McNemar
    test, with its effect size (NEW share minus BASE share) and a plain
    verdict: worse, better, not significant, or too few to tell.

    \b
    Exit codes: 0 compared (regressions or not, unless the gate is asked
    for), 1 a log cannot be read or the runs cannot be compared (no
    tracegrade score, none in common, no sample in common, a sample scored
    twice in one run), 2 usage error or an output that cannot be written,
    3 --fail-on-regression and NEW regressed: significantly at --alpha,
    or at all with --strict.
    """
    if strict and not fail_on_regression:
        raise click.UsageError("--strict applies only with --fail-on-regression")
    # Imported here so that `tracegrade --help` does not load Inspect.
    from ..compare.build import compare_logs
    from ..compare.pairing import CompareError
    from ..outputs import check_output
    from ..report.build import ReportError, find_logs

    try:
        if html_path is not None:
            inputs = [base, new, *find_logs([base]), *find_logs([new])]
            check_output(str(html_path), inputs=inputs, option="--html", force=force)
        if as_json:
            result = compare_logs(base, new, alpha=alpha)
        else:
            result = _compare_with_progress(base, new, alpha)
    except (ReportError, CompareError) as error:
        raise click.ClickException(str(error)) from error

    if html_path is not None:
        from ..compare.html import write_html

        write_html(result, html_path)

    if as_json:
        # stdout stays the JSON alone.
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
        click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
    else:
        _print_tables(result, show)
        if html_path is not None:
            click.echo(f"HTML comparison written to {html_path}", err=True)

    if fail_on_regression:
        gate = result.gate
        if gate.fails_strict if strict else gate.fails:
            from ..compare.tables import gate_line

            how = "any regression (--strict)" if strict else "significant regressions"
            click.echo(
                f"tracegrade compare: the gate failed on {how}: {gate_line(result)}",
                err=True,
            )
            sys.exit(REGRESSION_EXIT)


def _compare_with_progress(base: str, new: str, alpha: float) -> Comparison:
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ..compare.build import compare_logs

    # The number of logs is known only as each side is listed, so a count
    # rather than a bar; the spinner and clock show life on a large log.
    columns = (
        SpinnerColumn(),
        TextColumn("Reading logs: {task.completed:.0f} read"),
        TimeElapsedColumn(),
    )
    console = Console(file=sys.stderr)
    with Progress(*columns, console=console, transient=True) as progress:
        reading = progress.add_task("read", total=None)
        return compare_logs(
            base,
            new,
            alpha=alpha,
            on_log_read=lambda _path: progress.advance(reading),
        )


def _print_tables(result: Comparison, show: int) -> None:
    from rich.console import Console
    from rich.text import Text

    from ..compare.tables import comparison_tables, gate_line, summary_line, test_notes
    from .report import print_table

    console = Console()
    console.print(
        Text.assemble(("tracegrade compare", "bold"), f": {summary_line(result)}")
    )
    for warning in result.warnings:
        console.print(Text.assemble(("warning", "yellow"), f": {warning}"))
    tables = comparison_tables(result, show)
    # The pairs and the matrices first, then the tests and what they say,
    # then the lists.
    lists_from = (
        next(index for index, table in enumerate(tables) if table.key == "tests") + 1
    )
    for spec in tables[:lists_from]:
        console.print()
        print_table(console, spec)
    console.print()
    for note in test_notes(result):
        console.print(Text(f"- {note}"))
    for spec in tables[lists_from:]:
        console.print()
        print_table(console, spec)
    console.print()
    style = (
        "red"
        if result.gate.significant
        else "green"
        if not result.gate.regressions
        else "yellow"
    )
    console.print(
        Text.assemble(("Regressions", f"bold {style}"), f": {gate_line(result)}")
    )
