"""Trace small RAG pipelines of Haystack, LlamaIndex and LangChain as users do:
keyword retrieval, a rerank by `priority` to 5, a prompt of the first 3, a fake
generator, spans by OpenInference's instrumentors; beside them each pipeline's
own outputs. `nox -s record_pipelines`; tests/data/pipelines/README says more.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from haystack import Document, Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.rankers import MetaFieldRanker
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document as LangChainDocument
from langchain_core.language_models.chat_models import SimpleChatModel
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever as LangChainRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from llama_index.core.base.base_retriever import BaseRetriever as LlamaRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import (
    ReRankEndEvent,
    ReRankStartEvent,
)
from llama_index.core.llms import (
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from openinference.instrumentation import using_session
from openinference.instrumentation.haystack import HaystackInstrumentor
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "pipelines"
CLASSES = 10
SLOTS = 6
RERANK_TOP = 5
PROMPT_TOP = 3
CONFIGURATIONS = {"top20": 20, "top8": 8}
WORDS = [
    *("ash", "bay", "cob", "dun", "elm", "fen", "gum", "hop", "ivy", "jay", "kea"),
    *("lea", "moa", "nut", "oak", "pea", "quay", "rye", "sod", "tor", "urn", "vat"),
    *("wren", "yew"),
]
CODE = re.compile(r"\bCode (K[0-9]{2})\b")


class Doc(NamedTuple):
    id: str
    text: str
    priority: int


class Question(NamedTuple):
    id: str
    text: str


def keyword_lists() -> list[list[int]]:
    """Per question, the documents holding its keyword, shortest first: one
    of each length class, so any length-normalised keyword score ranks them so."""
    return [
        [c * SLOTS + (i % SLOTS + c * (i // SLOTS)) % SLOTS for c in range(CLASSES)]
        for i in range(len(WORDS))
    ]


def _priority(index: int) -> int:
    """Distinct; a few of the longest documents rank first, so a shorter
    retrieval changes what the reranker keeps."""
    boosted = index // SLOTS >= CLASSES - 2 and index % SLOTS in (0, 3)
    return (index * 23) % 60 + 1 + (100 if boosted else 0)


def corpus() -> list[Doc]:
    lists = keyword_lists()
    docs = []
    for index in range(CLASSES * SLOTS):
        words = [WORDS[i] for i, found in enumerate(lists) if index in found]
        pages = " ".join(str(page) for page in range(11, 11 + index // SLOTS))
        text = f"Code K{index + 1:02d}: {' '.join(words)}." + (pages and f" p {pages}")
        docs.append(Doc(f"doc-{index + 1:02d}", text, _priority(index)))
    return docs


def questions() -> list[Question]:
    return [
        Question(f"q{i + 1:02d}", f"Which records mention {word}?")
        for i, word in enumerate(WORDS)
    ]


def answer_from(prompt: str) -> str:
    """The fake generator: the codes of the first two documents it was shown."""
    codes = CODE.findall(prompt)[:2]
    return "The records give code " + " and ".join(codes) + "."


def staff_label(answer: str, required: list[str]) -> bool:
    """Correct when the answer gives the code of the first required document."""
    return "K" + required[0][-2:] in re.findall(r"K[0-9]{2}", answer)


# --- the gold: which documents each question needs --------------------------------


def _designed(retrieved: list[int]) -> tuple[list[int], list[int]]:
    """What the design ranks: the reranker's top 5, and the prompt's 3."""
    kept = sorted(retrieved, key=lambda index: -_priority(index))[:RERANK_TOP]
    return kept, kept[:PROMPT_TOP]


SCENARIOS = [0, 1, 2, 3, 4, 5, 6, 7, 0, 8, 0, 8] * 2
"""Per question, which losses its required documents are chosen to meet."""


def _required(number: int, scenario: int) -> list[int]:
    retrieved = keyword_lists()[number]
    kept, prompt = _designed(retrieved)
    kept_short, prompt_short = _designed(retrieved[:8])
    cut = [index for index in retrieved if index not in kept]
    never = [index for index in range(CLASSES * SLOTS) if index not in retrieved]
    if scenario == 8 and kept_short[3] not in kept:
        return [prompt_short[0], kept_short[3]]  # at rank 4 only with top 8
    return {
        1: [prompt[2], prompt[0]],  # all in the prompt, the first unused
        2: [prompt[0], kept[3]],  # a lucky answer: rank 4 cut by the prompt
        3: [kept[4], prompt[1]],  # rank 5 cut by the prompt
        4: [prompt[0], cut[0]],  # retrieved, dropped by the reranker
        5: [prompt[1], never[number % len(never)], prompt[0]],  # never retrieved
        6: [prompt[1], prompt[0], kept[3]],
        7: [prompt[0], prompt[2], cut[-1]],
    }.get(scenario, [prompt[0], prompt[1]])


def gold() -> list[dict[str, Any]]:
    """Each question's required documents, keyed by its id; `write_run` adds
    the staff label, which depends on the run's answer."""
    docs = corpus()
    return [
        {
            "key": question.id,
            "required": [docs[index].id for index in _required(number, scenario)],
        }
        for number, (question, scenario) in enumerate(
            zip(questions(), SCENARIOS, strict=True)
        )
    ]


