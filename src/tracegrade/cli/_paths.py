"""The path arguments the commands read."""

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


__all__ = ["InputPath"]
