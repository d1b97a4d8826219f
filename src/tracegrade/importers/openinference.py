"""OpenInference traces, exported as OTLP JSON, as stage-diagnosis records.

A RAG pipeline instrumented with OpenInference's conventions (Arize
Phoenix, OpenLLMetry-style instrumentation) records what stage diagnosis
needs as it runs: its `RETRIEVER` spans name the documents they returned
(`retrieval.documents.N.document.id`), and its `LLM` or root span holds
the answer (`output.value`). What the answer needed, and whether it was
right, comes from a gold file, joined to each trace by a key the user
names. One fixture-format record per trace:

    {"id": TRACE_ID, "input": {"required": [...], "context": [...],
     "correct"?: true|false, "question"?: ..., "answer"?: ...}}

- `id` is the trace id, 32 lowercase hex digits.
- `context` is the document ids of the trace's RETRIEVER spans, spans in
  start order (ties in file order), each span's documents by their index
  N; an integer id becomes its decimal text. A span may give its documents
  as one attribute `retrieval.documents` instead (an array of objects each
  holding `document.id`, or a JSON text of one), as some exporters keep
  them; both forms in one span are refused. A trace with no RETRIEVER
  span has no `context`: it was never recorded, and the run scores
  `invalid-input`, where an empty one would blame the retriever.
- `steps`, for a trace with a RERANKER span: each RETRIEVER span and each
  RERANKER span (its `reranker.output_documents`) is a step, in start
  order, and `context` is the last step's output instead. A trace
  without a reranker has no steps and the context above.
- `answer` is the root span's `output.value`, or, where the root has
  none, the last LLM span's; `question` the root span's `input.value`.
  The root is the span with no parent (the earliest, if several).
- The key is the attribute `key` of the root span, or, where the root
  lacks it, the one value the trace's other spans give it (two different
  values are refused). `--key input.value` joins by the question text.
- `required` (and `correct`, when the gold line has one) come from the
  gold line whose `key` equals it, type included: `7` is not `"7"`. A
  label may also come from a labels file keyed by trace id, but one trace
  is never labelled by both. Labels are never guessed.
- A trace that matches no gold line is kept, without `required` (so it
  scores `unresolved`: nothing to diagnose), and counted and listed
  (`OpenInferenceImport.unmatched`); so are gold lines no trace matched.

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
    InputFileError,
    LabelsRefused,
    RecordLabels,
    check_labels_name_records,
    read_labels,
)

# The OpenInference semantic conventions' attribute names.
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
RETRIEVER = "RETRIEVER"
LLM = "LLM"
RERANKER = "RERANKER"
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
    """The records; the traces that matched no gold line, as (trace id,
    key or None); the gold lines no trace matched; and the traces with no
    RETRIEVER span."""

    records: list[dict[str, Any]]
    unmatched: list[tuple[str, Key | None]]
    unused_gold: list[GoldLine]
    unretrieved: list[str]


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


def _context(path: str, trace: Trace) -> list[str] | None:
    """The documents the trace's RETRIEVER spans returned, in order; None
    when it has no RETRIEVER span, so the context was never recorded (an
    empty one would say the retriever found nothing)."""
    retrievers = [span for span in trace.ordered() if _kind(path, span) == RETRIEVER]
    if not retrievers:
        return None
    context: list[str] = []
    for span in retrievers:
        context += _documents(path, span, RETRIEVED)
    return context


def _steps(path: str, trace: Trace) -> list[dict[str, Any]] | None:
    """The trace's pipeline steps, when it has a RERANKER span; None when not.

    Each RETRIEVER span (its documents) and each RERANKER span (its
    `reranker.output_documents`) is a step, in start order, named by its
    kind: `retriever`, `reranker`, and `retriever-2`, `reranker-2` ... for
    later spans of a kind. A trace without a reranker has no steps: its
    record is as it was, the context being the retrievers' documents.
    """
    spans = [
        span for span in trace.ordered() if _kind(path, span) in (RETRIEVER, RERANKER)
    ]
    if not any(span.kind == RERANKER for span in spans):
        return None
    steps: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for span in spans:
        name = span.kind.lower()
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        documents = RETRIEVED if span.kind == RETRIEVER else RERANKED
        steps.append({"name": name, "ids": _documents(path, span, documents)})
    return steps


def _documents(path: str, span: Span, documents: str) -> list[str]:
    """The ids of a span's list of documents `documents`, in order:
    `retrieval.documents` for a RETRIEVER, `reranker.output_documents` for a
    RERANKER.

    OpenInference flattens a list of documents into attributes
    `retrieval.documents.N.document.id`; some exporters keep the list as one
    attribute `retrieval.documents`, an array of objects or a JSON text of
    one. Either is read. Both at once is refused: which one the span meant
    would be a guess.
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
    ids: list[str] = []
    for index in sorted(found_documents):
        id_key = found_documents[index].get("id")
        if id_key is None:
            raise _refuse_at(
                path,
                span,
                next(iter(found_documents[index].values())),
                f"document {index} of {span.kind} span {quote(span.span_id)} "
                f"has no {prefix}{index}.document.id, so what it returned is "
                "unknown",
            )
        ids.append(_document_id(path, span, id_key, span.attributes[id_key]))
    return ids


