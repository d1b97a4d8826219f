"""The list literals reader never raises, nor reads what `json` and `ast` would not."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.literals import BrokenLiteral, ListLiteral, scan_literals


def read_id_list(text: str) -> tuple[tuple[str, ...], str] | None:
    """The IDs and form of `text` when it is one list of strings and nothing
    else, whitespace aside, as a cell that must hold one list is read."""
    found = list(scan_literals(text))
    if len(found) != 1 or not isinstance(found[0], ListLiteral):
        return None
    literal = found[0]
    outside = text[: literal.start] + text[literal.end :]
    if literal.ids is None or outside.strip(" \t\r\n"):
        return None
    return literal.ids, literal.form


finite = st.floats(allow_nan=False, allow_infinity=False)
json_scalars = st.none() | st.booleans() | st.integers() | finite | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(
    value=st.lists(json_values, max_size=5) | st.dictionaries(st.text(), json_values),
    indent=st.sampled_from([None, 1]),
    prose=st.sampled_from(["", "Here: ", "x ] } "]),
)
def test_a_json_value_is_read_as_json_reads_it(
    value: Any, indent: int | None, prose: str
) -> None:
    text = json.dumps(value, indent=indent)
    found = list(scan_literals(prose + text + " and so on"))
    assert found[-1] == ListLiteral(
        len(prose),
        len(prose) + len(text),
        "json",
        tuple(value)
        if isinstance(value, list) and all(type(item) is str for item in value)
        else None,
    )


plain_items = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="'\"\\").filter(
        lambda character: character >= " "
    )
)


@settings(max_examples=200)
@given(
    items=st.lists(plain_items, max_size=5),
    quotes=st.lists(st.sampled_from(["'", '"']), min_size=5, max_size=5),
    spaces=st.sampled_from(["", " ", "\n  ", "\t"]),
    trailing=st.booleans(),
)
def test_a_python_list_of_plain_strings_is_read_as_python_reads_it(
    items: list[str], quotes: list[str], spaces: str, trailing: bool
) -> None:
    quoted = [
        f"{quote}{item}{quote}" for item, quote in zip(items, quotes, strict=False)
    ]
    text = "[" + spaces + f",{spaces}".join(quoted)
    text += ("," if trailing and items else "") + spaces + "]"
    assert ast.literal_eval(text) == items
    found = read_id_list(text)
    assert found is not None
    assert list(found[0]) == items


REFUSED = [
    "['D1' 'D2']",  # Python would join them: 'D1D2'
    "[1_000, 0x10]",  # Python numbers, not strings
    "[1, 2]", '["D1", null]', '["D1"] x', "x ['D1']", "['D1\\n']", "[u'D1']",
    "['''D1''']", "['D1',,]", "[,]", "['D1'", "['D1',\u00a0'D2']", "['D1\x00']",
    '{"a": ["D1"]}', "", "D1, D2", "[NaN]", "['D1",
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ('["D1", "D2"]', (("D1", "D2"), "json")),
        ("['D1', 'D2']", (("D1", "D2"), "python-list")),
        ("  ['D1',\n 'D2',]  ", (("D1", "D2"), "python-list")),
        ('["doc\\/1"]', (("doc/1",), "json")),
        ("[]", ((), "json")),
        *((text, None) for text in REFUSED),
    ],
)
def test_a_cell_is_read_only_when_it_is_one_plain_list(text: str, read: Any) -> None:
    assert read_id_list(text) == read


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"ids": ["X"]} ["A"]', [(0, 14, None), (15, 20, ("A",))]),
        ('[x ["A"]', [BrokenLiteral(0, 1), (3, 8, ("A",))]),
        ('[["a"] x]', [BrokenLiteral(0, 7)]),
        ("[" * 3000, [BrokenLiteral(0, 3000)]),
        ("[" * 3000 + "]" * 3000, [(0, 6000, None)]),
        ('[{"a": NaN}]', [BrokenLiteral(0, 7)]),
        ("[" + "1" * 5000 + "]", [(0, 5002, None)]),  # too long for `int`
        ('See [1] and ["a",]', [(4, 7, None), (12, 18, ("a",))]),
    ],
)
def test_every_bracket_opens_a_literal_or_is_broken(
    text: str, found: list[Any]
) -> None:
    assert [
        item if isinstance(item, BrokenLiteral) else (item.start, item.end, item.ids)
        for item in scan_literals(text)
    ] == found


@settings(max_examples=200)
@given(
    text=st.lists(
        st.sampled_from(
            ["[", "]", "{", "}", '"', "'", ",", ":", "1", "a", " ", "\\", "\n", "null"]
        ),
        max_size=30,
    ).map("".join)
)
def test_any_text_is_scanned_without_an_error(text: str) -> None:
    position = 0
    for item in scan_literals(text):
        assert item.start >= position
        if isinstance(item, ListLiteral):
            value = text[item.start : item.end]
            if item.form == "json":
                assert json.loads(value) is not None
            else:
                assert list(item.ids or ()) == ast.literal_eval(value)
            position = item.end
        else:
            position = item.start + 1
