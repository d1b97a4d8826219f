"""`tracegrade score`: a whole file of recorded runs into an Inspect log."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from inspect_ai.log import EvalMetric, EvalResults

    from ..bulk.log import BulkLog
    from ..outputs import AtomicFile

from ._stream import (
    TASK_ARGUMENT,
    byte_progress,
    progress_enabled,
    progress_option,
)

Number = int | float
"""A metric in the summary: an int for a count, else a float."""

LOG_FORMATS = ("eval", "json")
LOG_FORMAT_VARIABLES = ("INSPECT_LOG_FORMAT", "INSPECT_EVAL_LOG_FORMAT")


def _log_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """`eval` or `json`, from the option or Inspect's variables, naming the
    variable when it holds something else."""
    chosen = value.lower()
    if chosen in LOG_FORMATS:
        return chosen
    source = ctx.get_parameter_source(param.name or "log_format")
    if source is click.core.ParameterSource.ENVIRONMENT:
        import os

        variable = next(
            (name for name in LOG_FORMAT_VARIABLES if os.environ.get(name) == value),
            LOG_FORMAT_VARIABLES[0],
        )
        raise click.BadParameter(
            f"the environment variable {variable}={value!r} is not a log format; "
            f"use {' or '.join(LOG_FORMATS)}",
            ctx=ctx,
            param=param,
        )
    raise click.BadParameter(
        f"{value!r} is not a log format; use {' or '.join(LOG_FORMATS)}",
        ctx=ctx,
        param=param,
    )


@dataclass
class ScoreSummary:
    task: str
    path: str
    lines: int = 0
    blank: int = 0
    records: int = 0
    scored: int = 0
    answer_failures: Counter[str] = field(default_factory=Counter)
    not_scored: Counter[str] = field(default_factory=Counter)
    line_errors: int = 0
    logs: list[str] = field(default_factory=list)
    results: str | None = None
    seconds: float = 0.0
    metrics: dict[str, dict[str, Number | None]] = field(default_factory=dict)
    recall_sum: float = 0.0
    recall_runs: int = 0
    """Stage recall over every run with a required set and a context,
    labelled or not: the logged `context_recall` metric sees only the
    scored runs (an unlabelled TREC import has none)."""
    warnings: list[dict[str, str]] = field(default_factory=list)
    """Fields of the task that no record has (see `bulk.presence`)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "path": self.path,
            # The one log, or null when the run was split (see "logs").
            "log": self.logs[0] if len(self.logs) == 1 else None,
            "logs": self.logs,
            "results": self.results,
            "lines": self.lines,
            "blank": self.blank,
            "records": self.records,
            "scored": self.scored,
            "not_scored": sum(self.not_scored.values()),
            "line_errors": self.line_errors,
            "answer_failures": sum(self.answer_failures.values()),
            "by_kind": dict(sorted((self.not_scored + self.answer_failures).items())),
            "metrics": self.metrics,
            "recall": {
                "mean": self.recall_sum / self.recall_runs
                if self.recall_runs
                else None,
                "runs": self.recall_runs,
            },
            "seconds": round(self.seconds, 3),
            "samples_per_second": (
                round(self.records / self.seconds, 1) if self.seconds else None
            ),
            "warnings": self.warnings,
        }


