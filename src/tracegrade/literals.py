"""List literals in hostile text, in bounded work (docs/answer-formats.md)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal as Kind

from .core.fields import is_id_list
from .lines import reject_constant

Form = Kind["json", "python-list"]

_OPENING = re.compile(r"[\[{]")
_WHITESPACE = re.compile(r"[ \t\r\n]*")
_ARRAY_RUN = re.compile(r"\[[\[ \t\r\n]*")
# One JSON token after whitespace (a string's plain runs matched whole: linear).
_TOKEN = re.compile(
    r'[ \t\r\n]*(?:("[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
    r'[^"\\\x00-\x1f]*)*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null)"
    r"|([\[\]{}:,]))"
)
_NOT_PLAIN = re.compile(r"[\\\x00-\x1f]")
# One item of a Python list, plain and quoted, and the comma after it.
_PYTHON_ITEM = re.compile(
    r"""(?:'([^'\\\x00-\x1f]*)'|"([^"\\\x00-\x1f]*)")[ \t\r\n]*(?:(,)[ \t\r\n]*)?"""
)
# One list of strings (only `repr`'s escapes) and integers: bounded `literal_eval`.
_WS = r"[ \t\r\n]*"
_ESCAPE = r"""\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[\\'"nrt])"""
_REPR_ITEM = (
    rf"""'(?:[^'\\\x00-\x1f]|{_ESCAPE})*'|"(?:[^"\\\x00-\x1f]|{_ESCAPE})*\""""
    r"|-?(?:0|[1-9][0-9]{0,99})"
)
_REPR_LIST = re.compile(
    rf"{_WS}\[{_WS}(?:(?:{_REPR_ITEM}){_WS}(?:,{_WS}|(?=\])))*\]{_WS}"
)


@dataclass(frozen=True)
class ListLiteral:
    """A literal at `text[start:end]`; `ids` its items if an array of strings."""

    start: int
    end: int
    form: Form
    ids: tuple[str, ...] | None


@dataclass(frozen=True)
class BrokenLiteral:
    """A bracket that opens no literal: reading failed at `stop`."""

    start: int
    stop: int


def scan_literals(text: str) -> Iterator[ListLiteral | BrokenLiteral]:
    """Every top-level literal in `text`, and every other bracket, in order."""
    position = 0
    while (opening := _OPENING.search(text, position)) is not None:
        found = read_literal_at(text, opening.start())
        ended = found.end if isinstance(found, ListLiteral) else found.stop
        position = max(ended, found.start + 1)
        yield found


def read_literal_at(text: str, start: int) -> ListLiteral | BrokenLiteral:
    """The literal that begins with the bracket at `text[start]`."""
    as_json = _read_json(text, start)
    if isinstance(as_json, ListLiteral) or text[start] != "[":
        return as_json
    as_python = _read_python_list(text, start)
    if isinstance(as_python, ListLiteral):
        return as_python
    return BrokenLiteral(start, max(as_json.stop, as_python.stop))


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    assert match is not None, "the pattern matches the empty string"
    return match.end()


_DECODER = json.JSONDecoder(parse_constant=reject_constant)


def _read_json(text: str, start: int) -> ListLiteral | BrokenLiteral:
    try:
        value, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        return BrokenLiteral(start, max(error.pos, start + 1))
    except (ValueError, RecursionError):  # NaN, too deep, or an int too long
        return _read_json_by_hand(text, start)
    return ListLiteral(start, end, "json", tuple(value) if is_id_list(value) else None)


# Where `json` raises without saying where it stopped.
def _read_json_by_hand(text: str, start: int) -> ListLiteral | BrokenLiteral:
    closers: list[str] = []
    expect = "value"  # or "value]", "key", "key}", ":", "next"
    position = start
    while True:
        token = _TOKEN.match(text, position)
        if token is None:
            return BrokenLiteral(start, _skip(text, position))
        string, _, mark = token.groups()
        at, position = token.start(token.lastindex or 0), token.end()
        value = expect.startswith("value")
        if value and mark in ("[", "{"):
            # A run of `[` at once: deep nesting is how hostile text slows a parser.
            run = _ARRAY_RUN.match(text, at) if mark == "[" else None
            closers.extend("]" * run.group().count("[") if run else "}")
            position = run.end() if run else position
            expect = "value]" if mark == "[" else "key}"
            continue
        if expect.startswith("key") and string is not None:
            expect = ":"
            continue
        if (expect, mark) in ((":", ":"), ("next", ",")):
            expect = "value" if mark == ":" or closers[-1] == "]" else "key"
            continue
        if expect in ("value]", "key}", "next") and mark == closers[-1]:
            closers.pop()
        elif not (value and mark is None):
            return BrokenLiteral(start, at)
        if not closers:
            return ListLiteral(start, position, "json", None)
        expect = "next"


def _read_python_list(text: str, start: int) -> ListLiteral | BrokenLiteral:
    items: list[str] = []
    position = _skip(text, start + 1)
    while not text.startswith("]", position):
        item = _PYTHON_ITEM.match(text, position)
        if item is None:
            return BrokenLiteral(start, _python_item_failure(text, position))
        single, double, comma = item.groups()
        items.append(single if single is not None else double)
        position = item.end()
        if comma is None and not text.startswith("]", position):
            return BrokenLiteral(start, position)
    return ListLiteral(start, position + 1, "python-list", tuple(items))


def _python_item_failure(text: str, position: int) -> int:
    quote = text[position : position + 1]
    if quote not in ("'", '"'):
        return position
    close = text.find(quote, position + 1)
    if close < 0:
        return len(text)
    not_plain = _NOT_PLAIN.search(text, position + 1, close)
    return not_plain.start() if not_plain is not None else close


def read_repr_list(text: str) -> list[str | int] | None:
    """The items of `text` if exactly one list as `repr` writes it, else None."""
    if _REPR_LIST.fullmatch(text) is None:
        return None
    # A lone surrogate is written as its escape, which UTF-8 source needs.
    source = text.strip(" \t\r\n").encode("utf-8", "backslashreplace").decode()
    try:
        return list(ast.literal_eval(source))
    except SyntaxError:  # an escape past U+10FFFF
        return None
