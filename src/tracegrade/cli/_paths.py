"""The path arguments the commands read, and the format of what they write."""

from __future__ import annotations

import errno
import os
from typing import Any

import click


class InputPath(click.Path):
    """`click.Path(exists=True, ...)` that names a loop of symbolic links as
    one, where click says it "does not exist"."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(exists=True, **kwargs)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Any:
        if isinstance(value, str) and os.path.islink(value):
            try:
                os.stat(value)
            except OSError as error:
                if error.errno == errno.ELOOP:
                    self.fail(
                        f"{value!r} is a loop of symbolic links, not a file",
                        param,
                        ctx,
                    )
        return super().convert(value, param, ctx)


def check_output_format(
    path: str | None,
    chosen: str,
    *,
    path_option: str,
    format_option: str,
    holding: str,
    stdout_default: bool,
) -> None:
    """Parquet to a named file, with pyarrow there; never a file name that
    says the other format. `holding` says what the file holds ("results",
    "records"); `stdout_default` is whether no `path_option` means stdout."""
    if chosen == "jsonl":
        if path is not None and path.lower().endswith(".parquet"):
            raise click.UsageError(
                f"{path_option} {path!r} names a Parquet file, but the {holding} "
                f"are JSON Lines; add {format_option} parquet"
            )
        return
    if path == "-" or (path is None and stdout_default):
        raise click.UsageError(
            f"{format_option} parquet writes a file, not stdout; give "
            f"{path_option} PATH"
        )
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        from ..table import PARQUET_NEEDS

        raise click.UsageError(PARQUET_NEEDS.replace("results", holding))
