"""`tracegrade import openinference`: the OpenTelemetry SDK's spans, as OTLP JSON (hex
ids) or protobuf's JSON mapping (base64 ids); each refusal's line hand-written."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToJson
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kinds
from openinference.semconv.trace import RerankerAttributes, SpanAttributes
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator

from tests.commands import run_tracegrade, tracegrade_shell
from tests.support import write_lines
from tracegrade.importers.common import ImportRefused, InputFileError, LabelsRefused
from tracegrade.importers.openinference import ImportRules, stream_openinference
from tracegrade.tasks.recorded import stage_input_score

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
RETRIEVER, RERANKER = Kinds.RETRIEVER.value, Kinds.RERANKER.value
LLM, CHAIN = Kinds.LLM.value, Kinds.CHAIN.value
INPUT, OUTPUT = SpanAttributes.INPUT_VALUE, SpanAttributes.OUTPUT_VALUE
INPUT_MIME, JSON_MIME = SpanAttributes.INPUT_MIME_TYPE, "application/json"
EXAMPLE, SESSION = "example.id", SpanAttributes.SESSION_ID
RERANKED = RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS


def import_openinference(
    spans: Path | str, gold: Path | str, *, labels_path: Any = None, **rules: Any
) -> list[dict[str, Any]]:
    records = stream_openinference(
        spans, gold, rules=ImportRules(**rules), labels_path=labels_path, notes=[]
    )
    return list(records)


def import_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tracegrade("import", "openinference", *args, cwd=Path.cwd())


def document_id(index: int | str, prefix: str = "retrieval.documents") -> str:
    return f"{prefix}.{index}.document.id"


def listed(
    documents: list[str] | dict[str, str], prefix: str = "retrieval.documents"
) -> dict[str, Any]:
    """Documents (ids, or id: content), flattened as OpenInference writes them."""
    if isinstance(documents, list):
        documents = {d: f"Record {d} says {d.lower()}." for d in documents}
    return {
        f"{prefix}.{n}.document.{field}": value
        for n, (document, text) in enumerate(documents.items())
        for field, value in (("id", document), ("content", text))
    }


class SequentialIds(IdGenerator):
    """Ids in order, so that records can be written out by hand."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)

    def generate_span_id(self) -> int:
        return next(self.ids)

    def generate_trace_id(self) -> int:
        return 0xFEED << 64 | next(self.ids)


def trace_hex(number: int) -> str:
    return f"{0xFEED << 64 | number:032x}"


class Recorder:
    """Spans on a clock of their own, as the SDK's OTLP JSON file exporter writes
    them, or in protobuf's JSON mapping."""

    def __init__(self, path: Path, protobuf: bool = False) -> None:
        self.path = path
        self.memory = InMemorySpanExporter() if protobuf else None
        self.provider = TracerProvider(id_generator=SequentialIds())
        exporter = self.memory or FileSpanExporter(path)
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
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
        """A model shown `prompt` as its messages, as Haystack records them."""
        message = "llm.input_messages.0.message"
        attributes = {KIND: LLM, INPUT: json.dumps({"prompt": prompt})}
        attributes |= {INPUT_MIME: JSON_MIME, f"{message}.role": "user"}
        attributes |= {f"{message}.content": prompt, OUTPUT: answer}
        self.leaf("Generator.run", attributes, parent)

    def close(self) -> Path:
        if self.memory is not None:  # one request per trace
            spans = self.memory.get_finished_spans()
            traces = itertools.groupby(spans, lambda span: span.context.trace_id)
            lines = [
                MessageToJson(encode_spans(list(g)), indent=None) for _, g in traces
            ]
            self.path.write_text("".join(line + "\n" for line in lines))
        self.provider.shutdown()
        return self.path


