"""Reading a model's answer text as a list of IDs.

`read_answer_ids` tries each reading in turn, and the score's
`metadata["read_as"]` names the one that found the IDs. The readings, what
each removes from the text and why none can misread an answer are in
docs/answer-formats.md. One rule governs them all: never misread. A text
that could mean two different lists, or that is not clearly a list, is an
`UnreadableAnswer`, and fails both criteria.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NoReturn

ReadAs = str
"""The name of a reading, one of `READ_AS_NAMES`."""


def _reading_name(base: str, *, lead_in: bool, removed: Sequence[str] = ()) -> ReadAs:
    """`lead-in-lines-with-periods-and-marks`: the base reading, whether a
    lead-in was set aside, and what was removed from every item."""
    name = f"lead-in-{base}" if lead_in else base
    return f"{name}-with-{'-and-'.join(removed)}" if removed else name


_LINE_REMOVALS = ((), ("periods",), ("marks",), ("periods", "marks"))
_COMMA_REMOVALS = ((), ("period",), ("marks",), ("period", "marks"))

READ_AS_NAMES: frozenset[ReadAs] = frozenset(
    {
        "json",
        "single-id",
        *(_reading_name("python-list", lead_in=lead_in) for lead_in in (False, True)),
        *(
            _reading_name(base, lead_in=lead_in, removed=removed)
            for base in ("lines", "lines-ignoring-numbers")
            for lead_in in (False, True)
            for removed in _LINE_REMOVALS
        ),
        *(
            _reading_name("commas", lead_in=lead_in, removed=removed)
            for lead_in in (False, True)
            for removed in _COMMA_REMOVALS
        ),
    }
)
"""Every name `AnswerReading.read_as` can take; docs/answer-formats.md
explains each part of a name."""


class UnreadableAnswer(ValueError):
    """The answer text holds no single, unambiguous list of string IDs."""


@dataclass(frozen=True)
class AnswerReading:
    """The IDs read from an answer text, and which reading found them."""

    ids: list[str]
    read_as: ReadAs


def _reject_constant(name: str) -> NoReturn:
    # NaN and Infinity are not JSON; `JSON.parse` rejects them too.
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FAILED_READ_BUDGET = 20
_JSON_START = re.compile(r"[\[{]")

_BARE_ID = re.compile(r"\w(?:[\w.:/#-]*\w)?")
_LIST_MARKER = re.compile(r"(?:[-*+\u2022]|(?P<number>[0-9]+)[.)])\s+")
_FENCE_OPEN = re.compile(r"`{3,}[\w+-]*")
_FENCE_CLOSE = re.compile(r"`{3,}")
_DIGIT = re.compile(r"\d")
# A colon and whitespace: inside a bare ID a colon is never followed by either.
_SAME_LINE_LEAD_IN = re.compile(r":\s+")
# Emphasis (`*`, `**`, `***`), code (a backtick) or both, closed in reverse.
# Neither mark can be part of a bare ID; `_` emphasis can, so it is not one.
_MARKED = re.compile(r"(?P<open>\*{1,3}`?|`)(?P<inner>[^*`]+)(?P<close>`?\*{1,3}|`)")
# Python's plain string literals: quoted, with no backslash or line break,
# so that Python and JSON could not read one differently.
_PYTHON_STRING = r"""'[^'\\\n]*'|"[^"\\\n]*\""""
_PYTHON_LIST = re.compile(
    rf"\[\s*(?:(?:{_PYTHON_STRING})\s*(?:,\s*(?:{_PYTHON_STRING})\s*)*,?\s*)?\]"
)
# Longer numbers are not counted, only read as markers.
_COUNTED_DIGITS = 30
_NO_JSON = "no JSON array of string IDs"


def _is_id_list(value: Any) -> bool:
    return type(value) is list and all(isinstance(item, str) for item in value)


