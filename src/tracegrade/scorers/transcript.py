"""An agent's context from its transcript: its tool results, read per docs/agents.md."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool

from .._inspect_internals import truncated_tool_body
from ..core.errors import InvalidRecord, quote
from ..core.steps import LostDocument
from .explain import list_ids, show_id

DOCUMENT_KEYS = ("documents", "results")  # where an object result holds them
_UNDER_ONE_KEY = 'an object result holds its documents under one of "documents" or '
_UNDER_ONE_KEY += '"results"'
_UNCLEAR = "Inspect truncated it, and where it cut the result cannot be told "
_UNCLEAR += "closely enough to know which entries survived whole"
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


class _CutUnclear(Exception):
    """Where Inspect cut a result changes which entries survived whole."""


class ToolResultError(InvalidRecord):
    def __init__(self, call: str, content: Any, why: str) -> None:
        super().__init__("context", content, f"cannot be read from {call}: {why}")


@dataclass
class ToolContext:
    """A sample's calls of the named tools: the context and steps they give, what
    the explanation adds of each, or the first call that cannot be read."""

    tools: tuple[str, ...]
    context: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: ToolResultError | None = None

    def record(self) -> dict[str, Any]:
        """The record's `context` and, when there were calls, its `steps`."""
        if self.problem is not None:
            return {}
        return {"context": self.context} | ({"steps": self.steps} if self.steps else {})

    def note(self) -> str:
        if not self.steps:
            return f" The model made no call to {' or '.join(self.tools)}."
        return "".join(f" {note}" for note in self.notes)

    def explain_lost(self, lost: Sequence[LostDocument]) -> str:
        """Of each missing ID: no call returned it, or which showed it cut."""
        # The last call that showed each ID, as `lost` has it.
        shown_by = {item: step["name"] for step in self.steps for item in step["ids"]}
        ids = [document["id"] for document in lost]
        never = [item for item in ids if item not in shown_by]
        sentences = [f"No call returned {list_ids(never)}."] if never else []
        sentences += [
            f"{show_id(item)} was in {shown_by[item]}'s result, but its entry "
            "was cut by Inspect's truncation."
            for item in ids
            if item in shown_by
        ]
        return " ".join(sentences)


def read_tool_context(
    messages: Sequence[ChatMessage], tools: tuple[str, ...], id_key: str
) -> ToolContext:
    """The calls of `tools` in `messages`, in order, each numbered per tool."""
    functions = {
        call.id: call.function
        for message in messages
        if isinstance(message, ChatMessageAssistant)
        for call in message.tool_calls or ()
    }
    counts: Counter[str] = Counter()
    found = ToolContext(tools)
    for message in messages:
        if not isinstance(message, ChatMessageTool):
            continue
        function = message.function or functions.get(message.tool_call_id or "")
        if function not in tools:
            continue
        counts[function] += 1
        step = f"{function}#{counts[function]}"
        try:
            whole, shown, note = _read_call(message, function, counts[function], id_key)
        except ToolResultError as problem:
            found.problem = problem
            return found
        found.context += whole
        found.steps.append({"name": step, "ids": shown})
        found.notes += [note] if note else []
    return found


def _read_call(
    message: ChatMessageTool, function: str, number: int, id_key: str
) -> tuple[list[str], list[str], str | None]:
    """The IDs that reached the model whole, those shown at all, and what the
    explanation says of the call."""
    step = f"{function}#{number}"
    if message.error is not None:
        failed = f"{message.error.type}: {message.error.message}"
        return [], [], f"{step} failed ({failed}) and returned nothing to the model."
    call = (
        f"tool call {step} (id {quote(message.tool_call_id)}, call {number} "
        f"to {function})"
    )
    content = message.content
    if not isinstance(content, str):
        texts = [part.text for part in content if part.type == "text"]
        if len(texts) != len(content) or len(texts) != 1:
            raise ToolResultError(call, content, "its content is not one text")
        content = texts[0]
    body = truncated_tool_body(function, content)
    if body is not None:
        return _read_truncated(body, step, call, id_key)
    try:
        value = json.loads(content)
    except json.JSONDecodeError as error:
        raise ToolResultError(call, content, f"it is not JSON ({error})") from None
    ids = _ids(_documents(value, call), id_key, call)
    return ids, ids, None


