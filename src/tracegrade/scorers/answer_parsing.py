"""A model's answer read as a list of IDs: one reading, or none (answer-formats.md)."""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from ..core.fields import is_id_list
from ..literals import BrokenLiteral, ListLiteral, read_literal_at, scan_literals

ReadAs = str
"""The name of a reading, one of `READ_AS_NAMES`."""

MAX_ANSWER_CHARACTERS = 1_000_000
"""A longer answer is unreadable as too long, and is not scanned."""


def _reading_name(
    base: str, lead_in: object = False, period: object = None, mark: object = None
) -> ReadAs:
    """E.g. `lead-in-lines-with-periods-and-marks`; see docs/answer-formats.md."""
    periods = "periods" if base.startswith("lines") else "period"
    removed = [name for name, done in ((periods, period), ("marks", mark)) if done]
    name = f"lead-in-{base}" if lead_in else base
    return f"{name}-with-{'-and-'.join(removed)}" if removed else name


_ANSWER_LINE = "answer-line-"
READ_AS_NAMES: frozenset[ReadAs] = frozenset(
    {"json", "python-list", "single-id", "structured"}
    | {f"{_ANSWER_LINE}json", f"{_ANSWER_LINE}python-list"}
    | {
        _reading_name(base, *flags)
        for base in ("lines", "lines-ignoring-numbers", "commas")
        for flags in product((False, True), repeat=3)
    }
    | {
        _ANSWER_LINE + _reading_name("commas", False, *flags)
        for flags in product((False, True), repeat=2)
    }
)
"""Every name `AnswerReading.read_as` can take."""


class UnreadableAnswer(ValueError):
    """The answer text holds no single, unambiguous list of string IDs."""


@dataclass(frozen=True)
class AnswerReading:
    """The IDs read from an answer text, and which reading found them."""

    ids: list[str]
    read_as: ReadAs


# A candidate: what was found (the IDs, or the text of a JSON value that is no
# list of IDs), its reading, its line, and why it cannot stand alone (or None).
_Candidate = tuple[tuple[str, ...] | str, ReadAs, int, str | None]
# The non-blank, non-fence lines as parallel arrays (objects per line would cost
# more): line numbers, whether a blank line came before, the text outside
# literals, and the pieces of each line where a literal starts, ends or runs.
_Lines = tuple["array[int]", bytearray, list[str], dict[int, tuple[str, ...]]]
# A line read as a list item: its ID, its marker's number, whether it has a
# marker, a final period, and the marks around its ID.
_Item = tuple[str, str | None, bool, bool, str | None]

# A bare ID: word characters with `. : / # -` between. Each pattern is matched
# at one place and cannot backtrack more than once over an item.
_BARE_ID = re.compile(r"\w(?:[\w.:/#-]*\w)?")
_DIGIT = re.compile(r"\d")
_LIST_MARKER = re.compile(r"(?:[-*+\u2022]|(?P<number>[0-9]+)[.)])\s+")
_FENCE = re.compile(r"`{3,}[\w+-]*")
# Emphasis, code or both, closed in reverse; not `_`, which belongs to IDs.
_MARKED = re.compile(r"(?P<open>\*{1,3}`?|`)(?P<inner>[^*`]+)(?P<close>`?\*{1,3}|`)")
# Where a sentence or lead-in ends; a bare ID holds no whitespace, so never split.
_SEGMENT_END = re.compile(r"(?<=[.!?;:])\s+")
# A list marker glued to an ID (`1.C-3`); `1.5` is a number.
_GLUED_MARKER = re.compile(r"[0-9]+\.(?=[^0-9])")
_TOKEN = re.compile(r"[\w.:/#-]+")
_ANSWER_MARKER = re.compile(r"answer[ \t]*:", re.IGNORECASE)
# Where `str.splitlines` ends a line.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Longer numbers are not counted, only read as markers.
_COUNTED_DIGITS = 30
_ADVICE = "answer with a JSON array, or end with a line ANSWER: [...]"
_ODD_LINE = (
    "has no list marker, unlike the other lines of its list, so it may be a "
    "heading or a remark rather than an item",
    "ends in a period, and not every line of its list does, so it may be a "
    "sentence among the IDs",
    "has {} marks around its ID, which are removed only when every line's ID "
    "has the same marks",
)
_NO_DIGIT = (
    'cannot be told from a one-word reply such as "None" or "N/A" (a one-ID '
    "answer without a digit must be a JSON array)"
)
_LONE = "a lone ID is read only as the whole answer"


