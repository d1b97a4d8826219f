"""`tracegrade report`: where runs fail and what they miss, from Inspect logs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._paths import InputPath

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..logs.evals import Evals
    from ..report.aggregate import Report
    from ..report.results import ResultsDataset
    from ..report.tables import Table as TableSpec
    from ..report.thresholds import Threshold

THRESHOLD_EXIT = 3
"""Exit code when a `--fail-under` threshold is not met, as `compare`'s
gate; 1 and 2 are taken by logs that cannot be read and usage errors."""


def parse_thresholds(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> list[Threshold]:
    """`--fail-under NAME=VALUE`, each checked as it is given (`report` and
    `compare` take the same option)."""
    from ..report.thresholds import InvalidThreshold, parse_threshold

    try:
        return [parse_threshold(value) for value in values]
    except InvalidThreshold as error:
        raise click.BadParameter(str(error)) from None


def fail_under_option() -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The `--fail-under` option of `report` and `compare`."""
    return click.option(
        "--fail-under",
        "fail_under",
        multiple=True,
        metavar="NAME=VALUE",
        callback=parse_thresholds,
        help=f"Exit {THRESHOLD_EXIT} when a share over all runs is under VALUE "
        "(in [0, 1]) in some eval; repeatable. NAME: pass, context_recall, "
        "context_precision (stage diagnosis), membership, order (extraction). "
        "Runs with no result (sample errors, data errors, runs never run) "
        "count as not passing.",
    )


def markdown_option() -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The `--markdown` option of `report` and `compare`."""
    return click.option(
        "--markdown",
        is_flag=True,
        help="Print the summary as GitHub-flavoured Markdown on stdout, the "
        "verdict first, under 65,536 characters (for $GITHUB_STEP_SUMMARY or "
        "a pull-request comment).",
    )


class ResultsInputError(click.ClickException):
    """Parquet input that is not tracegrade results: a usage error, on one
    line (click's `UsageError` would print the usage above it)."""

    exit_code = 2


@click.command("report")
@click.argument(
    "paths",
    metavar="LOG_OR_DIR...",
    nargs=-1,
    required=True,
    type=InputPath(path_type=str),
)
@click.option(
    "--top",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many of the most often missing, dropped and invented IDs to show.",
)
@click.option(
    "--pool",
    is_flag=True,
    help="Pool the evals of each task, model and score into one row "
    "(refused for evals that scored the same sample ids).",
)
@fail_under_option()
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
@markdown_option()
def report(
    paths: Sequence[str],
    top: int,
    pool: bool,
    fail_under: list[Threshold],
    html_path: Path | None,
    force: bool,
    as_json: bool,
    markdown: bool,
) -> None:
    """Summarise tracegrade scores in Inspect logs or Parquet results.

    Reads the stage_diagnosis and ordered_extraction scores in each LOG
    (.eval or .json, from `inspect eval` or `tracegrade score`) or in every
    log under each DIR, and the Parquet results (from `tracegrade score
    --results-format parquet`, or `score_table` on Ray or Spark) in each
    .parquet file or DIR holding them and no log, and shows per task and
    model: stage shares, lucky
    answers, context recall and precision, errors by kind, the most often
    missing document IDs, the IDs extraction answers most often dropped
    and invented, and membership versus order accuracy with their gap.

    Each eval is its own row (E1, E2, ...): a log; the newest log of an
    eval retried with `inspect eval-retry` (the older ones are superseded,
    not counted, and said so); or the parts of a run `tracegrade score`
    split. Two evals of one task and model, such as a baseline and a new
    run under one directory, are never summed; --pool pools them on
    purpose. Runs are counted per sample-epoch (a sample run for 3 epochs
    counts 3 times), every run of the eval: each share is given beside
    the runs it rests on and the runs with no result, and why (sample
    errors, data errors, runs never run). Intervals are 95% Wilson score
    intervals, with the sample as the cluster when it ran several epochs.
    Logs are read a sample at a time, so memory does not grow with their
    size. Parquet results are read a batch at a time: each file or DIR of
    them is one eval, named by its path, of task `parquet` and model
    `unknown`; each row is a run of one epoch.

    --fail-under gates: each threshold is checked in every eval against
    the share over all runs, runs with no result counted as not passing.

    Exit codes: 0 success, 1 no tracegrade scores found, a log cannot be
    read or evals cannot be pooled, 2 usage error (a --fail-under of an
    unknown metric, a value outside [0, 1], or a metric no eval has),
    Parquet that is not tracegrade results (a column missing, a cell no
    result holds, an id in two rows), or an --html file that cannot be
    written, 3 a --fail-under threshold is not met.
    """
    if as_json and markdown:
        raise click.UsageError("--json and --markdown both print on stdout: give one")
    # Imported here so that `tracegrade --help` does not load Inspect.
    from ..logs.evals import Evals, read_evals
    from ..logs.scores import LogError
    from ..outputs import check_output, check_standard_streams
    from ..report.aggregate import report_evals
    from ..report.results import ResultsError, split_paths
    from ..report.tables import eval_warnings
    from ..report.thresholds import InvalidThreshold, threshold_line

    try:
        log_paths, results = split_paths(paths)
        evals = read_evals(log_paths) if log_paths else Evals([], [])
        logs = [log.path for run in evals.runs for log in run.logs]
        logs += [superseded.path for superseded in evals.superseded]
        logs += [file for dataset in results for file in dataset.files]
        check_standard_streams(logs)
        if html_path is not None:
            check_output(
                str(html_path), inputs=[*paths, *logs], option="--html", force=force
            )
        if as_json:
            result = report_evals(
                evals, top=top, pool=pool, thresholds=fail_under, results=results
            )
        else:
            result = _build_with_progress(evals, results, top, pool, fail_under)
    except ResultsError as error:
        raise ResultsInputError(str(error)) from error
    except LogError as error:
        raise click.ClickException(str(error)) from error
    except InvalidThreshold as error:
        raise click.UsageError(str(error)) from error

    if html_path is not None:
        from ..report.html import write_html

        write_html(result, html_path, replace=force)

    if as_json or markdown:
        # stdout stays the JSON (or the Markdown) alone.
        for warning in eval_warnings(result):
            click.echo(f"warning: {warning}", err=True)
        if as_json:
            click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
        else:
            from ..report.markdown import report_markdown

            click.echo(report_markdown(result), nl=False)
    else:
        _print_tables(result)
    if html_path is not None:
        click.echo(f"HTML report written to {html_path}", err=True)
    failed = [check for check in result.thresholds if not check.met]
    if failed:
        for check in failed:
            click.echo(
                f"tracegrade report: threshold not met: {threshold_line(check)}",
                err=True,
            )
        sys.exit(THRESHOLD_EXIT)


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr)