def read_answer_ids(text: str) -> AnswerReading:
    """The IDs in `text` and how they were read (docs/answer-formats.md).

    >>> read_answer_ids('Here you go:\\n```json\\n["C", "A", "B"]\\n```')
    AnswerReading(ids=['C', 'A', 'B'], read_as='json')
    >>> read_answer_ids("['C', 'A', 'B']")
    AnswerReading(ids=['C', 'A', 'B'], read_as='python-list')
    >>> read_answer_ids("1. C\\n2. A\\n3. B")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lines')
    >>> read_answer_ids("3. C\\n1. A\\n2. B")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lines-ignoring-numbers')
    >>> read_answer_ids("Here are the IDs:\\n- **C**.\\n- **A**.\\n- **B**.")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lead-in-lines-with-periods-and-marks')
    >>> read_answer_ids("IDs: C, A, B.")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lead-in-commas-with-period')
    >>> read_answer_ids("INC-0042")
    AnswerReading(ids=['INC-0042'], read_as='single-id')

    Raises `UnreadableAnswer` saying what was found instead.
    """
    found, rejected = _json_values(text)
    if len(found) == 1:
        return AnswerReading(found[0], "json")
    if len(found) > 1:
        listed = " and ".join(_quote(ids) for ids in found[:2])
        raise UnreadableAnswer(
            f"the text holds {len(found)} different ID lists ({listed}"
            f"{', ...' if len(found) > 2 else ''}), so none can be chosen"
        )
    if rejected:
        raise UnreadableAnswer(
            "no JSON array in the text is a list of string IDs; "
            f"the first JSON value is {_quote(rejected[0])}"
        )
    return _bare_list(text)


def parse_answer_ids(text: str) -> list[str]:
    """The IDs in `text`, by the first reading that applies.

    >>> parse_answer_ids('The IDs are ["C", "A", "B"].')
    ['C', 'A', 'B']

    Raises `UnreadableAnswer`; `read_answer_ids` also says which reading
    was used.
    """
    return read_answer_ids(text).ids


def _json_values(text: str) -> tuple[list[list[str]], list[Any]]:
    """The distinct top-level ID lists in `text`, and the other JSON values."""
    found: list[list[str]] = []
    rejected: list[Any] = []
    # Characters failed decodes may read before giving up. Each '[' and '{'
    # is tried, so thousands of unclosed or nested brackets would otherwise
    # cost quadratic time; ordinary prose fails within a few characters.
    budget = _FAILED_READ_BUDGET * (len(text) + 1000)
    start = _JSON_START.search(text)
    while start is not None:
        position = start.start()
        try:
            value, end = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError) as error:
            # A RecursionError (deep nesting) may have read to the end.
            stop = error.pos if isinstance(error, json.JSONDecodeError) else len(text)
            budget -= stop - position + 1
            if budget < 0:
                raise UnreadableAnswer(
                    "too many unclosed or deeply nested brackets to read an ID list"
                ) from None
            start = _JSON_START.search(text, position + 1)
            continue
        if _is_id_list(value):
            if value not in found:
                found.append(value)
        else:
            rejected.append(value)
        start = _JSON_START.search(text, end)
    return found, rejected


def _bare_list(text: str) -> AnswerReading:
    """The readings for a text that holds no JSON value: a Python list, one
    ID per line, a comma list (each perhaps after a lead-in), or one ID."""
    lines = [line.strip() for line in text.strip().split("\n")]
    # One line and nothing more is never a lead-in: no list follows it.
    if len(lines) > 1 and lines[0].endswith(":"):
        return _list_after_lead_in(lines[0], _content_lines(lines[1:]))
    lines = _content_lines(lines)
    if not lines:
        raise UnreadableAnswer("the answer text is empty")
    if _bracketed(lines):
        return AnswerReading(_python_list("\n".join(lines)), "python-list")
    if len(lines) >= 2:
        return _one_id_per_line(lines, first_number=1, lead_in=False)

    line = lines[0]
    lead_in_end = _SAME_LINE_LEAD_IN.search(line)
    if lead_in_end is not None:
        return _list_after_same_line_lead_in(
            line[: lead_in_end.start() + 1], line[lead_in_end.end() :]
        )
    if "," in line:
        return _comma_list(line, lead_in=None)
    if _BARE_ID.fullmatch(line):
        if _DIGIT.search(line):
            return AnswerReading([line], "single-id")
        raise UnreadableAnswer(
            f"{_NO_JSON}; the single word {_quote(line)} has no digit, so it is "
            "not read as a one-ID list: it cannot be told from a one-word reply "
            'such as "None" or "N/A" (a one-ID answer without a digit must be a '
            "JSON array)"
        )
    unmarked = _LIST_MARKER.sub("", line, count=1)
    candidates = (unmarked, unmarked.removesuffix("."), _unmarked(unmarked))
    if any(
        _BARE_ID.fullmatch(candidate) and _DIGIT.search(candidate)
        for candidate in candidates
    ):
        raise UnreadableAnswer(
            f"{_NO_JSON}; the single line {_quote(line)} is not read as a one-ID "
            "list: a lone ID is read only as the whole answer, with no list "
            "marker, final period, emphasis or code marks"
        )
    raise UnreadableAnswer(f"{_NO_JSON} in the text {_quote(text)}")


