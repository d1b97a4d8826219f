"""`tracegrade import openinference`: OpenInference traces as stage-diagnosis records.

The spans are real: made with the OpenTelemetry SDK under the attribute
names of openinference-semantic-conventions, and exported twice, by the
SDK's own encoders: its OTLP JSON file exporter (hex ids, a line per
export), and its protobuf encoder (`encode_spans`) written with protobuf's
JSON mapping (base64 ids, enum names). Both files must import to the same
records. The refusals use hand-written lines, each wrong in one place.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToJson
from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator

from tests.commands import run_tracegrade, tracegrade_shell
from tests.support import write_lines
from tracegrade.importers.common import ImportRefused, InputFileError, LabelsRefused
from tracegrade.importers.openinference import (
    ImportRules,
    OpenInferenceNotes,
    stream_openinference,
)
from tracegrade.tasks.recorded import stage_input_score

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
LLM = OpenInferenceSpanKindValues.LLM.value
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
EXAMPLE = "example.id"


@dataclass
class Imported:
    records: list[dict[str, Any]]
    notes: OpenInferenceNotes


def import_openinference(
    spans: Path | str,
    gold: Path | str,
    *,
    labels_path: Path | str | None = None,
    **rules: Any,
) -> Imported:
    """Every record of the command's importer, and its notes."""
    notes = OpenInferenceNotes()
    records = stream_openinference(
        spans, gold, rules=ImportRules(**rules), labels_path=labels_path, notes=notes
    )
    return Imported(list(records), notes)


def document_id(index: int) -> str:
    return (
        f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{index}.{DocumentAttributes.DOCUMENT_ID}"
    )


def document_score(index: int) -> str:
    return (
        f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{index}."
        f"{DocumentAttributes.DOCUMENT_SCORE}"
    )


class SequentialIds(IdGenerator):
    """Ids in order, so that records can be written out by hand."""

    def __init__(self) -> None:
        self.count = 0

    def generate_span_id(self) -> int:
        self.count += 1
        return self.count

    def generate_trace_id(self) -> int:
        self.count += 1
        return 0xFEED << 64 | self.count


def trace_hex(number: int) -> str:
    return f"{0xFEED << 64 | number:032x}"


def run_pipeline(
    provider: TracerProvider,
) -> None:
    """Five traces of a RAG pipeline, as instrumentation would record them."""
    tracer = provider.get_tracer("rag")
    clock = iter(range(1_000, 100_000, 10))

    def span(
        name: str, attributes: dict[str, Any], parent: Any = None
    ) -> trace_api.Span:
        context = None if parent is None else trace_api.set_span_in_context(parent)
        return tracer.start_span(
            name, context=context, attributes=attributes, start_time=next(clock)
        )

    # Trace 1, example ex-1: two retrievals, the second exported first but
    # started later; the root holds the key, the question and the answer.
    root = span(
        "rag",
        {KIND: CHAIN, EXAMPLE: "ex-1", SpanAttributes.INPUT_VALUE: "When?"},
    )
    first = span(
        "retrieve",
        {KIND: RETRIEVER, document_id(0): "D1", document_id(1): "D2"},
        root,
    )
    second = span(
        "retrieve-more",
        {KIND: RETRIEVER, document_id(0): "D3", document_score(0): 0.5},
        root,
    )
    second.end(end_time=next(clock))
    first.end(end_time=next(clock))
    llm = span("generate", {KIND: LLM, SpanAttributes.OUTPUT_VALUE: "1998"}, root)
    llm.end(end_time=next(clock))
    root.set_attribute(SpanAttributes.OUTPUT_VALUE, "It opened in 1998.")
    root.end(end_time=next(clock))

    # Trace 2, example ex-2: the key only on the LLM span, no root output:
    # the answer is the LLM's. Documents listed out of index order.
    root = span("rag", {KIND: CHAIN})
    retrieve = span(
        "retrieve",
        {KIND: RETRIEVER, document_id(1): "D6", document_id(0): "D5"},
        root,
    )
    retrieve.end(end_time=next(clock))
    llm = span(
        "generate",
        {KIND: LLM, EXAMPLE: "ex-2", SpanAttributes.OUTPUT_VALUE: "Ms Ito"},
        root,
    )
    llm.end(end_time=next(clock))
    root.end(end_time=next(clock))

    # Trace 3: a key the gold file does not have.
    root = span("rag", {KIND: CHAIN, EXAMPLE: "ex-9"})
    retrieve = span("retrieve", {KIND: RETRIEVER, document_id(0): "D7"}, root)
    retrieve.end(end_time=next(clock))
    root.end(end_time=next(clock))

    # Trace 4: no key at all, and a retriever that found nothing.
    root = span("rag", {KIND: CHAIN})
    retrieve = span("retrieve", {KIND: RETRIEVER}, root)
    retrieve.end(end_time=next(clock))
    root.end(end_time=next(clock))

    # Trace 5: an integer key and an integer document id.
    root = span("rag", {KIND: CHAIN, EXAMPLE: 7})
    retrieve = span("retrieve", {KIND: RETRIEVER, document_id(0): 42}, root)
    retrieve.end(end_time=next(clock))
    llm = span("generate", {KIND: LLM, SpanAttributes.OUTPUT_VALUE: "no"}, root)
    llm.end(end_time=next(clock))
    root.end(end_time=next(clock))

    # Trace 6, example ex-6: no retriever instrumented, so no context was
    # recorded (not an empty one).
    root = span("rag", {KIND: CHAIN, EXAMPLE: "ex-6"})
    llm = span("generate", {KIND: LLM, SpanAttributes.OUTPUT_VALUE: "1999"}, root)
    llm.end(end_time=next(clock))
    root.end(end_time=next(clock))


# Trace ids: each trace's id is drawn just before its root span's.
TRACES = [trace_hex(n) for n in (1, 6, 10, 13, 16, 20)]

