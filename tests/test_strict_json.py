"""`strict_json_loads`: JSON as `json.loads` reads it, refusing what no
Inspect log can hold."""

from __future__ import annotations

import json

import pytest

from tracegrade.lines import UnsupportedJSON, strict_json_loads

SURROGATE_KEY = "holds a lone surrogate, which no log can hold"


def test_a_lone_surrogate_in_a_value_and_a_pair_in_a_key_are_read() -> None:
    assert strict_json_loads('{"a": "\\udc00"}') == {"a": "\udc00"}
    assert strict_json_loads('{"\\ud83d\\ude00": 1}') == {"\U0001f600": 1}
    assert strict_json_loads(" [1, 1.5, true] ") == [1, 1.5, True]


@pytest.mark.parametrize(
    ("text", "error", "said"),
    [
        ('\ufeff{"id": "bom"}', json.JSONDecodeError, "Unexpected UTF-8 BOM"),
        ('{"\\udc00": 1}', ValueError, SURROGATE_KEY),
        ('{"input": {"required": [], "\\uD800x": 1}}', ValueError, SURROGATE_KEY),
        ('[{"a": {"b": {"\\udfff": null}}}]', ValueError, SURROGATE_KEY),
        ('{"a": 1, "a": 2}', ValueError, 'the key "a" appears twice in one object'),
        ("[NaN]", ValueError, "NaN is not JSON"),
        ("-Infinity", ValueError, "-Infinity is not JSON"),
        ("[1e400]", UnsupportedJSON, "the number 1e400 is out of range"),
        ("1" * 4301, UnsupportedJSON, "has 4,301 digits, more than can be read"),
    ],
)
def test_json_that_json_loads_would_bend_is_refused(
    text: str, error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=said):
        strict_json_loads(text)
