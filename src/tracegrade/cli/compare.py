"""`tracegrade compare BASE NEW`: which samples got better or worse, and is it real?"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._paths import InputPath
from .report import (
    THRESHOLD_EXIT,
    fail_under_option,
    markdown_option,
    reading_progress,
    verbose_option,
)

if TYPE_CHECKING:
    from ..compare.build import Comparison
    from ..report.thresholds import Threshold

REGRESSION_EXIT = THRESHOLD_EXIT
"""Exit code when the gate fails (`--fail-on-regression`, `--fail-under`);
1 and 2 are taken by logs that cannot be compared and by usage errors."""


@click.command("compare")
@click.argument("base", metavar="BASE", type=InputPath(path_type=str))
@click.argument("new", metavar="NEW", type=InputPath(path_type=str))
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=float,
    callback=lambda _ctx, _param, value: _alpha(value),
    help="Significance level of the paired tests (p <= alpha), strictly "
    "between 0 and 1.",
)
@click.option(
    "--task",
    default=None,
    help="Compare only the evals of this task (as logged, or its own name "
    "without the package: stage_diagnosis).",
)
@click.option("--model", default=None, help="Compare only the evals of this model.")
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help=f"Exit {REGRESSION_EXIT} when NEW is significantly worse at --alpha "
    "in any pair of evals (pass rate for stage diagnosis; membership or "
    "order for extraction), or lost results: a run with a result in BASE "
    "and none in NEW (an error, a data error, no score, missing), a NEW "
    "eval that did not finish, a BASE eval with no NEW eval.",
)
@click.option(
    "--gate",
    "gates",
    multiple=True,
    metavar="MEASURE",
    help="With --fail-on-regression: what the paired tests gate, repeatable: "
    "pass (the default: pass rate for stage diagnosis; membership and order "
    "for extraction), context_recall, context_precision, or a pipeline step's "
    "recall (retriever_recall). Given, it replaces the default: add --gate "
    "pass to keep it. Lost results fail every gate.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="With --fail-on-regression: exit "
    f"{REGRESSION_EXIT} on any regression at all, significant or not.",
)
@click.option(
    "--allow-lost",
    is_flag=True,
    help="With --fail-on-regression: do not fail on lost results, NEW evals "
    "that did not finish or BASE evals with no NEW eval; they are still "
    "shown, and the output says they were not gated.",
)
@fail_under_option()
@click.option(
    "--show",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many rows of each list of samples or IDs the terminal shows "
    "(--json lists all).",
)
@click.option(
    "--html-show",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many rows of each list of samples or IDs the --html page shows, "
    "with the count of the rest (--json lists all).",
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
@markdown_option()
@verbose_option()
def compare(
    base: str,
    new: str,
    alpha: float,
    task: str | None,
    model: str | None,
    fail_on_regression: bool,
    strict: bool,
    allow_lost: bool,
    gates: tuple[str, ...],
    fail_under: list[Threshold],
    show: int,
    html_show: int,
    html_path: Path | None,
    force: bool,
    as_json: bool,
    markdown: bool,
    verbose: bool,
) -> None:
    """Compare the tracegrade scores of two runs, sample by sample.

    BASE and NEW are each a log (.eval or .json) or a directory of logs,
    read as evals and paired by task and model (one eval on each side is
    paired whatever it ran); within a pair, samples pair by sample id and
    epoch under each tracegrade score name in both.

    Shows the verdict first, then per pair of evals: each side's runs, the
    transition matrix, the lost results, each outcome's paired test with
    the sample as the unit (exact McNemar, or the exact sign test with
    several epochs) and its verdict (worse, better, not significant, too
    few to tell), context recall and precision, and the changed samples.
    --verbose shows every table with what each column means. The rules:
    docs/compare.md.

    \b
    Exit codes: 0 compared (regressions or not, unless the gate is asked
    for), 1 a log cannot be read or the evals cannot be compared (no
    tracegrade score, no eval or sample in common, evals whose pairing is
    unclear), 2 usage error (a --fail-under of an unknown metric, a value
    outside [0, 1], or a metric no compared score has; a --gate of no
    measure the runs have) or an output that
    cannot be written, 3 the gate failed: with --fail-on-regression, NEW
    regressed in some pair of evals (significantly at --alpha, or at all
    with --strict) or lost results (runs, an eval that did not finish, an
    eval missing); or a --fail-under threshold is not met.
    """
    for given, option in (
        (strict, "--strict"),
        (allow_lost, "--allow-lost"),
        (gates, "--gate"),
    ):
        if given and not fail_on_regression:
            raise click.UsageError(f"{option} applies only with --fail-on-regression")
    if as_json and markdown:
        raise click.UsageError("--json and --markdown both print on stdout: give one")
    # Imported here so that `tracegrade --help` does not load Inspect.
    from ..compare.build import UnknownGate, compare_evals
    from ..compare.pairing import CompareError
    from ..compare.show import all_warnings, comparison_page, verdict_lines
    from ..logs.evals import read_evals
    from ..logs.scores import LogError
    from ..outputs import AtomicFile, check_output, check_standard_streams
    from ..report.page import page_markdown, print_page
    from ..report.thresholds import InvalidThreshold

    asked = ["--fail-on-regression"] if fail_on_regression else []
    asked += [f"--gate {name}" for name in dict.fromkeys(gates)]
    asked += ["--strict"] * strict + ["--allow-lost"] * allow_lost
    asked += [f"--fail-under {t.metric}={t.text}" for t in fail_under]
    try:
        sides = read_evals([base]), read_evals([new])
        inputs = [base, new]
        for evals in sides:
            inputs += [log.path for run in evals.runs for log in run.logs]
            inputs += [superseded.path for superseded in evals.superseded]
        check_standard_streams(inputs)
        if html_path is not None:
            check_output(str(html_path), inputs=inputs, option="--html", force=force)
        total = sum(len(run.logs) for evals in sides for run in evals.runs)
        quiet = as_json or markdown
        with nullcontext() if quiet else reading_progress(total) as on_log_read:
            result = compare_evals(
                base,
                sides[0],
                new,
                sides[1],
                alpha=alpha,
                task=task,
                model=model,
                gates=tuple(dict.fromkeys(gates)) or ("pass",),
                allow_lost=allow_lost,
                thresholds=fail_under,
                asked=asked,
                on_log_read=on_log_read,
            )
    except (LogError, CompareError) as error:
        raise click.ClickException(str(error)) from error
    except (InvalidThreshold, UnknownGate) as error:
        raise click.UsageError(str(error)) from error
    try:
        if html_path is not None:
            from ..compare.show import render_html

            page = render_html(result, html_show)
            AtomicFile.write_text(str(html_path), page, replace=force)
        if as_json or markdown:
            # stdout holds the JSON (or the Markdown) alone.
            for warning in all_warnings(result):
                click.echo(f"warning: {warning}", err=True)
            if as_json:
                _write_json(result)
            else:
                click.echo(page_markdown(comparison_page(result, show)), nl=False)
        else:
            from rich.console import Console

            print_page(comparison_page(result, show), Console(), verbose=verbose)
            if html_path is not None:
                click.echo(f"HTML comparison written to {html_path}", err=True)
    finally:
        result.close()
    if result["verdict"]["failed"]:
        click.echo(f"tracegrade compare: {verdict_lines(result)[0]}:", err=True)
        for reason in result["verdict"]["failed_on"]:
            click.echo(f"- {reason}", err=True)
        sys.exit(REGRESSION_EXIT)


def _write_json(result: Comparison) -> None:
    """The JSON on stdout as it is made; a reader that stops early (`| head`)
    ends the command with SIGPIPE's exit code, not a traceback."""
    from ._failures import SIGPIPE_EXIT, CommandStopped

    try:
        result.write_json(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise CommandStopped(
            "tracegrade compare: stdout was closed before the JSON was all "
            "written (the reader stopped early)",
            SIGPIPE_EXIT,
        ) from None


def _alpha(value: float) -> float:
    from ..compare.stats import InvalidAlpha, check_alpha

    try:
        return check_alpha(value)
    except InvalidAlpha as error:
        raise click.BadParameter(str(error)) from None