GOLD = [
    {"key": "ex-1", "required": ["D1", "D3"], "correct": True},
    {"key": "ex-2", "required": ["D4", "D5"], "note": "no label yet"},
    {"key": 7, "required": ["42"], "correct": False},
    {"key": "ex-6", "required": ["D1", "D3"], "correct": True},
    {"key": "ex-unused", "required": ["D1"]},
]

# Ids are the key's values as text (a trace without one keeps its trace id); no
# LLM span shows its input, so each context is the retrievers' output; the
# answer is the model's, not the root's.
RECORD_FIELDS = ("required", "context", "correct", "question", "answer")
# One row a record: its id, then RECORD_FIELDS; None is a field left out.
RECORD_ROWS: list[tuple[Any, ...]] = [
    ("ex-1", ["D1", "D3"], ["D1", "D2", "D3"], True, "When?", "1998"),
    ("ex-2", ["D4", "D5"], ["D5", "D6"], None, None, "Ms Ito"),
    ("ex-9", None, ["D7"], None, None, None),
    (TRACES[3], None, [], None, None, None),
    ("7", ["42"], ["42"], False, None, "no"),
    ("ex-6", ["D1", "D3"], None, True, None, "1999"),
]
RECORDS = [
    {
        "id": record_id,
        "input": {
            name: value
            for name, value in zip(RECORD_FIELDS, values, strict=True)
            if value is not None
        },
    }
    for record_id, *values in RECORD_ROWS
]


def provider_with(*processors: Any) -> TracerProvider:
    provider = TracerProvider(id_generator=SequentialIds())
    for processor in processors:
        provider.add_span_processor(processor)
    return provider


def otlp_json_file(path: Path) -> Path:
    """The spans as the SDK's OTLP JSON file exporter writes them: one
    request a line, one line per span ended."""
    exporter = FileSpanExporter(path)
    provider = provider_with(SimpleSpanProcessor(exporter))
    run_pipeline(provider)
    provider.shutdown()
    return path


def by_trace(spans: tuple[ReadableSpan, ...]) -> Iterator[list[ReadableSpan]]:
    groups: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        groups.setdefault(span.context.trace_id, []).append(span)
    yield from groups.values()


def protobuf_json_file(path: Path) -> Path:
    """The spans as the SDK's protobuf encoder makes them, in protobuf's JSON
    mapping: base64 ids, enum names, one request per trace."""
    memory = InMemorySpanExporter()
    provider = provider_with(SimpleSpanProcessor(memory))
    run_pipeline(provider)
    lines = [
        MessageToJson(encode_spans(group), indent=None) + "\n"
        for group in by_trace(memory.get_finished_spans())
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("spans")
    return {
        "otlp": otlp_json_file(directory / "spans.jsonl"),
        "protobuf": protobuf_json_file(directory / "protobuf.jsonl"),
        "gold": Path(write_lines(directory / "gold.jsonl", GOLD)),
    }


# --- the records --------------------------------------------------------------


def test_the_exports_are_the_two_json_encodings(spans: dict[str, Path]) -> None:
    otlp = [json.loads(line) for line in spans["otlp"].read_text().splitlines()]
    protobuf = [json.loads(line) for line in spans["protobuf"].read_text().splitlines()]
    # One line per span ended, against one per trace.
    assert (len(otlp), len(protobuf)) == (16, 6)
    first = otlp[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert first["traceId"] == TRACES[0]
    assert first["kind"] == 1
    encoded = protobuf[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(encoded["traceId"]) == 24  # base64 of 16 bytes
    assert encoded["kind"] == "SPAN_KIND_INTERNAL"


@pytest.mark.parametrize("encoding", ["otlp", "protobuf"])
def test_one_record_per_trace_from_either_encoding(
    spans: dict[str, Path], encoding: str
) -> None:
    imported = import_openinference(
        spans[encoding], spans["gold"], key=EXAMPLE, allow_unmatched=True
    )
    assert imported.records == RECORDS
    notes = imported.notes
    assert notes.unmatched == [(TRACES[2], "ex-9"), (TRACES[3], None)]
    assert [line.key for line in notes.unused_gold] == ["ex-unused"]
    assert notes.unretrieved == [TRACES[5]]
    no_input = "no LLM span shows its input"
    assert notes.last_step == [(trace, no_input) for trace in TRACES[:5]]


def test_input_value_joins_by_the_root_spans_question(
    spans: dict[str, Path], tmp_path: Path
) -> None:
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "When?", "required": ["D9"]}])
    imported = import_openinference(
        spans["otlp"], gold, key=SpanAttributes.INPUT_VALUE, allow_unmatched=True
    )
    assert imported.records[0]["id"] == "When?"
    assert imported.records[0]["input"]["required"] == ["D9"]
    # No span of the other traces has an input.value.
    assert [trace for trace, _ in imported.notes.unmatched] == TRACES[1:]


def test_labels_label_records_by_id_but_never_one_the_gold_labels(
    spans: dict[str, Path], tmp_path: Path
) -> None:
    def labelled(name: str, sample: str) -> Imported:
        labels = write_lines(tmp_path / name, [{"id": sample, "correct": True}])
        return import_openinference(
            spans["otlp"],
            spans["gold"],
            key=EXAMPLE,
            labels_path=labels,
            allow_unmatched=True,
        )

    imported = labelled("labels.jsonl", "ex-2")
    assert imported.records[1]["input"]["correct"] is True
    assert list(imported.records[1]["input"])[:3] == ["required", "context", "correct"]
    with pytest.raises(LabelsRefused, match=r"is already labelled by .*line 1"):
        labelled("twice.jsonl", "ex-1")
    with pytest.raises(LabelsRefused, match="1 label names no record of"):
        labelled("none.jsonl", "ab" * 16)


# --- a reranker: its steps ------------------------------------------------------

RERANKER = OpenInferenceSpanKindValues.RERANKER.value


def reranked(kind: str, index: int) -> str:
    return f"{kind}.{index}.{DocumentAttributes.DOCUMENT_ID}"