def _is_bare(item: str) -> bool:
    return _BARE_ID.fullmatch(item) is not None


def _has_digit(item: str) -> bool:
    return _DIGIT.search(item) is not None


def _mark_of(item: str) -> str | None:
    marked = _MARKED.fullmatch(item)
    if marked is None or marked["close"] != marked["open"][::-1]:
        return None
    return marked["open"]


def _unmarked(item: str, mark: str | None) -> str:
    return item[len(mark) : -len(mark)] if mark else item


def _quote(value: Any, limit: int = 80) -> str:
    text = json.dumps(value[:limit])
    if len(text) <= limit and len(value) <= limit:
        return text
    return text[: limit - 3] + "..."


def _line_of(starts: array[int], offset: int) -> int:
    return max(1, min(bisect_right(starts, offset), len(starts) - 1))


def _line_end(starts: array[int], number: int) -> int:
    return starts[min(number, len(starts) - 1)]


def read_answer_ids(text: str, *, structured_key: str | None = None) -> AnswerReading:
    """The one list of IDs in `text`, and how it was read (docs/answer-formats.md);
    with `structured_key`, a text that is one JSON object of that key alone."""
    if len(text) > MAX_ANSWER_CHARACTERS:
        raise UnreadableAnswer(
            f"too long: the answer has {len(text):,} characters, over the "
            f"{MAX_ANSWER_CHARACTERS:,} that are read"
        )
    structured = None if structured_key is None else _structured(text, structured_key)
    if structured is not None:
        return structured
    # Where each line starts, as `str.splitlines` ends them, and the text's length.
    starts = array("q", [0])
    starts.extend(found.end() for found in _LINE_BREAK.finditer(text))
    if starts[-1] != len(text):
        starts.append(len(text))
    reading = _agreed(_answer_line_candidates(text, starts), ", in its ANSWER: lines")
    reading = reading or _agreed(_text_candidates(text, starts))
    if reading is None:
        raise UnreadableAnswer(_no_list(_lines(text, starts, array("q"), array("q"))))
    return reading


def parse_answer_ids(text: str) -> list[str]:
    """The IDs of the one list in `text`; raises `UnreadableAnswer`."""
    return read_answer_ids(text).ids


def _agreed(candidates: Iterable[_Candidate], among: str = "") -> AnswerReading | None:
    """The list every candidate gives; None when there is none. The first to
    disagree raises, keeping work bounded."""
    first: _Candidate | None = None
    readable: _Candidate | None = None
    for candidate in candidates:
        if first is None:
            first = candidate
        elif isinstance(first[0], str) and isinstance(candidate[0], str):
            continue  # the first value that is no list is refused alone
        elif isinstance(candidate[0], str) or candidate[0] != first[0]:
            raise UnreadableAnswer(_disagreement(first, candidate) + among)
        if readable is None and candidate[3] is None:
            readable = candidate
    if first is None:
        return None
    if isinstance(first[0], str):
        raise UnreadableAnswer(f"{_no_ids(first)}{among}")
    if readable is None:
        raise UnreadableAnswer(first[3] or "")
    return AnswerReading(list(readable[0]), readable[1])


def _no_ids(value: _Candidate) -> str:
    return (
        f"the JSON value {_quote(value[0])} (line {value[2]}) is no list of string IDs"
    )


def _disagreement(one: _Candidate, other: _Candidate) -> str:
    first, second = sorted((one, other), key=lambda candidate: candidate[2])
    if not isinstance(first[0], str) and not isinstance(second[0], str):
        return (
            f"two different lists: {_quote(first[0])} (line {first[2]}) and "
            f"{_quote(second[0])} (line {second[2]})"
        )
    value, beside = (first, second) if isinstance(first[0], str) else (second, first)
    return f"{_no_ids(value)}, beside the list {_quote(beside[0])} (line {beside[2]})"


