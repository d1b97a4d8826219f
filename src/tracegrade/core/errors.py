"""The one error the core raises, and how bad values are quoted in messages."""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Iterator
from typing import Any

QUOTE_LIMIT = 120
# Deeper structure is shown as `[...]`, not raised as a `RecursionError`.
_QUOTE_DEPTH = 8
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BOUNDED_REPR = reprlib.Repr()
_BOUNDED_REPR.maxlevel = 3
_BOUNDED_REPR.maxstring = _BOUNDED_REPR.maxother = QUOTE_LIMIT


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_lone_surrogates(text: str) -> str:
    """Each lone surrogate as the `\\uXXXX` it stood as: UTF-8 cannot hold it."""
    return LONE_SURROGATE.sub(_escape_surrogate, text)


def _json_string(text: str, limit: int) -> str:
    # Non-ASCII as typed; a lone surrogate as the escape it stood as.
    return escape_lone_surrogates(json.dumps(text[: limit + 1], ensure_ascii=False))


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """A bad value as JSON (as in the user's file), else a bounded `repr`; cut."""
    text = ""
    for token in _tokens(value, 0, limit):
        text += token  # a few tokens: the loop stops past `limit` characters
        if len(text) > limit:
            break
    return text[: limit - 3] + "..." if len(text) > limit else text


def _tokens(item: Any, depth: int, limit: int) -> Iterator[str]:
    if item is None or isinstance(item, bool):
        yield json.dumps(item)
    elif isinstance(item, str):
        yield _json_string(item, limit)
    elif isinstance(item, int):
        # Python refuses to print an int of over 4,300 digits.
        bits = item.bit_length()
        yield str(item) if bits <= 4096 else f"<an integer of {bits:,} bits>"
    elif isinstance(item, float) and item == item and item not in (1e999, -1e999):
        yield json.dumps(item)
    elif type(item) is list or (
        type(item) is dict and all(isinstance(key, str) for key in item)
    ):
        is_dict = type(item) is dict
        opening, closing = "{}" if is_dict else "[]"
        if depth >= _QUOTE_DEPTH:
            yield f"{opening}...{closing}"
            return
        yield opening
        for position, element in enumerate(item):
            key = _json_string(element, limit) + ": " if is_dict else ""
            yield ", " + key if position else key
            yield from _tokens(item[element] if is_dict else element, depth + 1, limit)
        yield closing
    else:
        yield _BOUNDED_REPR.repr(item)


class InvalidRecord(ValueError):
    """A record the reference evaluators were never defined for."""

    def __init__(self, field: str, value: Any, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"field {field!r} {problem}, got {quote(value)}")
