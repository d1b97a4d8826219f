"""Reading answer text: JSON first, then one ID per line, then a comma list.

Each reading is checked for what it reads, what it removes (list markers,
fences, surrounding whitespace) and what it leaves exactly as written; and
the texts that must not be read as a list (refusals, prose, single words,
non-string JSON) are checked to stay unreadable.
"""

from __future__ import annotations

import pytest

from tracegrade.scorers import UnreadableAnswer, extraction_score, parse_answer_ids
from tracegrade.scorers.answer_parsing import AnswerReading, read_answer_ids


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
        # The numbers are not read: the order of the lines is the answer.
        ("2) A\n1) C", ["A", "C"]),
        ("10.\tTC-10\n9. TC-9", ["TC-10", "TC-9"]),
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
    ("text", "problem"),
    [
        ("", "the answer text is empty"),
        (" \n\t\n", "the answer text is empty"),
        ("```\n```", "the answer text is empty"),
        ("I'm sorry, I can't help with that.", "item 1 .* not a bare ID"),
        ("I'm sorry, but I cannot assist with that request.", "item 1 .*not a bare"),
        ("I cannot help with that.", "no JSON array of string IDs in the text"),
        ("Sorry.", "no JSON array of string IDs in the text"),
        ("None", 'single word "None" is not read as a one-ID list'),
        ("- DOC-1", 'single word "- DOC-1"'),
        ("Here are the IDs:\nC\nA", 'line 1 "Here are the IDs:" is not a bare ID'),
        ("C\nA\nThat is all.", 'line 3 "That is all." is not a bare ID'),
        ("`C`\n`A`", "line 1"),
        ('"C", "A"', 'item 1 .*"\\\\"C\\\\"", not a bare ID'),
        ("[C, A]", 'item 1 .*"\\[C", not a bare ID'),
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
        ('{"A": 1}\nA\nB', "the first JSON value is"),
        ("[true]\nA\nB", "the first JSON value is \\[true\\]"),
        ('["A"] and ["B"]', "2 different ID lists"),
    ],
)
def test_what_is_not_a_list_stays_unreadable(text: str, problem: str) -> None:
    with pytest.raises(UnreadableAnswer, match=problem):
        read_answer_ids(text)


def test_parse_answer_ids_is_the_ids_of_the_reading() -> None:
    assert parse_answer_ids("- C\n- A") == ["C", "A"]
    assert parse_answer_ids('["C"]') == ["C"]


@pytest.mark.parametrize(
    ("text", "read_as", "value", "answer"),
    [
        ('["C", "A", "B"]', "json", (True, True), '["C","A","B"]'),
        ("1. C\n2. A\n3. B", "lines", (True, True), '["C","A","B"]'),
        ("A, B, C", "commas", (True, False), '["A","B","C"]'),
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