def run_pipeline(recorder: Recorder) -> None:
    """Six traces of a RAG pipeline, as instrumentation would record them."""
    start, end, leaf = recorder.start, recorder.end, recorder.leaf
    # ex-1: two retrievals, the second exported first but started later; the
    # root holds the key, the question and the answer.
    root = start("rag", {KIND: CHAIN, EXAMPLE: "ex-1", INPUT: "When?"})
    first = start("retrieve", {KIND: RETRIEVER, **listed(["D1", "D2"])}, root)
    end(start("retrieve-more", {KIND: RETRIEVER, document_id(0): "D3"}, root))
    end(first)
    leaf("generate", {KIND: LLM, OUTPUT: "1998"}, root)
    root.set_attribute(OUTPUT, "It opened in 1998.")
    end(root)
    # ex-2: the key only on the LLM span; documents out of index order.
    root = start("rag", {KIND: CHAIN})
    found = {document_id(1): "D6", document_id(0): "D5"}
    leaf("retrieve", {KIND: RETRIEVER, **found}, root)
    leaf("generate", {KIND: LLM, EXAMPLE: "ex-2", OUTPUT: "Ms Ito"}, root)
    end(root)
    # A key the gold file does not have; then no key and nothing found.
    root = start("rag", {KIND: CHAIN, EXAMPLE: "ex-9"})
    leaf("retrieve", {KIND: RETRIEVER, document_id(0): "D7"}, root)
    end(root)
    root = start("rag", {KIND: CHAIN})
    leaf("retrieve", {KIND: RETRIEVER}, root)
    end(root)
    # An integer key and an integer document id.
    root = start("rag", {KIND: CHAIN, EXAMPLE: 7})
    leaf("retrieve", {KIND: RETRIEVER, document_id(0): 42}, root)
    leaf("generate", {KIND: LLM, OUTPUT: "no"}, root)
    end(root)
    # ex-6: no retriever instrumented, so no context recorded (not an empty one).
    root = start("rag", {KIND: CHAIN, EXAMPLE: "ex-6"})
    leaf("generate", {KIND: LLM, OUTPUT: "1999"}, root)
    end(root)


TRACES = [trace_hex(n) for n in (1, 6, 10, 13, 16, 20)]
GOLD = [
    {"key": "ex-1", "required": ["D1", "D3"], "correct": True},
    {"key": "ex-2", "required": ["D4", "D5"], "note": "no label yet"},
    {"key": 7, "required": ["42"], "correct": False},
    {"key": "ex-6", "required": ["D1", "D3"], "correct": True},
    {"key": "ex-unused", "required": ["D1"]},
]
# Ids are the key's values as text (no key: the trace id); no LLM span shows
# its input, so each context is the retrievers' output; the answer is the
# model's, not the root's. None is a field left out.
FIELDS = ("required", "context", "correct", "question", "answer")
RECORDS = [
    {
        "id": record_id,
        "input": {n: v for n, v in zip(FIELDS, row, strict=True) if v is not None},
    }
    for record_id, *row in [
        ("ex-1", ["D1", "D3"], ["D1", "D2", "D3"], True, "When?", "1998"),
        ("ex-2", ["D4", "D5"], ["D5", "D6"], None, None, "Ms Ito"),
        ("ex-9", None, ["D7"], None, None, None),
        (TRACES[3], None, [], None, None, None),
        ("7", ["42"], ["42"], False, None, "no"),
        ("ex-6", ["D1", "D3"], None, True, None, "1999"),
    ]
]


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("spans")
    made = {}
    for name, protobuf in (("otlp", False), ("protobuf", True)):
        recorder = Recorder(directory / f"{name}.jsonl", protobuf)
        run_pipeline(recorder)
        made[name] = recorder.close()
    return {**made, "gold": Path(write_lines(directory / "gold.jsonl", GOLD))}


def test_labels_label_records_by_id_but_never_one_the_gold_labels(
    spans: dict[str, Path], tmp_path: Path
) -> None:
    def labelled(sample: str) -> list[dict[str, Any]]:
        labels = write_lines(tmp_path / "l.jsonl", [{"id": sample, "correct": True}])
        rules = {"key": EXAMPLE, "labels_path": labels, "allow_unmatched": True}
        return import_openinference(spans["otlp"], spans["gold"], **rules)

    record = labelled("ex-2")[1]["input"]
    assert record["correct"] is True
    assert list(record)[:3] == ["required", "context", "correct"]
    with pytest.raises(LabelsRefused, match=r"is already labelled by .*line 1"):
        labelled("ex-1")


