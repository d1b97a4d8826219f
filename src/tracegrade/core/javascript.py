"""JavaScript semantics the reference evaluators rely on, where Python differs.

Only `Array.prototype.sort()` needs help. With no comparator it orders
strings by UTF-16 code units, while Python orders by code points: the two
disagree once an astral character (stored by JavaScript as a surrogate pair,
0xD800-0xDBFF) meets a BMP character at or above U+E000. `Set`, `includes()`
and `===` on strings are exact code-unit equality, which Python's `str`
equality already is for strings as `json.loads` makes them.
"""

from __future__ import annotations

from codecs import utf_16_be_encode
from collections.abc import Iterable


def _utf16_code_units(text: str) -> bytes:
    # Big-endian bytes compare like the code units they encode. The codec
    # function itself, because `str.encode` looks the codec up on every call.
    return utf_16_be_encode(text, "surrogatepass")[0]


def js_sorted(strings: Iterable[str]) -> list[str]:
    """Return the strings in the order JavaScript's default `sort()` gives."""
    ordered = list(strings)
    if len(ordered) > 1:
        ordered.sort(key=_utf16_code_units)
    return ordered