def test_a_reranker_makes_the_trace_a_pipeline_of_steps(tmp_path: Path) -> None:
    """One trace: a retriever's top 20, a reranker's top 5 of those, and the
    answer. RETRIEVER and RERANKER spans become steps in start order, and the
    context is the last step's output; a trace without a reranker keeps the
    record it had (the module's `RECORDS`)."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("rag", {KIND: CHAIN, EXAMPLE: "ex-3"})
    retrieved = {document_id(n): doc for n, doc in enumerate(RETRIEVED)}
    recorder.leaf("retrieve", {KIND: RETRIEVER, **retrieved}, root)
    reranking = {
        reranked(kind, n): doc
        for kind, documents in (
            (RerankerAttributes.RERANKER_INPUT_DOCUMENTS, RETRIEVED),
            (RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, KEPT),
        )
        for n, doc in enumerate(documents)
    }
    top_k = {RerankerAttributes.RERANKER_TOP_K: 5}
    recorder.leaf("rerank", {KIND: RERANKER, **top_k, **reranking}, root)
    recorder.leaf("generate", {KIND: LLM, SpanAttributes.OUTPUT_VALUE: "Ito"}, root)
    recorder.end(root)
    recorder.close()
    gold = write_lines(
        tmp_path / "gold.jsonl",
        [{"key": "ex-3", "required": ["D3", "D4", "D9", "D30"], "correct": True}],
    )
    (record,) = import_openinference(
        tmp_path / "spans.jsonl", gold, key=EXAMPLE
    ).records
    assert record["input"]["steps"] == [
        {"name": "retriever", "ids": [f"D{number}" for number in range(1, 21)]},
        {"name": "reranker", "ids": ["D3", "D1", "D7", "D2", "D9"]},
    ]
    assert record["input"]["context"] == ["D3", "D1", "D7", "D2", "D9"]
    score = stage_input_score(record["input"])
    assert (score.metadata or {})["lost"] == [
        {"id": "D30", "lost_at": "retriever", "last_step": None, "last_rank": None},
        {"id": "D4", "lost_at": "reranker", "last_step": "retriever", "last_rank": 4},
    ]


# --- refusals ----------------------------------------------------------------

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def span_json(**fields: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": SPAN, "name": "s", **fields}


def attribute(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


WHERE = "resourceSpans[0].scopeSpans[0].spans[0]"


IS_RETRIEVER = attribute(KIND, {"stringValue": RETRIEVER})


def with_attributes(*attributes: dict[str, Any]) -> dict[str, Any]:
    """A line of one span holding `attributes`."""
    return request(span_json(attributes=list(attributes)))


def retriever_spans(path: Path, *attributes: dict[str, Any]) -> str:
    """A file of one RETRIEVER span holding `attributes` after its kind."""
    return write_lines(path, [with_attributes(IS_RETRIEVER, *attributes)])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "line 1: not valid JSON"),
        ({"resourceMetrics": []}, "holds resourceMetrics, not resourceSpans"),
        ({"spans": []}, "no resourceSpans: not an OTLP JSON trace export"),
        (
            request(span_json(traceId="abc")),
            f'line 1: {WHERE}.traceId: "abc" is not a 16-byte id, as 32 hex '
            "digits (OTLP JSON) or 24 base64 characters (protobuf's JSON mapping)",
        ),
        (request(span_json(traceId="0" * 32)), "is all zeros, an invalid id"),
        (request(span_json(spanId=None)), f"{WHERE}.spanId: must be text, got null"),
        (
            request(span_json(startTimeUnixNano="1.5")),
            f'{WHERE}.startTimeUnixNano: "1.5" is not an integer',
        ),
        (
            with_attributes(IS_RETRIEVER, attribute(KIND, {"stringValue": LLM})),
            f'{WHERE}.attributes[1].key: attribute "openinference.span.kind" is '
            f"already given at {WHERE}.attributes[0]",
        ),
        (
            with_attributes(
                IS_RETRIEVER, attribute(document_score(0), {"doubleValue": 0.5})
            ),
            f"{WHERE}.attributes[1]: document 0 of RETRIEVER span "
            f'"{SPAN}" has no retrieval.documents.0.document.id',
        ),
        (
            with_attributes(
                IS_RETRIEVER,
                attribute("retrieval.documents.01.document.id", {"stringValue": "D"}),
            ),
            "N an index without leading zeros",
        ),
        (
            with_attributes(
                IS_RETRIEVER, attribute(document_id(0), {"doubleValue": 1.5})
            ),
            "document id 1.5 is neither text nor an integer",
        ),
        (
            with_attributes(attribute(KIND, {"stringValue": "retriever"})),
            'span kind "retriever" is not OpenInference\'s "RETRIEVER"',
        ),
        (
            with_attributes(attribute(EXAMPLE, {"doubleValue": 1})),
            'key "example.id" is 1.0; a key is text or an integer',
        ),
        (
            with_attributes(attribute("x", {"stringValue": "a", "intValue": 1})),
            "holds stringValue and intValue; an AnyValue holds one",
        ),
    ],
)
def test_a_span_line_that_cannot_be_read_is_named_by_line_and_field(
    tmp_path: Path, line: Any, expected: str, spans: dict[str, Path]
) -> None:
    path = write_lines(tmp_path / "spans.jsonl", [line])
    with pytest.raises(InputFileError) as caught:
        import_openinference(path, spans["gold"], key=EXAMPLE)
    assert expected in caught.value.message
    assert caught.value.message.startswith(f"{path}, line 1: ")


DOCUMENTS = SpanAttributes.RETRIEVAL_DOCUMENTS


def document_object(document: str | int) -> dict[str, Any]:
    key = "intValue" if isinstance(document, int) else "stringValue"
    return {
        "kvlistValue": {
            "values": [
                attribute("document.id", {key: document}),
                attribute("document.score", {"doubleValue": 0.5}),
            ]
        }
    }


@pytest.mark.parametrize(
    "documents",
    [
        {"arrayValue": {"values": [document_object("D7"), document_object(9)]}},
        {
            "stringValue": json.dumps(
                [{"document.id": "D7", "document.content": "x"}, {"document.id": 9}]
            )
        },
    ],
    ids=["array-of-objects", "json-text"],
)
def test_documents_given_as_one_attribute_are_read(
    tmp_path: Path, spans: dict[str, Path], documents: dict[str, Any]
) -> None:
    """Some exporters keep OpenInference's list of documents as one
    attribute; read as an empty context, the run would blame the retriever."""
    path = retriever_spans(tmp_path / "spans.jsonl", attribute(DOCUMENTS, documents))
    (record,) = import_openinference(
        path, spans["gold"], key=EXAMPLE, allow_unmatched=True
    ).records
    assert record["input"]["context"] == ["D7", "9"]


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        (
            {"stringValue": "[{'document.id': 'D7'}]"},
            "retrieval.documents must be an array of objects each holding "
            "document.id (or a JSON text of one); its text is not JSON",
        ),
        ({"stringValue": '{"document.id": "D7"}'}, 'got {"document.id": "D7"}'),
        (
            {"arrayValue": {"values": [{"stringValue": "D7"}]}},
            'document 0 is "D7", so what the span returned is unknown',
        ),
        (
            {"stringValue": '[{"document.content": "x"}]'},
            'document 0 is {"document.content": "x"}',
        ),
    ],
)
def test_documents_in_one_attribute_that_cannot_be_read_are_refused(
    tmp_path: Path, spans: dict[str, Path], documents: dict[str, Any], expected: str
) -> None:
    path = retriever_spans(tmp_path / "spans.jsonl", attribute(DOCUMENTS, documents))
    with pytest.raises(InputFileError) as caught:
        import_openinference(path, spans["gold"], key=EXAMPLE)
    assert expected in caught.value.message
    assert f"{WHERE}.attributes[1]" in caught.value.message


def test_documents_given_both_ways_are_refused(
    tmp_path: Path, spans: dict[str, Path]
) -> None:
    path = retriever_spans(
        tmp_path / "spans.jsonl",
        attribute(document_id(0), {"stringValue": "D1"}),
        attribute(DOCUMENTS, {"stringValue": '[{"document.id": "D2"}]'}),
    )
    with pytest.raises(InputFileError, match="gives its documents twice"):
        import_openinference(path, spans["gold"], key=EXAMPLE)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # Spaces inside a hex id: bytes.fromhex would skip them and read a
        # shorter id, which two traces could share.
        ({"traceId": TRACE[:10] + " " + TRACE[11:]}, "is not a 16-byte id"),
        ({"traceId": TRACE[:16] + "  " + TRACE[18:]}, "is not a 16-byte id"),
        ({"spanId": SPAN[:4] + " " + SPAN[5:]}, "is not an 8-byte id"),
        ({"traceId": "0AF7651916CD43DD8448EB211C80319G"}, "is not a 16-byte id"),
        # Integers past 64 bits, even past Python's 4,300-digit limit.
        ({"startTimeUnixNano": "1" * 5000}, "is not a 64-bit integer"),
        ({"startTimeUnixNano": str(2**64)}, "is not a 64-bit integer"),
        (
            {"attributes": [attribute("x", {"intValue": "9" * 4400})]},
            "is not a 64-bit integer",
        ),
        (
            {
                "attributes": [
                    attribute(KIND, {"stringValue": RETRIEVER}),
                    attribute(
                        f"retrieval.documents.{'1' * 4400}.document.id",
                        {"stringValue": "D1"},
                    ),
                ]
            },
            "N an index without leading zeros",
        ),
    ],
)
def test_an_id_or_integer_out_of_its_form_is_refused_not_a_traceback(
    tmp_path: Path, spans: dict[str, Path], fields: dict[str, Any], expected: str
) -> None:
    path = write_lines(tmp_path / "spans.jsonl", [request(span_json(**fields))])
    with pytest.raises(InputFileError) as caught:
        import_openinference(path, spans["gold"], key=EXAMPLE)
    assert expected in caught.value.message


def test_a_span_exported_twice_is_refused(
    tmp_path: Path, spans: dict[str, Path]
) -> None:
    path = write_lines(
        tmp_path / "spans.jsonl", [request(span_json()), "", request(span_json())]
    )
    with pytest.raises(InputFileError) as caught:
        import_openinference(path, spans["gold"], key=EXAMPLE)
    assert caught.value.line == 3
    assert f'span "{SPAN}" of trace "{TRACE}" is already on line 1' in (
        caught.value.message
    )


def test_two_keys_in_a_trace_without_a_root_holding_one_are_refused(
    tmp_path: Path, spans: dict[str, Path]
) -> None:
    root = span_json(spanId="1" * 16)
    children = [
        span_json(
            spanId=f"{n}" * 16,
            parentSpanId="1" * 16,
            attributes=[attribute(EXAMPLE, {"stringValue": key})],
        )
        for n, key in ((2, "ex-1"), (3, "ex-2"))
    ]
    path = write_lines(tmp_path / "spans.jsonl", [request(root, *children)])
    with pytest.raises(InputFileError, match=r'has 2 values for key "example\.id"'):
        import_openinference(path, spans["gold"], key=EXAMPLE)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([{"required": []}], "line 1: key: no 'key'"),
        ([{"key": True, "required": []}], "key: true is neither text nor an integer"),
        ([{"key": "a", "required": "D1"}], "required: must be a list of document"),
        ([{"key": "a", "required": [1]}], "required[0]: must be text, got 1"),
        ([{"key": "a", "required": [], "correct": "yes"}], "correct: must be true"),
        (
            [{"key": "a", "required": []}, {"key": "a", "required": []}],
            'line 2: key: key "a" is already on line 1',
        ),
        ([], "holds no gold lines"),
    ],
)
def test_a_gold_file_that_cannot_be_joined_is_refused(
    tmp_path: Path, spans: dict[str, Path], lines: list[Any], expected: str
) -> None:
    gold = write_lines(tmp_path / "gold.jsonl", lines)
    with pytest.raises(InputFileError) as caught:
        import_openinference(spans["otlp"], gold, key=EXAMPLE)
    assert expected in caught.value.message


def test_a_file_without_spans_is_refused(
    tmp_path: Path, spans: dict[str, Path]
) -> None:
    path = write_lines(tmp_path / "spans.jsonl", [request()])
    with pytest.raises(InputFileError, match="holds no spans"):
        import_openinference(path, spans["gold"], key=EXAMPLE)


# --- the command --------------------------------------------------------------


def import_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tracegrade("import", "openinference", *args, cwd=Path.cwd())


def test_unmatched_traces_are_refused_or_let_through_and_listed(
    spans: dict[str, Path], tmp_path: Path
) -> None:
    """A trace no gold line matches exits 2, naming it, and writes nothing;
    --allow-unmatched writes it without required, and every note is one
    line."""
    gold = spans["gold"]
    out = tmp_path / "runs.jsonl"
    refused = import_cli(
        str(spans["otlp"]), "--gold", str(gold), "--key", EXAMPLE, "-o", str(out)
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"Error: 2 traces match no line of {gold} by example.id: "
        f'"{TRACES[2]}" ("ex-9"), "{TRACES[3]}" (no example.id); '
        "--allow-unmatched writes them without required"
    ]
    assert not out.exists()
    result = import_cli(
        str(spans["otlp"]), "--gold", str(gold), "--key", EXAMPLE, "--allow-unmatched"
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == RECORDS
    assert result.stderr.splitlines() == [
        f"note: 2 of 6 traces match no line of {gold} by example.id; written "
        "without required (--allow-unmatched), they score unresolved: "
        f'"{TRACES[2]}" (example.id "ex-9"), "{TRACES[3]}" (no example.id)',
        "note: 5 of 6 traces show no model input that tells what reached the "
        "model (5: no LLM span shows its input); their context is their last "
        "retrieval step's output, as --context last-step takes it: "
        + ", ".join(f'"{trace}"' for trace in TRACES[:5]),
        f"note: 1 of 6 traces have no RETRIEVER span; written without context, "
        "they are invalid-input (the context was never recorded): "
        f'"{TRACES[5]}"',
        f'note: 1 gold line of {gold} matches no trace: "ex-unused" (line 5)',
        "note: 1 of 6 traces have required documents and no label (no --labels "
        "given); they score answer-label until labelled",
    ]


def test_the_import_scores_as_the_gold_says(
    spans: dict[str, Path], tmp_path: Path
) -> None:
    imported = run_tracegrade(
        *("import", "openinference", str(spans["protobuf"])),
        *("--gold", str(spans["gold"]), "--key", EXAMPLE, "-o", "runs.jsonl"),
        "--allow-unmatched",
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    scored = run_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"),
        *("--out", "results.jsonl", "--no-progress"),
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    results = {entry["id"]: entry["result"] for entry in map(json.loads, lines)}
    assert results == {
        "ex-1": {"stage": "pass", "missing": []},
        "ex-2": {"error": "answer-label"},
        "ex-9": {"stage": "unresolved"},
        TRACES[3]: {"stage": "unresolved"},
        "7": {"stage": "generation", "missing": []},
        "ex-6": None,
    }
    errors = {
        entry["id"]: entry["error"]
        for entry in map(json.loads, lines)
        if entry["error"]
    }
    assert errors["ex-6"]["kind"] == "invalid-input"
    assert errors["ex-6"]["field"] == "context"


def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    """docs/import-openinference.md: its Python block writes the spans with
    the SDK, its shell block imports and scores them, as the page says."""
    page = (
        Path(__file__).parent.parent / "docs" / "import-openinference.md"
    ).read_text()
    python = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    shell = re.search(r"```bash\n(.*?)```", page, re.DOTALL)
    assert python is not None and shell is not None
    (tmp_path / "pipeline.py").write_text(python.group(1))
    result = tracegrade_shell(shell.group(1), tmp_path, errexit=True)
    assert result.returncode == 0, result.stderr
    results = [
        json.loads(line)
        for line in (tmp_path / "results.jsonl").read_text().splitlines()
    ]
    assert [entry["result"] for entry in results] == [
        {"stage": "pass", "missing": []},
        {"stage": "retrieval", "missing": ["doc-7"]},
    ]


# --- what reached the model -----------------------------------------------------

SESSION = SpanAttributes.SESSION_ID
INPUT_MIME = SpanAttributes.INPUT_MIME_TYPE
JSON_MIME = "application/json"
QUESTION = "Which records mention ash?"


def content(document: str) -> str:
    return f"Record {document} says {document.lower()}."


def listed(prefix: str, documents: list[str]) -> dict[str, Any]:
    """A span's documents, flattened as OpenInference's instrumentors write
    them, each with its id and content."""
    attributes: dict[str, Any] = {}
    for n, document in enumerate(documents):
        attributes[f"{prefix}.{n}.{DocumentAttributes.DOCUMENT_ID}"] = document
        attributes[f"{prefix}.{n}.{DocumentAttributes.DOCUMENT_CONTENT}"] = content(
            document
        )
    return attributes


class Recorder:
    """Spans written by the SDK's OTLP JSON file exporter, on a clock of
    their own, so that the order they ran in is the order written here."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.provider = provider_with(SimpleSpanProcessor(FileSpanExporter(path)))
        self.tracer = self.provider.get_tracer("rag")
        self.clock = iter(range(1_000, 10**9, 10))

    def start(self, name: str, attributes: dict[str, Any], parent: Any = None) -> Any:
        context = None if parent is None else trace_api.set_span_in_context(parent)
        return self.tracer.start_span(
            name, context=context, attributes=attributes, start_time=next(self.clock)
        )

    def end(self, span: Any) -> None:
        span.end(end_time=next(self.clock))

    def leaf(self, name: str, attributes: dict[str, Any], parent: Any) -> None:
        self.end(self.start(name, attributes, parent))

    def generator(self, prompt: str, answer: str, parent: Any) -> None:
        """A generator as Haystack's instrumentor records it: the prompt as
        its input message, the reply as its output message."""
        self.leaf(
            "Generator.run",
            {
                KIND: LLM,
                SpanAttributes.INPUT_VALUE: json.dumps({"prompt": prompt}),
                INPUT_MIME: JSON_MIME,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": prompt,
                SpanAttributes.OUTPUT_VALUE: json.dumps({"replies": [answer]}),
                "llm.output_messages.0.message.content": answer,
            },
            parent,
        )

    def close(self) -> Path:
        self.provider.shutdown()
        return self.path


