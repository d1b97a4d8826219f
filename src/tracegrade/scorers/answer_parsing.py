"""A model's answer text read as a list of IDs: one reading, or none.

Every candidate list must agree, or the answer is refused (docs/answer-formats.md)."""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import Any, NamedTuple

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


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A list one reading finds, or (`ids` None) a JSON value that is none but
    still makes the answer ambiguous; `refusal` says why it cannot stand alone."""

    ids: tuple[str, ...] | None
    read_as: ReadAs
    line: int
    refusal: str | None = None
    value: str = ""

    @property
    def shown(self) -> str:
        return _quote(self.value) if self.ids is None else _shown_ids(self.ids)


class _Candidates:
    """The candidates so far; the first to disagree raises, keeping work bounded."""

    def __init__(self, among: str = "") -> None:
        self.among = among
        self.first: _Candidate | None = None
        self.readable: _Candidate | None = None

    def add(self, candidate: _Candidate) -> None:
        first = self.first
        if first is None:
            self.first = candidate
        elif candidate.ids is None or candidate.ids != first.ids:
            raise UnreadableAnswer(_disagreement(first, candidate) + self.among)
        if self.readable is None and candidate.refusal is None:
            self.readable = candidate

    def add_literal(
        self, layout: _Layout, literal: ListLiteral, read_as: ReadAs | None = None
    ) -> None:
        if self.readable is not None and literal.ids == self.readable.ids:
            return  # the list already read, repeated
        value = ""
        if literal.ids is None:
            value = layout.text[literal.start : min(literal.end, literal.start + 80)]
        line = layout.line_of(literal.start)
        self.add(_Candidate(literal.ids, read_as or literal.form, line, None, value))

    def reading(self) -> AnswerReading | None:
        """The list they agree on; None when there is no candidate at all."""
        first = self.first
        if first is None:
            return None
        if first.ids is None:
            raise UnreadableAnswer(
                f"the JSON value {first.shown} (line {first.line}) is no list of "
                f"string IDs{self.among}"
            )
        if self.readable is None or self.readable.ids is None:
            raise UnreadableAnswer(first.refusal or "")
        return AnswerReading(list(self.readable.ids), self.readable.read_as)


def _disagreement(one: _Candidate, other: _Candidate) -> str:
    first, second = sorted((one, other), key=lambda candidate: candidate.line)
    if first.ids is not None and second.ids is not None:
        return (
            f"two different lists: {first.shown} (line {first.line}) and "
            f"{second.shown} (line {second.line})"
        )
    value, beside = (first, second) if first.ids is None else (second, first)
    kind = "the list" if beside.ids is not None else "the JSON value"
    return (
        f"the JSON value {value.shown} (line {value.line}) is no list of string "
        f"IDs, beside {kind} {beside.shown} (line {beside.line})"
    )


# --- Lines, items and bare IDs -------------------------------------------------

# A bare ID: word characters with `. : / # -` between. Each pattern is matched
# at one place and cannot backtrack more than once over an item.
_BARE_ID = re.compile(r"\w[\w.:/#-]*")
_WORD = re.compile(r"\w")
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


def _is_bare(item: str) -> bool:
    return _BARE_ID.fullmatch(item) is not None and _WORD.match(item[-1]) is not None


def _has_digit(item: str) -> bool:
    return _DIGIT.search(item) is not None


def _mark_of(item: str) -> str | None:
    """The emphasis or code marks around `item` (`**`, a backtick), if any."""
    marked = _MARKED.fullmatch(item)
    if marked is None or marked["close"] != marked["open"][::-1]:
        return None
    return marked["open"]


def _unmarked(item: str, mark: str | None) -> str:
    return item[len(mark) : -len(mark)] if mark else item


def _quote(value: Any, limit: int = 80) -> str:
    """JSON text of `value`, cut short from a bounded slice, however long it is."""
    text = json.dumps(value[:limit])
    if len(text) <= limit and len(value) <= limit:
        return text
    return text[: limit - 3] + "..."


def _shown_ids(ids: Sequence[str], limit: int = 80) -> str:
    """`_quote` of a list, dumping only as many items as are shown."""
    shown: list[str] = []
    length = 0
    for item in ids:
        if length > limit:
            shown.append("...")
            break
        shown.append(item)
        length += len(item) + 4
    return _quote(shown, limit)


class _Layout:
    """A text's lines, as `str.splitlines` ends them, found when first asked."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def starts(self) -> array[int]:
        """The offset where each line starts, and the text's length."""
        starts = array("q", [0])
        starts.extend(found.end() for found in _LINE_BREAK.finditer(self.text))
        if starts[-1] != len(self.text):
            starts.append(len(self.text))
        return starts

    def line_of(self, offset: int) -> int:
        starts = self.starts
        return max(1, min(bisect_right(starts, offset), len(starts) - 1))

    def line_end(self, number: int) -> int:
        return self.starts[min(number, len(self.starts) - 1)]


