"""`tracegrade report`: where runs fail and what they miss, from Inspect logs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import click

from ._stream import InputPath

if TYPE_CHECKING:
    from ..report.thresholds import Threshold

THRESHOLD_EXIT = 3  # as `compare`'s gate; 1 and 2 are errors


def _thresholds(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> list[Threshold]:
    from ..report.thresholds import InvalidThreshold, parse_threshold

    try:
        return [parse_threshold(value) for value in values]
    except InvalidThreshold as error:
        raise click.BadParameter(str(error)) from None


def fail_under_option() -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--fail-under",
        "fail_under",
        multiple=True,
        metavar="NAME=VALUE",
        callback=_thresholds,
        help=f"Exit {THRESHOLD_EXIT} when a share over all runs is under VALUE "
        "(in [0, 1]) in some eval; repeatable. NAME: pass, context_recall, "
        "context_precision (stage diagnosis), membership, order (extraction). "
        "Runs with no result (sample errors, data errors, runs never run) "
        "count as not passing.",
    )


def markdown_option() -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--markdown",
        is_flag=True,
        help="Print the summary as GitHub-flavoured Markdown on stdout, the "
        "verdict first, under 65,536 characters (for $GITHUB_STEP_SUMMARY or "
        "a pull-request comment).",
    )


def verbose_option() -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--verbose",
        "-v",
        is_flag=True,
        help="Show what each column means, every column and every table "
        "(the terminal shows the key ones).",
    )


class NotResults(click.ClickException):
    exit_code = 2  # a usage error, on one line (`UsageError` prints the usage)


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
    type=click.Path(),
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
@verbose_option()
def report(
    paths: Sequence[str],
    top: int,
    pool: bool,
    fail_under: list[Threshold],
    html_path: str | None,
    force: bool,
    as_json: bool,
    markdown: bool,
    verbose: bool,
) -> None:
    """Summarise tracegrade scores in Inspect logs or Parquet results.

    Reads each LOG (.eval or .json), every log under each DIR, and Parquet
    results (a .parquet file or a DIR of them and no log), and shows per
    eval (E1, E2, ...) where runs fail and which IDs they miss, every share
    beside the runs it rests on, with 95% Wilson intervals (the sample as
    the cluster over several epochs). The rules: docs/report.md.

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
    from ..logs.evals import read_evals
    from ..logs.scores import LogError
    from ..outputs import AtomicFile, check_output
    from ..report.aggregate import report_evals
    from ..report.page import page_markdown, print_page
    from ..report.results import ResultsError, split_paths
    from ..report.tables import eval_warnings, report_page
    from ..report.thresholds import InvalidThreshold, threshold_line

    try:
        log_paths, results = split_paths(paths)
        evals = read_evals(log_paths)
        logs = [log.path for run in evals.runs for log in run.logs]
        logs += [superseded.path for superseded in evals.superseded]
        logs += [file for dataset in results for file in dataset.files]
        check_output(html_path, inputs=[*logs, *paths], option="--html", force=force)
        total = sum(len(run.logs) for run in evals.runs) + len(results)
        quiet = nullcontext(lambda _path: None)
        with quiet if as_json else reading_progress(total) as on_log_read:
            result = report_evals(evals, results, top, pool, fail_under, on_log_read)
    except ResultsError as error:
        raise NotResults(str(error)) from error
    except LogError as error:
        raise click.ClickException(str(error)) from error
    except InvalidThreshold as error:
        raise click.UsageError(str(error)) from error

    if html_path is not None:
        from ..report.html import render_html  # plotly, only for --html

        AtomicFile.write_text(html_path, render_html(result), replace=force)
    # stdout stays the JSON (or the Markdown) alone.
    for warning in eval_warnings(result) if as_json or markdown else []:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
    elif markdown:
        click.echo(page_markdown(report_page(result)), nl=False)
    else:
        from rich.console import Console

        print_page(report_page(result), Console(), verbose=verbose)
    if html_path is not None:
        click.echo(f"HTML report written to {html_path}", err=True)
    failed = [threshold_line(check) for check in result.thresholds if not check.met]
    for line in failed:
        click.echo(f"tracegrade report: threshold not met: {line}", err=True)
    if failed:
        sys.exit(THRESHOLD_EXIT)


@contextmanager
def reading_progress(total: int) -> Iterator[Callable[[str], None]]:
    from rich import progress as bar
    from rich.console import Console

    with bar.Progress(
        bar.SpinnerColumn(),
        bar.TextColumn("Reading logs"),
        bar.BarColumn(),
        bar.MofNCompleteColumn(),
        bar.TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as progress:
        reading = progress.add_task("read", total=total)
        yield lambda _path: progress.advance(reading)