def haystack_trace(
    recorder: Recorder,
    question_id: str,
    retrieved: list[str],
    kept: list[str],
    *,
    ranker: str = RERANKER,
    answer: str = "It is K3.",
    run: str = "run-1",
) -> None:
    """A trace shaped as openinference-instrumentation-haystack records a
    BM25 retriever, a ranker, a PromptBuilder keeping `documents[:3]` (kind
    LLM: all the documents as its variables, the 3 in its output) and a
    generator; the root's input and output are the run's JSON."""
    root = recorder.start(
        "Pipeline.run",
        {
            KIND: CHAIN,
            SESSION: question_id,
            "run.id": run,
            SpanAttributes.INPUT_VALUE: json.dumps(
                {"data": {"retriever": {"query": QUESTION}}}
            ),
            INPUT_MIME: JSON_MIME,
        },
    )
    recorder.leaf(
        "InMemoryBM25Retriever.run",
        {
            KIND: RETRIEVER,
            SpanAttributes.INPUT_VALUE: json.dumps({"query": QUESTION, "top_k": None}),
            INPUT_MIME: JSON_MIME,
            **listed(SpanAttributes.RETRIEVAL_DOCUMENTS, retrieved),
        },
        root,
    )
    ranked = {SpanAttributes.OUTPUT_VALUE: json.dumps([content(d) for d in kept])}
    if ranker == RERANKER:
        ranked = listed(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, kept)
    recorder.leaf("PriorityTopK.run", {KIND: ranker, **ranked}, root)
    prompt = (
        "Answer from these records only.\n"
        + "".join(f"- {content(document)}\n" for document in kept[:3])
        + f"Question: {QUESTION}"
    )
    recorder.leaf(
        "PromptBuilder.run",
        {
            KIND: LLM,
            SpanAttributes.LLM_PROMPT_TEMPLATE: "{% for doc in documents[:3] %}...",
            SpanAttributes.LLM_PROMPT_TEMPLATE_VARIABLES: json.dumps(
                {"documents": [content(document) for document in kept]}
            ),
            SpanAttributes.OUTPUT_VALUE: prompt,
        },
        root,
    )
    recorder.generator(prompt, answer, root)
    root.set_attribute(
        SpanAttributes.OUTPUT_VALUE,
        json.dumps({"documents": retrieved, "answer": answer}),
    )
    recorder.end(root)