class _Lines:
    """The non-blank, non-fence lines: number, blank before, text outside literals.

    Parallel arrays, as a long answer of short lines would cost more in objects."""

    def __init__(self, layout: _Layout, starts: array[int], ends: array[int]) -> None:
        self.numbers = array("q")
        self.after_blank = bytearray()
        self.texts: list[str] = []
        self.pieces: dict[int, tuple[str, ...]] = {}
        self._blank = False
        text = layout.text
        literal = 0
        bounds = layout.starts
        for number in range(1, len(bounds)):
            start, end = bounds[number - 1], bounds[number]
            if literal >= len(starts) or starts[literal] >= end:
                self._add(number, text[start:end].strip())
                continue
            pieces: list[str] = []
            position = start
            while literal < len(starts) and starts[literal] < end:
                pieces.append(text[position : max(position, starts[literal])].strip())
                position = max(position, ends[literal])
                if ends[literal] > end:
                    break
                literal += 1
            pieces.append(text[position:end].strip() if position < end else "")
            self.pieces[len(self.texts)] = tuple(pieces)
            self._append(number, " ".join(piece for piece in pieces if piece))

    def _add(self, number: int, text: str) -> None:
        if not text:
            self._blank = True
        elif _FENCE.fullmatch(text) is None:
            self._append(number, text)

    def _append(self, number: int, text: str) -> None:
        self.numbers.append(number)
        self.after_blank.append(self._blank)
        self.texts.append(text)
        self._blank = False

    def __len__(self) -> int:
        return len(self.texts)

    def literal(self, index: int) -> bool:
        """Whether a literal starts, ends or runs on the line."""
        return index in self.pieces

    def lead_in(self, index: int) -> bool:
        """Whether the line can lead in to a list: prose ending in a colon."""
        return index not in self.pieces and self.texts[index].endswith(":")


class _Item(NamedTuple):
    """One line read as a list item: its ID and what surrounded it."""

    ident: str
    number: str | None
    marker: bool
    period: bool
    mark: str | None


def _item(text: str) -> _Item | None:
    """A line as a list item, if it can be one: without a marker, only when its ID
    holds a digit (`Answer`, `Done` are headings as often as IDs)."""
    marker = _LIST_MARKER.match(text)
    rest = text[marker.end() :] if marker else text
    period = rest.endswith(".")
    core = rest[:-1] if period else rest
    mark = _mark_of(core)
    ident = _unmarked(core, mark)
    if not _is_bare(ident) or (marker is None and not _has_digit(ident)):
        return None
    number = marker["number"] if marker else None
    return _Item(ident, number, marker is not None, period, mark)


class _Run:
    """Item lines in a row, read as one list; `add` refuses a line whose marker,
    period or marks differ from the others', as it may be no item."""

    def __init__(self, lines: _Lines, index: int, item: _Item) -> None:
        self.lines = lines
        self.first = index
        self.head = item
        self.end = index + 1
        self.ids = [item.ident]
        self.last_number = item.number
        # Numbers that agree with the line order: none, or one more each line.
        self.counted = item.number is None or len(item.number) <= _COUNTED_DIGITS

    def add(self, index: int, item: _Item) -> None:
        head = self.head
        if item.marker != head.marker:
            odd = index if not item.marker else self.first
            problem = (
                "has no list marker, unlike the other lines of its list, so it "
                "may be a heading or a remark rather than an item"
            )
        elif item.period != head.period:
            odd = index if item.period else self.first
            problem = (
                "ends in a period, and not every line of its list does, so it "
                "may be a sentence among the IDs"
            )
        elif item.mark != head.mark:
            odd, mark = (index, item.mark) if item.mark else (self.first, head.mark)
            problem = (
                f"has {_quote(mark)} marks around its ID, which are removed only "
                "when every line's ID has the same marks"
            )
        else:
            self.ids.append(item.ident)
            self._count(item.number)
            self.end = index + 1
            return
        number, text = self.lines.numbers[odd], self.lines.texts[odd]
        raise UnreadableAnswer(f"line {number}, {_quote(text)}, {problem}")

    def continued_by(self, index: int, item: _Item) -> bool:
        """Not after a blank line, nor numbered afresh (`1. 2.` then `1.`)."""
        if self.lines.after_blank[index]:
            return False
        first, last = self.head.number, self.last_number
        return item.number is None or item.number != first or last == first

    def _count(self, number: str | None) -> None:
        last, self.last_number = self.last_number, number
        if not self.counted or (last is None and number is None):
            return
        self.counted = (
            last is not None
            and number is not None
            and len(number) <= _COUNTED_DIGITS
            and int(number) == int(last) + 1
        )


