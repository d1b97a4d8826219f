"""Reading answer text, as docs/answer-formats.md documents it: JSON
first, then a whole-text Python list, one ID per line, a comma list (each
perhaps after a lead-in, with final periods, with marks), one lone ID.

Each reading is checked for what it reads, what it removes (list markers,
fences, surrounding whitespace, final periods, marks, a lead-in) and what
it leaves exactly as written; every `read_as` name is checked to be one a
text can get; and the near-misses (refusals, prose, single words without a
digit, non-string JSON, Python lists that could mean two lists, marks or
periods on some items only) are checked to stay unreadable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrade.scorers.answer_parsing as answer_parsing
from tracegrade.scorers import UnreadableAnswer, extraction_score, parse_answer_ids
from tracegrade.scorers.answer_parsing import (
    READ_AS_NAMES,
    AnswerReading,
    ReadAs,
    read_answer_ids,
)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ('["C", "A", "B"]', ["C", "A", "B"]),
        ('```json\n["C", "A", "B"]\n```', ["C", "A", "B"]),
        (
            'Sure! The IDs, in order:\n["C", "A", "B"]\nHope this helps.',
            ["C", "A", "B"],
        ),
        # Any string may be an ID in JSON, spaces and commas included.
        ('["Smith 2019", "a, b", "x\\ny"]', ["Smith 2019", "a, b", "x\ny"]),
        # A JSON array wins over bare-looking lines around it.
        ('A\nB\n["B", "A"]', ["B", "A"]),
        # An object is a top-level value: a list outside it is still read.
        ('{"note": 1} then ["A"]', ["A"]),
    ],
)
def test_a_json_array_is_read_first(text: str, ids: list[str]) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, "json")


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("C\nA\nB", ["C", "A", "B"]),
        ("  C  \n\n  A\r\nB\n", ["C", "A", "B"]),
        ("- C\n- A\n- B", ["C", "A", "B"]),
        ("* C\n+ A\n\u2022 B", ["C", "A", "B"]),
        ("1. C\n2. A\n3. B", ["C", "A", "B"]),
        ("3) C\n4) A", ["C", "A"]),
        ("```\nC\nA\n```", ["C", "A"]),
        ("```text\n- C\n- A\n```", ["C", "A"]),
        # Exactly as written otherwise: case, look-alikes, repeats, order.
        ("inc-20931\nINC-20913\nINC-20913", ["inc-20931", "INC-20913", "INC-20913"]),
        ("smith2019b\nsmith2019a", ["smith2019b", "smith2019a"]),
        (
            "10.1000/xyz.2\nv1.2:alpha#3\n_tmp",
            ["10.1000/xyz.2", "v1.2:alpha#3", "_tmp"],
        ),
        # A marker needs whitespace after it; without, the line is the ID.
        ("1.5\n2.5", ["1.5", "2.5"]),
        ("n\u00e4chste-1\nDOC\u00b72", None),
    ],
)
def test_one_id_per_line_is_read_when_there_is_no_json(
    text: str, ids: list[str] | None
) -> None:
    if ids is None:
        with pytest.raises(UnreadableAnswer, match="line 2"):
            read_answer_ids(text)
    else:
        assert read_answer_ids(text) == AnswerReading(ids, "lines")


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("C, A, B", ["C", "A", "B"]),
        ("C,A,B", ["C", "A", "B"]),
        ("  REQ-7 ,  req-7  ", ["REQ-7", "req-7"]),
        ("B, A, B", ["B", "A", "B"]),
        ("```\nC, A\n```", ["C", "A"]),
    ],
)
def test_a_comma_list_on_one_line_is_read_when_there_is_no_json(
    text: str, ids: list[str]
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, "commas")


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("C.\nA.\nB.", ["C", "A", "B"]),
        ("- C.\n- A.\n- B.", ["C", "A", "B"]),
        ("1. TC-10.\n2. TC-9.", ["TC-10", "TC-9"]),
        ("```\nC.\nA.\n```", ["C", "A"]),
        # Only the final period goes: dots inside an ID stay.
        ("10.1000/xyz.2.\nv1.2.", ["10.1000/xyz.2", "v1.2"]),
        ("inc-20931.\nINC-20913.\nINC-20913.", ["inc-20931", "INC-20913", "INC-20913"]),
    ],
)
def test_a_list_with_a_period_on_every_line_loses_those_periods(
    text: str, ids: list[str]
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, "lines-with-periods")


@pytest.mark.parametrize(
    ("text", "ids", "read_as"),
    [
        ("Here are the IDs:\n- C\n- A\n- B", ["C", "A", "B"], "lead-in-lines"),
        ("IDs:\nC\nA", ["C", "A"], "lead-in-lines"),
        (
            "The container numbers, in order:\n\n1. MSCU1234565\n2. MSCU1234556",
            ["MSCU1234565", "MSCU1234556"],
            "lead-in-lines",
        ),
        ("Here they are:\n```text\nC\nA\n```", ["C", "A"], "lead-in-lines"),
        ("  Not sorted:  \nb\nA\nb", ["b", "A", "b"], "lead-in-lines"),
        (
            "Here are the IDs:\n- C.\n- A.\n- B.",
            ["C", "A", "B"],
            "lead-in-lines-with-periods",
        ),
    ],
)
def test_one_lead_in_line_ending_in_a_colon_is_set_aside(
    text: str, ids: list[str], read_as: ReadAs
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, read_as)


# --- what models commonly write ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ids", "read_as"),
    [
        ("- **C-3**\n- **A-1**\n- **B-2**", ["C-3", "A-1", "B-2"], "lines-with-marks"),
        ("- `C-3`\n- `A-1`\n- `B-2`", ["C-3", "A-1", "B-2"], "lines-with-marks"),
        ("['C-3', 'A-1', 'B-2']", ["C-3", "A-1", "B-2"], "python-list"),
        ('["C-3","A-1","B-2",]', ["C-3", "A-1", "B-2"], "python-list"),
        ("IDs:\nC-3, A-1, B-2", ["C-3", "A-1", "B-2"], "lead-in-commas"),
        ("IDs: C-3, A-1, B-2", ["C-3", "A-1", "B-2"], "lead-in-commas"),
        ("C-3, A-1, B-2.", ["C-3", "A-1", "B-2"], "commas-with-period"),
        # The line order is the answer, and read_as says the numbers were not.
        ("3. C-3\n1. A-1\n2. B-2", ["C-3", "A-1", "B-2"], "lines-ignoring-numbers"),
    ],
)
def test_the_formats_models_commonly_write_are_read(
    text: str, ids: list[str], read_as: ReadAs
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, read_as)


@pytest.mark.parametrize(
    ("text", "ids", "read_as"),
    [
        ("*C*\n*A*", ["C", "A"], "lines-with-marks"),
        ("* *C*\n* *A*", ["C", "A"], "lines-with-marks"),
        ("***C***\n***A***", ["C", "A"], "lines-with-marks"),
        ("1. **`C-3`**\n2. **`A-1`**", ["C-3", "A-1"], "lines-with-marks"),
        ("- **C-3**.\n- **A-1**.", ["C-3", "A-1"], "lines-with-periods-and-marks"),
        ("IDs:\n- `C-3`\n- `A-1`", ["C-3", "A-1"], "lead-in-lines-with-marks"),
        ("`C-3`, `A-1`, `B-2`", ["C-3", "A-1", "B-2"], "commas-with-marks"),
        ("**C-3**, **A-1**.", ["C-3", "A-1"], "commas-with-period-and-marks"),
        ("IDs: `C-3`, `A-1`.", ["C-3", "A-1"], "lead-in-commas-with-period-and-marks"),
        # Inside the marks, the ID is exactly as written.
        ("`v1.2:alpha#3`\n`_tmp`", ["v1.2:alpha#3", "_tmp"], "lines-with-marks"),
    ],
)
def test_the_same_marks_around_every_id_are_removed(
    text: str, ids: list[str], read_as: ReadAs
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, read_as)


def test_underscores_are_part_of_an_id_not_marks() -> None:
    """`_` is a bare ID's own character, so `__C__` could be either; it is
    read as written, as it was before marks were read."""
    assert read_answer_ids("__C__\n__A__") == AnswerReading(["__C__", "__A__"], "lines")
    assert read_answer_ids("_C_, _A_") == AnswerReading(["_C_", "_A_"], "commas")


@pytest.mark.parametrize(
    ("text", "ids", "read_as"),
    [
        ("['C', 'A', 'B']", ["C", "A", "B"], "python-list"),
        ("['C', \"A\", 'B',]", ["C", "A", "B"], "python-list"),
        ("[\n    'C',\n    'A',\n]", ["C", "A"], "python-list"),
        ("```python\n['C', 'A']\n```", ["C", "A"], "python-list"),
        ("Here you go:\n['C', 'A']", ["C", "A"], "lead-in-python-list"),
        ("Here:\n```python\n['C',\n 'A']\n```", ["C", "A"], "lead-in-python-list"),
        ("IDs: ['C', 'A']", ["C", "A"], "lead-in-python-list"),
        ('IDs: ["C", "A",]', ["C", "A"], "lead-in-python-list"),
        # Quoted, an item may hold anything but a backslash or a line break.
        (
            "['Smith 2019', \"it's\", 'a, b', '']",
            ["Smith 2019", "it's", "a, b", ""],
            "python-list",
        ),
        ("['B', 'A', 'B']", ["B", "A", "B"], "python-list"),
    ],
)
def test_a_text_that_is_a_python_list_of_plain_strings_is_read(
    text: str, ids: list[str], read_as: ReadAs
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, read_as)


@pytest.mark.parametrize(
    ("text", "ids", "read_as"),
    [
        ("3. C\n4. A\n5. B", ["C", "A", "B"], "lines"),
        ("0) C\n1) A", ["C", "A"], "lines"),
        ("1. C\n3. A\n2. B", ["C", "A", "B"], "lines-ignoring-numbers"),
        ("1. C\n1. A\n1. B", ["C", "A", "B"], "lines-ignoring-numbers"),
        ("1. C\n2. A\n4. B", ["C", "A", "B"], "lines-ignoring-numbers"),
        ("1. C\n- A", ["C", "A"], "lines-ignoring-numbers"),
        ("10.\tTC-10\n9. TC-9", ["TC-10", "TC-9"], "lines-ignoring-numbers"),
        ("2) A.\n1) C.", ["A", "C"], "lines-ignoring-numbers-with-periods"),
        ("IDs:\n2. A\n1. C", ["A", "C"], "lead-in-lines-ignoring-numbers"),
        (f"{'9' * 40}. C\n{'9' * 40}0. A", ["C", "A"], "lines-ignoring-numbers"),
    ],
)
def test_numbered_lines_are_read_in_line_order_and_say_when_numbers_disagree(
    text: str, ids: list[str], read_as: ReadAs
) -> None:
    assert read_answer_ids(text) == AnswerReading(ids, read_as)


def text_read_as(name: ReadAs) -> str:
    """A text of the IDs C and A that `name` describes, built from its parts."""
    lead_in = name.startswith("lead-in-")
    rest = name.removeprefix("lead-in-")
    base, _, removed = rest.partition("-with-")
    marks = "marks" in removed.split("-and-")
    period = {"periods", "period"} & set(removed.split("-and-"))
    items = [f"**{item}**" if marks else item for item in ("C", "A")]
    if base == "python-list":
        body = "['C', 'A']"
    elif base == "commas":
        body = ", ".join(items) + ("." if period else "")
    else:
        numbers = ("2. ", "1. ") if base == "lines-ignoring-numbers" else ("- ", "- ")
        ending = "." if period else ""
        body = "\n".join(
            f"{number}{item}{ending}"
            for number, item in zip(numbers, items, strict=True)
        )
    return f"IDs:\n{body}" if lead_in else body


@pytest.mark.parametrize("name", sorted(READ_AS_NAMES - {"json", "single-id"}))
def test_every_read_as_name_is_what_its_parts_say(name: ReadAs) -> None:
    assert read_answer_ids(text_read_as(name)) == AnswerReading(["C", "A"], name)


def test_read_as_names_are_the_28_the_docs_describe() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "answer-formats.md").read_text()
    assert len(READ_AS_NAMES) == 28
    assert "28 in all" in docs
    parts = {
        part
        for name in READ_AS_NAMES
        for part in name.removeprefix("lead-in-").partition("-with-")[::2]
        if part
    }
    for part in parts:
        assert f"`{part}`" in docs, part
    assert "docs/answer-formats.md" in (answer_parsing.__doc__ or "")


@pytest.mark.parametrize(
    ("text", "bare_id"),
    [
        ("MSCU1234565", "MSCU1234565"),
        ("smith2019a", "smith2019a"),
        ("  INC-0042\n", "INC-0042"),
        ("10.1000/xyz.2", "10.1000/xyz.2"),
        ("7", "7"),
        ("```\ninc-0042\n```", "inc-0042"),
    ],
)
def test_one_bare_id_with_a_digit_is_a_one_id_list(text: str, bare_id: str) -> None:
    assert read_answer_ids(text) == AnswerReading([bare_id], "single-id")


# Bare IDs as the module defines them, from a small alphabet so that
# repeats and IDs differing only in case come up often.
bare_ids = st.from_regex(r"[aAb1_](?:[aAb1_.:/#-]{0,4}[aAb1_])?", fullmatch=True)
LIST_STYLES: dict[ReadAs, str] = {
    "lines": "{number}. {id}",
    "lines-with-periods": "- {id}.",
    "lines-with-marks": "* `{id}`",
    "lead-in-lines": "{number}) {id}",
    "lead-in-lines-with-periods-and-marks": "**{id}**.",
}


# A quick property: Hypothesis's own 100 examples, not the profile's thousands.
@settings(max_examples=100)
@given(ids=st.lists(bare_ids, min_size=2, max_size=6))
def test_every_list_reading_gives_back_the_ids_exactly_as_written(
    ids: list[str],
) -> None:
    """No reading sorts, case-folds or drops a repeat."""
    for read_as, style in LIST_STYLES.items():
        lines = "\n".join(
            style.format(number=number, id=item) for number, item in enumerate(ids, 1)
        )
        text = f"Here are the IDs:\n{lines}" if read_as.startswith("lead-in") else lines
        assert read_answer_ids(text) == AnswerReading(ids, read_as)
    commas = ", ".join(ids)
    assert read_answer_ids(commas) == AnswerReading(ids, "commas")
    assert read_answer_ids(f"IDs: {commas}.") == AnswerReading(
        ids, "lead-in-commas-with-period"
    )
    python = repr(ids)
    assert read_answer_ids(python) == AnswerReading(ids, "python-list")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the answer text is empty"),
        (" \n\t\n", "the answer text is empty"),
        ("```\n```", "the answer text is empty"),
        ("I'm sorry, I can't help with that.", "item 1 .* not a bare ID"),
        ("I'm sorry, but I cannot assist with that request.", "item 1 .*not a bare"),
        ("I cannot help with that.", "no JSON array of string IDs in the text"),
        ("Sorry.", "no JSON array of string IDs in the text"),
        # One word without a digit is a non-answer as often as an ID.
        ("None", 'single word "None" has no digit'),
        ("none", 'single word "none" has no digit'),
        ("Sorry", 'single word "Sorry" has no digit'),
        ("N/A", 'single word "N/A" has no digit'),
        ("unknown", 'single word "unknown" has no digit'),
        ("None.", "no JSON array of string IDs in the text"),
        # A lone ID is read only as the whole answer.
        ("- DOC-1", 'single line "- DOC-1" is not read as a one-ID list'),
        ("DOC-1.", 'single line "DOC-1." is not read as a one-ID list'),
        ("The ID is DOC-1.", "no JSON array of string IDs in the text"),
        # A lead-in is one line, before a list of two or more IDs and nothing else.
        ("Here are the IDs:", "no JSON array of string IDs in the text"),
        ("Sure!\nHere are the IDs:\n- C\n- A", 'line 1 "Sure!" is not a bare ID'),
        ("IDs:\nIDs:\nC\nA", 'line 2 "IDs:" is not a bare ID'),
        ("Here are the IDs:\n- C\n- A\nHope this helps!", 'line 4 "Hope this'),
        ("Result:\nNone found", '"Result:" is followed by one line with no comma'),
        ("Here is the ID:\n- DOC-1", '"Here is the ID:" is followed by one line'),
        ("IDs:\n```\n```", '"IDs:" is followed by nothing'),
        (
            "Here is what I found:\nI looked.\nThere are no IDs.",
            'line 2 "I looked." is not a bare ID, even without its final period',
        ),
        # Periods go only when every line has one.
        ("C\nA\nThat is all.", 'line 3 "That is all." is not a bare ID'),
        ("C\nA\nDone.", 'line 3 "Done." ends in a period, which is dropped only'),
        ("C.\nA", 'line 1 "C." ends in a period'),
        ("C..\nA..", 'line 1 "C.." is not a bare ID, even without its final period'),
        ('"C", "A"', 'item 1 .*"\\\\"C\\\\"", not a bare ID'),
        ("C, A,", "item 3 of the comma-separated text is empty"),
        ("C,, A", "item 2 of the comma-separated text is empty"),
        ("C, A\nB, D", "line 1"),
        ("Smith 2019, Jones 2020", "item 1 .*not a bare ID"),
        ("%%%% ???? ####", "no JSON array of string IDs in the text"),
        # JSON that is not a list of strings is never re-read as a bare list.
        ("[1, 2]", "no JSON array in the text is a list of string IDs"),
        ('["A", ["B"]]', "no JSON array in the text is a list of string IDs"),
        ('[["A", "B"]]', "no JSON array in the text is a list of string IDs"),
        ('{"ids": ["A", "B"]}', 'the first JSON value is {"ids": \\["A", "B"\\]}'),
        ('Here are the IDs:\n{"ids": ["A", "B"]}', "the first JSON value is"),
        ('{"A": 1}\nA\nB', "the first JSON value is"),
        ("[true]\nA\nB", "the first JSON value is \\[true\\]"),
        ('["A"] and ["B"]', "2 different ID lists"),
    ],
)
def test_what_is_not_a_list_stays_unreadable(text: str, problem: str) -> None:
    with pytest.raises(UnreadableAnswer, match=problem):
        read_answer_ids(text)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # A lead-in on the line of the answer: before a list, and the first only.
        ("ID: DOC-1", 'the lead-in "ID:" is followed by "DOC-1", which is no comma'),
        ("Result: None found", 'the lead-in "Result:" is followed by "None found"'),
        ("IDs: C, A\nB", 'line 1 "IDs: C, A" is not a bare ID'),
        (
            "Source order: C-3, A-1. Sorted: A-1, C-3",
            'item 2 of the comma-separated text after the lead-in "Source order:" '
            'is "A-1. Sorted: A-1", not a bare ID',
        ),
        ("I'm sorry: no, I can't.", "item 2 of the comma-separated text after the"),
        # A period ends a comma list, never an item inside it.
        ("C, A, .", "item 3 of the comma-separated text is empty"),
        ("C., A", 'item 1 of the comma-separated text is "C.", not a bare ID'),
        # Marks go only when every ID has the same ones, outside any period.
        ("- **C**\n- A", 'line 1 "- **C**" has "**" marks around its ID, which'),
        ("- **C**\n- `A`", 'line 1 "- **C**" has "**" marks around its ID'),
        ("**C**\n*A*", 'line 1 "**C**" has "**" marks around its ID'),
        ("**C*\n**A*", 'line 1 "**C*" is not a bare ID'),
        ("`C`, A", 'item 1 of the comma-separated text is "`C`", whose marks are'),
        ("**C, A**", 'item 1 of the comma-separated text is "**C", not a bare ID'),
        ("- **C.**\n- **A.**", "ends in a period inside its marks"),
        ("**DOC-1**", 'the single line "**DOC-1**" is not read as a one-ID list'),
        ("`DOC-1`", 'the single line "`DOC-1`" is not read as a one-ID list'),
        # A Python list: the whole text, of plain quoted strings only.
        ("['C' 'A']", "which Python joins into one (a missing comma)"),
        ("['C', 'A' 'B']", "which Python joins into one (a missing comma)"),
        ("[u'C', u'A']", "not every item is one plain quoted string"),
        ("['''C''', 'A']", "not every item is one plain quoted string"),
        ("['C\\\\d', 'A']", "holds a backslash, which Python and JSON read"),
        ('["C\\/D",]', "holds a backslash, which Python and JSON read"),
        ("[['C', 'A']]", "is a Python value, but not a flat list of strings"),
        ("['C', None]", "is a Python value, but not a flat list of strings"),
        ("['C', 1]", "is a Python value, but not a flat list of strings"),
        ("[C, A]", 'the bracketed text "[C, A]" is no Python list literal'),
        ("[,]", 'the bracketed text "[,]" is no Python list literal'),
        ("IDs: ['C' 'A']", "which Python joins into one"),
        ("['C', 'A']\nDone.", "line 1 \"['C', 'A']\" is not a bare ID"),
        ("The IDs are ['C', 'A']", 'item 1 of the comma-separated text is "The IDs'),
        ("{'ids': ['C', 'A']}", "no JSON array of string IDs"),
        ("{'ids': 'C, A'}", "no JSON array of string IDs"),
    ],
)
def test_near_misses_of_the_readings_stay_unreadable(text: str, said: str) -> None:
    with pytest.raises(UnreadableAnswer) as raised:
        read_answer_ids(text)
    assert said in str(raised.value)


# Texts near the readings: list markers, marks, quotes, brackets, colons,
# commas, periods, fences and line breaks around a few IDs.
near_texts = st.lists(
    st.sampled_from(
        [
            "C",
            "A-1",
            "_",
            "**",
            "*",
            "`",
            "```",
            "'",
            '"',
            "[",
            "]",
            "{",
            "}",
            ",",
            ", ",
            ".",
            ":",
            ": ",
            "\n",
            " ",
            "1. ",
            "- ",
            "\\",
            "None",
            "u",
        ]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=300)
@given(text=near_texts)
def test_any_text_is_read_by_a_named_reading_or_is_unreadable(text: str) -> None:
    """Never another exception: a text the rules miss must still be refused."""
    try:
        reading = read_answer_ids(text)
    except UnreadableAnswer:
        return
    assert reading.read_as in READ_AS_NAMES
    assert all(isinstance(item, str) for item in reading.ids)


def test_parse_answer_ids_is_the_ids_of_the_reading() -> None:
    assert parse_answer_ids("- C\n- A") == ["C", "A"]
    assert parse_answer_ids('["C"]') == ["C"]


@pytest.mark.parametrize(
    ("text", "read_as", "value", "answer"),
    [
        ('["C", "A", "B"]', "json", (True, True), '["C","A","B"]'),
        ("1. C\n2. A\n3. B", "lines", (True, True), '["C","A","B"]'),
        ("- C.\n- A.\n- B.", "lines-with-periods", (True, True), '["C","A","B"]'),
        ("IDs:\n- C\n- A\n- B", "lead-in-lines", (True, True), '["C","A","B"]'),
        (
            "IDs:\nC.\nB.\nA.",
            "lead-in-lines-with-periods",
            (True, False),
            '["C","B","A"]',
        ),
        ("A, B, C", "commas", (True, False), '["A","B","C"]'),
        ("['C', 'A', 'B']", "python-list", (True, True), '["C","A","B"]'),
        (
            "- **C**\n- **A**\n- **B**",
            "lines-with-marks",
            (True, True),
            '["C","A","B"]',
        ),
        ("IDs: C, A, B.", "lead-in-commas-with-period", (True, True), '["C","A","B"]'),
        ("3. B\n1. C\n2. A", "lines-ignoring-numbers", (True, False), '["B","C","A"]'),
        ("C1", "single-id", (False, False), '["C1"]'),
        ("C\nA\nB\nA", "lines", (False, False), '["C","A","B","A"]'),
        ("I'm sorry, I can't help with that.", None, (False, False), None),
    ],
)
def test_the_score_says_which_reading_was_used(
    text: str, read_as: str | None, value: tuple[bool, bool], answer: str | None
) -> None:
    score = extraction_score(
        {"source": ["C", "A", "B"]},
        {"source": "s", "answer": "output"},
        answer_text=text,
    )
    assert score.value == {"membership": value[0], "order": value[1]}
    assert score.metadata is not None
    assert score.metadata["read_as"] == read_as
    # What was read is the answer; an unreadable text is shown as it was.
    assert score.answer == (answer if answer is not None else text)
    if read_as is None:
        assert score.reason == "unreadable-answer"


def test_a_recorded_answer_has_no_reading() -> None:
    score = extraction_score({"source": ["A"], "answer": ["A"]}, {})
    assert score.metadata is not None
    assert "read_as" not in score.metadata


def test_a_data_error_still_says_how_the_answer_was_read() -> None:
    score = extraction_score({"source": ["A", "A"]}, {}, answer_text="A, B")
    assert score.reason == "duplicate-source-id"
    assert score.metadata is not None
    assert score.metadata["read_as"] == "commas"
