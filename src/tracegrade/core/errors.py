"""The one error the core raises: a record outside the evaluators' contract."""

from __future__ import annotations

from typing import Any

_QUOTE_LIMIT = 120


def quote(value: Any) -> str:
    """Quote a bad value the way a reader can find it in their file."""
    text = repr(value)
    if len(text) > _QUOTE_LIMIT:
        text = text[: _QUOTE_LIMIT - 3] + "..."
    return text


class InvalidRecord(ValueError):
    """A record the reference evaluators were never defined for.

    The JavaScript evaluators would throw, or silently answer something
    meaningless (a string has a `.length`, too), so we refuse instead of
    guessing. `field` names where the problem is and `value` holds what was
    found there, so callers can add the record's id or line without parsing
    the message.
    """

    def __init__(self, field: str, value: Any, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"field {field!r} {problem}, got {quote(value)}")
