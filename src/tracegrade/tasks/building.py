"""Errors in building a task reach the user whatever Inspect's display.

Inspect's CLI prints a `PrerequisiteError` (a bad dataset line, a bad
labels file, a scorer argument no scorer takes) as its message alone,
through rich, which `--display none` silences: the command exited 1 with
nothing said. Under that display the message is written to stderr here;
under any other, Inspect prints it as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from inspect_ai.util import display_type

from .._inspect_internals import PrerequisiteError


@contextmanager
def said_in_any_display() -> Iterator[None]:
    """Write a `PrerequisiteError` raised in the block to stderr when the
    display is `none`, then let it go on."""
    try:
        yield
    except PrerequisiteError as error:
        if display_type() == "none":
            print(f"\n{error.message}\n", file=sys.stderr, flush=True)
        raise


__all__ = ["said_in_any_display"]
