"""Reading answer text (docs/answer-formats.md): one reading or none."""

from __future__ import annotations

import doctest
import json
import re
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.scorers import UnreadableAnswer, extraction_score, parse_answer_ids
from tracegrade.scorers.answer_parsing import (
    MAX_ANSWER_CHARACTERS,
    READ_AS_NAMES,
    AnswerReading,
    ReadAs,
    read_answer_ids,
)


def test_an_answer_over_the_limit_is_unreadable_as_too_long() -> None:
    text = '["A"]' + " " * MAX_ANSWER_CHARACTERS
    too_long = r"^too long: the answer has 1,000,005 characters"
    with pytest.raises(UnreadableAnswer, match=too_long):
        read_answer_ids(text)
    assert read_answer_ids(text[:MAX_ANSWER_CHARACTERS]).ids == ["A"]


# (text, its reading or why it is refused)
READINGS: list[tuple[str, tuple[list[str], ReadAs] | str]] = [
    ('Sure! The IDs, in order:\n["C", "A"]\nHope this helps.', (["C", "A"], "json")),
    # Any string may be an ID in JSON, spaces and commas included.
    ('["Smith 2019", "a, b", "x\\ny"]', (["Smith 2019", "a, b", "x\ny"], "json")),
    # A repeat is read as written; the grade refuses it.
    ('["A", "A"]', (["A", "A"], "json")),
    # The same list twice is one candidate.
    ('["A", "B"]\n\nFinal answer: ["A", "B"]', (["A", "B"], "json")),
    # A bare list that agrees with the JSON array beside it.
    ('C-3, A-1\n```json\n["C-3", "A-1"]\n```', (["C-3", "A-1"], "json")),
    ("['C', \"A\", 'B',]", (["C", "A", "B"], "python-list")),
    (
        "['Smith 2019', \"it's\", 'a, b', '']",
        (["Smith 2019", "it's", "a, b", ""], "python-list"),
    ),
    ("C-3\nA-1\nB-2", (["C-3", "A-1", "B-2"], "lines")),
    ("C-3\u2028A-1\x85B-2", (["C-3", "A-1", "B-2"], "lines")),
    ("* C\n+ A\n\u2022 B", (["C", "A", "B"], "lines")),
    ("1.5\n2.5", (["1.5", "2.5"], "lines")),
    ("1. **`C-3`**\n2. **`A-1`**", (["C-3", "A-1"], "lines-with-marks")),
    ("1. C\n1. A", (["C", "A"], "lines-ignoring-numbers")),
    ("1. C\n- A", (["C", "A"], "lines-ignoring-numbers")),
    (f"{'9' * 40}. C\n{'9' * 40}0. A", (["C", "A"], "lines-ignoring-numbers")),
    ("IDs:\n\n```\nC-3\nA-1\n```", (["C-3", "A-1"], "lead-in-lines")),
    ("  REQ-7 ,  req-7  ", (["REQ-7", "req-7"], "commas")),
    ("PMID:1, PMID:2", (["PMID:1", "PMID:2"], "commas")),
    ("Sure! Here they are: C-3, A-1", (["C-3", "A-1"], "lead-in-commas")),
    ("```\ninc-0042\n```", (["inc-0042"], "single-id")),
    # The marker: its list is the one candidate, whatever else is said.
    (
        'The source says ["A-1", "C-3"].\nANSWER: ["C-3", "A-1"]',
        (["C-3", "A-1"], "answer-line-json"),
    ),
    (
        "Thinking...\n[C-3?\nanswer: C-3, A-1.",
        (["C-3", "A-1"], "answer-line-commas-with-period"),
    ),
    ("ANSWER: ['C-3']\nANSWER: ['C-3']", (["C-3"], "answer-line-python-list")),
    ('ANSWER: [\n  "C-3",\n  "A-1"\n]', (["C-3", "A-1"], "answer-line-json")),
    # A carriage return between items is whitespace, as in JSON.
    ("['C-3',\r'A-1']", (["C-3", "A-1"], "python-list")),
    # Beside issue 39's odd readings, still read.
    ("1. C-3\n2. A-1", (["C-3", "A-1"], "lines")),
    ("IDs: C-3, A-1", (["C-3", "A-1"], "lead-in-commas")),
    # What has no one reading is refused, and the refusal says why.
    ("", "the answer text is empty"),
    ("```\n```", "the answer text is empty"),
    ("I'm sorry, I can't help with that.", 'item 1, "I\'m sorry", is not a bare ID'),
    ("I cannot help with that.", "no list of IDs in the text"),
    # One word without a digit is a non-answer as often as an ID.
    ("None", 'the single word "None" has no digit'),
    # Lines without markers are IDs only when each holds a digit.
    ("C\nA\nB", 'line 1, "C", has no list marker and no digit'),
    ("- DOC-1", 'the single line "- DOC-1" is not read as a one-ID list'),
    ("ID:DOC-1", 'the first ID "ID:DOC-1" could be the lead-in "ID:"'),
    ("Here is the ID:\nDOC-1", 'line 1, "Here is the ID:", stands before'),
    ("Sure!\nHere are the IDs:\n- C\n- A", 'line 1, "Sure!", stands before'),
    ("Here are the IDs:\n- C\n- A\nHope this helps!", 'line 4, "Hope this helps!"'),
    ("Result: None found", 'the lead-in "Result:" is followed by "None found"'),
    ("C-3, A-1\nHope this helps!", 'line 2, "Hope this helps!", stands after'),
    ("Here. C-3, A-1", 'the comma list "C-3, A-1" (line 1) is part of a sentence'),
    # A lead-in that names the list's IDs may be another list of them.
    ("C-3, A-1 sorted: A-1, C-3", 'the lead-in "C-3, A-1 sorted:" names "C-3"'),
    ("C-3 and A-1, in order:\n- C-3\n- A-1", 'names "C-3", an ID of the list'),
    # Periods and marks go only when every line or item has them.
    ("- C-3\n- A-1.\n- B-2", 'line 2, "- A-1.", ends in a period'),
    ("- **C**\n- A", 'line 1, "- **C**", has "**" marks'),
    ("- C-3\n- A-1\nB-2", 'line 3, "B-2", has no list marker'),
    ("`C`, A", 'item 1, "`C`", has marks around it'),
    ("C, A,", "item 3 is empty"),
    ("Smith 2019, Jones 2020", 'item 1, "Smith 2019", is not a bare ID'),
    # Two lists, in any forms.
    ('["A"] and ["B"]', 'two different lists: ["A"] (line 1) and ["B"] (line 1)'),
    ("- C-3\n- A-1\n\nSorted: A-1, C-3", "two different lists"),
    ('ANSWER: ["A"]\nANSWER: ["B"]', 'two different lists: ["A"] (line 1) and'),
    # JSON that is no list of strings is a candidate of its own.
    ("[1, 2]", 'the JSON value "[1, 2]" (line 1) is no list of string IDs'),
    ('{"ids": ["A", "B"]}', "is no list of string IDs"),
    ('See [1]: ["X"]', 'the JSON value "[1]" (line 1) is no list of string IDs'),
    # The first value that is no list is refused alone, whatever follows.
    ("[1] [2]\nC-3, A-1", 'the JSON value "[1]" (line 1) is no list of string IDs'),
    # A bracket that opens nothing readable may hold a list: refused.
    ("['C' 'A']", "the bracketed text \"['C' 'A']\" (line 1) is not a JSON"),
    ("['C\\\\d', 'A']", "is not a JSON array, nor a Python list"),
    ("[C, A]", 'the bracketed text "[C, A]" (line 1)'),
    ('["A", "B"', "is not a JSON array"),
    ("[" * 5000, "is not a JSON array"),
    ("['C-3\r', 'A-1']", "is not a JSON array"),
    ("{'ids': ['C']}", "is not a JSON object"),
    ('["C"]\nSee [note].', 'the bracketed text "[note]." (line 2)'),
    # The marker settles the answer, so what it gives must be a list.
    ("ANSWER: see above", 'the ANSWER: line 1 gives "see above", which is no list'),
    ('ANSWER: ["A"] and ["B"]', "the ANSWER: line 1 goes on after its list"),
    ("ANSWER: [1]", 'the JSON value "[1]" (line 1) is no list of string IDs, in'),
    ("ANSWER: ID:DOC-1", 'the ANSWER: line 1: the first ID "ID:DOC-1"'),
    ("ANSWER: [C-3, A-1]", 'the ANSWER: line 1: the bracketed text "[C-3, A-1]"'),
    # A long list is shown cut short.
    (
        json.dumps([f"ID-{n}" for n in range(40)]) + '\n["B"]',
        'two different lists: ["ID-0", "ID-1", "ID-2", "ID-3", "ID-4", "ID-5", "',
    ),
    ("Here are the IDs:\nsee below", 'line 1, "Here are the IDs:", is a lead-in'),
    ("I cannot.\nSorry.", 'line 1, "I cannot.", is neither an ID on a line'),
    # Issue 39's odd readings.
    # A word among IDs with digits is prose, not an ID.
    ("C-3, A-1, B-2, etc.", 'the ID "etc" has no digit, unlike "C-3", so it'),
    ("- C-3.\n- A-1.\n- etc.", 'the ID "etc" has no digit, unlike "C-3"'),
    # A lone ID is read only when it holds a digit, on an ANSWER: line too.
    ("ANSWER: None", 'the lone ID "None" has no digit, so it cannot be told'),
    # A number and a period glued to an ID may be a list marker.
    ("1.C-3\n2.A-1", 'the ID "1.C-3" could be the list marker "1." glued'),
    ("C-3, 2.A-1", 'the ID "2.A-1" could be the list marker "2."'),
    # A lead-in that is itself an ID may be the list's first item.
    ("C-3: A-1, B-2", 'the lead-in "C-3:" is itself an ID, so it may be'),
]

