"""The one error the core raises, and how bad values are quoted in messages."""

from __future__ import annotations

import json
import re
import reprlib
from typing import Any

QUOTE_LIMIT = 120
# Deeper structure is shown as `[...]`: the quote must not recurse without
# bound, or a record nested 5,000 deep would raise `RecursionError`
# instead of naming the field.
_QUOTE_DEPTH = 8
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BOUNDED_REPR = reprlib.Repr()
_BOUNDED_REPR.maxlevel = 3
_BOUNDED_REPR.maxstring = _BOUNDED_REPR.maxother = QUOTE_LIMIT


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _json_string(text: str, limit: int) -> str:
    # Non-ASCII stays as the user typed it; a lone surrogate (valid in JSON,
    # not printable) is shown as the escape it stood as in the file.
    cut = text[: limit + 1]
    return _LONE_SURROGATE.sub(_escape_surrogate, json.dumps(cut, ensure_ascii=False))


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """Quote a bad value as JSON, the way it stands in the user's file.

    `null`, not `None`; `{"required": ["D1"]}`, not `{'required': ['D1']}`.
    Values that JSON cannot hold (a tuple or set from Python code, NaN) are
    shown by a bounded `repr`. At most `limit` characters, ending in `...`
    when cut; only as much of the value is read as the quote needs.
    """
    parts: list[str] = []
    size = 0

    def emit(text: str) -> bool:
        nonlocal size
        parts.append(text)
        size += len(text)
        return size <= limit

    def walk(item: Any, depth: int) -> bool:
        if item is None or isinstance(item, bool):
            return emit(json.dumps(item))
        if isinstance(item, str):
            return emit(_json_string(item, limit))
        if isinstance(item, int):
            # Python refuses to print an int of over 4,300 digits.
            if item.bit_length() > 4096:
                return emit(f"<an integer of {item.bit_length():,} bits>")
            return emit(str(item))
        if isinstance(item, float) and item == item and item not in (1e999, -1e999):
            return emit(json.dumps(item))
        if type(item) is list:
            if depth >= _QUOTE_DEPTH:
                return emit("[...]")
            if not emit("["):
                return False
            for position, element in enumerate(item):
                if position and not emit(", "):
                    return False
                if not walk(element, depth + 1):
                    return False
            return emit("]")
        if type(item) is dict and all(isinstance(key, str) for key in item):
            if depth >= _QUOTE_DEPTH:
                return emit("{...}")
            if not emit("{"):
                return False
            for position, (key, element) in enumerate(item.items()):
                if position and not emit(", "):
                    return False
                if not emit(_json_string(key, limit) + ": "):
                    return False
                if not walk(element, depth + 1):
                    return False
            return emit("}")
        return emit(_BOUNDED_REPR.repr(item))

    walk(value, 0)
    text = "".join(parts)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
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