@pytest.mark.parametrize(("encoding", "id_length"), [("otlp", 32), ("protobuf", 24)])
def test_unmatched_traces_are_refused_or_let_through_and_listed(
    spans: dict[str, Path], tmp_path: Path, encoding: str, id_length: int
) -> None:
    """One record per trace from either encoding; a trace no gold line matches
    exits 2, writing nothing; --allow-unmatched writes it without required."""
    line = json.loads(spans[encoding].read_text().splitlines()[0])
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == id_length  # hex, or base64 of 16 bytes
    gold, out = spans["gold"], tmp_path / "runs.jsonl"
    base = [str(spans[encoding]), "--gold", str(gold), "--key", EXAMPLE]
    refused = import_cli(*base, "-o", str(out))
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"Error: 2 traces match no line of {gold} by example.id: "
        f'"{TRACES[2]}" ("ex-9"), "{TRACES[3]}" (no example.id); '
        "--allow-unmatched writes them without required"
    ]
    assert not out.exists()
    nothing = write_lines(tmp_path / "gold.jsonl", [{"key": "x", "required": []}])
    matched = import_cli(str(spans[encoding]), "--gold", nothing, "--key", EXAMPLE)
    assert matched.returncode == 2
    assert "no trace matched any of its lines: example.id may vary" in matched.stderr
    result = import_cli(*base, "--allow-unmatched")
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


PASS, MISSED = {"stage": "pass", "missing": []}, {"stage": "retrieval", "missing": []}


@pytest.mark.parametrize(
    ("page", "results"),
    [
        ("import-openinference.md", [PASS, MISSED | {"missing": ["doc-7"]}]),
        (
            "import-ragas.md",
            [PASS, MISSED | {"missing": ["D3"]}, PASS | {"stage": "generation"}],
        ),
    ],
)
def test_the_docs_example_runs_as_written(
    tmp_path: Path, page: str, results: list[dict[str, Any]]
) -> None:
    """The page's shell block (and the Python block it runs) give its results."""
    text = (Path(__file__).parents[1] / "docs" / page).read_text()
    (shell,) = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    if "python pipeline.py" in shell:  # the page's first Python block
        python = re.search(r"```python\n(.*?)```", text, re.DOTALL)
        (tmp_path / "pipeline.py").write_text(python.group(1) if python else "")
    result = tracegrade_shell(shell, tmp_path, errexit=True)
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["result"] for line in written] == results


TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
WHERE = "resourceSpans[0].scopeSpans[0].spans[0]"
DOCS, RETRIEVES = "retrieval.documents", (KIND, RETRIEVER)


def span(*attributes: tuple[str, Any], **fields: Any) -> dict[str, Any]:
    """A span of (key, value) attributes; a value not an AnyValue is typed."""
    kinds = {str: "stringValue", int: "intValue", float: "doubleValue"}
    typed = [
        {"key": key, "value": v if isinstance(v, dict) else {kinds[type(v)]: v}}
        for key, v in attributes
    ]
    return {"traceId": TRACE, "spanId": SPAN, "name": "s", "attributes": typed} | fields


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def one(*attributes: tuple[str, Any], **fields: Any) -> dict[str, Any]:
    return request(span(*attributes, **fields))


