"""OpenInference traces, exported as OTLP JSON, as stage-diagnosis records.

A RAG pipeline instrumented with OpenInference's conventions records what
stage diagnosis needs as it runs: its `RETRIEVER` and `RERANKER` spans
name the documents they returned (`retrieval.documents.N.document.id`),
and its `LLM` spans what the model was given and said. What the answer
needed, and whether it was right, comes from a gold file, joined to each
trace by a key the user names. One fixture-format record per trace
(docs/import-openinference.md):

    {"id": KEY, "input": {"required": [...], "context": [...], "steps"?: [...],
     "correct"?: true|false, "question"?: ..., "answer"?: ...}}

- `id` is the trace's key as text, or the value of the attribute
  `ImportRules.sample_id` names; two traces with one id are refused.
- `context` is the documents a model received: those whose id or unique
  content a model's input shows (`_model_input`, `documents_in`), one
  reading or a refusal. A trace showing no model input, or with
  `--context last-step`, has the rule of earlier versions: the last
  RERANKER's output, or without one its RETRIEVER spans' documents.
  A trace with no RETRIEVER span has no `context`: it was never recorded,
  and the run scores `invalid-input`, where an empty one would blame the
  retriever.
- `steps`: its RETRIEVER and RERANKER spans in span-tree order
  (`_steps`), retrievers side by side fanning in.
- `answer` is the last model's output, `question` the user's text.
- The key is the attribute `key` of the root span, or, where the root
  lacks it, the one value the trace's other spans give it (two different
  values are refused).
- `required` (and `correct`, when the gold line has one) come from the
  gold line whose `key` equals it, type included: `7` is not `"7"`. A
  label may also come from a labels file keyed by record id, but one
  record is never labelled by both. Labels are never guessed.
- A trace that matches no gold line is refused (`UnmatchedTraces`), or,
  let through, kept without `required` (so it scores `unresolved`) and
  listed; so are gold lines no trace matched.

The spans file is JSON Lines, one OTLP `ExportTraceServiceRequest` per
line, as the OpenTelemetry SDK's OTLP JSON file exporter and the
Collector's file exporter write it. Both encodings of ids are read: OTLP
JSON's hex (hex digits only: an id with a space in it is refused, never
read as a shorter one), and the base64 of protobuf's own JSON mapping (told
apart by length), and both forms of 64-bit integers (string or number;
one out of 64-bit range is refused). Unknown fields are ignored, as
OTLP/JSON asks of a receiver.

The gold file is JSON Lines, one `{"key": ..., "required": [ids],
"correct"?: true|false}` per line; other fields are ignored.

Refused, with file, line and field: a line that is not an OTLP JSON trace
request, an id that is neither encoding, a span exported twice, an
attribute given twice, a retrieved document with no `document.id`, a
repeated gold key, and empty files. Every span is read and checked before
any record is made; records then come a trace at a time
(`stream_openinference`), and a refusal may come after some, so a caller
writes them where it can drop them and keeps them only once all are
made. Nothing here needs OpenTelemetry or OpenInference packages.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias

from ..core.errors import quote
from ..lines import (
    has_lone_surrogate,
    is_blank,
    json_object,
    json_objects,
    strict_json_loads,
)
from .common import (
    SHOWN,
    ImportRefused,
    InputFileError,
    LabelsRefused,
    RecordLabels,
    check_labels_name_records,
    counted,
    read_labels,
)
from .model_input import TwoReadings, documents_in

# The OpenInference semantic conventions' attribute names.
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
RETRIEVER = "RETRIEVER"
LLM = "LLM"
RERANKER = "RERANKER"
PROMPT = "PROMPT"
RETRIEVED = "retrieval.documents"
RERANKED = "reranker.output_documents"
_DIGITS = re.compile(r"[+-]?[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
# The widest integer OTLP carries (uint64 times, int64 values); longer
# digit strings are refused before Python's int() refuses them itself.
_INTEGER_DIGITS = 20
_INTEGER_RANGE = (-(2**63), 2**64 - 1)

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8

Key = str | int


@dataclass
class Span:
    """One span, its attributes decoded; `order` is its place in the file."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    line: int
    where: str
    order: int
    attributes: dict[str, Any]
    attribute_paths: dict[str, str]

    @property
    def kind(self) -> Any:
        return self.attributes.get(SPAN_KIND)


@dataclass
class Trace:
    trace_id: str
    spans: list[Span] = field(default_factory=list)

    def ordered(self) -> list[Span]:
        return sorted(self.spans, key=lambda span: (span.start, span.order))

    def root(self) -> Span | None:
        roots = [span for span in self.ordered() if span.parent_id is None]
        return roots[0] if roots else None


@dataclass(frozen=True)
class GoldLine:
    key: Key
    required: list[str]
    correct: bool | None
    line: int


@dataclass
class OpenInferenceImport:
    """The records, and what the import's notes say of them."""

    records: list[dict[str, Any]]
    notes: OpenInferenceNotes


# --- reading the spans -----------------------------------------------------------


class _Line:
    """One line of a JSON Lines file, for refusals naming it."""

    def __init__(self, path: str, number: int) -> None:
        self.path = path
        self.number = number

    def refuse(self, where: str, problem: str) -> InputFileError:
        prefix = f"{where}: " if where else ""
        return InputFileError(self.path, self.number, prefix + problem, field=where)


def _json_lines(path: str) -> Iterator[tuple[_Line, dict[str, Any]]]:
    try:
        for number, value in json_objects(path, "line", InputFileError):
            yield _Line(path, number), value
    except OSError as error:
        raise InputFileError(
            path, None, f"cannot be read ({error.strerror or error})"
        ) from None


