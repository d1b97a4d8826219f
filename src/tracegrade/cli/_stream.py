"""What the commands share: arguments, the count table, progress, formats."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from ..outputs import is_link_loop

if TYPE_CHECKING:
    from rich.table import Table

# `bulk.scoring.TASKS`' keys: `--help` must not import Inspect AI (a test checks).
TASK_NAMES = ("ordered_extraction", "stage_diagnosis")
TASK_ARGUMENT = click.Choice(TASK_NAMES)

progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr (default: when stderr is a terminal).",
)


class InputPath(click.Path):
    """`click.Path(exists=True)` naming a loop of symbolic links as one."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(exists=True, **kwargs)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Any:
        if isinstance(value, str) and is_link_loop(value):
            self.fail(f"{value!r} is a loop of symbolic links, not a file", param, ctx)
        return super().convert(value, param, ctx)


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
    path: str, description: str, flag: bool | None
) -> Iterator[Callable[[int | None], None]]:
    """A callback taking bytes read so far (None from a pipe); draws a bar on
    stderr if `flag` (None: if stderr is a terminal)."""
    if not (sys.stderr.isatty() if flag is None else flag):
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


def check_output_format(
    path: str | None, chosen: str, path_option: str, format_option: str, holding: str
) -> None:
    """Parquet to a named file, with pyarrow there; never a file name that says
    the other format. No path is stdout but for `--out` (score's)."""
    if chosen == "jsonl":
        if path is not None and path.lower().endswith(".parquet"):
            raise click.UsageError(
                f"{path_option} {path!r} names a Parquet file, but the {holding} "
                f"are JSON Lines; add {format_option} parquet"
            )
        return
    if path == "-" or (path is None and path_option != "--out"):
        raise click.UsageError(
            f"{format_option} parquet writes a file, not stdout; give "
            f"{path_option} PATH"
        )
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        from ..table import PARQUET_NEEDS

        raise click.UsageError(PARQUET_NEEDS.replace("results", holding))