def child(n: int, *attributes: tuple[str, Any], parent: int = 1) -> dict[str, Any]:
    return span(*attributes, spanId=f"{n}" * 16, parentSpanId=f"{parent}" * 16)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "line 1: not valid JSON"),
        ({"resourceMetrics": []}, "holds resourceMetrics, not resourceSpans"),
        ({"spans": []}, "no resourceSpans: not an OTLP JSON trace export"),
        (
            one(traceId="abc"),
            f'line 1: {WHERE}.traceId: "abc" is not a 16-byte id, as 32 hex '
            "digits (OTLP JSON) or 24 base64 characters (protobuf's JSON mapping)",
        ),
        # A space in a hex id: bytes.fromhex would skip it; two traces could share it.
        (one(spanId=SPAN[:4] + " " + SPAN[5:]), "is not an 8-byte id"),
        (one(traceId="0" * 32), "is all zeros, an invalid id"),
        (one(spanId=None), f"{WHERE}.spanId: must be text, got null"),
        (one(startTimeUnixNano="1.5"), '.startTimeUnixNano: "1.5" is not an integer'),
        # Past 64 bits, even past Python's 4,300-digit limit: no traceback.
        (one(startTimeUnixNano="1" * 5000), "is not a 64-bit integer"),
        (one(("x", {"intValue": str(2**64)})), "is not a 64-bit integer"),
        (
            one(RETRIEVES, (KIND, LLM)),
            f'{WHERE}.attributes[1].key: attribute "openinference.span.kind" is '
            f"already given at {WHERE}.attributes[0]",
        ),
        (
            one(RETRIEVES, (f"{DOCS}.0.document.score", 0.5)),
            f'{WHERE}.attributes[1]: document 0 of RETRIEVER span "{SPAN}" has no '
            "retrieval.documents.0.document.id",
        ),
        (one(RETRIEVES, (f"{DOCS}.01.document.id", "D")), "N an index without"),
        (one(RETRIEVES, (f"{DOCS}.{'1' * 4400}.document.id", "D")), "N an index"),
        (one(RETRIEVES, (document_id(0), 1.5)), "id 1.5 is neither text"),
        (one((KIND, "retriever")), 'span kind "retriever" is not OpenInfer'),
        (one((EXAMPLE, 1.0)), 'key "example.id" is 1.0; a key is text or'),
        # A boolValue is read as true or false, an empty AnyValue as null.
        (one((EXAMPLE, {"boolValue": True})), 'key "example.id" is true; a key'),
        (one((EXAMPLE, {})), 'key "example.id" is null; a key is text or'),
        (one(("x", {"stringValue": "a", "intValue": 1})), "holds stringValue and int"),
        (
            request(
                span(spanId="1" * 16), *(child(n, (EXAMPLE, f"{n}")) for n in (2, 3))
            ),
            'has 2 values for key "example.id" and no root span holding one',
        ),
        (
            one(RETRIEVES, (DOCS, "[{'document.id': 'D7'}]")),
            f"{WHERE}.attributes[1]: retrieval.documents must be an array of "
            "objects each holding document.id (or a JSON text of one); its text "
            "is not JSON",
        ),
        (one(RETRIEVES, (DOCS, '{"document.id": "D7"}')), 'got {"document.id": "D7"}'),
        (
            one(RETRIEVES, (DOCS, {"arrayValue": {"values": [{"stringValue": "D"}]}})),
            'document 0 is "D", so',
        ),
        (one(RETRIEVES, (DOCS, '[{"document.content": "x"}]')), '0 is {"document.c'),
        (one(RETRIEVES, (DOCS, '[{"document.id": "\\ud800"}]')), 'id "\\ud800" holds'),
        (one((KIND, LLM), ("llm.output_messages.0.content", 1)), "texts, got 1"),
        (
            one(RETRIEVES, (document_id(0), "D"), (DOCS, "[]")),
            "gives its documents twice",
        ),
        (request(), "holds no spans"),
        (one(name="\ud800"), f'{WHERE}.name: "\\ud800" holds a lone surrogate'),
        ({"resourceSpans": {}}, "resourceSpans: must be a JSON array, got {}"),
        ({"resourceSpans": [[]]}, "resourceSpans[0]: must be a JSON object, got []"),
        (one(("x", {"boolValue": 1})), "boolValue: 1 is not true or"),
        (one(("x", {"doubleValue": "1"})), '"1" is not a number'),
        (one(("x", {"bytesValue": "*"})), '"*" is not base64'),
        (one(RETRIEVES, (INPUT, 1)), "input.value must be text, got 1"),
        (
            request(child(1, RETRIEVES, parent=2), child(2, RETRIEVES)),
            "its own ancestor",
        ),
        # LangChain's documents give their id only in their metadata.
        (one(RETRIEVES, (f"{DOCS}.0.document.metadata", "{}")), 'holds no "name" and'),
        (
            [one(), "", one()],
            f'line 3: {WHERE}.spanId: span "{SPAN}" of trace "{TRACE}" is already '
            f"on line 1 ({WHERE}); a span exported twice",
        ),
    ],
)
def test_a_span_file_that_cannot_be_read_is_named_by_line_and_field(
    tmp_path: Path, line: Any, expected: str, spans: dict[str, Path]
) -> None:
    lines = line if isinstance(line, list) else [line]
    path = write_lines(tmp_path / "spans.jsonl", lines)
    with pytest.raises(InputFileError) as caught:
        import_openinference(path, spans["gold"], key=EXAMPLE, id_in_metadata="name")
    assert expected in caught.value.message
    assert caught.value.message.startswith(path)