RETRIEVED = [f"D{number}" for number in range(1, 21)]
KEPT = ["D3", "D1", "D7", "D2", "D9"]


def test_the_context_is_what_the_prompt_held_not_what_the_reranker_kept(
    tmp_path: Path,
) -> None:
    """The PromptBuilder's variables hold all 5 documents the reranker kept;
    its output and the generator's message hold the first 3. A required
    document at the reranker's rank 4 was lost at the prompt's cut."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    haystack_trace(recorder, "q1", RETRIEVED, KEPT)
    spans = recorder.close()
    gold = write_lines(
        tmp_path / "gold.jsonl",
        [{"key": "q1", "required": ["D3", "D2", "D5", "D30"], "correct": True}],
    )
    (record,) = import_openinference(spans, gold, key=SESSION).records
    assert record == {
        "id": "q1",
        "input": {
            "required": ["D3", "D2", "D5", "D30"],
            "context": ["D3", "D1", "D7"],
            "steps": [
                {"name": "retriever", "ids": RETRIEVED},
                {"name": "reranker", "ids": KEPT},
            ],
            "correct": True,
            "question": QUESTION,
            "answer": "It is K3.",
        },
    }
    score = stage_input_score(record["input"])
    assert score.value == "retrieval"
    assert (score.metadata or {})["lost"] == [
        {"id": "D2", "lost_at": "context", "last_step": "reranker", "last_rank": 4},
        {"id": "D30", "lost_at": "retriever", "last_step": None, "last_rank": None},
        {"id": "D5", "lost_at": "reranker", "last_step": "retriever", "last_rank": 5},
    ]
    # The rule a team that knows its pipeline may choose: the last step.
    (chosen,) = import_openinference(
        spans, gold, key=SESSION, context="last-step"
    ).records
    assert chosen["input"]["context"] == KEPT
    # The report's table of losses at the prompt's cut counts D2.
    runs = write_lines(tmp_path / "runs.jsonl", [record])
    scored = run_tracegrade(
        *("score", "stage_diagnosis", runs, "--log-dir", "logs", "--no-progress"),
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    report = run_tracegrade("report", "logs", "--json", cwd=tmp_path)
    (summary,) = json.loads(report.stdout)["stage_diagnosis"]
    assert summary["pipeline"]["context"]["lost"] == 1
    assert summary["pipeline"]["context"]["median_last_rank"] == 4


def trace_with_prompt(
    path: Path, documents: dict[str, str], prompt: str
) -> tuple[Path, Path]:
    """One trace: a retriever of `documents` (id: content), a generator
    shown `prompt`."""
    recorder = Recorder(path)
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    attributes: dict[str, Any] = {KIND: RETRIEVER}
    for n, (document, text) in enumerate(documents.items()):
        attributes[document_id(n)] = document
        attributes[f"retrieval.documents.{n}.document.content"] = text
    recorder.leaf("retrieve", attributes, root)
    recorder.generator(prompt, "an answer", root)
    recorder.end(root)
    gold = write_lines(
        path.with_name("gold.jsonl"), [{"key": "q1", "required": ["D1"]}]
    )
    return recorder.close(), Path(gold)


@pytest.mark.parametrize(
    ("documents", "prompt", "context"),
    [
        # By content, in the order the prompt shows them.
        ({"D1": "alpha beta", "D2": "gamma"}, "gamma, then alpha beta", ["D2", "D1"]),
        # By id as a whole word: D1 is not inside [D10].
        ({"D1": "one", "D10": "ten"}, "see [D10]", ["D10"]),
        # Shared content, told apart by the id beside it.
        ({"D1": "same", "D2": "same"}, "[D2] same", ["D2"]),
        # Nothing the retriever returned reached the model.
        ({"D1": "alpha"}, "no records", []),
    ],
)
def test_a_document_reached_the_model_by_its_id_or_unique_content(
    tmp_path: Path, documents: dict[str, str], prompt: str, context: list[str]
) -> None:
    spans, gold = trace_with_prompt(tmp_path / "spans.jsonl", documents, prompt)
    (record,) = import_openinference(spans, gold, key=SESSION).records
    assert record["input"]["context"] == context


@pytest.mark.parametrize(
    ("documents", "prompt", "said"),
    [
        (
            {"D1": "same", "D2": "same"},
            "Records: same",
            'documents "D1" and "D2" have the same content, which the model\'s '
            "input holds, and neither id shows there",
        ),
        (
            {"D1": "beta", "D2": "alpha beta"},
            "Records: alpha beta",
            'document "D1" shows in the model\'s input only inside document '
            '"D2"\'s content',
        ),
    ],
)
def test_a_model_input_with_two_readings_is_refused(
    tmp_path: Path, documents: dict[str, str], prompt: str, said: str
) -> None:
    spans, gold = trace_with_prompt(tmp_path / "spans.jsonl", documents, prompt)
    result = import_cli(str(spans), "--gold", str(gold), "--key", SESSION)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f'Error: {spans}: trace "{trace_hex(1)}": {said}')
    assert line.endswith("--context last-step takes its last step's output instead")
    assert result.stdout == ""
    chosen = import_cli(
        *(str(spans), "--gold", str(gold), "--key", SESSION, "--context", "last-step")
    )
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(chosen.stdout)["input"]["context"] == list(documents)


def test_retrievers_side_by_side_fan_in_to_the_reranker(tmp_path: Path) -> None:
    """Hybrid search: BM25 and a dense retriever both feed the reranker.
    What only the dense one returned, and the reranker dropped, is lost at
    the reranker; so is what only BM25 returned: never at a retriever."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    recorder.leaf(
        "bm25", {KIND: RETRIEVER, **listed("retrieval.documents", ["D1", "D3"])}, root
    )
    recorder.leaf(
        "dense", {KIND: RETRIEVER, **listed("retrieval.documents", ["D7", "D1"])}, root
    )
    recorder.leaf(
        "rerank",
        {
            KIND: RERANKER,
            **listed(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, ["D1"]),
        },
        root,
    )
    recorder.generator(f"Records: {content('D1')}", "an answer", root)
    recorder.end(root)
    gold = write_lines(
        tmp_path / "gold.jsonl",
        [{"key": "q1", "required": ["D3", "D7"], "correct": True}],
    )
    (record,) = import_openinference(recorder.close(), gold, key=SESSION).records
    assert record["input"]["steps"] == [
        {"name": "retriever", "ids": ["D1", "D3"]},
        {"name": "retriever-2", "ids": ["D7", "D1"], "inputs": []},
        {"name": "reranker", "ids": ["D1"], "inputs": ["retriever", "retriever-2"]},
    ]
    score = stage_input_score(record["input"])
    assert (score.metadata or {})["lost"] == [
        {"id": "D3", "lost_at": "reranker", "last_step": "retriever", "last_rank": 2},
        {"id": "D7", "lost_at": "reranker", "last_step": "retriever-2", "last_rank": 1},
    ]
    explanation = score.explanation or ""
    assert "D7: retrieved at rank 1 by retriever-2, dropped by reranker" in explanation
    assert "dropped by retriever" not in explanation