def _literal_candidate(
    text: str, starts: array[int], literal: ListLiteral, read_as: ReadAs = ""
) -> _Candidate:
    found: tuple[str, ...] | str | None = literal.ids
    if found is None:  # a JSON value that is no list, shown in a refusal
        found = text[literal.start : min(literal.end, literal.start + 80)]
    return found, read_as or literal.form, _line_of(starts, literal.start), None


def _broken(text: str, starts: array[int], broken: BrokenLiteral) -> str:
    line = _line_of(starts, broken.start)
    opened = text[broken.start : min(_line_end(starts, line), broken.start + 80)]
    kind = "a JSON object"
    if text[broken.start] == "[":
        kind = "a JSON array, nor a Python list of plain quoted strings"
    return (
        f"the bracketed text {_quote(opened.rstrip())} (line {line}) is not {kind}: "
        "the list it may hold cannot be read without a guess"
    )


def _structured(text: str, key: str) -> AnswerReading | None:
    stripped = text.strip(" \t\r\n")
    if not stripped.startswith("{"):
        return None
    found = read_literal_at(stripped, 0)
    if isinstance(found, BrokenLiteral) or found.end != len(stripped):
        return None
    try:
        value = json.loads(stripped, object_pairs_hook=_object_of_unique_keys)
    except RecursionError:
        raise UnreadableAnswer("the structured answer is nested too deeply") from None
    ids = value.get(key)
    if set(value) != {key} or not is_id_list(ids):
        raise UnreadableAnswer(
            f"the structured answer {_quote(stripped)} is not the object its "
            f"schema asks for: {{{_quote(key)}: [string IDs]}}, and nothing else"
        )
    return AnswerReading(ids, "structured")


def _object_of_unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise UnreadableAnswer(
                f"the structured answer repeats the key {_quote(key)}, so it has "
                "two readings: JSON readers differ on which of its values counts"
            )
        seen.add(key)
    return dict(pairs)


def _answer_line_candidates(text: str, starts: array[int]) -> Iterator[_Candidate]:
    checked = 0  # only a line's first marker can start it
    for marker in _ANSWER_MARKER.finditer(text):
        number = _line_of(starts, marker.start())
        if number == checked:
            continue
        checked = number
        rest = text[marker.end() : _line_end(starts, number)]
        if text[starts[number - 1] : marker.start()].strip() or not rest.strip():
            continue
        at = marker.end() + len(rest) - len(rest.lstrip())
        said = f"the ANSWER: line {number}"
        if text[at] in "[{":
            literal = read_literal_at(text, at)
            if isinstance(literal, BrokenLiteral):
                raise UnreadableAnswer(f"{said}: {_broken(text, starts, literal)}")
            after = text[literal.end : _line_end(starts, _line_of(starts, literal.end))]
            if after.strip():
                raise UnreadableAnswer(
                    f"{said} goes on after its list: {_quote(after.strip())}"
                )
            yield _literal_candidate(text, starts, literal, _ANSWER_LINE + literal.form)
            continue
        listed = _comma_list(rest.strip())
        if isinstance(listed, str):
            raise UnreadableAnswer(
                f"{said} gives {_quote(rest.strip())}, which is no list of IDs: "
                f"{listed}"
            )
        refusal = _doubtful(listed[0])
        if refusal is not None:
            raise UnreadableAnswer(f"{said}: {refusal}")
        read_as = _ANSWER_LINE + _reading_name("commas", False, *listed[1:])
        yield listed[0], read_as, number, None


def _text_candidates(text: str, starts: array[int]) -> Iterator[_Candidate]:
    literal_starts, literal_ends = array("q"), array("q")
    for literal in scan_literals(text):
        if isinstance(literal, BrokenLiteral):
            raise UnreadableAnswer(_broken(text, starts, literal))
        literal_starts.append(literal.start)
        literal_ends.append(literal.end)
        yield _literal_candidate(text, starts, literal)
    yield from _bare_candidates(_lines(text, starts, literal_starts, literal_ends))