@click.command()
@click.argument("task", type=TASK_ARGUMENT)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, readable=True))
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
    "so that `inspect view` lists each (a .json log also stays under "
    "100 MiB, above which the viewer lists none).",
)
@click.option(
    "--out",
    type=click.Path(allow_dash=True),
    default=None,
    help="JSON Lines results file, or - for stdout "
    "(default: beside the log, named like it, ending .results.jsonl).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the end summary as one JSON object.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --out file (never an input).",
)
@progress_option
def score(
    task: str,
    path: str,
    log_dir: str,
    log_format: str,
    max_samples_per_log: int,
    out: str | None,
    as_json: bool,
    force: bool,
    progress: bool | None,
) -> None:
    """Score a whole file of recorded runs with the pure core, in a stream.

    PATH is a fixture-format JSON Lines file, as for `inspect eval
    tracegrade/stage_diagnosis -T dataset=PATH` (TASK stage_diagnosis) or
    `inspect eval tracegrade/ordered_extraction_recorded -T dataset=PATH`
    (TASK ordered_extraction). Each record gets exactly the Score the
    Inspect scorer gives it.

    Two outputs. The JSON Lines results, one line per input record, in input
    order: {"line", "id", "value", "result", "explanation", "error"}, where
    `result` is the evaluator's exact output (null when it never ran) and
    `error` is null or {"kind", "side", "field", "message"}. And an Inspect eval
    log (.eval, or .json with --log-format json) in LOG_DIR, which `inspect
    view`, `inspect score`, `read_eval_log` and `inspect_ai.analysis` open
    like a log of `inspect eval`: same samples, scores, metrics and
    reductions; no transcript events, since no solver ran.

    A run of more than --max-samples-per-log samples is split into logs of
    that many (NAME-part01of14.eval, ...), each with its own samples and
    metrics, sharing one run id; `tracegrade report` pools them, and the
    summary printed here is over the whole run.

    A bad line does not stop the run. A line that is not JSON, not a
    fixture case, or repeats a sample id becomes an error entry with its
    line number (id null when unreadable) in the results, and an unscored
    sample `line-N` in the log with the kind as its reason
    (malformed-json, not-a-fixture-line, duplicate-sample-id) and the line
    as its input (cut after 2,000 characters). Blank lines
    are skipped and counted. Every other line is a sample: records outside
    the contract or without a label are unscored samples, as in `inspect
    eval`.

    Samples are written to disk as they are scored. Per sample, only what
    the scorer's metrics read (value, reason, id, and a metadata dict
    shared by all samples alike) stays in memory until the metrics run;
    reductions are written as each sample is scored.

    Nothing half-written passes for complete: the log and the results are
    written under temporary `.partial` names and renamed only when both are
    done. A signal, a full disk or any other failure removes them and says
    so in one line on stderr. --out never replaces an input (links
    included), nor an existing file without --force. PATH may be a pipe or
    FIFO.

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
    from ..outputs import check_output, check_standard_streams

    check_standard_streams([path])
    if out not in (None, "-"):
        check_output(out, inputs=[path], option="--out", force=force)
    log_dir = _make_log_dir(log_dir)

    run = _ScoreRun(
        task,
        path,
        log_dir,
        out,
        progress,
        log_format.lower(),
        max_samples_per_log,
        replace=force,
    )
    try:
        run.open()
        run.score_lines()
        if run.summary.records == 0:
            run.discard()
        else:
            run.finish()
    except BaseException as error:
        run.stop(error)
        raise

    summary = run.summary
    _report(summary, as_json, run.timings.as_json(), to_stderr=run.results_path == "-")
    if summary.records == 0:
        raise SystemExit(1)
    raise SystemExit(1 if summary.line_errors else 0)


def _make_log_dir(log_dir: str) -> str:
    """The local directory `log_dir` names, made if need be."""
    from ..outputs import OutputError

    log_dir = _local_directory(log_dir)
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


def _local_directory(log_dir: str) -> str:
    """A `file://` URL as the path it names, as `inspect eval` reads it; any
    other URL is refused, rather than written to a local look-alike path
    (`./s3:/bucket/x`)."""
    from urllib.parse import unquote, urlparse

    from ..outputs import OutputError

    if "://" not in log_dir:
        return log_dir
    url = urlparse(log_dir)
    if url.scheme == "file" and url.netloc in ("", "localhost"):
        return unquote(url.path)
    raise OutputError(
        f"--log-dir {log_dir!r} is a remote location ({url.scheme}://); tracegrade "
        "score writes its logs to a local directory: give one, then copy the "
        "logs there"
    )


class _ScoreRun:
    """One `score` run: the line loop, and its outputs kept whole or not at all.

    The logs and the results are written under temporary names (each log
    as `NAME-partK.eval.partial` or `.json.partial`, the results as
    `.XXXXXX.partial`) and renamed only once all are complete; `stop`
    removes them and says what happened.
    """

    def __init__(
        self,
        task: str,
        path: str,
        log_dir: str,
        out: str | None,
        progress: bool | None,
        log_format: str,
        max_samples_per_log: int,
        *,
        replace: bool,
    ) -> None:
        self.begun = perf_counter()
        self.replace = replace
        self.log_format = log_format
        self.max_samples_per_log = max_samples_per_log
        self.task = task
        self.path = path
        self.log_dir = log_dir
        self.out = out
        self.progress = progress
        self.summary = ScoreSummary(task=task, path=path)
        self.log: BulkLog | None = None
        self.results: AtomicFile | None = None
        self.results_path = out
        self.last_line = 0
        self.finishing = False
        from ..bulk.presence import READ_FIELDS, FieldPresence

        self.presence = FieldPresence(READ_FIELDS[task])

    def open(self) -> None:
        """Create the spool and the temporary results file; `stop` removes
        whatever of them exists, wherever a signal lands."""
        from ..bulk.log import BulkLog
        from ..bulk.scoring import TASKS, LineScorer, MemoryIds
        from ..outputs import AtomicFile, OutputError

        bulk_task = TASKS[self.task]
        try:
            self.log = BulkLog(
                bulk_task,
                self.path,
                Path(self.log_dir),
                log_format=self.log_format,
                max_samples=self.max_samples_per_log,
            )
        except OSError as error:
            raise OutputError(
                f"cannot write into --log-dir {self.log_dir!r} ({error.strerror})"
            ) from None
        self.timings = self.log.timings
        if self.results_path is None:
            base = self.log.base
            self.results_path = str(base.with_name(base.name + ".results.jsonl"))
        self.scorer = LineScorer(
            bulk_task, self.path, MemoryIds(), timings=self.timings
        )
        self.stream: IO[str] = sys.stdout
        if self.results_path != "-":
            try:
                self.results = AtomicFile(self.results_path, replace=self.replace)
            except OSError as error:
                raise OutputError(
                    f"cannot write the results {self.results_path!r} ({error.strerror})"
                ) from None
            self.stream = self.results.handle

    def score_lines(self) -> None:
        assert self.log is not None
        from ..bulk.log import score_value_json, unreadable_explanation
        from ..bulk.scoring import LINE_ERRORS
        from ..core import canonical_json
        from ..lines import is_blank, read_lines

        summary, log, results, timings, presence = (
            self.summary,
            self.log,
            self.stream,
            self.timings,
            self.presence,
        )
        with byte_progress(
            self.path, "scoring", progress_enabled(self.progress)
        ) as advance:
            for raw in read_lines(self.path):
                self.last_line = raw.number
                summary.lines += 1
                advance(raw.bytes_read)
                if is_blank(raw.text):
                    summary.blank += 1
                    continue
                summary.records += 1
                started_at = datetime.now(timezone.utc).isoformat()
                started = perf_counter()
                outcome = self.scorer.score_line(raw.number, raw.text)
                if outcome.case is not None:
                    presence.note(outcome.case.input)
                problem = outcome.problem
                if outcome.case is not None and outcome.score is not None:
                    log.add_sample(
                        outcome.case,
                        outcome.score,
                        started_at,
                        perf_counter() - started,
                    )
                    metadata = outcome.score.metadata or {}
                    if (recall := metadata.get("recall")) is not None:
                        summary.recall_sum += recall
                        summary.recall_runs += 1
                    entry = {
                        "line": raw.number,
                        "id": outcome.id,
                        "value": score_value_json(outcome.score),
                        "result": metadata.get("result"),
                        "explanation": outcome.score.explanation,
                        "error": metadata.get("error"),
                    }
                else:
                    assert problem is not None
                    log.add_unreadable(raw.number, raw.text, problem)
                    entry = {
                        "line": raw.number,
                        "id": outcome.id,
                        "value": None,
                        "result": None,
                        "explanation": unreadable_explanation(raw.number, problem),
                        "error": problem.as_json(),
                    }
                if problem is None:
                    summary.scored += 1
                elif problem.side == "answer":
                    summary.scored += 1
                    summary.answer_failures[problem.kind] += 1
                else:
                    summary.not_scored[problem.kind] += 1
                    if problem.kind in LINE_ERRORS:
                        summary.line_errors += 1
                writing = perf_counter()
                results.write(canonical_json(entry) + "\n")
                timings.jsonl += perf_counter() - writing

    def finish(self) -> None:
        """Write the log, then put both outputs under their final names."""
        assert self.log is not None
        self.finishing = True
        if self.results is not None:
            self.results.flush_to_disk()
        else:
            self.stream.flush()
        self.scorer.seen.forget()
        self.summary.warnings = self.presence.warnings(self.path)
        self.log.warnings = [warning["message"] for warning in self.summary.warnings]
        written = self.log.finish()
        if self.results is not None:
            self.results.commit()
        self.summary.results = self.results_path
        self.summary.logs = [str(location) for location in written.logs]
        self.summary.seconds = perf_counter() - self.begun
        self.summary.metrics = _metrics(written.results)

    def discard(self) -> None:
        """No records: nothing to write, and nothing left behind."""
        assert self.log is not None
        self.log.close()
        if self.results is not None:
            self.results.discard()
        self.summary.seconds = perf_counter() - self.begun

    def stop(self, error: BaseException) -> None:
        """Clean up after `error`; raise `CommandStopped` saying what was left."""
        from ..outputs import OutputAppeared
        from ._failures import CommandStopped, fault, signals_held

        with signals_held():
            left = [] if self.results is None else [self.results.discard()]
            if self.log is not None:
                left.append(self.log.abort())
        described = fault(error)
        if described is None:
            return  # a bug: the traceback is the report
        reason, exit_code = described
        kept = [path for path in left if path is not None]
        if kept:
            what = "left unfinished: " + ", ".join(kept) + " (remove them)"
        elif isinstance(error, OutputAppeared):
            what = "no log was written"  # the results are kept, as it says
        else:
            what = "no log or results were written"
        if self.results_path == "-" and self.last_line:
            what += "; the results already written to stdout are incomplete"
        if self.finishing:
            where = f", writing the log of all {self.summary.records:,} records"
        elif self.last_line:
            where = f", at line {self.last_line:,} of {self.path}"
        else:
            where = ""
        raise CommandStopped(
            f"tracegrade score: {reason}{where}; {what}", exit_code
        ) from None


def _metrics(results: EvalResults) -> dict[str, dict[str, Number | None]]:
    metrics: dict[str, dict[str, Number | None]] = {}
    for eval_score in results.scores:
        # A scorer with reduced and unreduced metrics has an entry for each
        # under its name (`ordered_extraction`); their metric names differ.
        metrics.setdefault(eval_score.name, {}).update(
            (name, _metric_value(metric)) for name, metric in eval_score.metrics.items()
        )
    return metrics


def _metric_value(metric: EvalMetric) -> Number | None:
    """NaN as None; a count as the integer it is (Inspect logs a float)."""
    from ..scorers.metrics import is_count

    if math.isnan(metric.value):
        return None
    return int(metric.value) if is_count(metric) else metric.value


def _report(
    summary: ScoreSummary,
    as_json: bool,
    timings: dict[str, float],
    *,
    to_stderr: bool,
) -> None:
    if as_json:
        click.echo(json.dumps({**summary.as_json(), "timings": timings}, indent=2))
        return

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(stderr=to_stderr, highlight=False)
    console.print(
        f"Scored {summary.path} for {summary.task}:", markup=False, soft_wrap=True
    )
    table = Table(show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("lines read", f"{summary.lines:,}")
    table.add_row("blank lines (skipped)", f"{summary.blank:,}")
    table.add_row("records (one sample each)", f"{summary.records:,}")
    table.add_row("scored", f"{summary.scored:,}")
    for kind, count in sorted(summary.answer_failures.items()):
        table.add_row(f"  of which {kind} (fails both)", f"{count:,}")
    table.add_row("[red]not scored[/red]", f"{sum(summary.not_scored.values()):,}")
    for kind, count in sorted(summary.not_scored.items()):
        table.add_row(f"  {kind}", f"{count:,}")
    for score_name, values in summary.metrics.items():
        for metric_name, value in values.items():
            if value is None:
                shown = "-"
            elif isinstance(value, int):
                shown = f"{value:,}"  # a count: 18,610, never 1.861e+04
            else:
                shown = f"{value:.4g}"
            table.add_row(f"{score_name} {metric_name}", shown)
    rate = summary.records / summary.seconds if summary.seconds else 0.0
    if summary.recall_runs:
        mean = summary.recall_sum / summary.recall_runs
        table.add_row(
            "context recall, labelled or not",
            f"{mean:.4g} over {summary.recall_runs:,} runs",
        )
    table.add_row("seconds", f"{summary.seconds:.2f} ({rate:,.0f} records/s)")
    console.print(table)
    if len(summary.logs) == 1:
        console.print(f"Log: {summary.logs[0]}", markup=False, soft_wrap=True)
    elif summary.logs:
        console.print(
            f"Logs: {len(summary.logs)} parts of one run, each small enough "
            "for `inspect view` to list (tracegrade report pools them):",
            markup=False,
        )
        for location in summary.logs:
            console.print(f"  {location}", markup=False, soft_wrap=True)
    if summary.logs:
        console.print(f"Results: {summary.results}", markup=False, soft_wrap=True)
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning['message'])}")
    if summary.records == 0:
        console.print("[red]The file holds no records; no log was written.[/red]")
    elif summary.line_errors:
        console.print(
            f"[red]{summary.line_errors:,} lines could not become samples; "
            "see their entries in the results.[/red]"
        )
