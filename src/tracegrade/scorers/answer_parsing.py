"""Reading a model's answer text as a list of IDs.

These readings are tried, in this order; the first that applies is the
answer, and the scorer records which one in `Score.metadata["read_as"]`.

1. `"json"`: the one JSON array of strings anywhere in the text, also
   inside a code fence or surrounded by prose. Only top-level JSON values
   count: an array inside another array or inside an object (`[["A"]]`,
   `{"ids": ["A"]}`) is part of that value, not an answer, and a value that
   is not an array of strings (`[1, 2]`, `["A", null]`, `{"a": 1}`) makes
   the answer unreadable. The same array repeated (a model restating its
   answer) is one answer; two different arrays are a guess we refuse to
   make. A JSON array may carry any string as an ID.
2. `"lines"`: otherwise, one ID per line, when the text has two or more
   non-blank lines and every one of them is a bare ID (below).
3. `"lines-with-periods"`: otherwise, the same list with a period at the
   end of every line (`"- A.\\n- B."`); that one period is dropped from
   each line.
4. `"lead-in-lines"` and `"lead-in-lines-with-periods"`: otherwise, one
   lead-in line ending in `:` (`"Here are the IDs:"`), then the rest of
   the text read as 2 or 3 would read it on its own.
5. `"commas"`: otherwise, a comma-separated list of bare IDs on one line,
   with at least one comma.
6. `"single-id"`: otherwise, a text that is one bare ID and nothing else
   (a code fence aside), holding at least one digit (`"MSCU1234565"`,
   `"smith2019a"`).

The bare-list readings (2 to 6) are tried only when the text holds no
JSON array or object at all; they remove exactly this and nothing else:

- whitespace around the whole text, around each line, and (commas) around
  each item; blank lines;
- in the one-ID-per-line readings, one list marker at the start of each
  line, when whitespace follows it: `-`, `*`, `+`, `•`, or a number
  followed by `.` or `)` (`1.`, `12)`). The numbers are not read: the
  order of the lines is the answer's order. A marker can never be part of
  a bare ID, since a bare ID holds no whitespace;
- a code fence around the whole list: a first line of three or more
  backticks (with or without a language name) and a last line of
  backticks; after a lead-in, around the rest of the text;
- in the `-with-periods` readings, the one final period of each line;
  in the `lead-in-` readings, the lead-in line.

Nothing else is changed: no case folding, no change inside an ID, no
sorting, no removal of repeats (a repeated ID fails as a repeated ID).

A bare ID starts and ends with a letter, a digit or `_` (Unicode letters
and digits included), and in between holds only those and `. : / # -`.
So a bare ID has no whitespace, no quotes, brackets, commas or
semicolons, and does not end in sentence punctuation. That is what tells
a list from prose: "I'm sorry, I can't help with that" is one line of
words, not a list of two IDs, and a sentence ending in "." is not an ID.
An ID outside these rules (one with a space, say) can still be answered,
as a JSON array, which is what the prompt asks for.

Why the later readings are safe, given that rule:

- A dropped period or lead-in can never be (part of) an ID the other
  readings would have read: a bare ID ends in a letter, digit or `_`,
  never in `.` or `:`. So these readings only read texts that were
  otherwise unreadable, and an ID that truly ends in `.` (answered bare,
  it was unreadable before) now fails membership instead: a failure
  either way, so the rule costs no answer anything it was owed.
- Periods are dropped only when every line ends in one: that is a
  model's list style. A period on some lines only is a sentence among the
  IDs ("A\\nB\\nDone."), and the text stays unreadable.
- A lead-in is exactly one line, and the list after it must pass the
  same test as on its own (two or more lines, each a bare ID), so no
  sentence is read as an ID. A second line before the list, any line
  after it, a single line after the lead-in ("Result:\\nNone found") or a
  lead-in before a comma list is not read: those are prose as often as
  lists, and telling which is the guess we refuse to make.
- A single ID is the weakest evidence of a list, so nothing around it is
  removed (a list marker or a final period makes it unreadable), and it
  must hold a digit. One-word non-answers ("None", "N/A", "Sorry",
  "unknown", "nil", and their like in other languages) hold none, while
  most IDs hold one: container and ticket numbers, citation keys with a
  year, DOIs, most hashes. A one-ID answer without a digit is answered as
  a JSON array, as the prompt asks.

What is never done is guessing: a text that fits none of the readings is
an `UnreadableAnswer`, and the scorer fails it on both criteria, so a model
neither escapes grading nor is graded on a list it did not clearly give.
A reply that happens to be bare words separated by commas ("No, thanks")
is read as a list of those words; it then fails membership as any wrong
list does, so the rule costs such a reply nothing it was owed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

ReadAs = Literal[
    "json",
    "lines",
    "lines-with-periods",
    "lead-in-lines",
    "lead-in-lines-with-periods",
    "commas",
    "single-id",
]


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
_LIST_MARKER = re.compile(r"(?:[-*+\u2022]|[0-9]+[.)])\s+")
_FENCE_OPEN = re.compile(r"`{3,}[\w+-]*")
_FENCE_CLOSE = re.compile(r"`{3,}")
_DIGIT = re.compile(r"\d")
_NO_JSON = "no JSON array of string IDs"


def _is_id_list(value: Any) -> bool:
    return type(value) is list and all(isinstance(item, str) for item in value)


def read_answer_ids(text: str) -> AnswerReading:
    """The IDs in `text` and how they were read; see the module docstring.

    >>> read_answer_ids('Here you go:\\n```json\\n["C", "A", "B"]\\n```')
    AnswerReading(ids=['C', 'A', 'B'], read_as='json')
    >>> read_answer_ids("1. C\\n2. A\\n3. B")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lines')
    >>> read_answer_ids("Here are the IDs:\\n- C.\\n- A.\\n- B.")
    AnswerReading(ids=['C', 'A', 'B'], read_as='lead-in-lines-with-periods')
    >>> read_answer_ids("C, A, B")
    AnswerReading(ids=['C', 'A', 'B'], read_as='commas')
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
    """A one-ID-per-line list (perhaps after a lead-in), a comma list on one
    line, or one ID alone, of bare IDs only."""
    lines = [line.strip() for line in text.strip().split("\n")]
    # One line and nothing more is never a lead-in: no list follows it.
    if len(lines) > 1 and lines[0].endswith(":"):
        return _list_after_lead_in(lines[0], _content_lines(lines[1:]))
    lines = _content_lines(lines)
    if not lines:
        raise UnreadableAnswer("the answer text is empty")
    if len(lines) >= 2:
        ids, periods = _one_id_per_line(lines, first_number=1)
        return AnswerReading(ids, "lines-with-periods" if periods else "lines")

    line = lines[0]
    if "," in line:
        items = [item.strip() for item in line.split(",")]
        for number, item in enumerate(items, 1):
            if not _BARE_ID.fullmatch(item):
                what = "empty" if not item else f"{_quote(item)}, not a bare ID"
                raise UnreadableAnswer(
                    f"{_NO_JSON}, and item {number} of the comma-separated text is "
                    f"{what}, so the text is not a comma-separated list either"
                )
        return AnswerReading(items, "commas")

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
    if any(
        _BARE_ID.fullmatch(candidate) and _DIGIT.search(candidate)
        for candidate in (unmarked, unmarked.removesuffix("."))
    ):
        raise UnreadableAnswer(
            f"{_NO_JSON}; the single line {_quote(line)} is not read as a one-ID "
            "list: a lone ID is read only as the whole answer, with no list "
            "marker or final period"
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


def _list_after_lead_in(lead_in: str, lines: list[str]) -> AnswerReading:
    """The list after a lead-in line, which must be readable on its own."""
    if len(lines) < 2:
        follows = "one line" if lines else "nothing"
        raise UnreadableAnswer(
            f"{_NO_JSON}, and the lead-in line {_quote(lead_in)} is followed by "
            f"{follows}; a lead-in is read only before a list of two or more "
            "lines, one ID each"
        )
    # The lead-in is line 1, so the numbers in errors are the text's own.
    ids, periods = _one_id_per_line(lines, first_number=2)
    return AnswerReading(
        ids, "lead-in-lines-with-periods" if periods else "lead-in-lines"
    )


def _one_id_per_line(lines: list[str], first_number: int) -> tuple[list[str], bool]:
    """The ID on each line, and whether a final period was dropped from each.

    Raises `UnreadableAnswer` naming the first line that is no bare ID.
    """
    items = [_LIST_MARKER.sub("", line, count=1) for line in lines]
    # A bare ID never ends in ".": no list reads both with and without them.
    periods = all(item.endswith(".") for item in items)
    if periods:
        items = [item[:-1] for item in items]
    numbered = enumerate(zip(lines, items, strict=True), first_number)
    for number, (line, item) in numbered:
        if _BARE_ID.fullmatch(item):
            continue
        if periods:
            problem = "is not a bare ID, even without its final period"
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
    return items, periods


def _quote(value: Any, limit: int = 80) -> str:
    """JSON text of `value`, cut short: exact enough to find, short enough to read."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "AnswerReading",
    "ReadAs",
    "UnreadableAnswer",
    "parse_answer_ids",
    "read_answer_ids",
]
