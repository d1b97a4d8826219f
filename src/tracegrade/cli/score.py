"""`tracegrade score`: a whole file of recorded runs into an Inspect log."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import IO, Any

import click

from ._stream import (
    TASK_ARGUMENT,
    byte_progress,
    collector_paused,
    progress_enabled,
    progress_option,
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
    log: str | None = None
    results: str | None = None
    seconds: float = 0.0
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "path": self.path,
            "log": self.log,
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
            "seconds": round(self.seconds, 3),
            "samples_per_second": (
                round(self.records / self.seconds, 1) if self.seconds else None
            ),
        }


@click.command()
@click.argument("task", type=TASK_ARGUMENT)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, writable=True),
    default="./logs",
    envvar="INSPECT_LOG_DIR",
    show_default=True,
    help="Directory for the Inspect eval log (as for `inspect eval`).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True, writable=True),
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
@progress_option
def score(
    task: str,
    path: str,
    log_dir: str,
    out: str | None,
    as_json: bool,
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
    log (.json) in LOG_DIR, which `inspect view`, `inspect score`,
    `read_eval_log` and `inspect_ai.analysis` open like a log of `inspect
    eval`: same samples, scores, metrics and reductions; no transcript
    events, since no solver ran.

    A bad line does not stop the run. A line that is not JSON, not a
    fixture case, or repeats a sample id becomes an error entry with its
    line number (id null when unreadable) in the results, and an unscored
    sample `line-N` in the log with the kind as its reason
    (malformed-json, not-a-fixture-line, duplicate-sample-id) and the line
    as its input (cut after 2,000 characters). Blank lines
    are skipped and counted. Every other line is a sample: records outside
    the contract or without a label are unscored samples, as in `inspect
    eval`.

    Samples are written to disk as they are scored. Every Score stays in
    memory until the end, because Inspect's metrics and reducers take them
    all at once: a few kilobytes a record.

    \b
    Exit codes: 0 every record became a sample (data errors such as
    invalid-input are results, not failures), 1 some lines could not
    become samples (malformed-json, not-a-fixture-line,
    duplicate-sample-id) or the file has no records; their entries are
    still written, and the log too, 2 usage error.
    """
    if out == "-" and as_json:
        raise click.UsageError("--out - and --json both want stdout; choose one")
    if out not in (None, "-") and Path(out).resolve() == Path(path).resolve():
        raise click.UsageError("--out names the input file, which it would overwrite")

    from ..bulk import LINE_ERRORS, TASKS, LineScorer, MemoryIds, is_blank, read_lines
    from ..core import canonical_json
    from ..logwriter import BulkLog, score_value_json, unreadable_explanation

    begun = perf_counter()
    bulk_task = TASKS[task]
    summary = ScoreSummary(task=task, path=path)
    log = BulkLog(bulk_task, path, Path(log_dir))
    results_path = (
        out if out is not None else str(log.location.with_suffix(".results.jsonl"))
    )
    scorer = LineScorer(bulk_task, path, MemoryIds(), timings=log.timings)
    timings = log.timings
    try:
        with ExitStack() as stack:
            stack.enter_context(collector_paused())
            results: IO[str] = (
                sys.stdout
                if results_path == "-"
                else stack.enter_context(
                    open(results_path, "w", encoding="utf-8", newline="\n")
                )
            )
            advance = stack.enter_context(
                byte_progress(path, "scoring", progress_enabled(progress))
            )
            for raw in read_lines(path):
                summary.lines += 1
                advance(raw.bytes_read)
                if is_blank(raw.text):
                    summary.blank += 1
                    continue
                summary.records += 1
                started_at = datetime.now(timezone.utc).isoformat()
                started = perf_counter()
                outcome = scorer.score_line(raw.number, raw.text)
                problem = outcome.problem
                if outcome.case is not None and outcome.score is not None:
                    log.add_sample(
                        outcome.case,
                        outcome.score,
                        started_at,
                        perf_counter() - started,
                    )
                    metadata = outcome.score.metadata or {}
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
    except BaseException:
        log.close()
        raise

    summary.results = results_path
    if summary.records == 0:
        log.close()
        summary.seconds = perf_counter() - begun
        _report(summary, as_json, timings.as_json(), to_stderr=results_path == "-")
        raise SystemExit(1)

    with collector_paused():
        header = log.finish()
    summary.log = str(log.location)
    summary.seconds = perf_counter() - begun
    summary.metrics = _metrics(header)
    _report(summary, as_json, timings.as_json(), to_stderr=results_path == "-")
    raise SystemExit(1 if summary.line_errors else 0)


def _metrics(header: Any) -> dict[str, dict[str, float | None]]:
    metrics: dict[str, dict[str, float | None]] = {}
    if header.results is None:
        return metrics
    for eval_score in header.results.scores:
        metrics[eval_score.name] = {
            name: None if math.isnan(metric.value) else metric.value
            for name, metric in eval_score.metrics.items()
        }
    return metrics


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
            shown = "-" if value is None else f"{value:.4g}"
            table.add_row(f"{score_name} {metric_name}", shown)
    rate = summary.records / summary.seconds if summary.seconds else 0.0
    table.add_row("seconds", f"{summary.seconds:.2f} ({rate:,.0f} records/s)")
    console.print(table)
    if summary.log is not None:
        console.print(f"Log: {summary.log}", markup=False, soft_wrap=True)
        console.print(f"Results: {summary.results}", markup=False, soft_wrap=True)
    if summary.records == 0:
        console.print("[red]The file holds no records; no log was written.[/red]")
    elif summary.line_errors:
        console.print(
            f"[red]{summary.line_errors:,} lines could not become samples; "
            "see their entries in the results.[/red]"
        )
