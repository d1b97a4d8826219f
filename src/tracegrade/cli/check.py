"""`tracegrade check`: would every line of this file be scored cleanly?"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..bulk.scoring import ScoreSummary

from ._failures import CommandStopped, fault
from ._stream import (
    TASK_ARGUMENT,
    InputPath,
    byte_progress,
    count_table,
    progress_option,
)


@click.command()
@click.argument("task", type=TASK_ARGUMENT)
@click.argument("path", type=InputPath(dir_okay=False, readable=True))
@click.option(
    "--max-listed",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="List at most N problems (default: all); the summary still counts all.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object (summary and listed problems) instead of text.",
)
@progress_option
def check(
    task: str,
    path: str,
    max_listed: int | None,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Check a fixture-format JSON Lines file before anything is run.

    Lists, with line number and sample id, every record that would not be
    scored cleanly, by the same rules as `inspect eval tracegrade/TASK` and
    `tracegrade score`:

    \b
    data errors (the record is not scored; exit code 1):
      malformed-json       not JSON (or not UTF-8)
      not-a-fixture-line   JSON, but not {"id", "input", "expected", "reason"},
                           or what no log can hold: a number out of range
                           (1e400), nesting over 100 deep, an id with a
                           lone surrogate
      duplicate-sample-id  the id was used on an earlier line (named)
      invalid-input        a field outside the contract (field and value named)
      answer-label         stage_diagnosis: no true/false staff label
      duplicate-source-id  ordered_extraction: the source repeats an ID
    answer failures (scored as failing both criteria; listed, exit code 0):
      duplicate-answer-id  ordered_extraction: the recorded answer repeats an ID

    \b
    Exit codes: 0 every record would be scored (answer failures included),
    1 some record would be a data error or the file has no records,
    2 usage error or a file that cannot be read, 130 interrupted.
    """
    from ..bulk.presence import READ_FIELDS, FieldPresence
    from ..bulk.scoring import TASKS, DiskIds, LineScorer, ScoreSummary, scored_lines
    from ..lines import read_lines
    from ..outputs import check_standard_streams

    check_standard_streams([path])
    counts = ScoreSummary(task, path)
    presence = FieldPresence(READ_FIELDS[task])
    listed: list[dict[str, Any]] = []  # only with --json
    shown = 0
    try:
        with DiskIds() as seen, byte_progress(path, "checking", progress) as advance:
            scorer = LineScorer(TASKS[task], path, seen)
            lines = scored_lines(read_lines(path), scorer, counts, presence, advance)
            for _, (line, sample_id, _, _, problem) in lines:
                if problem is None or shown == max_listed:
                    continue
                shown += 1
                entry = {"line": line, "id": sample_id, **problem.as_json()}
                if as_json:
                    listed.append(entry)
                else:  # printed as found: the text listing holds nothing
                    click.echo(_problem_line(path, entry))
    except BaseException as error:
        if (described := fault(error)) is None:
            raise
        raise CommandStopped(
            f"tracegrade check: {described[0]} after line {counts.lines:,} of "
            f"{path}; the check is incomplete",
            described[1],
        ) from None
    errors, failures = counts.not_scored, counts.answer_failures
    warnings = presence.warnings(path) if counts.records else []
    ok = counts.records > 0 and not errors
    if as_json:
        summary = {
            "task": task,
            "path": path,
            "ok": ok,
            "lines": counts.lines,
            "blank": counts.blank,
            "records": counts.records,
            "clean": counts.scored - failures.total(),
            "data_errors": errors.total(),
            "answer_failures": failures.total(),
            "by_kind": dict(sorted((errors + failures).items())),
            "warnings": warnings,
            "listed": shown,
            "problems": listed,
        }
        click.echo(json.dumps(summary, indent=2))
    else:
        _print_summary(counts, warnings, shown)
    raise SystemExit(0 if ok else 1)


def _problem_line(path: str, entry: dict[str, Any]) -> str:
    shown_id = "-" if entry["id"] is None else json.dumps(entry["id"])
    kind = f"{entry['kind']} [{entry['field']}]"  # `Problem.as_json` has a field
    if entry["side"] == "answer":
        kind = click.style(kind + " (answer failure)", fg="yellow")
    else:
        kind = click.style(kind, fg="red")
    return f"{path}:{entry['line']}: {shown_id}: {kind}: {entry['message']}"


def _print_summary(
    counts: ScoreSummary, warnings: list[dict[str, str]], listed: int
) -> None:
    from rich.console import Console
    from rich.markup import escape

    records = counts.records
    errors, failures = counts.not_scored, counts.answer_failures
    table = count_table(
        [
            ("lines read", counts.lines),
            ("blank lines (skipped)", counts.blank),
            ("records", records),
            ("clean", counts.scored - failures.total()),
            ("[red]data errors (not scored)[/red]", errors.total()),
            *((f"  {kind}", n) for kind, n in sorted(errors.items())),
            ("[yellow]answer failures (scored, fail both)[/yellow]", failures.total()),
            *((f"  {kind}", n) for kind, n in sorted(failures.items())),
        ]
    )
    problems = errors.total() + failures.total()
    if listed < problems:
        table.caption = f"{listed:,} of {problems:,} problems listed (--max-listed)"
    console = Console(highlight=False)
    if listed:
        console.print()
    console.print(
        f"Checked {counts.path} for {counts.task}:", markup=False, soft_wrap=True
    )
    console.print(table)
    for warning in warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning['message'])}")
    if records == 0:
        console.print("[red]The file holds no records.[/red]")
    elif errors:
        console.print(
            f"[red]{errors.total():,} of {records:,} records would not be scored.[/red]"
        )
    else:
        console.print(f"All {records:,} records would be scored.")
