"""JavaScript's `sort()` orders strings by UTF-16 code units, Python by code points."""

from __future__ import annotations

from codecs import utf_16_be_encode
from collections.abc import Iterable


def _utf16_code_units(text: str) -> bytes:
    # Big-endian bytes compare as their code units; the codec function is fastest.
    return utf_16_be_encode(text, "surrogatepass")[0]


def js_sorted(strings: Iterable[str]) -> list[str]:
    """The strings in the order JavaScript's default `sort()` gives."""
    ordered = list(strings)
    if len(ordered) > 1:
        ordered.sort(key=_utf16_code_units)
    return ordered