def _lines(
    text: str, starts: array[int], literal_starts: array[int], literal_ends: array[int]
) -> _Lines:
    numbers, after_blank = array("q"), bytearray()
    texts: list[str] = []
    pieces: dict[int, tuple[str, ...]] = {}
    blank = False
    literal = 0
    for number in range(1, len(starts)):
        start, end = starts[number - 1], starts[number]
        if literal >= len(literal_starts) or literal_starts[literal] >= end:
            line = text[start:end].strip()
            blank = blank or not line
            if not line or _FENCE.fullmatch(line) is not None:
                continue
        else:
            parts: list[str] = []
            position = start
            while literal < len(literal_starts) and literal_starts[literal] < end:
                parts.append(text[position : literal_starts[literal]].strip())
                position = max(position, literal_ends[literal])
                if literal_ends[literal] > end:
                    break
                literal += 1
            parts.append(text[position:end].strip())
            pieces[len(texts)] = tuple(parts)
            line = " ".join(part for part in parts if part)
        numbers.append(number)
        after_blank.append(blank)
        texts.append(line)
        blank = False
    return numbers, after_blank, texts, pieces


def _item(text: str) -> _Item | None:
    """A line as a list item, if it can be one: without a marker, only when its ID
    holds a digit (`Answer`, `Done` are headings as often as IDs)."""
    marker = _LIST_MARKER.match(text)
    rest = text[marker.end() :] if marker else text
    period = rest.endswith(".")
    mark = _mark_of(rest.removesuffix("."))
    ident = _unmarked(rest.removesuffix("."), mark)
    if not _is_bare(ident) or (marker is None and not _has_digit(ident)):
        return None
    return ident, marker["number"] if marker else None, marker is not None, period, mark


def _bare_candidates(lines: _Lines) -> Iterator[_Candidate]:
    """Each run of item lines (agreeing on marker, period and marks; numbers
    counted when each is one more), and each comma list of any other line."""
    _, after_blank, texts, pieces = lines
    ids: list[str] = []
    first = 0
    head: _Item = ("", None, False, False, None)
    last: str | None = None
    counted = True
    for index, text in enumerate(texts):
        item = None if index in pieces else _item(text)
        if ids and (
            item is None
            or after_blank[index]
            or (item[1] is not None and item[1] == head[1] and last != head[1])
        ):
            yield _run_candidate(lines, first, tuple(ids), head, counted)
            ids = []
        if item is None:
            yield from _comma_candidates(lines, index)
            continue
        number = item[1]
        if not ids:
            ids, first, head, last = [item[0]], index, item, number
            counted = number is None or len(number) <= _COUNTED_DIGITS
            continue
        _check_agrees(lines, first, head, index, item)
        ids.append(item[0])
        if counted and (last is not None or number is not None):
            counted = (
                last is not None
                and number is not None
                and len(number) <= _COUNTED_DIGITS
                and int(number) == int(last) + 1
            )
        last = number
    if ids:
        yield _run_candidate(lines, first, tuple(ids), head, counted)


def _check_agrees(
    lines: _Lines, first: int, head: _Item, index: int, item: _Item
) -> None:
    if item[2] != head[2]:
        odd, problem = (first if item[2] else index), _ODD_LINE[0]
    elif item[3] != head[3]:
        odd, problem = (index if item[3] else first), _ODD_LINE[1]
    elif item[4] != head[4]:
        odd = index if item[4] else first
        problem = _ODD_LINE[2].format(_quote(item[4] or head[4]))
    else:
        return
    numbers, _, texts, _ = lines
    raise UnreadableAnswer(f"line {numbers[odd]}, {_quote(texts[odd])}, {problem}")