class _CommaList(NamedTuple):
    """A comma list read from a segment of a line."""

    ids: tuple[str, ...]
    period: bool
    mark: str | None


def _comma_list(segment: str, *, least: int = 2) -> _CommaList | str:
    """`segment` as comma-separated bare IDs (a final period, the same marks on
    each allowed); else why it is none."""
    period = segment.endswith(".")
    items = [item.strip() for item in segment.removesuffix(".").split(",")]
    if len(items) < least:
        return "it has no comma"
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
    ids = tuple(_unmarked(item, mark) for item in items)
    return _CommaList(ids, period, mark)


def _segments(piece: str) -> list[str]:
    """A piece of a line cut into sentences and lead-ins."""
    return [segment for segment in _SEGMENT_END.split(piece) if segment]


def _doubtful(ids: Sequence[str]) -> str | None:
    """Why a bare list's IDs may be read another way, if they may."""
    with_digit = next((item for item in ids if _has_digit(item)), None)
    without = next((item for item in ids if not _has_digit(item)), None)
    if len(ids) == 1 and without is not None:
        return (
            f"the lone ID {_quote(without)} has no digit, so it cannot be told "
            'from a one-word reply such as "None" or "N/A" (a one-ID answer '
            "without a digit must be a JSON array)"
        )
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


# --- The answer as a whole ------------------------------------------------------


def read_answer_ids(text: str, *, structured_key: str | None = None) -> AnswerReading:
    """The one list of IDs in `text`, and how it was read (docs/answer-formats.md).

    `structured_key`: a text that is one JSON object of that key alone is its list."""
    if len(text) > MAX_ANSWER_CHARACTERS:
        raise UnreadableAnswer(
            f"too long: the answer has {len(text):,} characters, over the "
            f"{MAX_ANSWER_CHARACTERS:,} that are read"
        )
    if structured_key is not None:
        structured = _structured(text, structured_key)
        if structured is not None:
            return structured
    layout = _Layout(text)
    marked = _Candidates(among=", in its ANSWER: lines")
    _add_answer_lines(layout, marked)
    reading = marked.reading()
    if reading is not None:
        return reading
    found = _Candidates()
    starts, ends = array("q"), array("q")
    for literal in scan_literals(text):
        if isinstance(literal, BrokenLiteral):
            raise UnreadableAnswer(_broken(layout, literal))
        starts.append(literal.start)
        ends.append(literal.end)
        found.add_literal(layout, literal)
    lines = _Lines(layout, starts, ends)
    _add_bare_candidates(lines, found)
    reading = found.reading()
    if reading is None:
        raise UnreadableAnswer(_no_list(lines))
    return reading


def parse_answer_ids(text: str) -> list[str]:
    """The IDs of the one list in `text`; raises `UnreadableAnswer`."""
    return read_answer_ids(text).ids


def _broken(layout: _Layout, broken: BrokenLiteral) -> str:
    line = layout.line_of(broken.start)
    end = min(layout.line_end(line), broken.start + 80)
    opened = layout.text[broken.start : end].rstrip()
    kind = "a JSON object"
    if layout.text[broken.start] == "[":
        kind = "a JSON array, nor a Python list of plain quoted strings"
    return (
        f"the bracketed text {_quote(opened)} (line {line}) is not {kind}: "
        "the list it may hold cannot be read without a guess"
    )