def test_documents_given_as_one_attribute_are_read(
    tmp_path: Path, spans: dict[str, Path]
) -> None:
    """Some exporters keep OpenInference's list of documents as one attribute."""
    pairs = [span(("document.id", document))["attributes"] for document in ("D7", 9)]
    objects = {
        "arrayValue": {"values": [{"kvlistValue": {"values": p}} for p in pairs]}
    }
    text = json.dumps(
        [{"document.id": "D7", "document.content": "x"}, {"document.id": 9}]
    )
    for value in (objects, text):
        path = write_lines(tmp_path / "spans.jsonl", [one(RETRIEVES, (DOCS, value))])
        rules = {"key": EXAMPLE, "allow_unmatched": True}
        (record,) = import_openinference(path, spans["gold"], **rules)
        assert record["input"]["context"] == ["D7", "9"]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([{"required": []}], "line 1: key: no 'key'"),
        ([{"key": True, "required": []}], "key: true is neither text nor an integer"),
        ([{"key": "a", "required": "D1"}], "required: must be a list of document"),
        ([{"key": "a", "required": [1]}], "required[0]: must be text, got 1"),
        ([{"key": "a", "required": [], "correct": "yes"}], "correct: must be true"),
        ([{"key": "a", "required": []}] * 2, 'line 2: key: key "a" is already on'),
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


def trace_with_prompt(
    path: Path, documents: dict[str, str], prompt: str, messages: bool
) -> tuple[Path, Path]:
    """A retriever of `documents` (id: content), then a model shown `prompt` as its
    messages, or only as JSON in its input.value."""
    recorder = Recorder(path)
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    recorder.leaf("retrieve", {KIND: RETRIEVER, **listed(documents)}, root)
    if messages:
        recorder.generator(prompt, "an answer", root)
    else:
        given = json.dumps({"messages": [{"content": prompt}]})
        recorder.leaf("chat", {KIND: LLM, INPUT: given, INPUT_MIME: JSON_MIME}, root)
    recorder.end(root)
    gold = write_lines(path.with_name("gold.jsonl"), [{"key": "q1", "required": []}])
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
        # Quotes as the model reads them, unescaped from an input.value of JSON.
        ({"D1": 'say "hi"'}, 'Records: say "hi"', ["D1"]),
        # No content and no id shown: whether they reached it cannot be told,
        # so the last step's output, and a note says why.
        ({"D1": "", "D2": ""}, "Answer from the records.", None),
        # Two readings: refused, naming the trace.
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
@pytest.mark.parametrize("messages", [True, False], ids=["messages", "json-input"])
def test_a_document_reached_the_model_by_its_id_or_unique_content(
    tmp_path: Path, documents: dict[str, str], prompt: str, context: Any, messages: bool
) -> None:
    path = tmp_path / "spans.jsonl"
    spans, gold = trace_with_prompt(path, documents, prompt, messages)
    base = [str(spans), "--gold", str(gold), "--key", SESSION]
    result, noted = import_cli(*base), context is None
    if isinstance(context, str):
        assert (result.returncode, result.stdout) == (1, "")
        (line,) = result.stderr.splitlines()
        assert line.startswith(f'Error: {spans}: trace "{trace_hex(1)}": {context}')
        assert line.endswith("--context last-step takes its last step's output instead")
        result = import_cli(*base, "--context", "last-step")
        context = None
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)["input"]
    assert record["context"] == (list(documents) if context is None else context)
    assert ("steps" in record) == (context is not None)
    why = "(1: a document with no content that no model input names by id)"
    assert (why in result.stderr) == noted


def test_two_readings_are_named_in_the_order_the_spans_returned_them(
    tmp_path: Path,
) -> None:
    """D1 comes back with two contents, each shared: the refusal names the first
    pair, whatever order a set of the two contents would iterate in."""
    # A pair a set of this process's hash seed iterates the other way round
    # (none does when the first's hash takes a set's first slot: a new pair).
    pairs = ((f"text{n}", f"text{n + 1}") for n in itertools.count())
    first, second = next(pair for pair in pairs if [*{*pair}] != [*pair])
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    for name, documents in (("a", {"D1": first, "D2": first}), ("b", {"D1": second})):
        recorder.leaf(name, {KIND: RETRIEVER, **listed(documents)}, root)
    recorder.leaf("c", {KIND: RETRIEVER, **listed({"D3": second})}, root)
    recorder.generator(f"Records: {first} {second}", "an answer", root)
    recorder.end(root)
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "q1", "required": []}])
    with pytest.raises(ImportRefused, match='documents "D1" and "D2" have the same'):
        import_openinference(recorder.close(), gold, key=SESSION)


