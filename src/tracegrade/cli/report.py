"""`tracegrade report`: where runs fail and what they miss, from Inspect logs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.build import Report
    from ..report.build import Table as TableSpec


@click.command("report")
@click.argument(
    "paths",
    metavar="LOG_OR_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=str),
)
@click.option(
    "--top",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many of the most often missing, dropped and invented IDs to show.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path),
    help="Also write the report, with charts, as one self-contained HTML file.",
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
    help="Print the report as JSON on stdout instead of tables.",
)
def report(
    paths: Sequence[str],
    top: int,
    html_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Summarise tracegrade scores in Inspect logs.

    Reads the stage_diagnosis and ordered_extraction scores in each LOG
    (.eval or .json, from `inspect eval` or `tracegrade score`) or in every
    log under each DIR, and shows per task and model: stage shares, lucky
    answers, context recall, errors by kind, the most often missing
    document IDs, the IDs
    extraction answers most often dropped and invented, and membership
    versus order accuracy with their gap.

    Runs are counted per sample-epoch (a sample run for 3 epochs counts 3
    times); logs of the same task and model are pooled, and so are the
    parts of a run that `tracegrade score` split (a warning says when some
    part is missing). Logs are read a sample at a time, so memory does not
    grow with their size. Intervals are 95% Wilson score intervals.

    Exit codes: 0 success, 1 no tracegrade scores found or a log cannot be
    read, 2 usage error.
    """
    # Imported here so that `tracegrade --help` does not load Inspect.
    from ..outputs import check_output
    from ..report.build import ReportError, build_report, find_logs, part_warnings

    try:
        logs = find_logs(paths)
        if html_path is not None:
            check_output(
                str(html_path), inputs=[*paths, *logs], option="--html", force=force
            )
        if as_json:
            result = build_report(logs, top=top)
        else:
            result = _build_with_progress(logs, top)
    except ReportError as error:
        raise click.ClickException(str(error)) from error

    if html_path is not None:
        from ..report.html import write_html

        write_html(result, html_path)

    if as_json:
        # stdout stays the JSON alone.
        for warning in part_warnings(result.logs):
            click.echo(f"warning: {warning}", err=True)
        click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
        return
    _print_tables(result)
    if html_path is not None:
        click.echo(f"HTML report written to {html_path}", err=True)


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr)


def _build_with_progress(logs: Sequence[str], top: int) -> Report:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from ..report.build import build_report

    # The spinner and clock show life while one large log is read.
    columns = (
        SpinnerColumn(),
        TextColumn("Reading logs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_stderr_console(), transient=True) as progress:
        reading = progress.add_task("read", total=len(logs))
        return build_report(
            logs, top=top, on_log_read=lambda _path: progress.advance(reading)
        )


def _print_tables(result: Report) -> None:
    from rich.console import Console
    from rich.text import Text

    from ..report.build import interval_note, logs_read, part_warnings, report_tables

    console = Console()
    samples = sum(log.samples for log in result.logs)
    console.print(
        Text.assemble(
            ("tracegrade report", "bold"),
            f": {logs_read(result.logs)}, "
            f"{samples} sample-epochs. {interval_note(result)}",
        )
    )
    for warning in part_warnings(result.logs):
        console.print(Text.assemble(("warning", "yellow"), f": {warning}"))
    for log in result.logs:
        if log.status != "success":
            console.print(
                Text.assemble(
                    ("warning", "yellow"),
                    f": {log.path} has status {log.status!r}; "
                    "only its logged samples are counted.",
                )
            )
    for spec in report_tables(result):
        console.print()
        print_table(console, spec)


def print_table(console: Console, spec: TableSpec) -> None:
    """One presentation-neutral table as a rich table (`compare` too)."""
    from rich.table import Table
    from rich.text import Text

    # Text, not markup: an ID or a task may hold square brackets.
    table = Table(
        title=Text(spec.title, style="bold"),
        caption=Text(spec.caption, style="dim"),
        title_justify="left",
        caption_justify="left",
    )
    for column, numeric in zip(spec.columns, spec.numeric, strict=True):
        table.add_column(
            column, justify="right" if numeric else "left", overflow="fold"
        )
    for row in spec.rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