# The same, with structured_key="ids".
STRUCTURED: list[tuple[str, tuple[list[str], ReadAs] | str]] = [
    ('{"ids": ["C", "A"]}', (["C", "A"], "structured")),
    (' {"ids": []}\n', ([], "structured")),
    # Any other output is read as usual, for providers that ignore the schema.
    ('["C"]', (["C"], "json")),
    ('{"ids": ["C"], "note": "x"}', "is not the object its schema asks for"),
    ('{"IDs": ["C"]}', "is not the object its schema asks for"),
    ('{"ids": ' + "[" * 2000 + "]" * 2000 + "}", "is nested too deeply"),
    # More than the object is read as any other text.
    ('{"ids": ["C"]} or ["A"]', 'the JSON value "{\\"ids\\": [\\"C\\"]}" (line 1)'),
    # Issue 39: the live task's reply, which was graded on the last list.
    ('{"ids": ["A", "B", "C"], "ids": ["C", "A", "B"]}', 'repeats the key "ids"'),
    ('{"ids": ["C", "A", "B"], "ids": ["C", "A", "B"]}', 'repeats the key "ids"'),
    ('{"ids": ["C"], "note": {"by": "x", "by": "y"}}', 'repeats the key "by", so'),
]


@pytest.mark.parametrize(
    ("text", "read", "structured_key"),
    [*((*row, None) for row in READINGS), *((*row, "ids") for row in STRUCTURED)],
)
def test_an_answer_has_one_reading_or_is_refused_with_why(
    text: str, read: tuple[list[str], ReadAs] | str, structured_key: str | None
) -> None:
    if isinstance(read, str):
        with pytest.raises(UnreadableAnswer, match=re.escape(read)):
            read_answer_ids(text, structured_key=structured_key)
    else:
        reading = read_answer_ids(text, structured_key=structured_key)
        assert reading == AnswerReading(*read)


