"""OpenInference traces (OTLP JSON) as stage-diagnosis records, one per trace."""

from __future__ import annotations

import base64
import json
import pickle
import re
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

from ..core.errors import quote
from ..lines import has_lone_surrogate, json_objects, strict_json_loads
from .common import (
    SHOWN,
    ImportRefused,
    InputFileError,
    LabelsRefused,
    NoTemporarySpace,
    check_labels_name_records,
    counted,
    listed,
    read_labels,
)

KIND = "openinference.span.kind"
RETRIEVER, RERANKER, LLM, PROMPT = "RETRIEVER", "RERANKER", "LLM", "PROMPT"
STEPS, TYPED = (RETRIEVER, RERANKER), (RETRIEVER, RERANKER, LLM, PROMPT)
INPUT, OUTPUT, MIME = "input.value", "output.value", "input.mime_type"
DOCUMENTS = {RETRIEVER: "retrieval.documents", RERANKER: "reranker.output_documents"}
JSON_MIME, MODEL_INPUT = "application/json", "model-input"
# An LLM span's attributes holding what its model was given, and what it said.
_GIVEN = re.compile(
    r"llm\.prompts|llm\.(input_messages|prompts)\.(.*\.)?(content|text)", re.S
)
_SAID = re.compile(r"llm\.output_messages\.(.*\.)?content", re.S)
_SURROGATE = "{} holds a lone surrogate, which no log can hold"
_DIGITS, _HEX = re.compile(r"[+-]?[0-9]+"), re.compile(r"[0-9a-fA-F]+")
_URL_SAFE = str.maketrans("-_", "+/")
_FLAT = re.compile(r"(0|[1-9][0-9]{0,19})\.document\.(.+)")  # after "NAME."
_VALUE_KINDS = ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue"]
_VALUE_KINDS += ["kvlistValue", "bytesValue"]
_WORDS = ("NaN", "Infinity", "-Infinity")  # a double's JSON text, not a number
_UNREAD = {
    "boolValue": "is not true or false",
    "doubleValue": "is not a number",
    "bytesValue": "is not base64",
}
# Each gold field's JSON types, and the refusal of a value of another type.
_GOLD = {
    "key": ((str, int), "{} is neither text nor an integer"),
    "required": ((list,), "must be a list of document ids, got {}"),
    "correct": ((bool, type(None)), "must be true, false or absent, got {}"),
}

Key = str | int
Documents = list[tuple[str, str | None]]  # each document's id and content


@dataclass(frozen=True)
class ImportRules:
    """The options: --key, --id, --context, --allow-unmatched, --id-in-metadata."""

    key: str
    sample_id: str | None = None
    context: str = MODEL_INPUT
    allow_unmatched: bool = False
    id_in_metadata: str | None = None


class UnmatchedTraces(ImportRefused):
    exit_code = 2


