"""Reading a model's answer text as a list of IDs.

Models wrap their lists in prose and code fences, so the list is looked for
anywhere in the text. What is never done is guessing: if no JSON array of
strings is found, or two different ones are, the answer is unreadable and
the scorer fails it on both criteria. A model must not escape grading, or
be graded on a list it did not clearly give, because its text was messy.

Later fallbacks (one ID per line, comma lists) belong here, as further
readers tried only when no JSON array is found.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn


class UnreadableAnswer(ValueError):
    """The answer text holds no single, unambiguous list of string IDs."""


def _reject_constant(name: str) -> NoReturn:
    # NaN and Infinity are not JSON; `JSON.parse` rejects them too.
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FAILED_READ_BUDGET = 20


def _is_id_list(value: Any) -> bool:
    return type(value) is list and all(isinstance(item, str) for item in value)


def parse_answer_ids(text: str) -> list[str]:
    """Return the one JSON array of string IDs in `text`.

    Only top-level arrays count: in `[["A"]]` the inner `["A"]` is part of
    an array of arrays, not an answer. The same array repeated (a model
    restating its answer) is one answer; two different arrays are a guess
    we refuse to make.

    >>> parse_answer_ids('Here you go:\\n```json\\n["C", "A", "B"]\\n```')
    ['C', 'A', 'B']

    Raises `UnreadableAnswer` saying what was found instead.
    """
    found: list[list[str]] = []
    rejected: list[Any] = []
    # Characters failed decodes may read before giving up. Each '[' is
    # tried, so thousands of unclosed or nested brackets would otherwise
    # cost quadratic time; ordinary prose fails within a few characters.
    budget = _FAILED_READ_BUDGET * (len(text) + 1000)
    position = text.find("[")
    while position != -1:
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
            position = text.find("[", position + 1)
            continue
        if _is_id_list(value):
            if value not in found:
                found.append(value)
        else:
            rejected.append(value)
        position = text.find("[", end)

    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        listed = " and ".join(_quote(ids) for ids in found[:2])
        raise UnreadableAnswer(
            f"the text holds {len(found)} different ID lists ({listed}"
            f"{', ...' if len(found) > 2 else ''}), so none can be chosen"
        )
    if rejected:
        raise UnreadableAnswer(
            "no JSON array in the text is a list of string IDs; "
            f"the first is {_quote(rejected[0])}"
        )
    if not text.strip():
        raise UnreadableAnswer("the answer text is empty")
    raise UnreadableAnswer(f"no JSON array of string IDs in the text {_quote(text)}")


def _quote(value: Any, limit: int = 80) -> str:
    """JSON text of `value`, cut short: exact enough to find, short enough to read."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