def _document_list(path: str, span: Span, documents: str) -> list[str]:
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
    ids: list[str] = []
    for index, document in enumerate(value):
        if type(document) is not dict or "document.id" not in document:
            raise _refuse_at(
                path,
                span,
                documents,
                f"{form}; document {index} is {quote(document, 80)}, so what "
                "the span returned is unknown",
            )
        ids.append(_document_id(path, span, documents, document["document.id"]))
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
    root = trace.root()
    if root is not None:
        answer = _span_text(path, root, OUTPUT_VALUE)
        if answer is not None:
            return answer
    answers = [
        _span_text(path, span, OUTPUT_VALUE)
        for span in trace.ordered()
        if _kind(path, span) == LLM
    ]
    given = [answer for answer in answers if answer is not None]
    return given[-1] if given else None


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
    lines no trace matched; and the traces with no RETRIEVER span."""

    unmatched: list[tuple[str, Key | None]] = field(default_factory=list)
    unused_gold: list[GoldLine] = field(default_factory=list)
    unretrieved: list[str] = field(default_factory=list)


def openinference_records(
    spans_path: str,
    traces: Iterable[Trace],
    gold: dict[tuple[type, Key], GoldLine],
    gold_path: str,
    key: str,
    labels: RecordLabels | None,
    notes: OpenInferenceNotes,
) -> Iterator[dict[str, Any]]:
    """One record per trace, as they come (see the module), filling
    `notes`; raises `InputFileError` for what a trace cannot say, and
    `LabelsRefused` for a trace labelled twice."""
    used: set[tuple[type, Key]] = set()
    for trace in traces:
        trace_id = trace.trace_id
        value = _key(spans_path, trace, key)
        line = None if value is None else gold.get((type(value), value))
        record: dict[str, Any] = {}
        if line is None:
            notes.unmatched.append((trace_id, value))
        else:
            used.add((type(line.key), line.key))
            record["required"] = list(line.required)
        context = _context(spans_path, trace)
        steps = _steps(spans_path, trace)
        if context is None:
            notes.unretrieved.append(trace_id)
        elif steps is None:
            record["context"] = context
        else:
            # What reached the model is what the pipeline's last step output.
            record["context"] = list(steps[-1]["ids"])
            record["steps"] = steps
        correct = None if line is None else line.correct
        if labels is not None and trace_id in labels.labels:
            if correct is not None:
                assert line is not None
                raise LabelsRefused(
                    f"{labels.path}, line {labels.lines[trace_id]}: trace "
                    f"{quote(trace_id)} is already labelled by {gold_path}, "
                    f"line {line.line}; a trace's label comes from one file"
                )
            correct = labels.labels[trace_id]
        if correct is not None:
            record["correct"] = correct
        root = trace.root()
        question = None if root is None else _span_text(spans_path, root, INPUT_VALUE)
        if question is not None:
            record["question"] = question
        answer = _answer(spans_path, trace)
        if answer is not None:
            record["answer"] = answer
        yield {"id": trace_id, "input": record}
    notes.unused_gold += [line for typed, line in gold.items() if typed not in used]


def stream_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    key: str,
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
    if labels is not None:
        check_labels_name_records(labels, index, "trace", spans)
    try:
        with open(spans, "rb") as binary:
            reader = TraceReader(spans, binary)
            traces = (reader.read(trace_id, lines) for trace_id, lines in index.items())
            yield from openinference_records(
                spans, traces, gold, str(gold_path), key, labels, notes
            )
    except OSError as error:
        raise _unreadable(spans, error) from None


def import_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    key: str,
    labels_path: str | Path | None = None,
) -> OpenInferenceImport:
    """Read the spans, the gold file (and the labels) and build the records.

    Everything is checked before anything is returned, so a caller writes
    either every record or none.
    """
    notes = OpenInferenceNotes()
    records = list(
        stream_openinference(
            spans_path, gold_path, key=key, labels_path=labels_path, notes=notes
        )
    )
    return OpenInferenceImport(
        records, notes.unmatched, notes.unused_gold, notes.unretrieved
    )