def text_read_as(name: ReadAs) -> str:
    """A text of the IDs C-1 and A-2 that `name` describes, built from its parts."""
    answer_line = name.startswith("answer-line-")
    name = name.removeprefix("answer-line-")
    lead_in = name.startswith("lead-in-")
    base, _, removed = name.removeprefix("lead-in-").partition("-with-")
    parts = removed.split("-and-")
    items = [f"**{item}**" if "marks" in parts else item for item in ("C-1", "A-2")]
    period = "." if {"periods", "period"} & set(parts) else ""
    bodies = {
        "json": '["C-1", "A-2"]',
        "python-list": "['C-1', 'A-2']",
        "single-id": "C-1",
        "structured": '{"ids": ["C-1", "A-2"]}',
        "commas": ", ".join(items) + period,
        "lines": "\n".join(f"- {item}{period}" for item in items),
        "lines-ignoring-numbers": f"2. {items[0]}{period}\n1. {items[1]}{period}",
    }
    body = bodies[base]
    if answer_line:
        return f"Thinking it over.\nANSWER: {body}"
    return f"IDs:\n{body}" if lead_in else body


@pytest.mark.parametrize("name", sorted(READ_AS_NAMES))
def test_every_read_as_name_is_what_its_parts_say(name: ReadAs) -> None:
    expected = ["C-1"] if name == "single-id" else ["C-1", "A-2"]
    reading = read_answer_ids(text_read_as(name), structured_key="ids")
    assert reading == AnswerReading(expected, name)