def keyword_ranking(query: str, texts: list[str]) -> list[tuple[int, float]]:
    """The texts holding a word of the query, as (index, score), best first:
    the words found over the text's length, as a length-normalised score."""
    words = set(re.findall(r"\w\w+", query.lower()))
    scored = []
    for index, text in enumerate(texts):
        tokens = re.findall(r"\w\w+", text.lower())
        found = sum(token in words for token in tokens)
        if found:
            scored.append((index, found / len(tokens)))
    return sorted(scored, key=lambda pair: -pair[1])


def ids_in(prompt: str, candidates: list[tuple[str, str]]) -> list[str]:
    """The ids of the candidates (id, text) whose text the prompt holds, in
    the order the prompt holds them."""
    found = [(prompt.find(text), doc_id) for doc_id, text in candidates]
    return [doc_id for at, doc_id in sorted(found) if at >= 0]


# --- the pipelines ---------------------------------------------------------------


@component
class CodeEchoGenerator:
    """Haystack's fake generator (its instrumentor finds it by module path)."""

    @component.output_types(replies=list[str])
    def run(self, prompt: str) -> dict[str, list[str]]:
        return {"replies": [answer_from(prompt)]}


Outputs = dict[str, Any]
Runner = Callable[[list[Doc], int], Callable[[Question], Outputs]]
TEMPLATE_INTRO = "Answer from these records only."