def _run_candidate(
    lines: _Lines, first: int, ids: tuple[str, ...], head: _Item, counted: bool
) -> _Candidate:
    numbers, _, texts, _ = lines
    end = first + len(ids)
    refusal: str | None
    if len(ids) > 1:
        refusal, lead_in = _whole_text_refusal(lines, first, end, lead_in_allowed=True)
        refusal = refusal or _lead_in_refusal(lead_in, ids)
        base = "lines" if counted else "lines-ignoring-numbers"
        read_as = _reading_name(base, lead_in is not None, head[3], head[4])
        return ids, read_as, numbers[first], refusal
    if head[2] or head[3] or head[4]:
        refusal = (
            f"the single line {_quote(texts[first])} is not read as a one-ID "
            f"list: {_LONE}, with no list marker, final period, emphasis or code "
            "marks"
        )
    else:
        refusal, _ = _whole_text_refusal(lines, first, end, lead_in_allowed=False)
    return ids, "single-id", numbers[first], refusal or _doubtful(ids)


def _whole_text_refusal(
    lines: _Lines, first: int, end: int, *, lead_in_allowed: bool
) -> tuple[str | None, str | None]:
    """Why lines `first` to `end` are not the whole text (None when they are),
    and the lead-in line before them, if any."""
    numbers, _, texts, _ = lines
    lead_in = first == 1 and lead_in_allowed and _is_lead_in(lines, 0)
    other = 0 if first > 0 and not lead_in else end
    if other == end == len(texts):
        return None, texts[0] if lead_in else None
    where = "before" if other < first else "after"
    on = f"line {numbers[first]}"
    if end - first > 1:
        on = f"lines {numbers[first]}-{numbers[end - 1]}"
    return (
        f"line {numbers[other]}, {_quote(texts[other])}, stands {where} the "
        f"list on {on} and is not part of it: beside a list of bare IDs, a "
        "heading, a sign-off or a remark leaves it unclear what the list is; "
        f"{_ADVICE}"
    ), None


def _is_lead_in(lines: _Lines, index: int) -> bool:
    return index not in lines[3] and lines[2][index].endswith(":")


def _lead_in_refusal(lead_in: str | None, ids: Sequence[str]) -> str | None:
    if lead_in is None:
        return _doubtful(ids)
    if _is_bare(lead_in[:-1]) and _has_digit(lead_in):
        return (
            f"the lead-in {_quote(lead_in)} is itself an ID, so it may be the "
            "first of the list rather than lead in to it"
        )
    # An ID of the list the lead-in names: it may give another list.
    wanted = set(ids)
    words = (token.group().rstrip(".:/#-") for token in _TOKEN.finditer(lead_in))
    named = next((word for word in words if word in wanted), None)
    if named is None:
        return _doubtful(ids)
    return (
        f"the lead-in {_quote(lead_in)} names {_quote(named)}, an ID of the list "
        "after it, so it may give another list of the same IDs"
    )


def _comma_list(segment: str) -> tuple[tuple[str, ...], bool, str | None] | str:
    """`segment` as comma-separated bare IDs (a final period, the same marks on
    each allowed): the IDs, the period and the marks; else why it is none."""
    items = [item.strip() for item in segment.removesuffix(".").split(",")]
    mark = _mark_of(items[0])
    if mark is None or any(_mark_of(item) != mark for item in items):
        mark = None
    for number, item in enumerate(items, 1):
        if _is_bare(_unmarked(item, mark)):
            continue
        if not item:
            return f"item {number} is empty"
        if mark is None and _mark_of(item) is not None:
            return (
                f"item {number}, {_quote(item)}, has marks around it, which are "
                "removed only when every item has the same marks"
            )
        return f"item {number}, {_quote(item)}, is not a bare ID"
    return tuple(_unmarked(item, mark) for item in items), segment.endswith("."), mark


def _segments(piece: str) -> list[str]:
    return [segment for segment in _SEGMENT_END.split(piece) if segment]