# Bare IDs with a digit, so that every bare form can carry them; a few
# letters, so that lists repeat IDs and differ only in order.
bare_ids = st.from_regex(
    r"[A-Za-z\u00e9][A-Za-z0-9\u00e9_.-]{0,4}[0-9]", fullmatch=True
)
PROSE = ["Sure.", "Here you go!", "I read the whole document.", "I hope this helps!"]
HEADINGS = ["Answer", "IDs", "Done", "Sources", "Result"]
LINE_BREAKS = ["\n", "\r\n", "\u2028", "\x85", "\n\n"]
FORMS = ["json", "python", "bullets", "numbers", "plain", "commas", "single"]


@dataclass(frozen=True)
class Built:
    """An answer text, the list it was built around, and whether every
    careful reading must read it (False: refusing it is also right)."""

    text: str
    ids: list[str]
    must_read: bool
    read_as: str


@st.composite
def forms(draw: st.DrawFn, ids: list[str]) -> tuple[str, str, bool]:
    """One way of writing `ids`: the text, its `read_as` without `-with-...`,
    and whether it is bracketed (read wherever it stands)."""
    kind = draw(st.sampled_from(FORMS))
    if kind == "json":
        return json.dumps(ids, indent=draw(st.sampled_from([None, 2]))), "json", True
    if kind == "python":
        quote, trailing = draw(st.sampled_from(["'", '"'])), draw(st.booleans())
        items = ", ".join(f"{quote}{item}{quote}" for item in ids)
        text = f"[{items}{', ' if trailing else ''}]"
        return text, "json" if quote == '"' and not trailing else "python-list", True
    if len(ids) == 1:
        return ids[0], "single-id", False
    if kind == "single":
        kind = "commas"
    period = draw(st.sampled_from(["", "."]))
    mark = draw(st.sampled_from(["", "**", "`"]))
    marked = [f"{mark}{item}{mark}" for item in ids]
    if kind == "commas":
        return ", ".join(marked) + period, "commas", False
    if kind == "bullets":
        bullet = draw(st.sampled_from(["-", "*", "+", "\u2022"]))
        lines = [f"{bullet} {item}{period}" for item in marked]
    elif kind == "numbers":
        lines = [f"{n}. {item}{period}" for n, item in enumerate(marked, 1)]
    else:
        lines = [f"{item}{period}" for item in marked]
    return "\n".join(lines), "lines", False


