"""OpenInference spans (OTLP JSON) as stage-diagnosis records, one per trace,
joined to a gold file by a key attribute. Each span is read once, into an
unnamed spool, so memory holds one trace (docs/import-openinference.md)."""

from __future__ import annotations

import base64
import binascii
import json
import pickle
import re
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.errors import quote
from ..lines import has_lone_surrogate, json_objects, strict_json_loads
from .common import (
    SHOWN,
    ImportRefused,
    InputFileError,
    LabelsRefused,
    NoTemporarySpace,
    RecordLabels,
    check_labels_name_records,
    counted,
    listed,
    named,
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
PROMPT_TEMPLATE = "llm.prompt_template."
INPUT_MESSAGES = "llm.input_messages."
OUTPUT_MESSAGES = "llm.output_messages."
PROMPTS = "llm.prompts"
INPUT_MIME_TYPE = "input.mime_type"
JSON_MIME_TYPE = "application/json"

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


def _list(line: _Line, where: str, value: Any) -> list[Any]:
    """A repeated field: absent is empty, as protobuf's JSON leaves it out."""
    if value is None:
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
    """The spans of one ExportTraceServiceRequest, numbered from `order`."""
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
                yield _span(line, f"{s_where}.spans[{n}]", span, order + n)


def _span(line: _Line, where: str, span: Any, order: int) -> Span:
    span = _object(line, where, span)
    parent = span.get("parentSpanId", "")
    attributes, paths = _attributes(
        line,
        f"{where}.attributes",
        _list(line, f"{where}.attributes", span.get("attributes")),
    )
    return Span(
        trace_id=_identifier(
            line, f"{where}.traceId", span.get("traceId"), TRACE_ID_BYTES
        ),
        span_id=_identifier(line, f"{where}.spanId", span.get("spanId"), SPAN_ID_BYTES),
        parent_id=None
        if parent in ("", None)
        else _identifier(line, f"{where}.parentSpanId", parent, SPAN_ID_BYTES),
        name=_text(line, f"{where}.name", span.get("name", "")),
        start=_integer(
            line, f"{where}.startTimeUnixNano", span.get("startTimeUnixNano", 0)
        ),
        line=line.number,
        where=where,
        order=order,
        attributes=attributes,
        attribute_paths=paths,
    )


class _Spool:
    """Each trace's spans, pickled a line's worth at a time into an unnamed
    temporary file as the spans file is read, with where each trace's are."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.places: dict[str, array[int]] = {}
        self.span_ids: dict[str, set[int]] = {}

    def add(self, line: _Line, spans: Iterable[Span]) -> None:
        by_trace: dict[str, list[Span]] = {}
        for span in spans:
            seen = self.span_ids.setdefault(span.trace_id, set())
            if int(span.span_id, 16) in seen:
                raise self._exported_twice(line, span, by_trace)
            seen.add(int(span.span_id, 16))
            by_trace.setdefault(span.trace_id, []).append(span)
        for trace_id, group in by_trace.items():
            data = pickle.dumps(group, pickle.HIGHEST_PROTOCOL)
            places = self.places.setdefault(trace_id, array("q"))
            places.extend((self.file.tell(), len(data)))
            try:
                self.file.write(data)
            except OSError as error:
                raise NoTemporarySpace(error, "spans") from None

    def read(self, trace_id: str) -> Trace:
        trace = Trace(trace_id)
        places = self.places[trace_id]
        for position in range(0, len(places), 2):
            self.file.seek(places[position])
            trace.spans += pickle.loads(self.file.read(places[position + 1]))
        self.file.seek(0, 2)
        return trace

    def _exported_twice(
        self, line: _Line, span: Span, pending: dict[str, list[Span]]
    ) -> InputFileError:
        spans = (
            [*self.read(span.trace_id).spans] if span.trace_id in self.places else []
        )
        spans += pending.get(span.trace_id, [])
        earlier = next(other for other in spans if other.span_id == span.span_id)
        return line.refuse(
            f"{span.where}.spanId",
            f"span {quote(span.span_id)} of trace {quote(span.trace_id)} "
            f"is already on line {earlier.line} ({earlier.where}); a "
            "span exported twice",
        )


def _spool_spans(path: str, spool: _Spool) -> None:
    """Read and check every span of the file into `spool`."""
    order = 0
    for line, request in _json_lines(path):
        spans = list(_spans(line, request, order))
        order += len(spans)
        spool.add(line, spans)
    if not spool.places:
        raise InputFileError(
            path,
            None,
            "holds no spans; it should be OTLP JSON, one ExportTraceServiceRequest "
            "a line",
        )


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
    return [
        document
        for span in retrievers
        for document, _ in _document_fields(path, span, RETRIEVED, in_metadata)
    ]


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
    """RETRIEVER and RERANKER spans as steps, in the order their outputs were
    ready; a retriever over no step fans in; a step wrapping one of its kind
    with the same or no documents is that step traced twice (LlamaIndex)."""
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
    """Untyped spans whose output holds a document's content and that wrap no
    typed span: a ranker the instrumentor typed CHAIN, which no step reads."""
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


def _document_fields(
    path: str, span: Span, documents: str, in_metadata: str | None
) -> list[tuple[str, str | None]]:
    """The ids and contents of the span's `documents`, flattened into
    `documents.N.document.*` attributes or one array attribute, not both."""
    if documents in span.attributes:
        if any(key.startswith(f"{documents}.") for key in span.attributes):
            raise _refuse_at(
                path,
                span,
                documents,
                f"{span.kind} span {quote(span.span_id)} gives its documents twice: "
                f"as {documents} and as {documents}.N.document.* attributes",
            )
        return _document_list(path, span, documents)
    return [
        (
            _flat_document_id(path, span, documents, index, keys, in_metadata),
            (
                None
                if "content" not in keys
                else _span_text(path, span, keys["content"])
            ),
        )
        for index, keys in _flattened(path, span, documents)
    ]


def _flattened(
    path: str, span: Span, documents: str
) -> list[tuple[int, dict[str, str]]]:
    """Each flattened document's index and its fields' attribute keys."""
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
    return sorted(found_documents.items())


def _flat_document_id(
    path: str,
    span: Span,
    documents: str,
    index: int,
    keys: dict[str, str],
    in_metadata: str | None,
) -> str:
    """Its document.id, else the id its metadata holds as `in_metadata`."""
    if "id" in keys:
        return _document_id(path, span, keys["id"], span.attributes[keys["id"]])
    if in_metadata is not None and "metadata" in keys:
        return _metadata_id(path, span, keys["metadata"], in_metadata)
    raise _refuse_at(
        path,
        span,
        next(iter(keys.values())),
        f"document {index} of {span.kind} span {quote(span.span_id)} "
        f"has no {documents}.{index}.document.id, so what it returned is "
        "unknown (--id-in-metadata KEY reads it from its metadata)",
    )


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
    """What the import says on stderr, complete once its records all are."""

    unmatched: list[tuple[str, Key | None]] = field(default_factory=list)
    unused_gold: list[GoldLine] = field(default_factory=list)
    unretrieved: list[str] = field(default_factory=list)
    last_step: list[tuple[str, str]] = field(default_factory=list)
    untyped: dict[str, int] = field(default_factory=dict)

    def lines(self, count: int, key: str, gold: str) -> list[str]:
        """The notes, a line each, of an import of `count` traces."""
        traces = counted(count, "trace")
        said = []
        if self.unmatched:
            said.append(
                f"{len(self.unmatched)} of {traces} match no line of {gold} by "
                f"{key}; written without required (--allow-unmatched), they "
                f"score unresolved: {_unmatched(self.unmatched, key, note=True)}"
            )
        if self.last_step:
            reasons = [why for _, why in self.last_step]
            why = "; ".join(f"{reasons.count(r)}: {r}" for r in dict.fromkeys(reasons))
            said.append(
                f"{len(self.last_step)} of {traces} show no model input that "
                f"tells what reached the model ({why}); their context is their "
                "last retrieval step's output, as --context last-step takes it: "
                + named([trace_id for trace_id, _ in self.last_step])
            )
        if self.untyped:
            shown = ", ".join(
                f"{quote(name)} ({counted(n, 'trace')})"
                for name, n in list(self.untyped.items())[:SHOWN]
            )
            said.append(
                "spans that returned documents are typed neither RETRIEVER nor "
                f"RERANKER, so no step reads them: {shown}"
            )
        if self.unretrieved:
            said.append(
                f"{len(self.unretrieved)} of {traces} have no RETRIEVER span; "
                "written without context, they are invalid-input (the context "
                f"was never recorded): {named(self.unretrieved)}"
            )
        if self.unused_gold:
            unused = self.unused_gold
            verb = "matches" if len(unused) == 1 else "match"
            said.append(
                f"{counted(len(unused), 'gold line')} of {gold} {verb} no trace: "
                + listed(unused, lambda line: f"{quote(line.key)} (line {line.line})")
            )
        return said


MODEL_INPUT = "model-input"
NO_MODEL_INPUT = "no LLM span shows its input"
NO_CONTENT = "a document with no content that no model input names by id"


@dataclass(frozen=True)
class ImportRules:
    """The gold key's attribute, the sample id's (None: the key's), the
    context rule, whether unmatched traces pass, and a document id's
    metadata key."""

    key: str
    sample_id: str | None = None
    context: str = MODEL_INPUT
    allow_unmatched: bool = False
    id_in_metadata: str | None = None


class UnmatchedTraces(ImportRefused):
    """Traces that match no gold line, with no --allow-unmatched."""

    exit_code = 2


def stream_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    rules: ImportRules,
    labels_path: str | Path | None = None,
    notes: OpenInferenceNotes,
) -> Iterator[dict[str, Any]]:
    """One record per trace, a trace's spans in memory at a time, filling
    `notes`; a refusal may come after some records, so a caller keeps them
    only once the iterator has ended."""
    path = str(spans_path)
    try:
        spool_file = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    except OSError as error:
        raise NoTemporarySpace(error, "spans") from None
    with spool_file:
        spool = _Spool(spool_file)
        _spool_spans(path, spool)
        gold = read_gold(gold_path)
        labels = None if labels_path is None else read_labels(labels_path)
        yield from _records(path, spool, gold, str(gold_path), rules, labels, notes)


def _records(
    path: str,
    spool: _Spool,
    gold: dict[tuple[type, Key], GoldLine],
    gold_path: str,
    rules: ImportRules,
    labels: RecordLabels | None,
    notes: OpenInferenceNotes,
) -> Iterator[dict[str, Any]]:
    used: set[tuple[type, Key]] = set()
    traces_by_id: dict[str, str] = {}
    for trace_id in spool.places:
        trace = spool.read(trace_id)
        value = _key(path, trace, rules.key)
        line = None if value is None else gold.get((type(value), value))
        sample_id = _sample_id(path, trace, rules, value)
        if sample_id in traces_by_id:
            raise ImportRefused(
                f"{path}: traces {quote(traces_by_id[sample_id])} and "
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
        context, steps = _trace_context(path, trace, rules, notes)
        fields = {
            "context": context,
            "steps": steps,
            "correct": _label(line, labels, sample_id, gold_path),
            "question": _question(path, trace),
            "answer": _answer(path, trace),
        }
        record.update(
            (name, value) for name, value in fields.items() if value is not None
        )
        yield {"id": sample_id, "input": record}
    notes.unused_gold += [line for typed, line in gold.items() if typed not in used]
    if labels is not None:
        check_labels_name_records(labels, traces_by_id, "record", path)
    if notes.unmatched and not rules.allow_unmatched:
        raise UnmatchedTraces(
            _unmatched_message(notes, rules.key, gold_path, len(traces_by_id))
        )


def _trace_context(
    path: str, trace: Trace, rules: ImportRules, notes: OpenInferenceNotes
) -> tuple[list[str] | None, list[dict[str, Any]] | None]:
    """The trace's context and steps by `rules.context`."""
    retrieved = _context(path, trace, rules.id_in_metadata)
    if retrieved is None:
        notes.unretrieved.append(trace.trace_id)
        return None, None
    found = _steps(path, trace, rules.id_in_metadata)
    for name in dict.fromkeys(_untyped(path, trace, found.contents)):
        notes.untyped[name] = notes.untyped.get(name, 0) + 1
    if rules.context == MODEL_INPUT:
        context = _model_context(path, trace, found)
        if isinstance(context, list):
            return context, found.steps
        notes.last_step.append((trace.trace_id, context))
    if not any(step["name"].startswith("reranker") for step in found.steps):
        return retrieved, None
    return list(found.steps[-1]["ids"]), found.steps


def _model_context(path: str, trace: Trace, found: _Steps) -> list[str] | str:
    """The documents the trace's model input shows, or why it cannot say."""
    texts = _model_input(path, trace)
    if not texts:
        return NO_MODEL_INPUT
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
    if any(not contents[d] and d not in context for d in contents):
        return NO_CONTENT
    return context


def _label(
    line: GoldLine | None, labels: RecordLabels | None, sample_id: str, gold: str
) -> bool | None:
    """The record's label: its gold line's, or its labels file's, never both."""
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
    """The --id attribute's value, else the key's, else (an unmatched trace
    without a key) the trace id; as text."""
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


def _unmatched(
    unmatched: list[tuple[str, Key | None]], key: str, *, note: bool = False
) -> str:
    """The unmatched traces named, each with its key."""

    def show(pair: tuple[str, Key | None]) -> str:
        trace_id, value = pair
        if value is None:
            return f"{quote(trace_id)} (no {key})"
        if note:
            return f"{quote(trace_id)} ({key} {quote(value)})"
        return f"{quote(trace_id)} ({quote(value, 60)})"

    return listed(unmatched, show)


def _unmatched_message(
    notes: OpenInferenceNotes, key: str, gold_path: str, traces: int
) -> str:
    """The traces named, and, when none matched, why a key may not join."""
    unmatched = notes.unmatched
    verb = "matches" if len(unmatched) == 1 else "match"
    message = (
        f"{counted(len(unmatched), 'trace')} {verb} no line of {gold_path} by "
        f"{key}: {_unmatched(unmatched, key)}"
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