def test_steps_follow_the_span_tree_and_a_step_traced_twice_is_one(
    tmp_path: Path,
) -> None:
    """A retriever wrapping a base retriever and a compressor (LangChain's
    ContextualCompressionRetriever) starts first but outputs last; a
    retriever span under one of its kind that records no documents
    (LlamaIndex's `retrieve` and `_retrieve`) is the same step."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    outer = recorder.start("compressing", {KIND: RETRIEVER}, root)
    base = recorder.start("base", {KIND: RETRIEVER}, outer)
    recorder.leaf("_retrieve", {KIND: RETRIEVER}, base)
    base.set_attributes(listed("retrieval.documents", ["D1", "D2", "D3"]))
    recorder.end(base)
    outer.set_attributes(listed("retrieval.documents", ["D3"]))
    recorder.end(outer)
    recorder.generator(f"Records: {content('D3')}", "an answer", root)
    recorder.end(root)
    gold = write_lines(
        tmp_path / "gold.jsonl", [{"key": "q1", "required": ["D2"], "correct": True}]
    )
    (record,) = import_openinference(recorder.close(), gold, key=SESSION).records
    assert record["input"]["steps"] == [
        {"name": "retriever", "ids": ["D1", "D2", "D3"]},
        {"name": "retriever-2", "ids": ["D3"]},
    ]
    assert record["input"]["context"] == ["D3"]
    lost = (stage_input_score(record["input"]).metadata or {})["lost"]
    assert lost == [
        {"id": "D2", "lost_at": "retriever-2", "last_step": "retriever", "last_rank": 2}
    ]


def test_a_ranker_typed_chain_is_named_in_a_note(tmp_path: Path) -> None:
    """Haystack's instrumentor types a component by its class name: a
    ranker class PriorityTopK is a CHAIN span, which no step reads."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    haystack_trace(recorder, "q1", RETRIEVED, KEPT, ranker=CHAIN)
    spans = recorder.close()
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "q1", "required": ["D3"]}])
    result = import_cli(str(spans), "--gold", str(gold), "--key", SESSION)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["input"]["context"] == ["D3", "D1", "D7"]
    assert (
        "note: spans that returned documents are typed neither RETRIEVER nor "
        'RERANKER, so no step reads them: "PriorityTopK.run" (1 trace)'
    ) in result.stderr.splitlines()