@st.composite
def answers(draw: st.DrawFn) -> Built:
    ids = draw(st.lists(bare_ids, min_size=1, max_size=5))
    body, read_as, bracketed = draw(forms(ids))
    lines = [body]
    must_read = True
    # A lead-in before the list: a line of its own, or on its line.
    lead_in = draw(st.sampled_from(["", "Here are the IDs:", "In source order:"]))
    if lead_in:
        if read_as.startswith("commas") and draw(st.booleans()):
            lines = [f"{lead_in} {body}"]
        else:
            lines = [lead_in, body]
        if not bracketed:
            read_as = f"lead-in-{read_as}"
    if draw(st.booleans()):
        fence = draw(st.sampled_from(["```", "```json", "```text"]))
        at = 1 if lead_in else 0  # inside the fence: the list, not its lead-in
        lines = [*lines[:at], fence, *lines[at:], "```"]
    # Prose, a heading or a sign-off beside the list: read beside a
    # bracketed list, refused beside a bare one.
    extras = draw(st.lists(st.sampled_from(PROSE + HEADINGS), max_size=2))
    for extra in extras:
        if draw(st.booleans()):
            lines.insert(0, extra)
        else:
            lines.append(extra)
        must_read = must_read and bracketed
    # An echo or an aside: another list, in any form, anywhere.
    other = draw(st.none() | st.lists(bare_ids, min_size=1, max_size=5))
    if other is not None:
        echo, _, echo_bracketed = draw(forms(other))
        if draw(st.booleans()):
            echo, echo_bracketed = f"I left out {json.dumps(other)} on purpose.", True
        # Apart from the list, by a blank line: a bare echo right against a
        # bare list of the same form would be one longer list, to anyone.
        lines.insert(draw(st.integers(0, len(lines))), f"\n{echo}\n")
        # The same list again is one candidate; read only when both are
        # bracketed, since a bare list beside anything is refused.
        must_read = must_read and other == ids and bracketed and echo_bracketed
        read_as = ""
    if not bracketed and len(ids) == 1:
        must_read = must_read and not lead_in and not extras and other is None
    # The marker wins over everything else in the text.
    if draw(st.integers(0, 4)) == 0:
        marked = json.dumps(ids) if draw(st.booleans()) else ", ".join(ids)
        lines.append(f"ANSWER: {marked}")
        must_read = True
        read_as = "answer-line-" + ("json" if marked.startswith("[") else "commas")
    text = draw(st.sampled_from(LINE_BREAKS)).join(lines)
    if draw(st.booleans()):
        before = draw(st.sampled_from(["", "  ", "\n"]))
        text = before + text + draw(st.sampled_from(["", "\n", " \n"]))
    return Built(text, ids, must_read, read_as)


# Around an answer: odd spaces, a NUL, a lone surrogate, stray brackets.
WRAPPERS = ["{}", "{}\u00a0", "\u3000{}", "{}\x00", "{}\ud800"]
WRAPPERS += ["[{}", "{}]", "{{{}", "{}\\", "'{}"]


@settings(max_examples=400)
@given(built=answers(), wrapper=st.sampled_from(WRAPPERS))
def test_an_answer_is_read_as_the_list_it_was_built_around_or_refused(
    built: Built, wrapper: str
) -> None:
    """One draw for both checks: building answers is the cost. Hostile
    characters around an answer never escape as another error."""
    wrapped = wrapper.replace("{}", built.text, 1)
    with suppress(UnreadableAnswer):
        assert read_answer_ids(wrapped).read_as in READ_AS_NAMES
    try:
        reading = read_answer_ids(built.text)
    except UnreadableAnswer:
        assert not built.must_read, f"a plain answer was refused: {built.text!r}"
        return
    assert reading.ids == built.ids, f"misread {built.text!r}"
    if built.must_read and built.read_as:
        assert reading.read_as.split("-with-")[0] == built.read_as