def _documents(value: Any, call: str) -> list[Any]:
    """The array of documents a result holds, in one of the documented shapes."""
    if type(value) is dict:
        keys = [key for key in DOCUMENT_KEYS if key in value]
        if len(keys) != 1:
            raise ToolResultError(call, value, _UNDER_ONE_KEY)
        if list(value)[-1] != keys[0]:
            why = f"{json.dumps(keys[0])} must be the object's last member, so that "
            raise ToolResultError(call, value, why + "a truncated result can be read")
        value = value[keys[0]]
    if type(value) is not list:
        why = "a result is an array of documents, or an object holding one"
        raise ToolResultError(call, value, why)
    return value


def _ids(entries: list[Any], id_key: str, call: str) -> list[str]:
    """Each entry's ID: the entry itself (strings) or its `id_key` (objects)."""
    if all(isinstance(entry, str) for entry in entries):
        return entries
    for position, entry in enumerate(entries):
        if type(entry) is not dict or not isinstance(entry.get(id_key), str):
            why = f"entry {position} is no object with a string {json.dumps(id_key)}"
            raise ToolResultError(
                call, entry, f"{why} (and the entries are not all strings)"
            )
    return [entry[id_key] for entry in entries]


def _read_truncated(
    body: str, step: str, call: str, id_key: str
) -> tuple[list[str], list[str], str]:
    """The entries of a truncated result that survived whole: every possible cut
    must agree, or the call is refused (docs/agents.md)."""
    wrapped = body.lstrip(_WHITESPACE)[:1] == "{"
    unclear = ToolResultError(call, body, _UNCLEAR)
    readings, problems = [], []
    for cut in _possible_cuts(body):
        try:
            head, cut_entry, is_open = _read_head(body[:cut], call, id_key)
            tail = _read_tail(body[cut:], wrapped=wrapped) if is_open else []
            whole_head, whole_tail = _ids(head, id_key, call), _ids(tail, id_key, call)
        except ToolResultError as problem:
            problems.append(problem)
            continue
        except _CutUnclear:
            raise unclear from None
        cut_partway = [cut_entry] if cut_entry is not None else []
        whole = whole_head + whole_tail
        readings.append((whole, whole_head + cut_partway + whole_tail))
    if not readings:
        raise problems[0]
    if len({json.dumps(whole) for whole, _shown in readings}) != 1:
        raise unclear
    # The earliest cut's first part is surely what Inspect kept of the head.
    whole, shown_ids = readings[0]
    partial = [item for item in shown_ids if item not in whole]
    note = (
        f"Inspect truncated {step}'s result (max_tool_output), cutting its middle: "
        f"{len(whole)} entries survived whole"
    )
    if whole:
        note += f" ({list_ids(whole)})"
    if partial:
        note += f"; {list_ids(partial)} was cut partway and does not count"
    return whole, shown_ids, note + "."


def _possible_cuts(body: str) -> list[int]:
    """Where in `body` Inspect's cut may lie: within three bytes of its middle."""
    half = len(body.encode("utf-8")) // 2
    start = len(body.encode("utf-8")[: max(half - 3, 0)].decode("utf-8", "ignore"))
    return [
        cut
        for cut in range(start, min(start + 8, len(body)) + 1)
        if abs(len(body[:cut].encode("utf-8")) - half) <= 3
    ]


