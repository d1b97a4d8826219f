"""`tracegrade score`: a whole file of recorded runs into an Inspect log."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..bulk.scoring import ScoreSummary
    from ..bulk.workers import WorkersRun

from ._stream import (
    TASK_ARGUMENT,
    InputPath,
    byte_progress,
    check_output_format,
    count_table,
    progress_option,
)

LOG_FORMATS = ("eval", "json")
RESULTS_FORMATS = ("jsonl", "parquet")
LOG_FORMAT_VARIABLES = ("INSPECT_LOG_FORMAT", "INSPECT_EVAL_LOG_FORMAT")


def _log_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value.lower() in LOG_FORMATS:
        return value.lower()
    bad = repr(value)
    source = ctx.get_parameter_source(param.name or "log_format")
    if source is click.core.ParameterSource.ENVIRONMENT:
        import os

        named = [name for name in LOG_FORMAT_VARIABLES if os.environ.get(name) == value]
        bad = f"the environment variable {(named or LOG_FORMAT_VARIABLES)[0]}={value!r}"
    raise click.BadParameter(
        f"{bad} is not a log format; use {' or '.join(LOG_FORMATS)}",
        ctx=ctx,
        param=param,
    )


@click.command()
@click.argument("task", type=TASK_ARGUMENT)
@click.argument("path", type=InputPath(dir_okay=False, readable=True))
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default="./logs",
    envvar="INSPECT_LOG_DIR",
    show_default=True,
    help="Directory for the Inspect eval log (as for `inspect eval`; a "
    "file:// URL is a local directory, a remote one is refused).",
)
@click.option(
    "--log-format",
    default="eval",
    envvar=list(LOG_FORMAT_VARIABLES),
    show_default=True,
    callback=_log_format,
    help="Format of the eval log, eval or json (as for `inspect eval`).",
)
@click.option(
    "--max-samples-per-log",
    type=click.IntRange(min=1),
    default=75_000,
    show_default=True,
    help="Split a larger run into logs of at most this many samples, "
    "so that `inspect view` lists each.",
)
@click.option(
    "--out",
    type=click.Path(allow_dash=True),
    default=None,
    help="Results file, or - for stdout (JSON Lines only) "
    "(default: beside the log, named like it, ending .results.jsonl "
    "or .results.parquet).",
)
@click.option(
    "--results-format",
    type=click.Choice(RESULTS_FORMATS),
    default="jsonl",
    show_default=True,
    help="Format of the per-record results: jsonl, or parquet (the columns "
    "of tracegrade.score_table after a line column; needs pyarrow).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the end summary as one JSON object."
)
@click.option(
    "--force", is_flag=True, help="Replace an existing --out file (never an input)."
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes scoring parts of an input of 1 MiB or more "
    "(default: the usable cores, from 16 MiB; 1 scores in this process).",
)
@progress_option
def score(
    task: str,
    path: str,
    log_dir: str,
    log_format: str,
    max_samples_per_log: int,
    out: str | None,
    results_format: str,
    as_json: bool,
    force: bool,
    workers: int | None,
    progress: bool | None,
) -> None:
    """Score a whole file of recorded runs with the pure core, in a stream.

    PATH is a fixture-format JSON Lines file, as `-T dataset=PATH` of
    tracegrade/stage_diagnosis or tracegrade/ordered_extraction_recorded reads
    it. Writes per-record results and an Inspect log that opens like one of
    `inspect eval` (docs/cli.md says what each holds).

    \b
    Exit codes: 0 every record became a sample (data errors such as
    invalid-input are results, not failures), 1 some lines could not
    become samples (malformed-json, not-a-fixture-line,
    duplicate-sample-id; their entries are still written, and the log
    too) or the file has no records (nothing is written), 2 usage error
    or a file that cannot be read or written, 128+N stopped by signal N
    (130 Ctrl-C, 143 SIGTERM); then nothing is written.
    """
    if out == "-" and as_json:
        raise click.UsageError("--out - and --json both want stdout; choose one")
    check_output_format(out, results_format, "--out", "--results-format", "results")
    from ..outputs import check_output

    stdout = out in (None, "-")
    check_output(None if stdout else out, inputs=[path], option="--out", force=force)
    # Before anything is made: an Inspect too old for the writer says so.
    from ..bulk.workers import score_run

    log_dir = _make_log_dir(log_dir)
    run = score_run(
        *(task, path, log_dir, out, log_format, max_samples_per_log),
        replace=force,
        results_format=results_format,
        workers=workers,
    )
    try:
        run.open()
        with byte_progress(path, "scoring", progress) as advance:
            run.score_lines(advance)
        if run.summary.records == 0:
            run.discard()
        else:
            run.finish()
    except BaseException as error:
        _stop(run, error)
        raise

    timings = {phase: round(seconds, 4) for phase, seconds in run.timings.items()}
    _report(run.summary, as_json, timings, to_stderr=run.results_path == "-")
    raise SystemExit(1 if run.summary.line_errors or not run.summary.records else 0)


def _make_log_dir(log_dir: str) -> str:
    # A remote URL is refused, never written to a look-alike path (./s3:/bucket/x).
    from urllib.parse import unquote, urlparse

    from ..outputs import OutputError

    if "://" in log_dir:
        url = urlparse(log_dir)
        if url.scheme != "file" or url.netloc not in ("", "localhost"):
            raise OutputError(
                f"--log-dir {log_dir!r} is a remote location ({url.scheme}://); "
                "tracegrade score writes its logs to a local directory: give one, "
                "then copy the logs there"
            )
        log_dir = unquote(url.path)
    try:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(
            f"--log-dir {log_dir!r} cannot be created: a file stands in its path"
        ) from None
    except OSError as error:
        raise OutputError(
            f"--log-dir {log_dir!r} cannot be created ({error.strerror})"
        ) from None
    return log_dir


def _stop(run: WorkersRun, error: BaseException) -> None:
    from ..outputs import OutputAppeared
    from ._failures import CommandStopped, fault, signals_held

    with signals_held():
        kept = run.abort()
    described = fault(error)
    if described is None:
        return  # a bug: the traceback is the report
    what = "no log or results were written"
    if kept:
        what = "left unfinished: " + ", ".join(kept) + " (remove them)"
    elif isinstance(error, OutputAppeared):
        what = "no log was written"  # the results are kept, as it says
    if run.results_path == "-" and run.last_line:
        what += "; the results already written to stdout are incomplete"
    where = ""
    if run.finishing:
        where = f", writing the log of all {run.summary.records:,} records"
    elif run.last_line:
        where = f", at line {run.last_line:,} of {run.path}"
    message = f"tracegrade score: {described[0]}{where}; {what}"
    raise CommandStopped(message, described[1]) from None


def _report(
    summary: ScoreSummary, as_json: bool, timings: dict[str, float], *, to_stderr: bool
) -> None:
    if as_json:
        click.echo(json.dumps({**summary.as_json(), "timings": timings}, indent=2))
        return

    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=to_stderr, highlight=False)
    plain = functools.partial(console.print, markup=False, soft_wrap=True)
    plain(f"Scored {summary.path} for {summary.task}:")
    failures = sorted(summary.answer_failures.items())
    rows: list[tuple[str, int | str]] = [
        ("lines read", summary.lines),
        ("blank lines (skipped)", summary.blank),
        ("records (one sample each)", summary.records),
        ("scored", summary.scored),
        *((f"  of which {kind} (fails both)", n) for kind, n in failures),
        ("[red]not scored[/red]", sum(summary.not_scored.values())),
        *((f"  {kind}", n) for kind, n in sorted(summary.not_scored.items())),
    ]
    for score_name, values in summary.metrics.items():
        for metric_name, value in values.items():
            # A count stays an int: 18,610, never 1.861e+04.
            shown = "-" if value is None else value
            if isinstance(shown, float):
                shown = f"{shown:.4g}"
            rows.append((f"{score_name} {metric_name}", shown))
    for name, figure in (("recall", summary.recall), ("precision", summary.precision)):
        if figure.count:
            mean = f"{figure.mean(figure.count):.4g} over {figure.count:,} runs"
            rows.append((f"context {name}, labelled or not", mean))
    rate = summary.records / summary.seconds if summary.seconds else 0.0
    rows.append(("seconds", f"{summary.seconds:.2f} ({rate:,.0f} records/s)"))
    console.print(count_table(rows))
    if len(summary.logs) > 1:
        plain(
            f"Logs: {len(summary.logs)} parts of one run, each small enough "
            "for `inspect view` to list (tracegrade report pools them):",
            soft_wrap=False,
        )
        for location in summary.logs:
            plain(f"  {location}")
    elif summary.logs:
        plain(f"Log: {summary.logs[0]}")
    if summary.logs:
        plain(f"Results: {summary.results}")
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning['message'])}")
    if summary.records == 0:
        console.print("[red]The file holds no records; no log was written.[/red]")
    elif summary.line_errors:
        console.print(
            f"[red]{summary.line_errors:,} lines could not become samples; "
            "see their entries in the results.[/red]"
        )