def _structured(text: str, key: str) -> AnswerReading | None:
    """The list under `key` when `text` is exactly one JSON object, else None."""
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
    """A JSON object, refused when it repeats a key: two readings."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise UnreadableAnswer(
                f"the structured answer repeats the key {_quote(key)}, so it has "
                "two readings: JSON readers differ on which of its values counts"
            )
        seen.add(key)
    return dict(pairs)


def _add_answer_lines(layout: _Layout, found: _Candidates) -> None:
    """The list of each line that starts with `ANSWER:` (any case)."""
    text = layout.text
    checked = 0  # only a line's first marker can start it
    for marker in _ANSWER_MARKER.finditer(text):
        number = layout.line_of(marker.start())
        if number == checked:
            continue
        checked = number
        start, end = layout.starts[number - 1], layout.line_end(number)
        rest = text[marker.end() : end]
        if text[start : marker.start()].strip() or not rest.strip():
            continue
        at = marker.end() + len(rest) - len(rest.lstrip())
        said = f"the ANSWER: line {number}"
        if text[at] in "[{":
            literal = read_literal_at(text, at)
            if isinstance(literal, BrokenLiteral):
                raise UnreadableAnswer(f"{said}: {_broken(layout, literal)}")
            after = text[literal.end : layout.line_end(layout.line_of(literal.end))]
            if after.strip():
                raise UnreadableAnswer(
                    f"{said} goes on after its list: {_quote(after.strip())}"
                )
            found.add_literal(layout, literal, _ANSWER_LINE + literal.form)
            continue
        listed = _comma_list(rest.strip(), least=1)
        if isinstance(listed, str):
            raise UnreadableAnswer(
                f"{said} gives {_quote(rest.strip())}, which is no list of IDs: "
                f"{listed}"
            )
        refusal = _doubtful(listed.ids)
        if refusal is not None:
            raise UnreadableAnswer(f"{said}: {refusal}")
        read_as = _ANSWER_LINE + _reading_name(
            "commas", False, listed.period, listed.mark
        )
        found.add(_Candidate(listed.ids, read_as, number))


# --- Bare lists: lines of one ID each, comma lists, one ID ----------------------


def _add_bare_candidates(lines: _Lines, found: _Candidates) -> None:
    """Each run of item lines, and each comma list of any other line, as candidates."""
    run: _Run | None = None
    for index, text in enumerate(lines.texts):
        item = None if lines.literal(index) else _item(text)
        if run is not None and (item is None or not run.continued_by(index, item)):
            found.add(_run_candidate(run))
            run = None
        if item is None:
            for candidate in _comma_candidates(lines, index):
                found.add(candidate)
        elif run is None:
            run = _Run(lines, index, item)
        else:
            run.add(index, item)
    if run is not None:
        found.add(_run_candidate(run))


def _whole_text_refusal(
    lines: _Lines, first: int, end: int, *, lead_in_allowed: bool
) -> tuple[str | None, str | None]:
    """Why lines `first` to `end` are not the whole text (None when they are),
    and the lead-in line before them, if any."""
    lead_in = first == 1 and lead_in_allowed and lines.lead_in(0)
    if first > 0 and not lead_in:
        other: int | None = 0
    else:
        other = end if end < len(lines) else None
    if other is None:
        return None, lines.texts[0] if lead_in else None
    numbers = lines.numbers
    where = "before" if other < first else "after"
    on = f"line {numbers[first]}"
    if end - first > 1:
        on = f"lines {numbers[first]}-{numbers[end - 1]}"
    return (
        f"line {numbers[other]}, {_quote(lines.texts[other])}, stands {where} the "
        f"list on {on} and is not part of it: beside a list of bare IDs, a "
        "heading, a sign-off or a remark leaves it unclear what the list is; "
        f"{_ADVICE}"
    ), None


def _lead_in_refusal(lead_in: str | None, ids: Sequence[str]) -> str | None:
    if lead_in and _is_bare(lead_in[:-1]) and _has_digit(lead_in):
        return (
            f"the lead-in {_quote(lead_in)} is itself an ID, so it may be the "
            "first of the list rather than lead in to it"
        )
    # An ID of the list the lead-in names: it may give another list.
    wanted = set(ids) if lead_in else set()
    words = (t.group().rstrip(".:/#-") for t in _TOKEN.finditer(lead_in or ""))
    named = next((word for word in words if word in wanted), None)
    if lead_in is None or named is None:
        return _doubtful(ids)
    return (
        f"the lead-in {_quote(lead_in)} names {_quote(named)}, an ID of the list "
        "after it, so it may give another list of the same IDs"
    )


def _run_candidate(run: _Run) -> _Candidate:
    """The item lines of `run` as one list."""
    lines, head, ids, end = run.lines, run.head, tuple(run.ids), run.end
    number = lines.numbers[run.first]
    if len(ids) == 1:
        refusal: str | None = None
        if head.marker or head.period or head.mark:
            refusal = (
                f"the single line {_quote(lines.texts[run.first])} is not read as "
                "a one-ID list: a lone ID is read only as the whole answer, with "
                "no list marker, final period, emphasis or code marks"
            )
        else:
            refusal, _ = _whole_text_refusal(
                lines, run.first, end, lead_in_allowed=False
            )
        return _Candidate(ids, "single-id", number, refusal or _doubtful(ids))
    refusal, lead_in = _whole_text_refusal(lines, run.first, end, lead_in_allowed=True)
    refusal = refusal or _lead_in_refusal(lead_in, ids)
    base = "lines" if run.counted else "lines-ignoring-numbers"
    read_as = _reading_name(base, lead_in is not None, head.period, head.mark)
    return _Candidate(ids, read_as, number, refusal)


def _comma_candidates(lines: _Lines, index: int) -> Iterator[_Candidate]:
    """The comma lists in the sentences of a line that is no item."""
    number = lines.numbers[index]
    literal = lines.literal(index)
    for piece in lines.pieces.get(index, (lines.texts[index],)):
        segments = _segments(piece)
        for position, segment in enumerate(segments):
            if segment.endswith(":"):
                continue
            listed = _comma_list(segment)
            after_lead_in = position > 0 and segments[position - 1].endswith(":")
            if isinstance(listed, str):
                lone = _comma_list(segment, least=1)
                if (
                    after_lead_in
                    and isinstance(lone, _CommaList)
                    and _has_digit(lone.ids[0])
                ):
                    yield _Candidate(
                        lone.ids,
                        "single-id",
                        number,
                        f"the lone ID after {_quote(segments[position - 1])} (line "
                        f"{number}) is not read as a list: a lone ID is read only as "
                        "the whole answer, with nothing around it",
                    )
                continue
            whole = not literal and position == len(segments) - 1
            lead_in = None
            if whole and (position == 0 or after_lead_in):
                # Joined once a line: per sentence, a long line costs its square.
                lead_in = " ".join(segments[:position]) or None
                refusal, lead_in_line = _whole_text_refusal(
                    lines, index, index + 1, lead_in_allowed=lead_in is None
                )
                lead_in = lead_in or lead_in_line
                refusal = refusal or _lead_in_refusal(lead_in, listed.ids)
            else:
                refusal = (
                    f"the comma list {_quote(segment)} (line {number}) is part "
                    f"of a sentence, not the whole answer; {_ADVICE}"
                )
            lead = position > 0 or lead_in is not None
            read_as = _reading_name("commas", lead, listed.period, listed.mark)
            yield _Candidate(listed.ids, read_as, number, refusal)


def _no_list(lines: _Lines) -> str:
    """Why a text with no candidate holds no list, as exactly as can be said."""
    if not lines:
        return "the answer text is empty"
    if len(lines) == 1:
        text = lines.texts[0]
        if _is_bare(text):
            return (
                f"no list of IDs: the single word {_quote(text)} has no digit, so "
                "it is not read as a one-ID list: it cannot be told from a "
                'one-word reply such as "None" or "N/A" (a one-ID answer without '
                "a digit must be a JSON array)"
            )
        segments = _segments(text)
        if len(segments) > 1 and segments[-2].endswith(":"):
            listed = _comma_list(segments[-1], least=1)
            reason = listed if isinstance(listed, str) else "it is a single item"
            return (
                f"no list of IDs: the lead-in {_quote(' '.join(segments[:-1]))} is "
                f"followed by {_quote(segments[-1])}, which is no comma list "
                f"({reason})"
            )
        if "," in text:
            listed = _comma_list(text)
            if isinstance(listed, str):
                return f"no list of IDs: read as a comma list, {listed}"
        return f"no list of IDs in the text {_quote(text)}; {_ADVICE}"
    index = next(
        (index for index, text in enumerate(lines.texts) if _item(text) is None), 0
    )
    text = lines.texts[index]
    if _is_bare(text):
        problem = (
            "has no list marker and no digit, so it may be a heading or a word "
            "of prose: lines without a marker are read as IDs only when each "
            "holds a digit"
        )
    elif index == 0 and lines.lead_in(0):
        problem = "is a lead-in, and no list of IDs follows it"
    else:
        problem = "is neither an ID on a line of its own nor a comma list"
    return f"no list of IDs: line {lines.numbers[index]}, {_quote(text)}, {problem}"
