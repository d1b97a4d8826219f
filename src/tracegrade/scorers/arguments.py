"""Scorer and task arguments, checked when built: one line, not a traceback each."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from inspect_ai.util import display_type

from .._inspect_internals import PrerequisiteError
from ..core.errors import quote


class ArgumentError(PrerequisiteError):
    """A `PrerequisiteError`, which Inspect's CLI prints alone; its scorer
    loader hides a `ValueError`'s message behind "couldn't be loaded"."""

    def __init__(self, message: str) -> None:
        self.message = message
        Exception.__init__(self, message)


class ScorerArgumentError(ArgumentError):
    """A scorer argument (`-S`) that no scorer can be built with."""


class TaskArgumentError(ArgumentError):
    """A task argument (`-T`) the task does not take (Inspect only warns)."""


def check_key(argument: str, value: object, *, optional: bool = False) -> None:
    """Refuse a metadata key that is no non-empty string (or None, if optional)."""
    if (optional and value is None) or (isinstance(value, str) and value.strip()):
        return
    expected = "one sample metadata key, a non-empty string"
    expected += ", or None" if optional else ""
    raise ScorerArgumentError(f"{argument} must be {expected}, got {quote(value)}")


def tool_names(argument: str, value: object) -> tuple[str, ...] | None:
    """A tool name or a list of them (`-S 'context_tools=[search, fetch]'`), or None."""
    names = [value] if isinstance(value, str) else value
    if value is None:
        return None
    if (
        type(names) is list
        and names
        and all(isinstance(name, str) and name.strip() for name in names)
    ):
        return tuple(names)
    raise ScorerArgumentError(
        f"{argument} must be a tool name or a list of them, got {quote(value)}"
    )


def refuse_unknown_arguments(
    scorer: str,
    factory: Callable[..., Any],
    unknown: Mapping[str, object],
    error: type[ArgumentError] = ScorerArgumentError,
) -> None:
    """Refuse arguments `factory` does not take, naming those it does."""
    if not unknown:
        return
    given = ", ".join(f"{name}={quote(value)}" for name, value in unknown.items())
    taken = [
        name
        for name, parameter in inspect.signature(factory).parameters.items()
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    plural = "s" if len(unknown) > 1 else ""
    listed = " and ".join(filter(None, [", ".join(taken[:-1]), taken[-1]]))
    raise error(f"{scorer} takes no argument{plural} {given}; it takes {listed}")


@contextmanager
def checked_task(
    task: str, factory: Callable[..., Any], unknown: Mapping[str, object]
) -> Iterator[None]:
    """Refuse task arguments `factory` does not take; a `PrerequisiteError` is
    also written to stderr under `--display none`, where Inspect prints nothing."""
    try:
        refuse_unknown_arguments(task, factory, unknown, TaskArgumentError)
        yield
    except PrerequisiteError as error:
        if display_type() == "none":
            print(f"\n{error.message}\n", file=sys.stderr, flush=True)
        raise
