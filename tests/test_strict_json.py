"""`strict_json_loads` answers exactly as `json.loads` with the same hooks,
lone surrogates in keys included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.lines import (
    _bounded_int,
    _finite_float,
    _reject_constant,
    _unique_keys,
    strict_json_loads,
)


def _per_call(text: str) -> Any:
    """The hooks given to `json.loads` on each call, as before."""
    return json.loads(
        text,
        object_pairs_hook=lambda pairs: _unique_keys(pairs, of_text=True),
        parse_constant=_reject_constant,
        parse_float=_finite_float,
        parse_int=_bounded_int,
    )


def _outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", read(text)
    except (ValueError, RecursionError) as error:  # UnsupportedJSON included
        return type(error).__name__, str(error)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


# Any string, lone surrogates included, as keys and values: JSON escapes
# them (ensure_ascii), as a file must hold them.
ANY_TEXT = st.text(st.characters(codec=None), max_size=3)
JSON_VALUES_ANY_TEXT = st.recursive(
    st.none() | st.integers() | ANY_TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)


def _texts() -> st.SearchStrategy[str]:
    dumped = JSON_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False))
    return st.one_of(
        dumped,
        JSON_VALUES_ANY_TEXT.map(lambda value: json.dumps(value, ensure_ascii=True)),
        dumped.map(lambda text: "\ufeff" + text),
        dumped.map(lambda text: text[: len(text) // 2]),
        st.text(max_size=30),
        st.sampled_from(['{"a": 1, "a": 2}', "NaN", "[1e400]", "-Infinity", " 1 "]),
    )


# A quick property: Hypothesis's own 100 examples, not the profile's thousands.
@settings(max_examples=100)
@given(_texts())
def test_one_decoder_answers_as_json_loads_with_the_hooks(text: str) -> None:
    ours = _outcome(strict_json_loads, text)
    reference = _outcome(_per_call, text)
    if ours[0] == reference[0] == "value":
        # Compared as text: in Python True == 1 and 1 == 1.0.
        assert json.dumps(ours[1]) == json.dumps(reference[1])
    else:
        assert ours == reference


def test_a_byte_order_mark_is_refused_as_json_loads_refuses_it() -> None:
    with pytest.raises(json.JSONDecodeError, match="Unexpected UTF-8 BOM"):
        strict_json_loads('\ufeff{"id": "bom"}')


@pytest.mark.parametrize(
    "text",
    [
        '{"\\udc00": 1}',
        '{"input": {"required": [], "\\uD800x": 1}}',
        '[{"a": {"b": {"\\udfff": null}}}]',
    ],
)
def test_a_lone_surrogate_in_a_key_is_json_no_log_can_hold(text: str) -> None:
    with pytest.raises(
        ValueError, match="holds a lone surrogate, which no log can hold"
    ):
        strict_json_loads(text)


def test_a_lone_surrogate_in_a_value_and_a_pair_in_a_key_are_read() -> None:
    assert strict_json_loads('{"a": "\\udc00"}') == {"a": "\udc00"}
    assert strict_json_loads('{"\\ud83d\\ude00": 1}') == {"\U0001f600": 1}