class _Line(NamedTuple):
    path: str
    number: int

    def refuse(self, where: str, problem: str) -> InputFileError:
        problem = f"{where}: {problem}" if where else problem
        return InputFileError(*self, problem, field=where)

    def items(self, where: str, parent: Any, name: str) -> list[tuple[str, Any]]:
        at = f"{where}.{name}" if where else name
        value = self.object(where, parent).get(name)
        if value is not None and type(value) is not list:
            raise self.refuse(at, f"must be a JSON array, got {quote(value, 80)}")
        return [(f"{at}[{n}]", item) for n, item in enumerate(value or [])]

    def object(self, where: str, value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise self.refuse(where, f"must be a JSON object, got {quote(value, 80)}")
        return value

    def text(self, where: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.refuse(where, f"must be text, got {quote(value, 80)}")
        if has_lone_surrogate(value):
            raise self.refuse(where, _SURROGATE.format(quote(value, 80)))
        return value

    def identifier(self, where: str, value: Any, size: int) -> str:
        """Hex (OTLP JSON) or base64 (protobuf's JSON): their lengths differ."""
        text, decoded, base64_size = self.text(where, value), b"", 4 * -(-size // 3)
        if len(text) == 2 * size and _HEX.fullmatch(text):
            decoded = bytes.fromhex(text)  # only hex: fromhex skips spaces
        elif len(text) == base64_size:
            with suppress(ValueError):  # binascii.Error is one
                decoded = base64.b64decode(text.translate(_URL_SAFE), validate=True)
        if len(decoded) != size:
            problem = f"{quote(text, 80)} is not {'an' if size == 8 else 'a'} {size}"
            problem += f"-byte id, as {2 * size} hex digits (OTLP JSON) or "
            problem += f"{base64_size} base64 characters (protobuf's JSON mapping)"
            raise self.refuse(where, problem)
        if not any(decoded):
            raise self.refuse(where, f"{quote(text, 80)} is all zeros, an invalid id")
        return decoded.hex()

    def integer(self, where: str, value: Any) -> int:
        """A 64-bit integer, which protobuf's JSON writes as text or a number."""
        number = value if type(value) is int else None
        if isinstance(value, str) and _DIGITS.fullmatch(value):
            # Past 20 digits, past 64 bits (and past int()'s limit, at 4,300).
            number = int(value) if len(value.lstrip("+-")) <= 20 else 2**64
        if number is None:
            raise self.refuse(where, f"{quote(value, 80)} is not an integer")
        if not -(2**63) <= number < 2**64:
            problem = f"{quote(value, 80)} is not a 64-bit integer, as OTLP's are"
            raise self.refuse(where, problem)
        return number

    def any_value(self, where: str, value: Any) -> Any:
        present = [name for name in _VALUE_KINDS if name in self.object(where, value)]
        if len(present) > 1:
            problem = "holds " + " and ".join(present) + "; an AnyValue holds one"
            raise self.refuse(where, problem)
        if not present:
            return None
        kind, inner = present[0], value[present[0]]
        where = f"{where}.{kind}"
        if kind == "stringValue":
            return self.text(where, inner)
        if kind == "intValue":
            return self.integer(where, inner)
        if kind == "kvlistValue":
            return self.attributes(where, inner, "values")
        if kind == "arrayValue":
            return [self.any_value(*one) for one in self.items(where, inner, "values")]
        if kind == "boolValue" and type(inner) is bool:
            return inner
        if kind == "doubleValue" and (type(inner) in (int, float) or inner in _WORDS):
            return float(inner)
        if kind == "bytesValue":
            with suppress(ValueError, TypeError):
                return base64.b64decode(inner, validate=True)
        raise self.refuse(where, f"{quote(inner, 80)} {_UNREAD[kind]}")

    def attributes(
        self, where: str, parent: Any, name: str = "attributes"
    ) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        for path, item in self.items(where, parent, name):
            key = self.text(f"{path}.key", self.object(path, item).get("key"))
            if key in attributes:
                first = f"{path.rpartition('[')[0]}[{list(attributes).index(key)}]"
                problem = f"attribute {quote(key)} is already given at {first}"
                raise self.refuse(f"{path}.key", problem)
            attributes[key] = self.any_value(f"{path}.value", item.get("value", {}))
        return attributes

    def spans(self, request: dict[str, Any]) -> list[Span]:
        if "resourceSpans" not in request:
            problem = "no resourceSpans: not an OTLP JSON trace export "
            problem += "(ExportTraceServiceRequest)"
            for other in ("resourceLogs", "resourceMetrics"):  # both: metrics named
                if other in request:
                    problem = f"holds {other}, not resourceSpans: an export of "
                    problem += f"{other.removeprefix('resource').lower()}, not traces"
            raise self.refuse("", problem)
        return [
            self.span(at, span)
            for r, resource in self.items("", request, "resourceSpans")
            for s, scope in self.items(r, resource, "scopeSpans")
            for at, span in self.items(s, scope, "spans")
        ]

    def span(self, where: str, span: Any) -> Span:
        attributes, at = self.attributes(where, span), f"{where}."
        parent = span.get("parentSpanId", "")
        read = Span(
            self.identifier(at + "traceId", span.get("traceId"), 16),
            self.identifier(at + "spanId", span.get("spanId"), 8),
            None
            if parent in ("", None)
            else self.identifier(at + "parentSpanId", parent, 8),
            self.text(at + "name", span.get("name", "")),
            self.integer(at + "startTimeUnixNano", span.get("startTimeUnixNano", 0)),
            *(self, where, attributes, attributes.get(KIND)),
        )
        # A retriever missed would read as one that found nothing: refused.
        upper = read.kind.upper() if isinstance(read.kind, str) else None
        if upper in (RETRIEVER, RERANKER, LLM) and read.kind != upper:
            problem = f"span kind {quote(read.kind)} is not OpenInference's "
            raise read.refuse(KIND, problem + quote(upper))
        return read


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    line: _Line
    where: str
    attributes: dict[str, Any]
    kind: Any

    def refuse(self, key: str, problem: str) -> InputFileError:
        where = self.where
        if key in self.attributes:
            where += f".attributes[{list(self.attributes).index(key)}]"
        return self.line.refuse(where, problem)

    def text(self, key: str) -> str | None:
        value = self.attributes.get(key)
        if value is not None and not isinstance(value, str):
            raise self.refuse(key, f"{key} must be text, got {quote(value, 80)}")
        return value

    def texts(self, key: str) -> list[str]:
        value = self.attributes.get(key)
        if type(value) is list and all(isinstance(item, str) for item in value):
            return value
        if value is not None and not isinstance(value, str):
            problem = f"{key} must be text or texts, got {quote(value, 80)}"
            raise self.refuse(key, problem)
        return [] if value is None else [value]

    def matching(self, keys: re.Pattern[str]) -> list[str]:
        found = [key for key in self.attributes if keys.fullmatch(key)]
        return [text for key in found for text in self.texts(key)]

    def document_id(self, key: str, value: Any) -> str:
        if type(value) is int:
            return str(value)
        if not isinstance(value, str):
            problem = f"document id {quote(value, 80)} is neither text nor an integer"
            raise self.refuse(key, problem)
        if has_lone_surrogate(value):
            raise self.refuse(key, "document id " + _SURROGATE.format(quote(value, 80)))
        return value

    def documents(self, in_metadata: str | None) -> Documents:
        """The step's documents: `NAME.N.document.*` attributes, or one array."""
        name = DOCUMENTS[self.kind]
        flat = [key for key in self.attributes if key.startswith(f"{name}.")]
        if name in self.attributes and flat:
            problem = f"{self.kind} span {quote(self.span_id)} gives its documents "
            problem += f"twice: as {name} and as {name}.N.document.* attributes"
            raise self.refuse(name, problem)
        fields: dict[int, dict[str, str]] = {}
        for key in flat:
            if not (found := _FLAT.fullmatch(key, len(name) + 1)):
                problem = f"attribute {quote(key)} is not {name}.N.document.FIELD, N "
                raise self.refuse(key, problem + "an index without leading zeros")
            fields.setdefault(int(found[1]), {})[found[2]] = key
        documents = []
        for index, keys in sorted(fields.items()):
            document_id = self._flat_id(name, index, keys, in_metadata)
            content = self.text(keys["content"]) if "content" in keys else None
            documents.append((document_id, content))
        if name not in self.attributes:
            return documents
        value = self.attributes[name]
        form = f"{name} must be an array of objects each holding document.id "
        form += "(or a JSON text of one)"
        if isinstance(value, str):
            try:
                value = strict_json_loads(value)
            except ValueError as error:
                problem = f"{form}; its text is not JSON ({error})"
                raise self.refuse(name, problem) from None
        if type(value) is not list:
            raise self.refuse(name, f"{form}, got {quote(value, 80)}")
        for index, document in enumerate(value):
            if type(document) is not dict or "document.id" not in document:
                problem = f"{form}; document {index} is {quote(document, 80)}, so what "
                raise self.refuse(name, problem + "the span returned is unknown")
            content = document.get("document.content")
            content = content if isinstance(content, str) else None
            documents.append((self.document_id(name, document["document.id"]), content))
        return documents

    def _flat_id(
        self, name: str, index: int, keys: dict[str, str], in_metadata: str | None
    ) -> str:
        if "id" in keys:
            return self.document_id(keys["id"], self.attributes[keys["id"]])
        metadata = keys.get("metadata")
        if in_metadata is None or metadata is None:
            problem = f"document {index} of {self.kind} span {quote(self.span_id)} "
            problem += f"has no {name}.{index}.document.id, so what it returned is "
            problem += "unknown (--id-in-metadata KEY reads it from its metadata)"
            raise self.refuse(next(iter(keys.values())), problem)
        value = self.attributes[metadata]  # LangChain records no document.id
        if isinstance(value, str):
            with suppress(ValueError):
                value = strict_json_loads(value)
        if type(value) is not dict or in_metadata not in value:
            problem = f"{metadata} holds no {quote(in_metadata)} and the document has "
            problem += "no document.id, so what the span returned is unknown"
            raise self.refuse(metadata, problem)
        return self.document_id(metadata, value[in_metadata])


class _Spool:
    """Spans pickled to an unnamed file; in memory, each trace's places and ids."""

    def __init__(self) -> None:
        try:
            self.file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the caller)
        except OSError as error:
            raise NoTemporarySpace(error, "spans") from None
        self.places: dict[str, array[int]] = {}
        self.span_ids: dict[str, set[int]] = {}

    def add(self, spans: list[Span]) -> None:
        by_trace: dict[str, list[Span]] = {}
        for span in spans:
            seen = self.span_ids.setdefault(span.trace_id, set())
            if (number := int(span.span_id, 16)) in seen:
                earlier = [*self.read(span.trace_id), *by_trace.get(span.trace_id, [])]
                first = next(o for o in earlier if o.span_id == span.span_id)
                problem = f"span {quote(span.span_id)} of trace {quote(span.trace_id)} "
                problem += f"is already on line {first.line.number} ({first.where}); "
                problem += "a span exported twice"
                raise span.line.refuse(f"{span.where}.spanId", problem)
            seen.add(number)
            by_trace.setdefault(span.trace_id, []).append(span)
        for trace_id, group in by_trace.items():
            data = pickle.dumps(group, pickle.HIGHEST_PROTOCOL)
            place = (self.file.tell(), len(data))
            self.places.setdefault(trace_id, array("q")).extend(place)
            try:
                self.file.write(data)
            except OSError as error:
                raise NoTemporarySpace(error, "spans") from None

    def read(self, trace_id: str) -> list[Span]:
        places, spans = self.places.get(trace_id, array("q")), []
        for start, size in zip(places[::2], places[1::2], strict=True):
            self.file.seek(start)
            spans += pickle.loads(self.file.read(size))
        return spans  # read only once every span is written, or to refuse one


class Trace:
    """A trace's spans in start order (ties in the spool's file order), and root."""

    def __init__(self, trace_id: str, spans: list[Span]) -> None:
        self.id = trace_id
        self.spans = sorted(spans, key=lambda span: span.start)
        self.parents = {span.span_id: span.parent_id for span in self.spans}
        self.root = next((s for s in self.spans if s.parent_id is None), None)

    def of(self, *kinds: str) -> list[Span]:
        return [span for span in self.spans if span.kind in kinds]

    def above(self, spans: list[Span]) -> set[str]:
        above: set[str] = set()
        for span in spans:
            parent = span.parent_id
            while parent in self.parents and parent not in above:
                above.add(parent)
                parent = self.parents[parent]
        return above

    def post_order(self) -> list[Span]:
        """The spans as their outputs were ready: each after those under it."""
        index = {span.span_id: n for n, span in enumerate(self.spans)}
        paths: dict[str, list[int]] = {}  # each span's indices from its root
        for span in self.spans:
            path, at = [len(index), index[span.span_id]], span.parent_id
            while at in index and len(path) <= len(index):
                path.append(index[at])
                at = self.parents[at]
            if at in index:
                problem = f"span {quote(span.span_id)} of trace {quote(self.id)} is "
                raise span.refuse("", problem + "its own ancestor (its parents loop)")
            paths[span.span_id] = path[::-1]
        return sorted(self.spans, key=lambda span: paths[span.span_id])

    def key(self, name: str) -> Key | None:
        """Attribute `name`'s value: the root's, else the one its spans agree on."""
        root = self.root
        spans = [root] if root is not None and name in root.attributes else self.spans
        found: dict[tuple[type, Key], Span] = {}
        for span in [span for span in spans if name in span.attributes]:
            value = span.attributes[name]
            if type(value) is not int and not isinstance(value, str):
                problem = f"is {quote(value, 80)}; a key is text or an integer"
                raise span.refuse(name, f"key {quote(name)} {problem}")
            found.setdefault((type(value), value), span)
        if len(found) > 1:
            (first, one), (second, other) = list(found.items())[:2]
            problem = f"trace {quote(self.id)} has {len(found)} values for key "
            problem += f"{quote(name)} and no root span holding one: {quote(first[1])} "
            problem += f"(line {one.line.number}, {one.where}) and {quote(second[1])} "
            problem += f"({other.where}); which one the trace answers would be a guess"
            raise InputFileError(*other.line, problem, field=name)
        return next(iter(found))[1] if found else None


def _steps(trace: Trace, documents: dict[str, Documents]) -> list[dict[str, Any]]:
    """Steps as outputs were ready; one wrapping its kind alike is one (LlamaIndex)."""
    spans = [span for span in trace.post_order() if span.kind in STEPS]
    ids = {span.span_id: [d for d, _ in documents[span.span_id]] for span in spans}
    wrapping, counts = trace.above(spans), dict[str, int]()
    steps: list[dict[str, Any]] = []
    unread: list[str] = []
    for previous, span in zip([None, *spans], spans, strict=False):
        if (
            previous is not None
            and previous.kind == span.kind
            and ids[previous.span_id] in (ids[span.span_id], [])
            and span.span_id in trace.above([previous])
        ):
            steps[-1]["ids"] = ids[span.span_id]
            continue
        counts[span.kind] = count = counts.get(span.kind, 0) + 1
        name = span.kind.lower() + ("" if count == 1 else f"-{count}")
        if span.kind == RETRIEVER and span.span_id not in wrapping:
            inputs, unread = [], [*unread, name]
        else:
            inputs, unread = unread, [name]
        step: dict[str, Any] = {"name": name, "ids": ids[span.span_id]}
        if inputs != [before["name"] for before in steps[-1:]]:
            step["inputs"] = inputs
        steps.append(step)
    return steps


def _builds_prompt(span: Span) -> bool:
    """An LLM span that renders a template (Haystack's PromptBuilder)."""
    return any(key.startswith("llm.prompt_template.") for key in span.attributes)


def _model_input(trace: Trace) -> list[str]:
    """What models received: LLM inputs (JSON's texts), prompt builders' outputs."""
    texts: list[str] = []
    for span in trace.of(LLM):
        if _builds_prompt(span):
            texts += span.texts(OUTPUT)
            continue
        given, is_json = span.matching(_GIVEN), span.attributes.get(MIME) == JSON_MIME
        if not given and (given := span.texts(INPUT)) and is_json:
            with suppress(ValueError):  # as a model reads it, unescaped
                given = _strings(strict_json_loads(given[0]))
        texts += given
    return texts


def _strings(value: Any) -> list[str]:
    texts, pending = [], [value]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict | list):
            pending += reversed(value.values() if isinstance(value, dict) else value)
    return texts


def _shown(texts: list[str], contents: dict[str, list[str]], trace: str) -> list[str]:
    """The documents the texts show by whole-word id or unique content, in order."""
    owners: dict[str, list[str]] = {}
    for document, texts_of in contents.items():
        for content in texts_of:
            owners.setdefault(content, []).append(document)
    marks = [(document, document, True) for document in contents]
    marks += [(c, owned[0], False) for c, owned in owners.items() if len(owned) == 1]
    seen = [
        (number, start, start + len(mark), document, by_id)
        for number, text in enumerate(texts)
        for mark, document, by_id in marks
        for start in _occurrences(text, mark, by_id)
    ]
    found: dict[str, tuple[int, int]] = {}
    inside: dict[str, tuple[Any, ...]] = {}  # another document's longer mark
    for number, start, end, document, _ in seen:
        covers = [
            other
            for other in seen
            if other[0] == number
            and other[3] != document
            and other[1] <= start <= end <= other[2]
            and other[2] - other[1] > end - start
        ]
        if covers:
            inside.setdefault(document, covers[0])
        else:
            found[document] = min(found.get(document, (number, start)), (number, start))
    instead = "--context last-step takes its last step's output instead"
    for document, cover in inside.items():
        if document not in found:
            by = "id" if cover[4] else "content"
            problem = f"document {quote(document)} shows in the model's input only "
            problem += f"inside document {quote(cover[3])}'s {by}, so whether it "
            problem += "reached the model has two readings"
            raise ImportRefused(f"{trace}: {problem}; {instead}")
    for content, documents in owners.items():
        unshown = len(documents) > 1 and not any(d in found for d in documents)
        if unshown and any(content in text for text in texts):
            shown = " and ".join(quote(d) for d in documents[:2])
            problem = f"documents {shown} have the same content, which the model's "
            problem += "input holds, and neither id shows there: which reached the "
            problem += "model has two readings"
            raise ImportRefused(f"{trace}: {problem}; {instead}")
    return sorted(found, key=found.__getitem__)


def _occurrences(text: str, mark: str, by_id: bool) -> Iterator[int]:
    start = text.find(mark)
    while start >= 0:
        end = start + len(mark)
        around = text[start - 1 : start] + text[end : end + 1]
        if not (by_id and any(c.isalnum() for c in around)):
            yield start
        start = text.find(mark, start + 1)


def _untyped(trace: Trace, contents: dict[str, dict[str | None, None]]) -> list[str]:
    """Untyped spans outputting documents, over no typed span: rankers typed CHAIN."""
    marks = {content for texts in contents.values() for content in texts if content}
    marks |= {json.dumps(mark, ensure_ascii=False)[1:-1] for mark in marks}
    holding = [
        span
        for span in trace.spans
        if span.kind not in TYPED
        and isinstance(output := span.attributes.get(OUTPUT), str)
        and any(mark in output for mark in marks)
    ]
    above = trace.above([*holding, *trace.of(*TYPED)])
    return [span.name for span in holding if span.span_id not in above]


def _answer(trace: Trace) -> str | None:
    for span in reversed([s for s in trace.of(LLM) if not _builds_prompt(s)]):
        said = span.matching(_SAID)
        answer = "\n".join(said) if said else span.text(OUTPUT)
        if answer is not None:
            return answer
    return None


def _question(trace: Trace) -> str | None:
    """The root's input.value unless JSON, else the first retriever's (or `query`)."""
    root, retrievers = trace.root, trace.of(RETRIEVER)
    if root is None or (question := root.text(INPUT)) is None:
        return None
    text = retrievers[0].text(INPUT) if retrievers else None
    if text is None or root.attributes.get(MIME) != JSON_MIME:
        return question
    if retrievers[0].attributes.get(MIME) != JSON_MIME:
        return text
    with suppress(ValueError):
        query = strict_json_loads(text)
        if type(query) is dict and isinstance(asked := query.get("query"), str):
            return asked
    return question


class GoldLine(NamedTuple):
    key: Key
    required: list[str]
    correct: bool | None
    line: int


def _read_gold(path: str) -> dict[tuple[type, Key], GoldLine]:
    """Gold lines by typed key: 7 is not "7"."""
    gold: dict[tuple[type, Key], GoldLine] = {}
    for number, value in json_objects(path, "line", InputFileError):
        line = _Line(path, number)
        if "key" not in value:
            form = '{"key": ..., "required": [...], "correct"?: ...}'
            raise line.refuse("key", f"no 'key'; a gold line is {form}")
        for name, (types, problem) in _GOLD.items():
            if type(field := value.get(name)) not in types:
                raise line.refuse(name, problem.format(quote(field, 80)))
            if isinstance(field, str):
                line.text(name, field)
            for position, item in enumerate(field if type(field) is list else []):
                line.text(f"{name}[{position}]", item)
        key = value["key"]
        if earlier := gold.get(typed := (type(key), key)):
            problem = f"key {quote(key)} is already on line {earlier.line}; one "
            raise line.refuse("key", problem + "gold line per key")
        gold[typed] = GoldLine(key, value["required"], value.get("correct"), number)
    if not gold:
        problem = 'holds no gold lines; give one {"key": ..., "required": [...]} a line'
        raise InputFileError(path, None, problem)
    return gold


def stream_openinference(
    spans_path: str | Path,
    gold_path: str | Path,
    *,
    rules: ImportRules,
    labels_path: str | Path | None = None,
    notes: list[str],
) -> Iterator[dict[str, Any]]:
    """One record per trace, then `notes` filled; a refusal may follow records."""
    path, spool = str(spans_path), _Spool()
    with spool.file:
        for number, request in json_objects(path, "line", InputFileError):
            spool.add(_Line(path, number).spans(request))
        if not spool.places:
            problem = "holds no spans; it should be OTLP JSON, one "
            problem += "ExportTraceServiceRequest a line"
            raise InputFileError(path, None, problem)
        made = _Import(path, str(gold_path), rules, labels_path)
        for trace_id in spool.places:
            yield made.record(Trace(trace_id, spool.read(trace_id)))
        notes += made.notes()


class _Import:
    def __init__(
        self, path: str, gold_path: str, rules: ImportRules, labels: str | Path | None
    ) -> None:
        self.path, self.gold_path, self.rules = path, gold_path, rules
        self.gold = _read_gold(gold_path)  # refused before the labels
        self.labels = None if labels is None else read_labels(labels)
        self.used: set[tuple[type, Key]] = set()
        self.traces: dict[str, str] = {}  # trace ids by sample id
        self.unmatched: list[tuple[str, Key | None]] = []
        self.unretrieved: list[str] = []
        self.last_step: list[str] = []
        self.reasons: Counter[str] = Counter()  # why the last step, in how many
        self.untyped: Counter[str] = Counter()  # traces by span name

    def record(self, trace: Trace) -> dict[str, Any]:
        rules, at = self.rules, f"{self.path}: trace {quote(trace.id)}"
        key, id_name = trace.key(rules.key), rules.sample_id or rules.key
        line = None if key is None else self.gold.get((type(key), key))
        named_by = key if rules.sample_id is None else trace.key(rules.sample_id)
        if named_by == "" or (named_by is None and rules.sample_id is not None):
            problem = f"has an empty {id_name}, which cannot name a record"
            if named_by is None:
                problem = f"has no attribute {quote(rules.sample_id)} for its sample id"
            raise ImportRefused(f"{at} {problem}")
        sample_id = trace.id if named_by is None else str(named_by)
        if sample_id in self.traces:
            problem = f"{self.path}: traces {quote(self.traces[sample_id])} and "
            problem += f"{quote(trace.id)} both have sample id {quote(sample_id)} "
            raise ImportRefused(problem + f"({id_name}); a sample id names one run")
        self.traces[sample_id] = trace.id
        record: dict[str, Any] = {}
        if line is None:
            self.unmatched.append((trace.id, key))
        else:
            self.used.add((type(line.key), line.key))
            record["required"] = list(line.required)
        if trace.of(RETRIEVER):
            self.context(trace, record)
        else:  # never recorded: an empty context would blame the retriever
            self.unretrieved.append(trace.id)
        correct, labels = None if line is None else line.correct, self.labels
        if labels is not None and sample_id in labels.labels:
            if line is not None and correct is not None:
                problem = f"{labels.path}, line {labels.lines[sample_id]}: "
                problem += f"{quote(sample_id)} is already labelled by "
                problem += f"{self.gold_path}, line {line.line}; a record's label "
                raise LabelsRefused(problem + "comes from one file")
            correct = labels.labels[sample_id]
        fields = {"correct": correct, "question": _question(trace)}
        fields["answer"] = _answer(trace)
        record.update((name, v) for name, v in fields.items() if v is not None)
        return {"id": sample_id, "input": record}

    def context(self, trace: Trace, record: dict[str, Any]) -> None:
        in_metadata = self.rules.id_in_metadata
        documents = {s.span_id: s.documents(in_metadata) for s in trace.of(*STEPS)}
        steps, contents = _steps(trace, documents), dict[str, dict[str | None, None]]()
        for document, content in chain.from_iterable(documents.values()):  # in order:
            contents.setdefault(document, {})[content] = None  # refusals name the first
        self.untyped.update(list(dict.fromkeys(_untyped(trace, contents))))
        known = {d: [t for t in found if t] for d, found in contents.items()}
        texts = _model_input(trace) if self.rules.context == MODEL_INPUT else []
        at = f"{self.path}: trace {quote(trace.id)}"
        context = _shown(texts, known, at) if texts else []  # no input: nothing shown
        if texts and all(known[d] or d in context for d in known):
            record |= {"context": context} | ({"steps": steps} if steps else {})
            return
        if self.rules.context == MODEL_INPUT:
            why = "a document with no content that no model input names by id"
            self.reasons[why if texts else "no LLM span shows its input"] += 1
            self.last_step.append(trace.id)
        if any(step["name"].startswith("reranker") for step in steps):
            record |= {"context": list(steps[-1]["ids"]), "steps": steps}
        else:
            retrieved = [documents[span.span_id] for span in trace.of(RETRIEVER)]
            record["context"] = [d for d, _ in chain.from_iterable(retrieved)]

    def notes(self) -> list[str]:
        key, unmatched, gold_path = self.rules.key, self.unmatched, self.gold_path
        if self.labels is not None:
            known = self.traces.__contains__
            check_labels_name_records(self.labels, known, "record", self.path)
        if unmatched and not self.rules.allow_unmatched:
            verb = "matches" if len(unmatched) == 1 else "match"
            message = f"{counted(len(unmatched), 'trace')} {verb} no line of "
            message += f"{gold_path} by {key}: {_unmatched(unmatched, key, False)}; "
            if len(unmatched) == len(self.traces):
                message += f"no trace matched any of its lines: {key} may vary from "
                message += "run to run of the same question (Haystack's input.value "
                message += "holds a Python set, whose order changes with each "
                message += "process), so key by an id the harness sets, such as "
                message += "session.id; "
            message += "--allow-unmatched writes them without required"
            raise UnmatchedTraces(message)
        of = f" of {counted(len(self.traces), 'trace')}"
        why = "; ".join(f"{count}: {reason}" for reason, count in self.reasons.items())
        untyped = list(self.untyped.items())[:SHOWN]
        unused = [line for typed, line in self.gold.items() if typed not in self.used]
        shown = [unmatched, self.last_step, untyped, self.unretrieved, unused]
        notes = [
            f"{len(unmatched)}{of} match no line of {gold_path} by {key}; "
            "written without required (--allow-unmatched), they score "
            f"unresolved: {_unmatched(unmatched, key, True)}",
            f"{len(self.last_step)}{of} show no model input that tells what "
            f"reached the model ({why}); their context is their last retrieval "
            "step's output, as --context last-step takes it: " + listed(self.last_step),
            "spans that returned documents are typed neither RETRIEVER nor "
            "RERANKER, so no step reads them: "
            + ", ".join(f"{quote(n)} ({counted(c, 'trace')})" for n, c in untyped),
            f"{len(self.unretrieved)}{of} have no RETRIEVER span; written without "
            "context, they are invalid-input (the context was never recorded): "
            + listed(self.unretrieved),
            f"{counted(len(unused), 'gold line')} of {gold_path} "
            f"{'matches' if len(unused) == 1 else 'match'} no trace: "
            + listed(unused, lambda g: f"{quote(g.key)} (line {g.line})"),
        ]
        return [note for note, said in zip(notes, shown, strict=True) if said]


def _unmatched(unmatched: list[tuple[str, Key | None]], key: str, note: bool) -> str:
    def show(pair: tuple[str, Key | None]) -> str:
        trace, value = pair
        shown = f"{key} {quote(value)}" if note else quote(value, 60)
        return f"{quote(trace)} ({f'no {key}' if value is None else shown})"

    return listed(unmatched, show)