def _read_head(head: str, call: str, id_key: str) -> tuple[list[Any], str | None, bool]:
    """A first part's whole entries, the ID of the entry cut there if shown,
    and whether the documents array is still open."""
    position = _skip(head, 0)
    if head.startswith("{", position):
        position = _into_documents(head, position + 1, call)
    elif head.startswith("[", position):
        position += 1
    else:
        raise ToolResultError(call, head, "it does not begin as a JSON array or object")
    entries: list[Any] = []
    while True:
        position = _skip(head, position)
        if head.startswith("]", position):
            return entries, None, False
        try:
            entry, end = _DECODER.raw_decode(head, position)
        except json.JSONDecodeError:
            return entries, _shown_id(head, position, id_key), True
        if end == len(head) and not isinstance(entry, (str, dict, list)):
            return entries, None, True  # a number or literal may go on
        entries.append(entry)
        position = _skip(head, end)
        if position == len(head):
            return entries, None, True
        if head[position] == "]":
            return entries, None, False
        if head[position] != ",":
            why = f"entry {len(entries) - 1} is followed by no comma"
            raise ToolResultError(call, head, why)
        position += 1


def _into_documents(head: str, position: int, call: str) -> int:
    """Past the `[` of an object result's documents array, in its first part."""
    with suppress(ValueError, IndexError):
        for key, at in _members(head, position):
            if key in DOCUMENT_KEYS and head.startswith("[", at):
                return at + 1
    raise ToolResultError(
        call, head, "Inspect truncated it before its documents array began"
    )


def _shown_id(head: str, position: int, id_key: str) -> str | None:
    """The `id_key` of the object cut at the end of `head`, when it was whole."""
    if not head.startswith("{", position):
        return None
    with suppress(ValueError, IndexError):
        for key, at in _members(head, position + 1):
            if key == id_key:
                value, _end = _DECODER.raw_decode(head, at)
                return value if isinstance(value, str) else None
    return None


def _members(text: str, position: int) -> Iterator[tuple[Any, int]]:
    """Each key of the object whose members start at `position`, and where its
    value starts; raises `ValueError` or `IndexError` where the members stop."""
    while True:
        key, position = _DECODER.raw_decode(text, _skip(text, position))
        position = _skip(text, position)
        if text[position] != ":":
            raise ValueError
        position = _skip(text, position + 1)
        yield key, position
        _value, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if text[position] != ",":
            raise ValueError
        position += 1


def _read_tail(tail: str, *, wrapped: bool) -> list[Any]:
    """A last part's entries after its first entry boundary."""
    start = _first_boundary(tail, depth=2 if wrapped else 1)
    if start is None:
        return []
    rest = "[" + tail[start:]
    try:
        entries, end = _DECODER.raw_decode(rest)
    except json.JSONDecodeError:
        return []
    closing = "}" if wrapped else ""
    if rest[end:].strip(_WHITESPACE) != closing or type(entries) is not list:
        return []
    return entries


def _first_boundary(tail: str, *, depth: int) -> int | None:
    """Where the first whole entry at `depth` begins in `tail`, read backwards
    from the end, where the lexical state is known; None when none does."""
    first = None
    level = 0
    position = len(tail) - 1
    while position >= 0:
        char = tail[position]
        if char == '"':
            opening = _string_start(tail, position)
            if opening is None:
                if level == depth and tail.startswith('"'):
                    # An entry whole from the cut on, or the rest of one
                    # whose escaping backslash was cut: two readings.
                    raise _CutUnclear
                return first  # a string begun before the cut
            position = opening
        elif char in "]}":
            level += 1
        elif char in "[{":
            level -= 1
            if level < depth:
                return position + 1  # the array itself begins here
            if level == depth and char == "{" and position == 0:
                return 0  # the cut fell just before an entry
        elif char == "," and level == depth:
            first = position + 1
        position -= 1
    return first


def _string_start(text: str, closing: int) -> int | None:
    """The opening quote of the string closed at `closing`; None if before `text`."""
    position = text.rfind('"', 0, closing)
    while position > 0:
        escaped = position
        while escaped > 0 and text[escaped - 1] == "\\":
            escaped -= 1
        if escaped == 0:
            return None  # its escaping began before the cut
        if (position - escaped) % 2 == 0:
            return position
        position = text.rfind('"', 0, escaped)
    return None


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position
