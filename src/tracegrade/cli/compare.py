"""`tracegrade compare BASE NEW`: which samples got better or worse, and is it real?"""

from __future__ import annotations

import sys
from contextlib import closing, nullcontext
from typing import TYPE_CHECKING

import click

from . import report as cli_report
from ._stream import InputPath

if TYPE_CHECKING:
    from ..report.thresholds import Threshold


@click.command("compare")
@click.argument("base", metavar="BASE", type=InputPath(path_type=str))
@click.argument("new", metavar="NEW", type=InputPath(path_type=str))
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    help="Significance level of the paired tests, strictly between 0 and 1.",
)
@click.option("--task", help="Compare only this task's evals (stage_diagnosis).")
@click.option("--model", help="Compare only this model's evals.")
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help=f"Exit {cli_report.THRESHOLD_EXIT} when NEW is significantly worse at "
    "--alpha, or lost results (a run, an unfinished eval, an eval missing).",
)
@click.option(
    "--gate",
    "gates",
    multiple=True,
    metavar="MEASURE",
    help="What the paired tests gate, repeatable, replacing the default pass: "
    "pass, context_recall, context_precision, or a step's retriever_recall.",
)
@click.option("--strict", is_flag=True, help="Gate on any regression at all.")
@click.option(
    "--allow-lost", is_flag=True, help="Show lost results without gating them."
)
@cli_report.fail_under_option()
@click.option(
    "--show",
    "show_",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows of each list the terminal shows (--json lists all).",
)
@click.option(
    "--html-show",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows of each list the --html page shows.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(),
    help="Also write the comparison as one self-contained HTML file.",
)
@click.option("--force", is_flag=True, help="Replace an existing --html file.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON on stdout.")
@cli_report.markdown_option()
@cli_report.verbose_option()
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
    show_: int,
    html_show: int,
    html_path: str | None,
    force: bool,
    as_json: bool,
    markdown: bool,
    verbose: bool,
) -> None:
    """Compare the tracegrade scores of two runs, sample by sample: the
    verdict, then per pair of evals (paired by task and model) the runs,
    the transitions, the paired tests and the changed samples. The rules
    and the JSON: docs/compare.md.

    \b
    Exit codes: 0 compared (regressions or not, unless the gate is asked
    for), 1 a log cannot be read or the evals cannot be compared (no
    tracegrade score, no eval or sample in common, evals whose pairing is
    unclear), 2 usage error (a --fail-under of an unknown metric, a value
    outside [0, 1], or a metric no compared score has; a --gate of no
    measure the runs have) or an output that cannot be written, 3 the gate
    failed: with --fail-on-regression, NEW regressed in some pair of evals
    (significantly at --alpha, or at all with --strict) or lost results
    (runs, an eval that did not finish, an eval missing); or a --fail-under
    threshold is not met.
    """
    if not 0 < alpha < 1:
        said = f"alpha must lie strictly between 0 and 1, got {alpha!r}"
        raise click.BadParameter(said, param_hint="'--alpha'")
    given = {"--strict": strict, "--allow-lost": allow_lost, "--gate": bool(gates)}
    for option, value in given.items():
        if value and not fail_on_regression:
            raise click.UsageError(f"{option} applies only with --fail-on-regression")
    if as_json and markdown:
        raise click.UsageError("--json and --markdown both print on stdout: give one")
    # Imported here so that `tracegrade --help` does not load Inspect.
    from ..compare import build, pairing, show, spool
    from ..logs.evals import read_evals
    from ..logs.scores import LogError
    from ..outputs import AtomicFile, check_output
    from ..report.page import page_markdown, print_page
    from ..report.thresholds import InvalidThreshold

    gates = tuple(dict.fromkeys(gates))
    asked = ["--fail-on-regression"] if fail_on_regression else []
    asked += [f"--gate {name}" for name in gates]
    asked += [option for option in ("--strict", "--allow-lost") if given[option]]
    asked += [f"--fail-under {t.metric}={t.text}" for t in fail_under]
    quiet = as_json or markdown
    try:
        sides = read_evals([base]), read_evals([new])
        runs = [run for evals in sides for run in evals.runs]
        inputs = [base, new, *(log.path for run in runs for log in run.logs)]
        inputs += [old.path for evals in sides for old in evals.superseded]
        check_output(html_path, inputs=inputs, option="--html", force=force)
        total = sum(len(run.logs) for run in runs)
        progress = nullcontext() if quiet else cli_report.reading_progress(total)
        with progress as on_log_read:
            result = build.compare_evals(
                *(base, sides[0], new, sides[1]),
                alpha=alpha,
                task=task,
                model=model,
                gates=gates or ("pass",),
                allow_lost=allow_lost,
                thresholds=fail_under,
                asked=asked,
                on_log_read=on_log_read,
            )
    except (LogError, pairing.CompareError, spool.InvalidChunk) as error:
        raise click.ClickException(str(error)) from error
    except (InvalidThreshold, build.UnknownGate) as error:
        raise click.UsageError(str(error)) from error
    with closing(result):
        if html_path is not None:
            page = show.render_html(result, html_show)
            AtomicFile.write_text(html_path, page, replace=force)
        # With --json or --markdown, stdout holds them alone.
        for warning in show.all_warnings(result) if quiet else ():
            click.echo(f"warning: {warning}", err=True)
        if as_json:
            result.write_json(sys.stdout)
        elif markdown:
            click.echo(page_markdown(show.comparison_page(result, show_)), nl=False)
        else:
            from rich.console import Console

            print_page(show.comparison_page(result, show_), Console(), verbose=verbose)
            if html_path is not None:
                click.echo(f"HTML comparison written to {html_path}", err=True)
    if result["verdict"]["failed"]:
        click.echo(f"tracegrade compare: {show.verdict_lines(result)[0]}:", err=True)
        for reason in result["verdict"]["failed_on"]:
            click.echo(f"- {reason}", err=True)
        sys.exit(cli_report.THRESHOLD_EXIT)
