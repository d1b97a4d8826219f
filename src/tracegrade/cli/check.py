"""`tracegrade check`: would every line of this file be scored cleanly?"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from ..bulk.presence import READ_FIELDS, FieldPresence
from ._failures import CommandStopped, fault
from ._paths import InputPath

if TYPE_CHECKING:
    from ..bulk.scoring import ScoredLine

from ._stream import (
    TASK_ARGUMENT,
    byte_progress,
    count_table,
    progress_enabled,
    progress_option,
)


@dataclass
class CheckSummary:
    task: str
    path: str
    lines: int = 0
    blank: int = 0
    records: int = 0
    clean: int = 0
    data_errors: Counter[str] = field(default_factory=Counter)
    answer_failures: Counter[str] = field(default_factory=Counter)
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.records > 0 and not self.data_errors

    def as_json(self) -> dict[str, Any]:
        counts = self.data_errors + self.answer_failures
        return {
            "task": self.task,
            "path": self.path,
            "ok": self.ok,
            **{
                key: getattr(self, key)
                for key in ("lines", "blank", "records", "clean")
            },
            "data_errors": self.data_errors.total(),
            "answer_failures": self.answer_failures.total(),
            "by_kind": dict(sorted(counts.items())),
            "warnings": self.warnings,
        }


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
    from ..outputs import check_standard_streams

    check_standard_streams([path])
    summary = CheckSummary(task=task, path=path)
    presence = FieldPresence(READ_FIELDS[task])
    listed: list[dict[str, Any]] = []  # only with --json
    listed_count = 0
    problems = _problems(summary, presence, progress_enabled(progress))
    try:
        for outcome in problems:
            if max_listed is not None and listed_count >= max_listed:
                continue
            listed_count += 1
            assert outcome.problem is not None
            entry = {
                "line": outcome.line,
                "id": outcome.id,
                **outcome.problem.as_json(),
            }
            if as_json:
                listed.append(entry)
            else:
                # Printed as found: the text listing holds nothing in memory.
                click.echo(_problem_line(path, entry))
    except BaseException as error:
        problems.close()  # its id database and progress bar, now
        described = fault(error)
        if described is None:
            raise
        reason, exit_code = described
        raise CommandStopped(
            f"tracegrade check: {reason} after line {summary.lines:,} of {path}; "
            "the check is incomplete",
            exit_code,
        ) from None
    if summary.records:
        summary.warnings = presence.warnings(path)

    if as_json:
        click.echo(
            json.dumps(
                {**summary.as_json(), "listed": listed_count, "problems": listed},
                indent=2,
            )
        )
    else:
        _print_summary(summary, listed=listed_count)
    raise SystemExit(0 if summary.ok else 1)


def _problems(
    summary: CheckSummary, presence: FieldPresence, progress: bool
) -> Generator[ScoredLine, None, None]:
    """The lines of `summary.path` that would not score cleanly, counting all."""
    from ..bulk.scoring import TASKS, DiskIds, LineScorer
    from ..lines import is_blank, read_lines

    path = summary.path
    with (
        DiskIds() as seen,
        byte_progress(path, "checking", progress) as advance,
    ):
        scorer = LineScorer(TASKS[summary.task], path, seen)
        for raw in read_lines(path):
            summary.lines += 1
            advance(raw.bytes_read)
            if is_blank(raw.text):
                summary.blank += 1
                continue
            summary.records += 1
            outcome = scorer.score_line(raw.number, raw.text)
            if outcome.case is not None:
                presence.note(outcome.case.input)
            problem = outcome.problem
            if problem is None:
                summary.clean += 1
            elif problem.side == "data":
                summary.data_errors[problem.kind] += 1
                yield outcome
            else:
                summary.answer_failures[problem.kind] += 1
                yield outcome


def _problem_line(path: str, entry: dict[str, Any]) -> str:
    shown_id = "-" if entry["id"] is None else json.dumps(entry["id"])
    kind = entry["kind"] + (f" [{entry['field']}]" if "field" in entry else "")
    if entry["side"] == "answer":
        kind = click.style(kind + " (answer failure)", fg="yellow")
    else:
        kind = click.style(kind, fg="red")
    return f"{path}:{entry['line']}: {shown_id}: {kind}: {entry['message']}"


def _print_summary(summary: CheckSummary, *, listed: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    errors = sum(summary.data_errors.values())
    failures = sum(summary.answer_failures.values())
    table = count_table(
        [
            ("lines read", summary.lines),
            ("blank lines (skipped)", summary.blank),
            ("records", summary.records),
            ("clean", summary.clean),
            ("[red]data errors (not scored)[/red]", errors),
            *((f"  {kind}", n) for kind, n in sorted(summary.data_errors.items())),
            ("[yellow]answer failures (scored, fail both)[/yellow]", failures),
            *((f"  {kind}", n) for kind, n in sorted(summary.answer_failures.items())),
        ]
    )
    problems = errors + failures
    if listed < problems:
        table.caption = f"{listed:,} of {problems:,} problems listed (--max-listed)"
    console = Console(highlight=False)
    if listed:
        console.print()
    console.print(
        f"Checked {summary.path} for {summary.task}:", markup=False, soft_wrap=True
    )
    console.print(table)
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning['message'])}")
    if summary.records == 0:
        console.print("[red]The file holds no records.[/red]")
    elif summary.data_errors:
        console.print(
            f"[red]{errors:,} of {summary.records:,} records would not be scored.[/red]"
        )
    else:
        console.print(f"All {summary.records:,} records would be scored.")