def haystack_pipeline(docs: list[Doc], top_k: int) -> Callable[[Question], Outputs]:
    """InMemoryBM25Retriever, MetaFieldRanker, PromptBuilder, a fake generator."""
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=d.id, content=d.text, meta={"priority": d.priority}) for d in docs]
    )
    template = (
        TEMPLATE_INTRO + "\n{% for doc in documents[:3] %}- {{ doc.content }}\n"
        "{% endfor %}Question: {{ question }}"
    )
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=top_k))
    pipeline.add_component(
        "ranker", MetaFieldRanker(meta_field="priority", weight=1.0, top_k=RERANK_TOP)
    )
    pipeline.add_component("prompt_builder", PromptBuilder(template=template))
    pipeline.add_component("llm", CodeEchoGenerator())
    pipeline.connect("retriever.documents", "ranker.documents")
    pipeline.connect("ranker.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "llm.prompt")

    def ask(question: Question) -> Outputs:
        result = pipeline.run(
            {
                "retriever": {"query": question.text},
                "prompt_builder": {"question": question.text},
            },
            include_outputs_from={"retriever", "ranker", "prompt_builder"},
        )
        reranked = result["ranker"]["documents"]
        return _outputs(
            [d.id for d in result["retriever"]["documents"]],
            [(d.id, d.content) for d in reranked],
            result["prompt_builder"]["prompt"],
            result["llm"]["replies"][0],
        )

    return ask


dispatcher = get_dispatcher(__name__)


class KeywordNodeRetriever(LlamaRetriever):
    """LlamaIndex: the nodes holding a word of the query, best first."""

    def __init__(self, nodes: list[TextNode], top_k: int) -> None:
        super().__init__()
        self.nodes = nodes
        self.top_k = top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        texts = [node.get_content() for node in self.nodes]
        ranked = keyword_ranking(query_bundle.query_str, texts)[: self.top_k]
        return [NodeWithScore(node=self.nodes[i], score=score) for i, score in ranked]


class PriorityReranker(BaseNodePostprocessor):
    """LlamaIndex: the nodes of highest `priority`, with the reranking
    events LlamaIndex's own rerankers send, in a span of its own."""

    top_n: int = RERANK_TOP

    @dispatcher.span
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        dispatcher.event(
            ReRankStartEvent(
                query=query_bundle, nodes=nodes, top_n=self.top_n, model_name="priority"
            )
        )
        kept = sorted(nodes, key=lambda node: -node.node.metadata["priority"])
        dispatcher.event(ReRankEndEvent(nodes=kept[: self.top_n]))
        return kept[: self.top_n]


class CodeEchoLLM(CustomLLM):
    """LlamaIndex's fake LLM."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="code-echo")

    @llm_completion_callback()
    def complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return CompletionResponse(text=answer_from(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Iterator[CompletionResponse]:
        yield self.complete(prompt)


class CutPromptQueryEngine(CustomQueryEngine):
    """LlamaIndex: retrieve, rerank, and prompt with the first 3 nodes."""

    retriever: KeywordNodeRetriever
    reranker: PriorityReranker
    llm: CodeEchoLLM
    qa_prompt: PromptTemplate

    def custom_query(self, query_str: str) -> Response:
        retrieved = self.retriever.retrieve(query_str)
        kept = self.reranker.postprocess_nodes(retrieved, query_str=query_str)
        context = "\n".join(f"- {node.get_content()}" for node in kept[:PROMPT_TOP])
        prompt = self.qa_prompt.format(context_str=context, query_str=query_str)
        return Response(
            str(self.llm.complete(prompt)),
            source_nodes=kept,
            metadata={
                "retrieved": [node.node_id for node in retrieved],
                "prompt": prompt,
            },
        )


def llama_index_pipeline(docs: list[Doc], top_k: int) -> Callable[[Question], Outputs]:
    nodes = [
        TextNode(id_=d.id, text=d.text, metadata={"priority": d.priority}) for d in docs
    ]
    engine = CutPromptQueryEngine(
        retriever=KeywordNodeRetriever(nodes, top_k),
        reranker=PriorityReranker(),
        llm=CodeEchoLLM(),
        qa_prompt=PromptTemplate(
            TEMPLATE_INTRO + "\n{context_str}\nQuestion: {query_str}"
        ),
    )

    def ask(question: Question) -> Outputs:
        response = engine.query(question.text)
        metadata = response.metadata or {}
        kept = [(n.node_id, n.get_content()) for n in response.source_nodes]
        return _outputs(
            metadata["retrieved"], kept, metadata["prompt"], str(response.response)
        )

    return ask


class KeywordDocumentRetriever(LangChainRetriever):
    """LangChain: the documents holding a word of the query, best first."""

    documents: list[LangChainDocument]
    top_k: int

    def _get_relevant_documents(
        self, query: str, *, run_manager: Any
    ) -> list[LangChainDocument]:
        texts = [document.page_content for document in self.documents]
        ranked = keyword_ranking(query, texts)[: self.top_k]
        return [self.documents[index] for index, _ in ranked]


class CodeEchoChatModel(SimpleChatModel):
    """LangChain's fake chat model."""

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> str:
        return answer_from("\n".join(str(message.content) for message in messages))

    @property
    def _llm_type(self) -> str:
        return "code-echo"


def _by_priority(run: dict[str, Any]) -> list[LangChainDocument]:
    ranked = sorted(
        run["retrieved"], key=lambda document: -document.metadata["priority"]
    )
    return ranked[:RERANK_TOP]


def _first_three(run: dict[str, Any]) -> str:
    kept = run["reranked"][:PROMPT_TOP]
    return "\n".join(f"- [{d.id}] {d.page_content}" for d in kept)


def langchain_pipeline(docs: list[Doc], top_k: int) -> Callable[[Question], Outputs]:
    """LCEL: retriever, a reranking lambda, a prompt of the first 3, a fake model.
    The instrumentor records a document's metadata, not its id: the id is
    in the metadata too, as LangChain users keep it."""
    retriever = KeywordDocumentRetriever(
        documents=[
            LangChainDocument(
                id=d.id,
                page_content=d.text,
                metadata={"id": d.id, "priority": d.priority},
            )
            for d in docs
        ],
        top_k=top_k,
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", TEMPLATE_INTRO + "\n{context}"), ("human", "{question}")]
    )
    chain = (
        RunnablePassthrough.assign(retrieved=(lambda x: x["question"]) | retriever)
        .assign(reranked=RunnableLambda(_by_priority, name="rerank_by_priority"))
        .assign(context=RunnableLambda(_first_three, name="keep_first_three"))
        .assign(messages=prompt)
        .assign(
            answer=(lambda x: x["messages"]) | CodeEchoChatModel() | StrOutputParser()
        )
    )

    def ask(question: Question) -> Outputs:
        result = chain.invoke({"question": question.text})
        shown = "\n".join(str(m.content) for m in result["messages"].to_messages())
        kept = [(d.id, f"[{d.id}] {d.page_content}") for d in result["reranked"]]
        return _outputs(
            [d.id for d in result["retrieved"]], kept, shown, result["answer"]
        )

    return ask


def _outputs(
    retrieved: list[str], reranked: list[tuple[str, str]], prompt: str, answer: str
) -> Outputs:
    return {
        "retrieved": retrieved,
        "reranked": [doc_id for doc_id, _ in reranked],
        "prompt": ids_in(prompt, reranked),
        "answer": answer,
    }


# --- recording -------------------------------------------------------------------

FRAMEWORKS: dict[str, tuple[Runner, Callable[[], Any]]] = {
    "haystack": (haystack_pipeline, HaystackInstrumentor),
    "llama_index": (llama_index_pipeline, LlamaIndexInstrumentor),
    "langchain": (langchain_pipeline, LangChainInstrumentor),
}


def write_run(framework: str, configuration: str) -> None:
    """Every question through the instrumented pipeline, each in a session named
    by its id: the spans (gzipped as written), the outputs, the gold labelled."""
    build, instrumentor = FRAMEWORKS[framework]
    folder = OUT / framework / configuration
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    with gzip.open(folder / "spans.jsonl.gz", "wt", encoding="utf-8") as spans:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(stream=spans)))
        instrumented = instrumentor()
        instrumented.instrument(tracer_provider=provider)
        try:
            ask = build(corpus(), CONFIGURATIONS[configuration])
            for question in questions():
                with using_session(question.id):
                    outputs = ask(question)
                runs.append(
                    {"question_id": question.id, "question": question.text, **outputs}
                )
        finally:
            instrumented.uninstrument()
            provider.shutdown()
    labelled = [
        {**line, "correct": staff_label(run["answer"], line["required"])}
        for line, run in zip(gold(), runs, strict=True)
    ]
    for name, rows in (("outputs.jsonl", runs), ("gold.jsonl", labelled)):
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (folder / name).write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("frameworks", nargs="*", metavar="FRAMEWORK")
    chosen = parser.parse_args().frameworks or list(FRAMEWORKS)
    unknown = sorted(set(chosen) - set(FRAMEWORKS))
    if unknown:
        parser.error(
            f"unknown framework {unknown[0]!r}; one of {', '.join(FRAMEWORKS)}"
        )
    for framework in chosen:
        for configuration in CONFIGURATIONS:
            write_run(framework, configuration)
            print(f"wrote {OUT / framework / configuration}")


if __name__ == "__main__":
    main()
