"""`tracegrade/ordered_extraction`: a live model lists each document's IDs,
in the order the text gives them, from the packaged documents
(`scripts/make_extraction_documents.py`) or `-T dataset=PATH`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NoReturn

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, ResponseSchema
from inspect_ai.solver import generate
from inspect_ai.util import JSONSchema

from ..core import canonical_json
from ..datasets import SourceDocument, packaged_fixture, read_source_documents
from ..scorers import ordered_extraction_scorer
from ..scorers.arguments import TaskArgumentError, refuse_unknown_arguments
from .building import said_in_any_display

DEFAULT_PROMPT = """\
List the {target} in the document below.

- Write each one exactly as the document writes it.
- List each one once.
- Keep the order in which they appear in the document; do not sort them.

End your reply with one line that gives them as a JSON array of strings:
ANSWER: ["...", "..."]

<document>
{document}
</document>
"""
"""The prompt unless `-T prompt=...` replaces it: what to extract, the two
ways models most often spoil an ordered list (tidying it into sorted order,
repeating an item), and an `ANSWER:` line, whose list the scorer reads
whatever else the reply says (docs/answer-formats.md)."""

STRUCTURED_KEY = "ids"
"""The key the structured output's object holds the list under."""

RESPONSE_SCHEMA = ResponseSchema(
    name="extracted_ids",
    description="The IDs the document names, each once, in source order.",
    json_schema=JSONSchema(
        type="object",
        properties={
            STRUCTURED_KEY: JSONSchema(
                type="array",
                items=JSONSchema(type="string"),
                description=(
                    "Unique strings, each exactly as the document writes it, "
                    "in the order they first appear; never sorted."
                ),
            )
        },
        required=[STRUCTURED_KEY],
        additionalProperties=False,
    ),
    strict=True,
)
"""The structured output the task asks for: an object holding the list.

An object, not a bare array, because OpenAI's structured outputs take only
an object at the top. Uniqueness is asked for in words, not by
`uniqueItems`: providers' strict modes refuse that keyword, and a repeated
ID is the model's failure to grade (`duplicate-answer-id`), not one to
prevent while decoding."""

DOCUMENTS_FILE = "extraction_documents.jsonl"

_PLACEHOLDER = re.compile(r"\{(document|target)\}")


class PromptError(ValueError):
    """A prompt template without `{document}`, refused when the task is built:
    it would send every model the same empty question."""


def prompt_template(prompt: str | None) -> str:
    """The template `prompt` gives: itself when it holds `{document}`, else
    the file it must name, so a mistyped template is never taken for a path."""
    if prompt is None:
        return DEFAULT_PROMPT
    if "{document}" in prompt:
        return prompt
    if not _names_a_file(prompt):
        raise PromptError(
            f"the prompt {_shown(prompt)} has no {{document}} placeholder and "
            "names no existing file; a template must say where the document "
            "goes with {document} (and may name what to extract with {target})"
        )
    try:
        template = Path(prompt).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PromptError(f"cannot read prompt file {prompt} ({error})") from error
    if "{document}" not in template:
        raise PromptError(
            f"prompt file {prompt} has no {{document}} placeholder, so the model "
            "would never see the document; write {document} where the text goes "
            "(and {target}, optionally, for what to extract)"
        )
    return template


def _names_a_file(prompt: str) -> bool:
    try:
        return Path(prompt).is_file()
    except (OSError, ValueError):
        # Too long for a file name, or a NUL character: not a path.
        return False


def _shown(prompt: str, limit: int = 60) -> str:
    text = json.dumps(prompt)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_prompt(template: str, document: SourceDocument) -> str:
    """The template with `{document}` and `{target}` filled, in one pass,
    so a document that itself contains "{target}" is left as written."""
    values = {"document": document.text, "target": document.target}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def document_sample(document: SourceDocument, template: str) -> Sample:
    """The sample for one document: the filled prompt, the source as target."""
    metadata: dict[str, object] = {"source": document.source}
    if document.kind is not None:
        metadata["kind"] = document.kind
    metadata["target"] = document.target
    return Sample(
        id=document.id,
        input=render_prompt(template, document),
        target=canonical_json(document.source),
        metadata=metadata,
    )


def extraction_documents_dataset(
    path: str | Path | None = None, prompt: str | None = None
) -> MemoryDataset:
    """One sample per document, prompted with `prompt` (see `prompt_template`);
    a bad line or prompt is refused before any sample runs."""
    template = prompt_template(prompt)
    source = path if path is not None else packaged_fixture(DOCUMENTS_FILE)
    documents = read_source_documents(source)
    return MemoryDataset(
        [document_sample(document, template) for document in documents],
        name="extraction_documents",
        location=str(source),
    )


@task
def ordered_extraction(
    dataset: str | None = None,
    prompt: str | None = None,
    structured: bool = True,
    **kwargs: NoReturn,
) -> Task:
    """Ask a model for each document's IDs in source order; grade membership
    and order separately. Structured output where the provider supports it,
    else an `ANSWER:` line, read as docs/answer-formats.md says.

    Args:
        dataset: A JSON Lines file of your own documents, one
            `{"id", "text", "source", "target", "kind"?}` per line, where
            `source` lists the IDs in the order the text gives them and
            `target` names them ("invoice numbers"); by default the
            packaged documents.
        prompt: A prompt template, or the path of a file holding one. It
            must contain `{document}` and may contain `{target}`; by
            default `DEFAULT_PROMPT`.
        structured: Ask for structured output (`RESPONSE_SCHEMA`); false
            (`-T structured=false`) leaves the model's reply free, for
            comparing the two: structured output can change how well a
            model does a task, as Inspect's documentation warns.
        **kwargs: Refused: an argument the task does not take (a typo).
    """
    with said_in_any_display():
        refuse_unknown_arguments(
            "tracegrade/ordered_extraction",
            ordered_extraction,
            kwargs,
            TaskArgumentError,
        )
        return Task(
            dataset=extraction_documents_dataset(dataset, prompt),
            solver=generate(),
            scorer=ordered_extraction_scorer(
                structured_key=STRUCTURED_KEY if structured else None
            ),
            config=GenerateConfig(
                response_schema=RESPONSE_SCHEMA if structured else None
            ),
            epochs=Epochs(1, "mean"),
        )


__all__ = [
    "DEFAULT_PROMPT",
    "RESPONSE_SCHEMA",
    "STRUCTURED_KEY",
    "PromptError",
    "document_sample",
    "extraction_documents_dataset",
    "ordered_extraction",
    "prompt_template",
    "render_prompt",
]