HOSTILE: dict[str, Callable[[int], str]] = {
    "digits then a word": lambda n: "1" * n + " x",
    "a Python list of spaces": lambda n: "['a'" + " " * n + "x]",
    "distinct JSON arrays": lambda n: "".join(f'["a{i}"] ' for i in range(n // 9)),
    "the same JSON array": lambda n: '["a"] ' * (n // 6),
    "ones with a trailing comma": lambda n: "[" + "1," * (n // 2) + "]",
    "unclosed brackets": lambda n: "[" * n,
    "nested brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "Python strings with a trailing comma": lambda n: "[" + "'a'," * (n // 4) + "]",
    "bullets": lambda n: "- a1\n" * (n // 5),
    "plain lines": lambda n: "a1\n" * (n // 3),
    "a comma list with an empty item": lambda n: "a1, " * (n // 4),
    "colons": lambda n: ": " * (n // 2),
    "sentences": lambda n: ". " * (n // 2),
    "ANSWER lines": lambda n: "ANSWER: a1\n" * (n // 11),
    "lists between prose": lambda n: "a1\nb2\nprose here\n" * (n // 17),
    "sentences of a comma list": lambda n: "A-1, B-2. " * (n // 10),
    "lone IDs after lead-ins": lambda n: "Also: B-2. " * (n // 11),
    "ANSWER: markers on one line": lambda n: "x" + "answer:" * (n // 7),
}


def calls_to_read(text: str) -> int:
    """Every Python and C function call made reading `text`."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        with suppress(UnreadableAnswer):
            read_answer_ids(text)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("family", list(HOSTILE))
def test_the_work_grows_linearly_with_the_answer(family: str) -> None:
    """Four times the text, at most four times and a bit the function calls."""
    small, large = (calls_to_read(HOSTILE[family](n)) for n in (5_000, 20_000))
    assert large <= 4.5 * small + 100, (small, large)


def test_a_failure_inside_the_reader_is_an_unreadable_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing the reader meets escapes to the eval, even what no rule foresaw."""

    def exhausted(text: str, **kwargs: Any) -> AnswerReading:
        raise MemoryError("out of memory")

    monkeypatch.setattr("tracegrade.scorers.extraction.read_answer_ids", exhausted)
    score = extraction_score({"source": ["C"]}, {}, answer_text='["C"]')
    assert score.value == {"membership": False, "order": False}
    assert score.reason == "unreadable-answer"
    assert score.metadata is not None
    assert score.metadata["error"]["message"] == (
        "the answer could not be read (MemoryError: out of memory)"
    )


def test_a_recorded_answer_has_no_reading_and_a_data_error_keeps_it() -> None:
    recorded = extraction_score({"source": ["A"], "answer": ["A"]}, {})
    assert "read_as" not in (recorded.metadata or {})
    score = extraction_score({"source": ["A", "A"]}, {}, answer_text="A, B")
    assert score.reason == "duplicate-source-id"
    assert (score.metadata or {})["read_as"] == "commas"
    assert parse_answer_ids("- C\n- A") == ["C", "A"]


def test_the_pages_examples_read_as_shown() -> None:
    """docs/answer-formats.md's `>>>` examples read as the page prints them."""
    page = (Path(__file__).parent.parent / "docs" / "answer-formats.md").read_text()
    examples = doctest.DocTestParser().get_examples(page)
    assert len(examples) == 4
    namespace: dict[str, Any] = {}
    for example in examples:
        # The printed lines, without the fence that closes the block.
        said = [line for line in example.want.splitlines() if line != "```"]
        try:
            shown = repr(eval(example.source, namespace))
        except SyntaxError:
            exec(example.source, namespace)
            continue
        except UnreadableAnswer as refused:
            assert said[-1] == f"{type(refused).__name__}: {refused}"
            continue
        assert said == [shown]