def test_two_imports_of_the_same_questions_pair_by_question_id(tmp_path: Path) -> None:
    """Each record's id is its --key value, so a run with the retriever cut
    to 3 compares with the run before, question by question; labels export
    shows each question's text."""
    for name, retrieved in (("top20", RETRIEVED), ("top3", RETRIEVED[:3])):
        recorder = Recorder(tmp_path / f"{name}.jsonl")
        for question in ("q1", "q2"):
            kept = [d for d in KEPT if d in retrieved]
            haystack_trace(recorder, question, retrieved, kept)
        recorder.close()
    gold = write_lines(
        tmp_path / "gold.jsonl",
        [
            {"key": "q1", "required": ["D3"], "correct": True},
            {"key": "q2", "required": ["D7"], "correct": True},
        ],
    )
    for name in ("top20", "top3"):
        imported = run_tracegrade(
            *("import", "openinference", f"{name}.jsonl", "--gold", gold),
            *("--key", SESSION, "-o", f"{name}.out"),
            cwd=tmp_path,
        )
        assert imported.returncode == 0, imported.stderr
        scored = run_tracegrade(
            *("score", "stage_diagnosis", f"{name}.out", "--log-dir", name),
            "--no-progress",
            cwd=tmp_path,
        )
        assert scored.returncode == 0, scored.stderr
    compared = run_tracegrade("compare", "top20", "top3", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    text = " ".join((compared.stdout + compared.stderr).split())
    assert "2 pairs of sample-epochs (by sample id and epoch)" in text
    # q2 needed D7, which the cut retriever never returned: one regression.
    assert "Regressions: 1 regression (stage_diagnosis: 1 regression)" in text
    assert "q2 1 pass → retrieval none D7" in text
    (log,) = (tmp_path / "top20").glob("*.eval")
    exported = run_tracegrade("labels", "export", str(log), cwd=tmp_path)
    assert [json.loads(line)["question"] for line in exported.stdout.splitlines()] == [
        QUESTION,
        QUESTION,
    ]


def test_a_sample_id_two_traces_share_is_refused_naming_both(tmp_path: Path) -> None:
    """Two runs of one question in one file; --id names an attribute that
    tells them apart."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    for run in ("run-1", "run-2"):
        haystack_trace(recorder, "q1", RETRIEVED, KEPT, run=run)
    spans = recorder.close()
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "q1", "required": ["D3"]}])
    records = import_openinference(spans, gold, key=SESSION, sample_id="run.id").records
    assert [record["id"] for record in records] == ["run-1", "run-2"]
    assert [record["input"]["required"] for record in records] == [["D3"], ["D3"]]
    with pytest.raises(ImportRefused) as refused:
        import_openinference(spans, gold, key=SESSION)
    assert str(refused.value) == (
        f'{spans}: traces "{trace_hex(1)}" and "{trace_hex(7)}" both have sample '
        'id "q1" (session.id); a sample id names one run'
    )
    with pytest.raises(ImportRefused, match=r'has no attribute "case\.id" for its'):
        import_openinference(spans, gold, key=SESSION, sample_id="case.id")


def test_a_key_that_matches_no_trace_says_it_may_vary_per_run(tmp_path: Path) -> None:
    """Haystack's root input.value holds a Python set, printed in an order
    that changes from process to process: no trace joins its gold line."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    haystack_trace(recorder, "q1", RETRIEVED, KEPT)
    spans = recorder.close()
    gold = write_lines(
        tmp_path / "gold.jsonl",
        [{"key": "{'retriever', 'ranker'}", "required": ["D3"]}],
    )
    result = import_cli(str(spans), "--gold", str(gold), "--key", "input.value")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert (
        f'Error: 1 trace matches no line of {gold} by input.value: "{trace_hex(1)}"'
        in (line)
    )
    assert (
        "no trace matched any of its lines: input.value may vary from run to run "
        "of the same question"
    ) in line


def test_a_document_without_an_id_has_the_one_its_metadata_names(
    tmp_path: Path,
) -> None:
    """LangChain's instrumentor records each document's content and
    metadata, not its id: --id-in-metadata names the metadata key that
    holds it; without it, or where the metadata lacks it, the import is
    refused rather than guess."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("RunnableSequence", {KIND: CHAIN, SESSION: "q1"})
    documents = {
        f"retrieval.documents.{n}.document.{field}": value
        for n, document in enumerate(["D1", "D2"])
        for field, value in (
            ("content", content(document)),
            ("metadata", json.dumps({"id": document, "priority": n})),
        )
    }
    recorder.leaf("KeywordDocumentRetriever", {KIND: RETRIEVER, **documents}, root)
    recorder.generator(f"- [D2] {content('D2')}", "an answer", root)
    recorder.end(root)
    spans = recorder.close()
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "q1", "required": ["D1"]}])
    (record,) = import_openinference(
        spans, gold, key=SESSION, id_in_metadata="id"
    ).records
    assert record["input"]["steps"] == [{"name": "retriever", "ids": ["D1", "D2"]}]
    assert record["input"]["context"] == ["D2"]
    with pytest.raises(InputFileError, match=r"--id-in-metadata KEY reads it"):
        import_openinference(spans, gold, key=SESSION)
    with pytest.raises(InputFileError, match=r"holds no \"name\" and the document"):
        import_openinference(spans, gold, key=SESSION, id_in_metadata="name")


def test_documents_a_model_input_cannot_show_keep_the_last_step(
    tmp_path: Path,
) -> None:
    """Documents recorded without content, none named by id in the prompt:
    whether they reached the model cannot be told, so the context is the
    retriever's output, as before, and the note says why."""
    spans, gold = trace_with_prompt(
        tmp_path / "spans.jsonl", {"D1": "", "D2": ""}, "Answer from the records."
    )
    imported = import_openinference(spans, gold, key=SESSION)
    (record,) = imported.records
    assert record["input"]["context"] == ["D1", "D2"]
    assert "steps" not in record["input"]
    assert imported.notes.last_step == [
        (trace_hex(1), "a document with no content that no model input names by id")
    ]