def _doubtful(ids: Sequence[str]) -> str | None:
    with_digit = next((item for item in ids if _has_digit(item)), None)
    without = next((item for item in ids if not _has_digit(item)), None)
    if len(ids) == 1 and without is not None:
        return f"the lone ID {_quote(without)} has no digit, so it {_NO_DIGIT}"
    if with_digit is not None and without is not None:
        return (
            f"the ID {_quote(without)} has no digit, unlike {_quote(with_digit)}, "
            "so it may be a word of the sentence (`etc.`) rather than an ID"
        )
    glued = next(filter(None, map(_GLUED_MARKER.match, ids)), None)
    if glued is not None:
        return (
            f"the ID {_quote(glued.string)} could be the list marker "
            f"{_quote(glued.group())} glued to the ID "
            f"{_quote(glued.string[glued.end() :])}; a marker must be followed by "
            "whitespace"
        )
    # A lead-in glued to an ID (`IDs:C-3`), unless all share it (`PMID:1, PMID:2`).
    first = ids[0] if ids else ""
    prefix = first[: first.index(":") + 1] if ":" in first else ""
    if not prefix or (len(ids) >= 2 and all(i.startswith(prefix) for i in ids)):
        return None
    return (
        f"the first ID {_quote(first)} could be the lead-in {_quote(prefix)} "
        f"glued to the ID {_quote(first[len(prefix) :])}; a lead-in's colon must "
        "be followed by a space or a line break"
    )


def _comma_candidates(lines: _Lines, index: int) -> Iterator[_Candidate]:
    numbers, _, texts, pieces = lines
    number = numbers[index]
    for piece in pieces.get(index, (texts[index],)):
        segments = _segments(piece)
        for position, segment in enumerate(segments):
            if segment.endswith(":"):
                continue
            listed = _comma_list(segment)
            after_lead_in = position > 0 and segments[position - 1].endswith(":")
            if isinstance(listed, str) or len(listed[0]) < 2:
                if after_lead_in and type(listed) is tuple and _has_digit(listed[0][0]):
                    after = _quote(segments[position - 1])
                    why = f"the lone ID after {after} (line {number}) is not read as a "
                    why += f"list: {_LONE}, with nothing around it"
                    yield listed[0], "single-id", number, why
                continue
            lead_in = None
            if (
                index not in pieces
                and position == len(segments) - 1
                and (position == 0 or after_lead_in)
            ):
                # Joined once a line: per sentence, a long line costs its square.
                lead_in = " ".join(segments[:position]) or None
                refusal, lead_in_line = _whole_text_refusal(
                    lines, index, index + 1, lead_in_allowed=lead_in is None
                )
                lead_in = lead_in or lead_in_line
                refusal = refusal or _lead_in_refusal(lead_in, listed[0])
            else:
                refusal = (
                    f"the comma list {_quote(segment)} (line {number}) is part "
                    f"of a sentence, not the whole answer; {_ADVICE}"
                )
            lead = position > 0 or lead_in is not None
            read_as = _reading_name("commas", lead, *listed[1:])
            yield listed[0], read_as, number, refusal


def _no_list(lines: _Lines) -> str:
    numbers, _, texts, _ = lines
    if not texts:
        return "the answer text is empty"
    if len(texts) > 1:
        index = next((at for at, text in enumerate(texts) if _item(text) is None), 0)
        text = texts[index]
        if _is_bare(text):
            problem = (
                "has no list marker and no digit, so it may be a heading or a word "
                "of prose: lines without a marker are read as IDs only when each "
                "holds a digit"
            )
        elif index == 0 and _is_lead_in(lines, 0):
            problem = "is a lead-in, and no list of IDs follows it"
        else:
            problem = "is neither an ID on a line of its own nor a comma list"
        return f"no list of IDs: line {numbers[index]}, {_quote(text)}, {problem}"
    text = texts[0]
    if _is_bare(text):
        return (
            f"no list of IDs: the single word {_quote(text)} has no digit, so "
            f"it is not read as a one-ID list: it {_NO_DIGIT}"
        )
    segments = _segments(text)
    if len(segments) > 1 and segments[-2].endswith(":"):
        listed = _comma_list(segments[-1])
        reason = listed if isinstance(listed, str) else "it is a single item"
        return (
            f"no list of IDs: the lead-in {_quote(' '.join(segments[:-1]))} is "
            f"followed by {_quote(segments[-1])}, which is no comma list "
            f"({reason})"
        )
    as_commas = _comma_list(text) if "," in text else None
    if isinstance(as_commas, str):
        return f"no list of IDs: read as a comma list, {as_commas}"
    return f"no list of IDs in the text {_quote(text)}; {_ADVICE}"