def test_steps_follow_the_span_tree_and_fan_in_to_the_reranker(tmp_path: Path) -> None:
    """Hybrid search, BM25's compressed (LangChain's ContextualCompressionRetriever:
    it starts first, outputs last; `_retrieve` under `retrieve` is one step): what
    the reranker dropped is lost there, never at a retriever."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1"})
    outer = recorder.start("compressing", {KIND: RETRIEVER}, root)
    base = recorder.start("bm25", {KIND: RETRIEVER}, outer)
    recorder.leaf("_retrieve", {KIND: RETRIEVER}, base)
    base.set_attributes(listed(["D1", "D3", "D9"]))
    recorder.end(base)
    outer.set_attributes(listed(["D1", "D3"]))
    recorder.end(outer)
    recorder.leaf("dense", {KIND: RETRIEVER, **listed(["D7", "D1"])}, root)
    recorder.leaf("rerank", {KIND: RERANKER, **listed(["D1"], RERANKED)}, root)
    recorder.generator("Records: Record D1 says d1.", "an answer", root)
    recorder.end(root)
    required = {"key": "q1", "required": ["D3", "D7", "D9"], "correct": True}
    gold = write_lines(tmp_path / "gold.jsonl", [required])
    spans = recorder.close()
    (record,) = import_openinference(spans, gold, key=SESSION)
    steps = [
        {"name": "retriever", "ids": ["D1", "D3", "D9"]},
        {"name": "retriever-2", "ids": ["D1", "D3"]},
        {"name": "retriever-3", "ids": ["D7", "D1"], "inputs": []},
        {"name": "reranker", "ids": ["D1"], "inputs": ["retriever-2", "retriever-3"]},
    ]
    assert record["input"]["steps"] == steps
    lost = (stage_input_score(record["input"]).metadata or {})["lost"]
    assert [tuple(where.values()) for where in lost] == [
        ("D3", "reranker", "retriever-2", 2),
        ("D7", "reranker", "retriever-3", 1),
        ("D9", "retriever-2", "retriever", 3),
    ]
    # The rule a team that knows its pipeline may choose: the last step's output.
    (chosen,) = import_openinference(spans, gold, key=SESSION, context="last-step")
    assert (chosen["input"]["context"], chosen["input"]["steps"]) == (["D1"], steps)


def test_a_sample_id_two_traces_share_is_refused_naming_both(tmp_path: Path) -> None:
    """Two runs of one question in one file; --id names what tells them apart."""
    recorder = Recorder(tmp_path / "spans.jsonl")
    for run in ("run-1", "run-2"):
        root = recorder.start("rag", {KIND: CHAIN, SESSION: "q1", "run.id": run})
        recorder.leaf("retrieve", {KIND: RETRIEVER, **listed(["D3"])}, root)
        recorder.end(root)
    spans = recorder.close()
    gold = write_lines(tmp_path / "gold.jsonl", [{"key": "q1", "required": ["D3"]}])
    records = import_openinference(spans, gold, key=SESSION, sample_id="run.id")
    assert [record["id"] for record in records] == ["run-1", "run-2"]
    assert [record["input"]["required"] for record in records] == [["D3"], ["D3"]]
    with pytest.raises(ImportRefused) as refused:
        import_openinference(spans, gold, key=SESSION)
    assert str(refused.value) == (
        f'{spans}: traces "{trace_hex(1)}" and "{trace_hex(4)}" both have sample '
        'id "q1" (session.id); a sample id names one run'
    )
    with pytest.raises(ImportRefused, match=r'has no attribute "case\.id" for its'):
        import_openinference(spans, gold, key=SESSION, sample_id="case.id")
    empty = write_lines(tmp_path / "empty.jsonl", [one((SESSION, ""))])
    with pytest.raises(ImportRefused, match=r"has an empty session\.id, which cannot"):
        import_openinference(empty, gold, key=SESSION, allow_unmatched=True)