def _content_lines(lines: list[str]) -> list[str]:
    """The non-blank lines, without a code fence around them all."""
    lines = [line for line in lines if line]
    fenced = (
        len(lines) >= 2
        and _FENCE_OPEN.fullmatch(lines[0]) is not None
        and _FENCE_CLOSE.fullmatch(lines[-1]) is not None
    )
    return lines[1:-1] if fenced else lines


def _bracketed(lines: list[str]) -> bool:
    """Whether the text is in square brackets: a Python list, or nothing.

    No bare ID holds a bracket, so no other reading could read it."""
    return bool(lines) and lines[0].startswith("[") and lines[-1].endswith("]")


def _list_after_lead_in(lead_in: str, lines: list[str]) -> AnswerReading:
    """The list after a lead-in line, which must be readable on its own."""
    if _bracketed(lines):
        ids = _python_list("\n".join(lines))
        return AnswerReading(ids, _reading_name("python-list", lead_in=True))
    if len(lines) >= 2:
        # The lead-in is line 1, so the numbers in errors are the text's own.
        return _one_id_per_line(lines, first_number=2, lead_in=True)
    if len(lines) == 1 and "," in lines[0]:
        return _comma_list(lines[0], lead_in=lead_in)
    follows = "one line with no comma" if lines else "nothing"
    raise UnreadableAnswer(
        f"{_NO_JSON}, and the lead-in line {_quote(lead_in)} is followed by "
        f"{follows}; a lead-in is read only before a list: two or more lines "
        "of one ID each, a comma list or a Python list"
    )


def _list_after_same_line_lead_in(lead_in: str, rest: str) -> AnswerReading:
    """The comma list or Python list after a lead-in on the same line."""
    if rest.startswith("[") and rest.endswith("]"):
        ids = _python_list(rest)
        return AnswerReading(ids, _reading_name("python-list", lead_in=True))
    if "," in rest:
        return _comma_list(rest, lead_in=lead_in)
    raise UnreadableAnswer(
        f"{_NO_JSON}, and the lead-in {_quote(lead_in)} is followed by "
        f"{_quote(rest)}, which is no comma list or Python list; a lead-in on "
        "the line of the answer is read only before one of those"
    )


def _python_list(text: str) -> list[str]:
    """The strings of the Python list literal that `text` is, exactly.

    Only a list of plain quoted strings is read: a backslash, triple quotes
    or two strings side by side (which Python joins into one: a missing
    comma) could each mean another list.
    """
    if _PYTHON_LIST.fullmatch(text):
        ids = ast.literal_eval(text)
        assert _is_id_list(ids), "the pattern admits only lists of strings"
        return list(ids)
    if "\\" in text:
        problem = (
            "holds a backslash, which Python and JSON read differently, so it "
            "is read only in a JSON array"
        )
    else:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            problem = "is no Python list literal"
        else:
            problem = (
                "is a Python list of strings, but not every item is one plain "
                "quoted string: a prefix, triple quotes, or two strings side by "
                "side, which Python joins into one (a missing comma)"
                if _is_id_list(value)
                else "is a Python value, but not a flat list of strings"
            )
    raise UnreadableAnswer(
        f"{_NO_JSON}, and the bracketed text {_quote(text)} {problem}"
    )


