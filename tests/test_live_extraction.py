"""The live `tracegrade/ordered_extraction` task, offline on mockllm."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    get_model,
)

from tests.support import write_lines
from tests.test_tasks import evaluated
from tracegrade.datasets import DatasetError, packaged_fixture, read_source_documents
from tracegrade.scorers.outcome import error_kind
from tracegrade.tasks.live import (
    DEFAULT_PROMPT,
    RESPONSE_SCHEMA,
    PromptError,
    ordered_extraction,
)

DOCUMENTS = read_source_documents(packaged_fixture("extraction_documents.jsonl"))
BY_ID = {document.id: document for document in DOCUMENTS}


# The config each document's prompt was sent with, as a provider is given it.
CONFIGS: dict[str, GenerateConfig] = {}


def run_live(
    replies: dict[str, str],
    log_dir: Path,
    texts: dict[str, str] | None = None,
    **task_args: Any,
) -> EvalLog:
    """The task on mockllm answering document `id`'s prompt with `replies[id]`;
    a preset `usage`, as without one mockllm downloads a tokenizer."""
    texts = texts or {document.id: document.text for document in DOCUMENTS}

    def reply(
        messages: list[ChatMessage], tools: Any, choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        (document_id,) = [i for i in replies if texts[i] in messages[-1].text]
        CONFIGS[document_id] = config
        output = ModelOutput.from_content(
            model="mockllm/model", content=replies[document_id]
        )
        output.usage = ModelUsage(input_tokens=500, output_tokens=50, total_tokens=550)
        return output

    return evaluated(
        ordered_extraction(**task_args),
        log_dir,
        model=get_model("mockllm/model", custom_outputs=reply),
        sample_id=list(replies),
    )


def source(document_id: str) -> list[str]:
    return list(BY_ID[document_id].source)


def pick(kind: str, n: int) -> str:
    return [d.id for d in DOCUMENTS if d.kind == kind][n]


# One case per way an answer can go; each runs on its own document.
CASES: dict[str, tuple[str, Callable[[list[str]], str], Any]] = {
    "right": (pick("shipping_manifest", 0), json.dumps, ((True, True), "json", None)),
    "alphabetised": (
        pick("citation_list", 1),
        lambda ids: json.dumps(sorted(ids)),
        ((True, False), "json", None),
    ),
    "repeated": (
        pick("invoice_register", 0),
        lambda ids: json.dumps([*ids, ids[0]]),
        ((False, False), "json", "duplicate-answer-id"),
    ),
    # The response schema's object, read by its key.
    "structured": (
        pick("shipping_manifest", 1),
        lambda ids: json.dumps({"ids": ids}),
        ((True, True), "structured", None),
    ),
    "garbage": (
        pick("citation_list", 2),
        lambda ids: "}}{{ ]] lorem ipsum ?? <<>>",
        ((False, False), None, "unreadable-answer"),
    ),
}


@pytest.fixture(scope="module")
def live_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    replies = {
        document_id: make(source(document_id))
        for document_id, make, _ in CASES.values()
    }
    return run_live(replies, tmp_path_factory.mktemp("live"))


@pytest.mark.parametrize("case", list(CASES))
def test_each_answer_is_graded_per_sample(live_log: EvalLog, case: str) -> None:
    document_id, make, ((membership, order), read_as, reason) = CASES[case]
    (sample,) = [s for s in live_log.samples or [] if s.id == document_id]
    document = BY_ID[document_id]
    fields = ("source", "kind", "target")
    assert sample.metadata == {field: getattr(document, field) for field in fields}
    prompt = DEFAULT_PROMPT.replace("{target}", document.target)
    assert sample.input == prompt.replace("{document}", document.text)
    assert json.loads(str(sample.target)) == document.source
    # Structured output is asked for by default.
    assert CONFIGS[document_id].response_schema == RESPONSE_SCHEMA
    assert sample.scores is not None
    score = sample.scores["ordered_extraction"]
    metadata = score.metadata or {}
    assert score.value == {"membership": membership, "order": order}
    assert error_kind(score) == reason
    assert metadata["read_as"] == read_as
    assert metadata["read_from"] == {"source": 'metadata["source"]', "answer": "output"}
    assert metadata["record"]["source"] == source(document_id)
    reply = make(source(document_id))
    if read_as is None:
        assert metadata["result"] is None
        assert score.answer == reply
        assert metadata["error"]["side"] == "answer"
    else:
        # What was read is the answer, exactly as the model wrote the IDs.
        read = json.loads(score.answer or "")
        assert metadata["record"]["answer"] == read
        if reason is None:
            assert metadata["result"] == {"membership": membership, "order": order}
        else:
            assert metadata["result"] == {"error": "duplicate-id"}


def test_a_prompt_without_the_document_fails_when_the_task_is_built(
    tmp_path: Path,
) -> None:
    for prompt in ("List the IDs in order.", "List the IDs in order. " * 20):  # no name
        with pytest.raises(PromptError, match=r"has no {document} placeholder and"):
            ordered_extraction(prompt=prompt)
    path = tmp_path / "prompt.txt"
    path.write_text("List the {target}.")
    with pytest.raises(PromptError, match=f"prompt file {path} has no {{document}}"):
        ordered_extraction(prompt=str(path))


GOOD = dict(id="d1", text="{target}: B2, A1", source=["B2", "A1"], target="codes")


def test_your_own_documents_and_prompt_file_become_the_samples(tmp_path: Path) -> None:
    second = {**GOOD, "id": "d2", "kind": "memo", "source": ["A1", "B2"]}
    dataset = write_lines(tmp_path / "docs.jsonl", [GOOD, second])
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{target}: {document}\n", encoding="utf-8")
    task_args = {"dataset": dataset, "prompt": str(prompt)}
    task = ordered_extraction(**task_args)
    assert [sample.id for sample in task.dataset] == ["d1", "d2"]
    # Filled once: a placeholder in the document stays as written.
    assert task.dataset[0].input == "codes: {target}: B2, A1\n"
    template = ordered_extraction(dataset=dataset, prompt="{target} of {document} {x}")
    assert template.dataset[0].input == "codes of {target}: B2, A1 {x}"
    assert task.dataset[1].metadata == {
        "source": ["A1", "B2"],
        "kind": "memo",
        "target": "codes",
    }
    # Without structured output, the schema's object is a value, not a list.
    log = run_live(
        {"d1": '{"ids": ["B2", "A1"]}'},
        tmp_path / "logs",
        texts={"d1": GOOD["text"]},
        **task_args,
        structured=False,
    )
    (sample,) = log.samples or []
    score = (sample.scores or {})["ordered_extraction"]
    assert score.value == {"membership": False, "order": False}
    assert (score.metadata or {})["read_as"] is None
    assert "is no list of string IDs" in (score.explanation or "")
    assert CONFIGS["d1"].response_schema is None


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ([GOOD, {**GOOD, "id": "d1"}], 'line 2: id "d1" is already used on line 1'),
        (
            [GOOD, {**GOOD, "id": "d2", "source": ["A1", "A1"]}],
            "line 2: .*'source\\[1\\]' .*repeats",
        ),
        (["", "  "], "holds no documents"),
    ],
)
def test_a_malformed_or_empty_documents_file_is_named(
    tmp_path: Path, lines: list[Any], problem: str
) -> None:
    dataset = write_lines(tmp_path / "docs.jsonl", lines)
    with pytest.raises(DatasetError, match=problem) as raised:
        ordered_extraction(dataset=dataset)
    assert str(raised.value).startswith(dataset)
