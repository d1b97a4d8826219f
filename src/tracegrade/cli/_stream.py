"""What `check` and `score` share: the task argument, the summary table, and
progress on stderr, so that stdout stays clean for `--json` and piping."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.table import Table

# The keys of `bulk.scoring.TASKS`, spelled out so that `--help` need not import
# Inspect AI (a test keeps the two in step).
TASK_NAMES = ("ordered_extraction", "stage_diagnosis")
TASK_ARGUMENT = click.Choice(TASK_NAMES)


progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr (default: when stderr is a terminal).",
)


def progress_enabled(flag: bool | None) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def count_table(rows: Iterable[tuple[str, int | str]]) -> Table:
    """The summary table of `check` and `score`: a label, then a count."""
    from rich.table import Table

    table = Table(show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for what, count in rows:
        table.add_row(what, f"{count:,}" if isinstance(count, int) else count)
    return table


@contextmanager
def byte_progress(
    path: str, description: str, enabled: bool
) -> Iterator[Callable[[int | None], None]]:
    """A callback taking bytes read so far (None from a pipe, which has no
    size); draws a bar on stderr if enabled."""
    if not enabled:
        yield lambda _done: None
        return
    from rich import progress as bars
    from rich.console import Console

    progress = bars.Progress(
        bars.TextColumn("{task.description}"),
        bars.BarColumn(),
        bars.DownloadColumn(),
        bars.TransferSpeedColumn(),
        bars.TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        size = os.path.getsize(path) if os.path.isfile(path) else None
        bar = progress.add_task(description, total=size)
        last: list[int | None] = [None]

        def update(done: int | None) -> None:
            # The file is read in buffer-sized steps; redraw once per step.
            if done is not None and done != last[0]:
                last[0] = done
                progress.update(bar, completed=done)

        yield update