def _list(line: _Line, where: str, value: Any, required: bool = False) -> list[Any]:
    """A repeated field: absent is empty, as protobuf's JSON leaves it out."""
    if value is None and not required:
        return []
    if type(value) is not list:
        raise line.refuse(where, f"must be a JSON array, got {quote(value, 80)}")
    return value


def _object(line: _Line, where: str, value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise line.refuse(where, f"must be a JSON object, got {quote(value, 80)}")
    return value


def _text(line: _Line, where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise line.refuse(where, f"must be text, got {quote(value, 80)}")
    if has_lone_surrogate(value):
        raise line.refuse(
            where, f"{quote(value, 80)} holds a lone surrogate, which no log can hold"
        )
    return value


def _identifier(line: _Line, where: str, value: Any, size: int) -> str:
    """A trace or span id as lowercase hex: OTLP JSON writes hex, protobuf's
    JSON mapping base64; their lengths differ, so neither is mistaken for
    the other."""
    text = _text(line, where, value)
    hex_length = 2 * size
    base64_length = 4 * -(-size // 3)
    decoded: bytes | None = None
    if len(text) == hex_length:
        # Only hex digits: `bytes.fromhex` would skip spaces and merge ids.
        if _HEX.fullmatch(text):
            decoded = bytes.fromhex(text)
    elif len(text) == base64_length:
        try:
            decoded = base64.b64decode(
                text.replace("-", "+").replace("_", "/"), validate=True
            )
        except (binascii.Error, ValueError):
            decoded = None
        if decoded is not None and len(decoded) != size:
            decoded = None
    if decoded is None:
        raise line.refuse(
            where,
            f"{quote(text, 80)} is not {'an' if size == 8 else 'a'} {size}-byte "
            f"id, as {hex_length} hex "
            f"digits (OTLP JSON) or {base64_length} base64 characters "
            "(protobuf's JSON mapping)",
        )
    if not any(decoded):
        raise line.refuse(where, f"{quote(text, 80)} is all zeros, an invalid id")
    return decoded.hex()


def _integer(line: _Line, where: str, value: Any) -> int:
    """A 64-bit integer, which protobuf's JSON writes as a string or a number."""
    number: int | None = None
    if type(value) is int:
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        if len(value.lstrip("+-")) <= _INTEGER_DIGITS:
            number = int(value)
    else:
        raise line.refuse(where, f"{quote(value, 80)} is not an integer")
    low, high = _INTEGER_RANGE
    if number is None or not low <= number <= high:
        raise line.refuse(
            where, f"{quote(value, 80)} is not a 64-bit integer, as OTLP's are"
        )
    return number


def _any_value(line: _Line, where: str, value: Any) -> Any:
    """An OTLP AnyValue as Python: text, int, float, bool, list, dict, bytes,
    or None when it holds nothing."""
    value = _object(line, where, value)
    present = [name for name in _VALUE_KINDS if name in value]
    if len(present) > 1:
        raise line.refuse(
            where, "holds " + " and ".join(present) + "; an AnyValue holds one"
        )
    if not present:
        return None
    kind = present[0]
    inner = value[kind]
    inner_where = f"{where}.{kind}"
    if kind == "stringValue":
        return _text(line, inner_where, inner)
    if kind == "intValue":
        return _integer(line, inner_where, inner)
    if kind == "boolValue":
        if type(inner) is not bool:
            raise line.refuse(inner_where, f"must be true or false, got {quote(inner)}")
        return inner
    if kind == "doubleValue":
        if isinstance(inner, (int, float)) and type(inner) is not bool:
            return float(inner)
        if inner in ("NaN", "Infinity", "-Infinity"):
            return float(inner.replace("Infinity", "inf"))
        raise line.refuse(inner_where, f"{quote(inner, 80)} is not a number")
    if kind == "bytesValue":
        try:
            return base64.b64decode(_text(line, inner_where, inner), validate=True)
        except (binascii.Error, ValueError):
            raise line.refuse(
                inner_where, f"{quote(inner, 80)} is not base64"
            ) from None
    values = _list(
        line, f"{inner_where}.values", _object(line, inner_where, inner).get("values")
    )
    if kind == "arrayValue":
        return [
            _any_value(line, f"{inner_where}.values[{position}]", item)
            for position, item in enumerate(values)
        ]
    pairs, _ = _attributes(line, f"{inner_where}.values", values)
    return pairs


_VALUE_KINDS = (
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
)


def _attributes(
    line: _Line, where: str, items: list[Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Attributes by key, and the path each was read at; a key given twice
    is refused (which one counts would be a guess)."""
    attributes: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for position, item in enumerate(items):
        path = f"{where}[{position}]"
        pair = _object(line, path, item)
        key = _text(line, f"{path}.key", pair.get("key"))
        if key in attributes:
            raise line.refuse(
                f"{path}.key",
                f"attribute {quote(key)} is already given at {paths[key]}",
            )
        attributes[key] = _any_value(line, f"{path}.value", pair.get("value", {}))
        paths[key] = path
    return attributes, paths


def _spans(line: _Line, request: Any, order: int) -> Iterator[Span]:
    request = _object(line, "", request)
    if "resourceSpans" not in request:
        other = [
            name for name in ("resourceMetrics", "resourceLogs") if name in request
        ]
        problem = (
            f"holds {other[0]}, not resourceSpans: an export of "
            f"{'metrics' if other[0] == 'resourceMetrics' else 'logs'}, not traces"
            if other
            else "no resourceSpans: not an OTLP JSON trace export "
            "(ExportTraceServiceRequest)"
        )
        raise line.refuse("", problem)
    for r, resource in enumerate(
        _list(line, "resourceSpans", request["resourceSpans"])
    ):
        r_where = f"resourceSpans[{r}]"
        resource = _object(line, r_where, resource)
        for s, scope in enumerate(
            _list(line, f"{r_where}.scopeSpans", resource.get("scopeSpans"))
        ):
            s_where = f"{r_where}.scopeSpans[{s}]"
            scope = _object(line, s_where, scope)
            for n, span in enumerate(
                _list(line, f"{s_where}.spans", scope.get("spans"))
            ):
                where = f"{s_where}.spans[{n}]"
                span = _object(line, where, span)
                parent = span.get("parentSpanId", "")
                attributes, paths = _attributes(
                    line,
                    f"{where}.attributes",
                    _list(line, f"{where}.attributes", span.get("attributes")),
                )
                yield Span(
                    trace_id=_identifier(
                        line, f"{where}.traceId", span.get("traceId"), TRACE_ID_BYTES
                    ),
                    span_id=_identifier(
                        line, f"{where}.spanId", span.get("spanId"), SPAN_ID_BYTES
                    ),
                    parent_id=None
                    if parent in ("", None)
                    else _identifier(
                        line, f"{where}.parentSpanId", parent, SPAN_ID_BYTES
                    ),
                    name=_text(line, f"{where}.name", span.get("name", "")),
                    start=_integer(
                        line,
                        f"{where}.startTimeUnixNano",
                        span.get("startTimeUnixNano", 0),
                    ),
                    line=line.number,
                    where=where,
                    order=order + n,
                    attributes=attributes,
                    attribute_paths=paths,
                )


def _numbered_lines(binary: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """Each line's number, byte offset and bytes (its end removed), lines
    ending at "\\n", "\\r\\n" or a lone "\\r" and numbered as `read_lines`
    numbers them; one line in memory at a time."""
    number = 0
    offset = 0
    for raw in binary:
        for piece in _pieces(raw):
            number += 1
            yield number, offset, piece
            offset += len(piece) + 1
        if raw.endswith(b"\r\n"):
            offset += 1


def _pieces(raw: bytes) -> list[bytes]:
    """A line read up to "\\n", cut at each lone "\\r" too."""
    ended = raw.endswith(b"\n")
    body = raw[:-1] if ended else raw
    if ended and body.endswith(b"\r"):
        body = body[:-1]
    pieces = body.split(b"\r")
    if not ended and len(pieces) > 1 and not pieces[-1]:
        pieces.pop()
    return pieces


def _request(path: str, number: int, data: bytes) -> dict[str, Any] | None:
    """The line's JSON object, None for a blank line."""
    text = data.decode("utf-8", "surrogateescape")
    if is_blank(text):
        return None
    return json_object(path, number, text, "line", InputFileError)


def _unreadable(path: str, error: OSError) -> InputFileError:
    return InputFileError(path, None, f"cannot be read ({error.strerror or error})")


TraceLines: TypeAlias = "array[int]"
"""Where a trace's spans are: for each line holding one, its byte offset,
its number and how many spans the file has before it, one after another
(machine integers: the index is what grows with the file)."""


def index_traces(path: str | Path) -> dict[str, TraceLines]:
    """The lines each trace's spans are on, traces in the order each first
    appears, every span read and checked; raises `InputFileError` naming
    the line and field. Only the index is kept: a trace's spans are read
    again, by `read_trace`, when its record is made."""
    path = str(path)
    index: dict[str, TraceLines] = {}
    span_ids: dict[str, set[int]] = {}
    order = 0
    try:
        with open(path, "rb") as binary:
            for number, offset, data in _numbered_lines(binary):
                request = _request(path, number, data)
                if request is None:
                    continue
                line = _Line(path, number)
                first = order
                for span in _spans(line, request, first):
                    order += 1
                    seen = span_ids.setdefault(span.trace_id, set())
                    if int(span.span_id, 16) in seen:
                        raise _exported_twice(path, span, line)
                    seen.add(int(span.span_id, 16))
                    lines = index.setdefault(span.trace_id, array("q"))
                    if not lines or lines[-3] != offset:
                        lines.extend((offset, number, first))
    except OSError as error:
        raise _unreadable(path, error) from None
    if not index:
        raise InputFileError(
            path,
            None,
            "holds no spans; it should be OTLP JSON, one ExportTraceServiceRequest "
            "a line",
        )
    return index


def _exported_twice(path: str, span: Span, line: _Line) -> InputFileError:
    """A span already read: where it first was is found by reading the file
    again up to it, which only a refusal needs."""
    earlier = next(
        other
        for _, other in _all_spans(path)
        if (other.trace_id, other.span_id) == (span.trace_id, span.span_id)
    )
    return line.refuse(
        f"{span.where}.spanId",
        f"span {quote(span.span_id)} of trace {quote(span.trace_id)} "
        f"is already on line {earlier.line} ({earlier.where}); a "
        "span exported twice",
    )


def _all_spans(path: str) -> Iterator[tuple[int, Span]]:
    order = 0
    with open(path, "rb") as binary:
        for number, _, data in _numbered_lines(binary):
            request = _request(path, number, data)
            if request is not None:
                for span in _spans(_Line(path, number), request, order):
                    order += 1
                    yield number, span


class TraceReader:
    """Reads a trace's spans again from the lines `index_traces` found
    them on. A line holding several traces' spans is kept, decoded, for
    the next few traces, as the next traces are most often on it too."""

    KEPT_LINES = 4

    def __init__(self, path: str, binary: IO[bytes]) -> None:
        self.path = path
        self.binary = binary
        self.kept: OrderedDict[int, dict[str, list[Span]]] = OrderedDict()

    def read(self, trace_id: str, lines: TraceLines) -> Trace:
        trace = Trace(trace_id)
        for position in range(0, len(lines), 3):
            offset, number, first = lines[position : position + 3]
            trace.spans += self._line(offset, number, first).get(trace_id, [])
        return trace

    def _line(self, offset: int, number: int, first: int) -> dict[str, list[Span]]:
        by_trace = self.kept.get(offset)
        if by_trace is not None:
            self.kept.move_to_end(offset)
            return by_trace
        self.binary.seek(offset)
        (data, *_) = _pieces(self.binary.readline())
        by_trace = {}
        request = _request(self.path, number, data)
        if request is not None:
            for span in _spans(_Line(self.path, number), request, first):
                by_trace.setdefault(span.trace_id, []).append(span)
        self.kept[offset] = by_trace
        if len(self.kept) > self.KEPT_LINES:
            self.kept.popitem(last=False)
        return by_trace


def read_traces(path: str | Path) -> dict[str, Trace]:
    """The spans file's traces by id, in the order each first appears,
    all in memory; raises `InputFileError` naming the line and field."""
    path = str(path)
    index = index_traces(path)
    try:
        with open(path, "rb") as binary:
            reader = TraceReader(path, binary)
            return {
                trace_id: reader.read(trace_id, lines)
                for trace_id, lines in index.items()
            }
    except OSError as error:
        raise _unreadable(path, error) from None


# --- what a trace says -------------------------------------------------------------


def _refuse_at(path: str, span: Span, key: str, problem: str) -> InputFileError:
    where = span.attribute_paths.get(key, span.where)
    return InputFileError(path, span.line, f"{where}: {problem}", field=where)


def _kind(path: str, span: Span) -> Any:
    """The span's OpenInference kind; "retriever", "Reranker" or "Llm" is
    refused, not skipped, since a retriever missed would read as one that
    found nothing."""
    kind = span.kind
    if (
        isinstance(kind, str)
        and kind.upper() in (RETRIEVER, RERANKER, LLM)
        and kind != kind.upper()
    ):
        raise _refuse_at(
            path,
            span,
            SPAN_KIND,
            f"span kind {quote(kind)} is not OpenInference's {quote(kind.upper())}",
        )
    return kind


def _context(path: str, trace: Trace, in_metadata: str | None) -> list[str] | None:
    """The documents the trace's RETRIEVER spans returned, in order; None
    when it has no RETRIEVER span, so the context was never recorded (an
    empty one would say the retriever found nothing)."""
    retrievers = [span for span in trace.ordered() if _kind(path, span) == RETRIEVER]
    if not retrievers:
        return None
    context: list[str] = []
    for span in retrievers:
        context += _documents(path, span, RETRIEVED, in_metadata)
    return context


def _post_order(path: str, trace: Trace) -> list[Span]:
    """The spans as their outputs were ready: a span after the spans under
    it, siblings in start order (ties in file order)."""
    spans = trace.ordered()
    known = {span.span_id for span in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in known else None
        children.setdefault(parent, []).append(span)
    order: list[Span] = []
    stack = [(span, False) for span in reversed(children.get(None, []))]
    while stack:
        span, below_done = stack.pop()
        if below_done:
            order.append(span)
            continue
        stack.append((span, True))
        stack += [(child, False) for child in reversed(children.get(span.span_id, []))]
    if len(order) != len(spans):
        lost = next(span for span in spans if span not in order)
        raise InputFileError(
            path,
            lost.line,
            f"{lost.where}: span {quote(lost.span_id)} of trace "
            f"{quote(trace.trace_id)} is its own ancestor (its parents loop)",
            field=lost.where,
        )
    return order


def _above(trace: Trace, spans: Iterable[Span]) -> set[str]:
    """The span ids of every span that `spans` are under."""
    parents = {span.span_id: span.parent_id for span in trace.spans}
    above: set[str] = set()
    for span in spans:
        parent = span.parent_id
        while parent is not None and parent in parents and parent not in above:
            above.add(parent)
            parent = parents[parent]
    return above


@dataclass
class _Steps:
    """A trace's steps, and each document's contents as its spans give them
    (None where a span gives none)."""

    steps: list[dict[str, Any]]
    contents: dict[str, set[str | None]]


def _steps(path: str, trace: Trace, in_metadata: str | None) -> _Steps:
    """Each RETRIEVER span (its documents) and each RERANKER span (its
    `reranker.output_documents`) is a step, in the order their outputs were
    ready (`_post_order`), named by kind: `retriever`, `reranker`, then
    `retriever-2` ... A RETRIEVER with no step under it reads the question:
    it takes no step's output, so retrievers side by side fan in to the
    step after them. A step span of the kind of the one just under it,
    which gave the same documents or none, is that step traced twice
    (LlamaIndex's `retrieve` and `_retrieve`): its documents count."""
    order = _post_order(path, trace)
    kinds = {span.span_id: _kind(path, span) for span in order}
    spans = [span for span in order if kinds[span.span_id] in (RETRIEVER, RERANKER)]
    wrapping = _above(trace, spans)
    steps: list[dict[str, Any]] = []
    contents: dict[str, set[str | None]] = {}
    unread: list[str] = []
    counts: dict[str, int] = {}
    previous: tuple[Span, list[str]] | None = None
    for span in spans:
        kind = kinds[span.span_id]
        listed = RETRIEVED if kind == RETRIEVER else RERANKED
        fields = _document_fields(path, span, listed, in_metadata)
        for document, content in fields:
            contents.setdefault(document, set()).add(content)
        ids = [document for document, _ in fields]
        if (
            previous is not None
            and previous[0].kind == kind
            and previous[1] in (ids, [])
            and span.span_id in _above(trace, [previous[0]])
        ):
            previous = (span, ids)
            steps[-1]["ids"] = ids
            continue
        previous = (span, ids)
        counts[kind] = counts.get(kind, 0) + 1
        name = kind.lower() + ("" if counts[kind] == 1 else f"-{counts[kind]}")
        if kind == RETRIEVER and span.span_id not in wrapping:
            inputs, unread = [], [*unread, name]
        else:
            inputs, unread = unread, [name]
        step: dict[str, Any] = {"name": name, "ids": ids}
        if inputs != [last["name"] for last in steps[-1:]]:
            step["inputs"] = inputs
        steps.append(step)
    return _Steps(steps, contents)


PROMPT_TEMPLATE = "llm.prompt_template."
INPUT_MESSAGES = "llm.input_messages."
OUTPUT_MESSAGES = "llm.output_messages."
PROMPTS = "llm.prompts"
INPUT_MIME_TYPE = "input.mime_type"
JSON_MIME_TYPE = "application/json"


def _builds_prompt(span: Span) -> bool:
    """An LLM span that renders a template (Haystack's PromptBuilder): its
    output is the prompt, its input every document offered to it."""
    return any(key.startswith(PROMPT_TEMPLATE) for key in span.attributes)


def _model_input(path: str, trace: Trace) -> list[str]:
    """The texts the trace shows a model received: each LLM span's input
    messages or prompts (else its input.value), a prompt builder's output."""
    texts: list[str] = []
    for span in trace.ordered():
        if _kind(path, span) != LLM:
            continue
        if _builds_prompt(span):
            texts += _texts(path, span, OUTPUT_VALUE)
            continue
        given = [
            text
            for key in span.attributes
            if key == PROMPTS
            or (
                key.startswith((INPUT_MESSAGES, PROMPTS + "."))
                and key.endswith((".content", ".text"))
            )
            for text in _texts(path, span, key)
        ]
        texts += given or _json_texts(path, span)
    return texts


def _texts(path: str, span: Span, key: str) -> list[str]:
    """An attribute that holds text, or an array of texts, as a list."""
    value = span.attributes.get(key)
    if value is None:
        return []
    if type(value) is list and all(isinstance(item, str) for item in value):
        return value
    if not isinstance(value, str):
        raise _refuse_at(
            path, span, key, f"{key} must be text or texts, got {quote(value, 80)}"
        )
    return [value]


def _json_texts(path: str, span: Span) -> list[str]:
    """The span's input.value; when JSON, the texts in it, as a model
    would read them unescaped."""
    texts = _texts(path, span, INPUT_VALUE)
    if not texts or span.attributes.get(INPUT_MIME_TYPE) != JSON_MIME_TYPE:
        return texts
    try:
        pending = [strict_json_loads(texts[0])]
    except ValueError:
        return texts
    found: list[str] = []
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            pending += reversed(list(value.values()))
        elif isinstance(value, list):
            pending += reversed(value)
    return found


def _untyped(
    path: str, trace: Trace, contents: dict[str, set[str | None]]
) -> list[str]:
    """The names of spans, typed neither RETRIEVER nor RERANKER (nor LLM or
    PROMPT), whose output holds a trace document's content, and that no
    such span or model or step span is under: a ranker the instrumentor
    typed CHAIN, which no step reads."""
    marks = {content for texts in contents.values() for content in texts if content}
    marks |= {json.dumps(mark, ensure_ascii=False)[1:-1] for mark in marks}
    if not marks:
        return []
    holding, typed = [], []
    for span in trace.ordered():
        kind = _kind(path, span)
        if kind in (RETRIEVER, RERANKER, LLM, PROMPT):
            typed.append(span)
            continue
        output = span.attributes.get(OUTPUT_VALUE)
        if isinstance(output, str) and any(mark in output for mark in marks):
            holding.append(span)
    above = _above(trace, [*holding, *typed])
    return [span.name for span in holding if span.span_id not in above]


def _documents(
    path: str, span: Span, documents: str, in_metadata: str | None
) -> list[str]:
    """The ids of a span's list of documents `documents`, in order."""
    fields = _document_fields(path, span, documents, in_metadata)
    return [document for document, _ in fields]


def _document_fields(
    path: str, span: Span, documents: str, in_metadata: str | None
) -> list[tuple[str, str | None]]:
    """The ids and contents of a span's list of documents `documents`, in order:
    `retrieval.documents` for a RETRIEVER, `reranker.output_documents` for a
    RERANKER.

    OpenInference flattens a list of documents into attributes
    `retrieval.documents.N.document.id`; some exporters keep the list as one
    attribute `retrieval.documents`, an array of objects or a JSON text of
    one. Either is read. Both at once is refused: which one the span meant
    would be a guess. A document without `document.id` has the id its
    `document.metadata` holds as `in_metadata`, when that is given.
    """
    prefix = f"{documents}."
    pattern = re.compile(re.escape(prefix) + r"(0|[1-9][0-9]*)\.document\.(.+)")
    found_documents: dict[int, dict[str, str]] = {}
    for key in span.attributes:
        if not key.startswith(prefix):
            continue
        found = pattern.fullmatch(key)
        if found is None or len(found.group(1)) > _INTEGER_DIGITS:
            raise _refuse_at(
                path,
                span,
                key,
                f"attribute {quote(key)} is not {documents}.N.document.FIELD, N "
                "an index without leading zeros",
            )
        found_documents.setdefault(int(found.group(1)), {})[found.group(2)] = key
    if documents in span.attributes:
        if found_documents:
            raise _refuse_at(
                path,
                span,
                documents,
                f"{span.kind} span {quote(span.span_id)} gives its documents twice: "
                f"as {documents} and as {prefix}N.document.* attributes",
            )
        return _document_list(path, span, documents)
    ids: list[tuple[str, str | None]] = []
    for index in sorted(found_documents):
        keys = found_documents[index]
        if "id" in keys:
            document = _document_id(path, span, keys["id"], span.attributes[keys["id"]])
        elif in_metadata is not None and "metadata" in keys:
            document = _metadata_id(path, span, keys["metadata"], in_metadata)
        else:
            raise _refuse_at(
                path,
                span,
                next(iter(keys.values())),
                f"document {index} of {span.kind} span {quote(span.span_id)} "
                f"has no {prefix}{index}.document.id, so what it returned is "
                "unknown (--id-in-metadata KEY reads it from its metadata)",
            )
        content_key = keys.get("content")
        content = None if content_key is None else _span_text(path, span, content_key)
        ids.append((document, content))
    return ids


def _metadata_id(path: str, span: Span, key: str, name: str) -> str:
    """The id a document's metadata (a JSON object, or its text) holds as
    `name`: LangChain's instrumentor records a document's metadata, not
    its id."""
    value = span.attributes[key]
    if isinstance(value, str):
        try:
            value = strict_json_loads(value)
        except ValueError:
            value = None
    if type(value) is not dict or name not in value:
        raise _refuse_at(
            path,
            span,
            key,
            f"{key} holds no {quote(name)} and the document has no document.id, "
            "so what the span returned is unknown",
        )
    return _document_id(path, span, key, value[name])


def _document_list(
    path: str, span: Span, documents: str
) -> list[tuple[str, str | None]]:
    """The ids of a list of documents given as one attribute: an array of
    objects, each holding `document.id`, or a JSON text of one."""
    value = span.attributes[documents]
    form = (
        f"{documents} must be an array of objects each holding document.id "
        "(or a JSON text of one)"
    )
    if isinstance(value, str):
        try:
            value = strict_json_loads(value)
        except ValueError as error:
            raise _refuse_at(
                path, span, documents, f"{form}; its text is not JSON ({error})"
            ) from None
    if type(value) is not list:
        raise _refuse_at(path, span, documents, f"{form}, got {quote(value, 80)}")
    ids: list[tuple[str, str | None]] = []
    for index, document in enumerate(value):
        if type(document) is not dict or "document.id" not in document:
            raise _refuse_at(
                path,
                span,
                documents,
                f"{form}; document {index} is {quote(document, 80)}, so what "
                "the span returned is unknown",
            )
        content = document.get("document.content")
        ids.append(
            (
                _document_id(path, span, documents, document["document.id"]),
                content if isinstance(content, str) else None,
            )
        )
    return ids


def _document_id(path: str, span: Span, key: str, value: Any) -> str:
    if type(value) is int:
        return str(value)
    if isinstance(value, str):
        if has_lone_surrogate(value):
            raise _refuse_at(
                path,
                span,
                key,
                f"document id {quote(value, 80)} holds a lone "
                "surrogate, which no log can hold",
            )
        return value
    raise _refuse_at(
        path,
        span,
        key,
        f"document id {quote(value, 80)} is neither text nor an integer",
    )


def _span_text(path: str, span: Span, key: str) -> str | None:
    value = span.attributes.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _refuse_at(path, span, key, f"{key} must be text, got {quote(value, 80)}")
    return value


def _answer(path: str, trace: Trace) -> str | None:
    """What the last model returned: its output messages, else its
    output.value; None when no LLM span (prompt builders aside) says."""
    models = [
        span
        for span in trace.ordered()
        if _kind(path, span) == LLM and not _builds_prompt(span)
    ]
    for span in reversed(models):
        said = [
            text
            for key in span.attributes
            if key.startswith(OUTPUT_MESSAGES) and key.endswith(".content")
            for text in _texts(path, span, key)
        ]
        if said:
            return "\n".join(said)
        answer = _span_text(path, span, OUTPUT_VALUE)
        if answer is not None:
            return answer
    return None


def _question(path: str, trace: Trace) -> str | None:
    """The user's text: the root's input.value unless JSON, else the first
    retriever's (its `query` where JSON), else the root's as it is."""
    root = trace.root()
    if root is None:
        return None
    question = _span_text(path, root, INPUT_VALUE)
    if question is None or root.attributes.get(INPUT_MIME_TYPE) != JSON_MIME_TYPE:
        return question
    retrievers = [span for span in trace.ordered() if _kind(path, span) == RETRIEVER]
    text = None if not retrievers else _span_text(path, retrievers[0], INPUT_VALUE)
    if text is None:
        return question
    if retrievers[0].attributes.get(INPUT_MIME_TYPE) != JSON_MIME_TYPE:
        return text
    try:
        arguments = strict_json_loads(text)
    except ValueError:
        return question
    query = arguments.get("query") if type(arguments) is dict else None
    return query if isinstance(query, str) else question


def _key(path: str, trace: Trace, name: str) -> Key | None:
    """The trace's value of attribute `name`: the root's, else the one value
    its other spans agree on."""
    root = trace.root()
    spans = trace.ordered()
    if root is not None and name in root.attributes:
        spans = [root]
    found: dict[Any, Span] = {}
    for span in spans:
        if name not in span.attributes:
            continue
        value = span.attributes[name]
        if type(value) is not int and not isinstance(value, str):
            raise _refuse_at(
                path,
                span,
                name,
                f"key {quote(name)} is {quote(value, 80)}; a key is text or an integer",
            )
        found.setdefault((type(value), value), span)
    if len(found) > 1:
        (first, first_span), (second, second_span) = list(found.items())[:2]
        raise InputFileError(
            path,
            second_span.line,
            f"trace {quote(trace.trace_id)} has {len(found)} values for key "
            f"{quote(name)} and no root span holding one: {quote(first[1])} "
            f"(line {first_span.line}, {first_span.where}) and "
            f"{quote(second[1])} ({second_span.where}); which one the trace "
            "answers would be a guess",
            field=name,
        )
    if not found:
        return None
    ((_, value),) = found
    key: Key = value
    return key


# --- the gold file -------------------------------------------------------------


def read_gold(path: str | Path) -> dict[tuple[type, Key], GoldLine]:
    """Gold lines by typed key; raises `InputFileError` naming the line."""
    path = str(path)
    gold: dict[tuple[type, Key], GoldLine] = {}
    for line, value in _json_lines(path):
        value = _object(line, "", value)
        if "key" not in value:
            raise line.refuse(
                "key",
                "no 'key'; a gold line is "
                '{"key": ..., "required": [...], "correct"?: ...}',
            )
        key = value["key"]
        if type(key) is not int and not isinstance(key, str):
            raise line.refuse("key", f"{quote(key, 80)} is neither text nor an integer")
        if isinstance(key, str):
            _text(line, "key", key)
        required = value.get("required")
        if type(required) is not list:
            raise line.refuse(
                "required", f"must be a list of document ids, got {quote(required, 80)}"
            )
        for position, item in enumerate(required):
            _text(line, f"required[{position}]", item)
        correct = value.get("correct")
        if correct is not None and type(correct) is not bool:
            raise line.refuse(
                "correct", f"must be true, false or absent, got {quote(correct, 80)}"
            )
        typed = (type(key), key)
        if typed in gold:
            raise line.refuse(
                "key",
                f"key {quote(key)} is already on line {gold[typed].line}; one gold "
                "line per key",
            )
        gold[typed] = GoldLine(key, list(required), correct, line.number)
    if not gold:
        raise InputFileError(
            path,
            None,
            'holds no gold lines; give one {"key": ..., "required": [...]} a line',
        )
    return gold


# --- the records ---------------------------------------------------------------


@dataclass
class OpenInferenceNotes:
    """What an import's notes say, complete once its records all are: the
    traces that matched no gold line, as (trace id, key or None); the gold
    lines no trace matched; the traces with no RETRIEVER span; those whose
    context is their last step's output as no model input shows it, with
    why; and the untyped spans that returned documents, by name, with how
    many traces have one."""

    unmatched: list[tuple[str, Key | None]] = field(default_factory=list)
    unused_gold: list[GoldLine] = field(default_factory=list)
    unretrieved: list[str] = field(default_factory=list)
    last_step: list[tuple[str, str]] = field(default_factory=list)
    untyped: dict[str, int] = field(default_factory=dict)


MODEL_INPUT = "model-input"
LAST_STEP = "last-step"
NO_MODEL_INPUT = "no LLM span shows its input"
NO_CONTENT = "a document with no content that no model input names by id"


@dataclass(frozen=True)
class ImportRules:
    """How traces become records: the gold key's attribute, the sample
    id's (None: the key's), the context rule, whether a trace that matches
    no gold line is let through, and the metadata key of a document's id
    where a span gives no document.id."""

    key: str
    sample_id: str | None = None
    context: str = MODEL_INPUT
    allow_unmatched: bool = False
    id_in_metadata: str | None = None


class UnmatchedTraces(ImportRefused):
    """Traces that match no gold line, with no --allow-unmatched."""

    exit_code = 2


def _trace_context(
    path: str, trace: Trace, rules: ImportRules, notes: OpenInferenceNotes
) -> tuple[list[str] | None, list[dict[str, Any]] | None]:
    """The trace's context and steps by `rules.context` (see the module)."""
    retrieved = _context(path, trace, rules.id_in_metadata)
    if retrieved is None:
        notes.unretrieved.append(trace.trace_id)
        return None, None
    found = _steps(path, trace, rules.id_in_metadata)
    for name in dict.fromkeys(_untyped(path, trace, found.contents)):
        notes.untyped[name] = notes.untyped.get(name, 0) + 1
    if rules.context == MODEL_INPUT:
        texts = _model_input(path, trace)
        why = NO_MODEL_INPUT
        if texts:
            contents = {
                document: [text for text in texts_of if text]
                for document, texts_of in found.contents.items()
            }
            try:
                context = documents_in(texts, contents)
            except TwoReadings as error:
                raise ImportRefused(
                    f"{path}: trace {quote(trace.trace_id)}: {error}; "
                    "--context last-step takes its last step's output instead"
                ) from None
            unseen = [d for d in contents if not contents[d] and d not in context]
            if not unseen:
                return context, found.steps
            why = NO_CONTENT
        notes.last_step.append((trace.trace_id, why))
    if not any(step["name"].startswith("reranker") for step in found.steps):
        return retrieved, None
    return list(found.steps[-1]["ids"]), found.steps


def openinference_records(
    spans_path: str,
    traces: Iterable[Trace],
    gold: dict[tuple[type, Key], GoldLine],
    gold_path: str,
    rules: ImportRules,
    labels: RecordLabels | None,
    notes: OpenInferenceNotes,
) -> Iterator[dict[str, Any]]:
    """One record per trace, as they come (see the module), filling
    `notes`; raises `InputFileError` for what a trace cannot say,
    `ImportRefused` for a sample id two traces share, `LabelsRefused` for
    a record labelled twice or a label naming none, and `UnmatchedTraces`
    at the end, unless let through."""
    used: set[tuple[type, Key]] = set()
    traces_by_id: dict[str, str] = {}
    for trace in traces:
        trace_id = trace.trace_id
        value = _key(spans_path, trace, rules.key)
        line = None if value is None else gold.get((type(value), value))
        sample_id = _sample_id(spans_path, trace, rules, value)
        if sample_id in traces_by_id:
            raise ImportRefused(
                f"{spans_path}: traces {quote(traces_by_id[sample_id])} and "
                f"{quote(trace_id)} both have sample id {quote(sample_id)} "
                f"({rules.sample_id or rules.key}); a sample id names one run"
            )
        traces_by_id[sample_id] = trace_id
        record: dict[str, Any] = {}
        if line is None:
            notes.unmatched.append((trace_id, value))
        else:
            used.add((type(line.key), line.key))
            record["required"] = list(line.required)
        context, steps = _trace_context(spans_path, trace, rules, notes)
        if context is not None:
            record["context"] = context
        if steps is not None:
            record["steps"] = steps
        correct = _label(line, labels, sample_id, gold_path)
        if correct is not None:
            record["correct"] = correct
        question = _question(spans_path, trace)
        if question is not None:
            record["question"] = question
        answer = _answer(spans_path, trace)
        if answer is not None:
            record["answer"] = answer
        yield {"id": sample_id, "input": record}
    notes.unused_gold += [line for typed, line in gold.items() if typed not in used]
    if labels is not None:
        check_labels_name_records(labels, traces_by_id, "record", spans_path)
    if notes.unmatched and not rules.allow_unmatched:
        raise UnmatchedTraces(
            _unmatched_message(notes, rules.key, gold_path, len(traces_by_id))
        )


def _label(
    line: GoldLine | None, labels: RecordLabels | None, sample_id: str, gold: str
) -> bool | None:
    """The record's label: its gold line's, or its labels file's, never
    both."""
    if labels is None or sample_id not in labels.labels:
        return None if line is None else line.correct
    if line is not None and line.correct is not None:
        raise LabelsRefused(
            f"{labels.path}, line {labels.lines[sample_id]}: {quote(sample_id)} "
            f"is already labelled by {gold}, line {line.line}; a record's label "
            "comes from one file"
        )
    return labels.labels[sample_id]


def _sample_id(path: str, trace: Trace, rules: ImportRules, key: Key | None) -> str:
    """The record's id: the --id attribute's value, else the key's, else
    (a trace without a key, let through unmatched) the trace id. An
    integer becomes its decimal text, as a record's id is text."""
    value = key
    if rules.sample_id is not None:
        value = _key(path, trace, rules.sample_id)
        if value is None:
            raise ImportRefused(
                f"{path}: trace {quote(trace.trace_id)} has no attribute "
                f"{quote(rules.sample_id)} for its sample id"
            )
    if value == "":
        raise ImportRefused(
            f"{path}: trace {quote(trace.trace_id)} has an empty "
            f"{rules.sample_id or rules.key}, which cannot name a record"
        )
    return trace.trace_id if value is None else str(value)


def _unmatched_message(
    notes: OpenInferenceNotes, key: str, gold_path: str, traces: int
) -> str:
    """The traces named, and, when none matched, why a key may not join."""
    unmatched = notes.unmatched
    shown = ", ".join(
        quote(trace_id)
        + (f" (no {key})" if value is None else f" ({quote(value, 60)})")
        for trace_id, value in unmatched[:SHOWN]
    )
    more = len(unmatched) - SHOWN
    verb = "matches" if len(unmatched) == 1 else "match"
    message = (
        f"{counted(len(unmatched), 'trace')} {verb} no line of {gold_path} by "
        f"{key}: {shown}" + (f" and {more} more" if more > 0 else "")
    )
    if len(unmatched) < traces:
        return message + "; --allow-unmatched writes them without required"
    return (
        message + f"; no trace matched any of its lines: {key} may vary from run "
        "to run of the same question (Haystack's input.value holds a Python "
        "set, whose order changes with each process), so key by an id the "
        "harness sets, such as session.id; --allow-unmatched writes them "
        "without required"
    )


def stream_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    rules: ImportRules,
    labels_path: str | Path | None = None,
    notes: OpenInferenceNotes,
) -> Iterator[dict[str, Any]]:
    """Read the spans, the gold file (and the labels) and give the records
    one at a time, filling `notes`.

    Every span is read and checked first, keeping only where each trace's
    are; then each trace's spans are read again to make its record, so
    one trace's spans are in memory at a time. A refusal may still come
    after some records (a trace whose spans disagree): a caller writes
    them where it can drop them, and keeps them only once the iterator
    has ended.
    """
    spans = str(spans_path)
    index = index_traces(spans)
    gold = read_gold(gold_path)
    labels = None if labels_path is None else read_labels(labels_path)
    try:
        with open(spans, "rb") as binary:
            reader = TraceReader(spans, binary)
            traces = (reader.read(trace_id, lines) for trace_id, lines in index.items())
            yield from openinference_records(
                spans, traces, gold, str(gold_path), rules, labels, notes
            )
    except OSError as error:
        raise _unreadable(spans, error) from None


def import_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    key: str,
    labels_path: str | Path | None = None,
    sample_id: str | None = None,
    context: str = MODEL_INPUT,
    allow_unmatched: bool = False,
    id_in_metadata: str | None = None,
) -> OpenInferenceImport:
    """Read the spans, the gold file (and the labels) and build the records.

    Everything is checked before anything is returned, so a caller writes
    either every record or none.
    """
    notes = OpenInferenceNotes()
    rules = ImportRules(key, sample_id, context, allow_unmatched, id_in_metadata)
    records = list(
        stream_openinference(
            spans_path, gold_path, rules=rules, labels_path=labels_path, notes=notes
        )
    )
    return OpenInferenceImport(records, notes)