def _build_with_progress(
    evals: Evals,
    results: Sequence[ResultsDataset],
    top: int,
    pool: bool,
    thresholds: list[Threshold],
) -> Report:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from ..report.aggregate import report_evals

    # The spinner and clock show life while one large log is read.
    columns = (
        SpinnerColumn(),
        TextColumn("Reading logs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_stderr_console(), transient=True) as progress:
        total = sum(len(run.logs) for run in evals.runs) + len(results)
        reading = progress.add_task("read", total=total)
        return report_evals(
            evals,
            top=top,
            pool=pool,
            thresholds=thresholds,
            on_log_read=lambda _path: progress.advance(reading),
            results=results,
        )


def _print_tables(result: Report) -> None:
    from rich.console import Console
    from rich.text import Text

    from ..report.tables import (
        eval_warnings,
        evals_read,
        gate_lines,
        headlines,
        interval_note,
        report_tables,
    )

    console = Console()
    samples = sum(log.samples for log in result.logs)
    console.print(
        Text.assemble(
            ("tracegrade report", "bold"),
            f": {evals_read(result)}, {samples} sample-epochs. {interval_note(result)}",
        )
    )
    verdict = gate_lines(result)
    if verdict:
        style = "bold red" if verdict[0].startswith("Gate failed") else "bold green"
        console.print(Text(verdict[0], style=style))
        for line in verdict[1:]:
            console.print(Text(f"- {line}"))
    for line in headlines(result):
        console.print(Text(f"- {line}"))
    for warning in eval_warnings(result):
        console.print(Text.assemble(("warning", "yellow"), f": {warning}"))
    for spec in report_tables(result):
        console.print()
        print_table(console, spec)


_NAME_WIDTH = 32


def print_table(console: Console, spec: TableSpec) -> None:
    """One presentation-neutral table as a rich table (`compare` too); as a
    record per row where the table would not fit the terminal, which rich
    would crop."""
    from rich.measure import Measurement
    from rich.text import Text

    # Measured as if the terminal had no edge: rich clamps a measure to it.
    unbounded = console.options.update_width(sys.maxsize)
    for compact in (False, True):
        table = _rich_table(spec, compact=compact)
        if Measurement.get(console, unbounded, table).minimum <= console.width:
            console.print(table)
            break
    else:
        _print_records(console, spec)
    # The caption as wide as the terminal, not the table.
    console.print(Text(spec.caption, style="dim"))
    for note in spec.notes:
        # Unbroken, so that a log's path can be copied from the terminal.
        console.print(Text(note, style="dim"), soft_wrap=True)


def _rich_table(spec: TableSpec, *, compact: bool) -> Table:
    """`compact`: no outer border, and one space between columns."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # Text, not markup: an ID or a task may hold square brackets.
    table = Table(
        title=Text(spec.title, style="bold"),
        title_justify="left",
        box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
        show_edge=not compact,
        pad_edge=not compact,
        collapse_padding=compact,
    )
    for index, (column, numeric) in enumerate(
        zip(spec.columns, spec.numeric, strict=True)
    ):
        cells = [row[index] for row in spec.rows]
        if numeric:
            # A figure ("33.3% [6.1, 79.2]") never breaks.
            widest = max((len(cell) for cell in cells), default=0)
        else:
            # Text wraps between words; a word (a task, a model, an ID)
            # folds only past a bound: "tracegrade/stage_d|iagnosis" is
            # unreadable.
            words = (word for cell in cells for word in cell.split())
            longest = max(map(len, words), default=0)
            widest = min(longest, _NAME_WIDTH)
        heading = max((len(word) for word in column.split()), default=0)
        narrowest = max(widest, heading)
        whole = max((len(text) for text in [column, *cells]), default=0)
        table.add_column(
            column,
            justify="right" if numeric else "left",
            overflow="fold",
            min_width=narrowest,
            # Rich narrows a table that is too wide by wrapping its widest
            # columns, then widens any below its min_width again, past the
            # terminal's edge: only a column that can wrap may be narrowed.
            no_wrap=narrowest >= whole,
        )
    for row in spec.rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _print_records(console: Console, spec: TableSpec) -> None:
    """Each row as lines of `column  value`, for a terminal too narrow for
    the table."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    console.print(Text(spec.title, style="bold"))
    for row in spec.rows:
        record = Table.grid(padding=(0, 2))
        record.add_column(style="dim", no_wrap=True)
        record.add_column(overflow="fold")
        for column, cell in zip(spec.columns, row, strict=True):
            record.add_row(Text(column), Text(cell))
        console.print(Padding(record, (0, 0, 1, 2), expand=False))
