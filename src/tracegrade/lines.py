"""JSON Lines as every tracegrade reader reads them: numbered, blank or refused."""

from __future__ import annotations

import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar

from .core.errors import LONE_SURROGATE, quote

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

JSON_WHITESPACE = " \t\r\n"

MAX_DEPTH = 100  # far beyond any record, below what Inspect's writer can nest

# Undecodable bytes are read as lone surrogates in U+DC80..U+DCFF
# ("surrogateescape"); strict UTF-8 can never produce them.
ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


class UnsupportedJSON(ValueError):
    """Valid JSON that tracegrade cannot carry into an Inspect log."""


MALFORMED_JSON = "malformed-json"  # not JSON, or not UTF-8 text
UNSUPPORTED_JSON = "unsupported-json"  # JSON no Inspect log can hold
NOT_AN_OBJECT = "not-an-object"


class LineError(Exception):
    """Input a reader refuses, named by file, line (None: whole file) and field."""

    def __init__(
        self,
        path: str,
        line: int | None,
        problem: str,
        *,
        field: str | None = None,
        kind: str | None = None,
    ) -> None:
        self.path, self.line, self.problem = path, line, problem
        self.field, self.kind = field, kind
        where = path if line is None else f"{path}, line {line}"
        # Any: some subclasses are also Inspect's PrerequisiteError, whose
        # `message` is any renderable and which keeps no args.
        self.message: Any = f"{where}: {problem}"
        super().__init__(self.message)
        self.args = (self.message,)


_Error = TypeVar("_Error", bound=LineError)


class RawLine(NamedTuple):
    number: int
    text: str
    bytes_read: int | None  # for a progress bar; None from a pipe


def read_lines(source: str | Path | Traversable) -> Iterator[RawLine]:
    """Each line of a file or pipe, numbered from 1, one in memory at a time."""
    with (
        open(source, "rb")
        if isinstance(source, (str, Path))
        else source.open("rb") as binary
    ):
        seekable = binary.seekable()
        text = io.TextIOWrapper(
            binary, encoding="utf-8", errors="surrogateescape", newline=None
        )
        for number, line in enumerate(text, start=1):
            position = binary.tell() if seekable else None
            yield RawLine(number, line.removesuffix("\n"), position)


def json_object(
    path: str, number: int, text: str, what: str, error: type[_Error]
) -> dict[str, Any]:
    """The JSON object on line `number`, else `error` with its kind; `what`
    names what the line should be."""
    problem, kind = undecodable(text), MALFORMED_JSON
    if problem is None:
        try:
            value = strict_json_loads(text)
        except UnsupportedJSON as unsupported:
            problem = f"JSON that no Inspect log can hold: {unsupported}"
            kind = UNSUPPORTED_JSON
        except ValueError as invalid:
            problem = f"not valid JSON ({invalid})"
        else:
            if type(value) is dict:
                return value
            problem = f"a {what} must be a JSON object, got {quote(value, 80)}"
            kind = NOT_AN_OBJECT
    raise error(path, number, problem, kind=kind)


def json_objects(
    source: str | Path | Traversable, what: str, error: type[_Error]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line's object with its number."""
    path = str(source)
    for raw in read_lines(source):
        if not is_blank(raw.text):
            yield raw.number, json_object(path, raw.number, raw.text, what, error)


def is_blank(text: str) -> bool:
    """A line with nothing but JSON whitespace, which readers skip."""
    return not text.strip(JSON_WHITESPACE)


def undecodable(text: str) -> str | None:
    """Why a line read by `read_lines` is not UTF-8 text, or None if it is."""
    found = ESCAPED_BYTE.search(text)
    if found is None:
        return None
    byte = ord(found.group()) - 0xDC00
    return f"not valid UTF-8 text (byte 0x{byte:02X} at column {found.start() + 1})"


def has_lone_surrogate(text: str) -> bool:
    """A string UTF-8 cannot encode (`json.loads` joins surrogate pairs)."""
    return LONE_SURROGATE.search(text) is not None


def reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]], of_text: bool = False) -> dict[str, Any]:
    """The object, refusing a repeated key; `of_text`: also a key with a lone
    surrogate, which no log can hold."""
    value = dict(pairs)
    if of_text and has_lone_surrogate("".join(value)):  # one search for all keys
        key = next(key for key in value if has_lone_surrogate(key))
        raise UnsupportedJSON(
            f"the object key {json.dumps(key)} holds a lone surrogate, which "
            "no log can hold in a key"
        )
    if len(value) < len(pairs):
        counts = Counter(key for key, _ in pairs)
        repeated = next(key for key, count in counts.items() if count > 1)
        raise ValueError(f"the key {json.dumps(repeated)} appears twice in one object")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise UnsupportedJSON(
            f"the number {text[:40]} is out of range (it would be read as infinity)"
        )
    return value


def _bounded_int(text: str) -> int:
    # Python refuses to parse an int of over 4,300 digits (CVE-2020-10735).
    if len(text.lstrip("-")) > 4300:
        raise UnsupportedJSON(
            f"the number {text[:40]}... has {len(text):,} digits, more than can be read"
        )
    return int(text)


def _depth(value: Any) -> int:  # level by level: no recursion
    depth, level = 0, [value]
    while containers := [item for item in level if isinstance(item, (dict, list))]:
        depth += 1
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


# Made once (`json.loads` with hooks builds one per call); text from UTF-8
# holds a lone surrogate only as an escape, so only such a line's keys are checked.
_STRICT_DECODER, _KEY_CHECKING_DECODER = (
    json.JSONDecoder(
        object_pairs_hook=partial(_unique_keys, of_text=of_text),
        parse_constant=reject_constant,
        parse_float=_finite_float,
        parse_int=_bounded_int,
    )
    for of_text in (False, True)
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def strict_json_loads(text: str) -> Any:
    """`json.loads` as `JSON.parse` reads (no NaN or Infinity), refusing a
    repeated key rather than keep its last value: `ValueError`; valid JSON
    no log can hold: `UnsupportedJSON`."""
    if text.startswith("\ufeff"):  # as `json.loads` refuses it
        raise json.JSONDecodeError(
            "Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0
        )
    decoder = (
        _KEY_CHECKING_DECODER if _SURROGATE_ESCAPE.search(text) else _STRICT_DECODER
    )
    try:
        value = decoder.decode(text)
    except RecursionError:
        # Too deep to tell valid JSON from unclosed brackets: not readable.
        raise ValueError("nested too deeply to read") from None
    # Counting brackets runs in C; only a line with many is walked.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise UnsupportedJSON(f"nested more than {MAX_DEPTH} levels deep")
    return value