def _one_id_per_line(
    lines: list[str], *, first_number: int, lead_in: bool
) -> AnswerReading:
    """The ID on each line, read as docs/answer-formats.md says.

    Raises `UnreadableAnswer` naming the first line that is no bare ID.
    """
    markers = [_LIST_MARKER.match(line) for line in lines]
    items = [
        line[marker.end() :] if marker else line
        for line, marker in zip(lines, markers, strict=True)
    ]
    numbers = [marker["number"] if marker else None for marker in markers]
    # A bare ID never ends in ".": no list reads both with and without them.
    periods = all(item.endswith(".") for item in items)
    if periods:
        items = [item[:-1] for item in items]
    mark = _common_mark(items)
    if mark is not None:
        items = [item[len(mark) : -len(mark)] for item in items]
    numbered = enumerate(zip(lines, items, strict=True), first_number)
    for number, (line, item) in numbered:
        if _BARE_ID.fullmatch(item):
            continue
        own_mark = _mark_of(item)
        if (
            mark is None
            and own_mark is not None
            and _BARE_ID.fullmatch(_unmarked(item))
        ):
            problem = (
                f"has {_quote(own_mark)} marks around its ID, which are removed "
                "only when every line's ID has the same marks"
            )
        elif periods:
            problem = "is not a bare ID, even without its final period"
        elif mark is not None and item.endswith(".") and _BARE_ID.fullmatch(item[:-1]):
            problem = (
                "ends in a period inside its marks, which is dropped only outside "
                "them, at the end of every line"
            )
        elif item.endswith(".") and _BARE_ID.fullmatch(item[:-1]):
            problem = (
                "ends in a period, which is dropped only when every line ends in one"
            )
        else:
            problem = "is not a bare ID"
        raise UnreadableAnswer(
            f"{_NO_JSON}, and non-blank line {number} {_quote(line)} {problem}, "
            "so the text is not a one-ID-per-line list either"
        )
    base = "lines" if _count_up(numbers) else "lines-ignoring-numbers"
    removed = [name for name, done in (("periods", periods), ("marks", mark)) if done]
    return AnswerReading(items, _reading_name(base, lead_in=lead_in, removed=removed))


def _count_up(numbers: list[str | None]) -> bool:
    """Whether the list's numbers agree with its line order: none at all, or
    one on every line, each one more than the line before's."""
    if all(number is None for number in numbers):
        return True
    if any(number is None or len(number) > _COUNTED_DIGITS for number in numbers):
        return False
    values = [int(number) for number in numbers if number is not None]
    return all(after == before + 1 for before, after in pairwise(values))


def _comma_list(line: str, *, lead_in: str | None) -> AnswerReading:
    """The bare IDs of a one-line comma list, perhaps ending in a period."""
    # The final period ends the list, never an ID: a bare ID never ends in one.
    period = line.endswith(".")
    items = [item.strip() for item in line.removesuffix(".").split(",")]
    mark = _common_mark(items)
    if mark is not None:
        items = [item[len(mark) : -len(mark)] for item in items]
    where = (
        "the comma-separated text"
        if lead_in is None
        else f"the comma-separated text after the lead-in {_quote(lead_in)}"
    )
    for number, item in enumerate(items, 1):
        if _BARE_ID.fullmatch(item):
            continue
        if not item:
            what = "empty"
        elif mark is None and _BARE_ID.fullmatch(_unmarked(item)):
            what = (
                f"{_quote(item)}, whose marks are removed only when every item "
                "has the same marks"
            )
        else:
            what = f"{_quote(item)}, not a bare ID"
        raise UnreadableAnswer(
            f"{_NO_JSON}, and item {number} of {where} is {what}, so the text is "
            "not a comma-separated list either"
        )
    removed = [name for name, done in (("period", period), ("marks", mark)) if done]
    name = _reading_name("commas", lead_in=lead_in is not None, removed=removed)
    return AnswerReading(items, name)


def _mark_of(item: str) -> str | None:
    """The emphasis or code marks around `item` (`**`, a backtick), if any."""
    marked = _MARKED.fullmatch(item)
    if marked is None or marked["close"] != marked["open"][::-1]:
        return None
    return marked["open"]


def _unmarked(item: str) -> str:
    """`item` without the marks around it, if it has any."""
    mark = _mark_of(item)
    return item[len(mark) : -len(mark)] if mark is not None else item


def _common_mark(items: list[str]) -> str | None:
    """The marks every item has, the same on each; None if any differs."""
    mark = _mark_of(items[0]) if items else None
    if mark is None or any(_mark_of(item) != mark for item in items):
        return None
    return mark


def _quote(value: Any, limit: int = 80) -> str:
    """JSON text of `value`, cut short: exact enough to find, short enough to read."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "READ_AS_NAMES",
    "AnswerReading",
    "ReadAs",
    "UnreadableAnswer",
    "parse_answer_ids",
    "read_answer_ids",
]
