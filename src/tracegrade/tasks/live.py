"""`tracegrade/ordered_extraction`: a live model lists each document's IDs in order."""

from __future__ import annotations

import os.path
import re
from pathlib import Path
from typing import NoReturn

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, ResponseSchema
from inspect_ai.solver import generate
from inspect_ai.util import JSONSchema

from ..core import canonical_json
from ..core.errors import quote
from ..datasets import SourceDocument, packaged_fixture, read_source_documents
from ..scorers import ordered_extraction_scorer
from ..scorers.arguments import checked_task

# What to extract, the two ways models most often spoil an ordered list
# (sorting it, repeating an item), and an `ANSWER:` line the scorer reads.
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

STRUCTURED_KEY = "ids"

# An object, as OpenAI's structured outputs take only an object at the top;
# uniqueness in words, as strict modes refuse `uniqueItems`.
_IDS = JSONSchema(
    type="array",
    items=JSONSchema(type="string"),
    description="Unique strings, each exactly as the document writes it, in the "
    "order they first appear; never sorted.",
)
RESPONSE_SCHEMA = ResponseSchema(
    name="extracted_ids",
    description="The IDs the document names, each once, in source order.",
    json_schema=JSONSchema(
        type="object",
        properties={STRUCTURED_KEY: _IDS},
        required=[STRUCTURED_KEY],
        additionalProperties=False,
    ),
    strict=True,
)

_PLACEHOLDER = re.compile(r"\{(document|target)\}")


class PromptError(ValueError):
    """A template without `{document}`: every model would get the same question."""


def prompt_template(prompt: str | None) -> str:
    """The template itself when it holds `{document}`, else the file it must
    name, so a mistyped template is never taken for a path."""
    if prompt is None or "{document}" in prompt:
        return prompt or DEFAULT_PROMPT
    try:
        template = Path(prompt).read_text(encoding="utf-8")
    except (OSError, ValueError) as error:  # ValueError: a NUL, so no path
        # The path as read_text took it; False for no file and for no path.
        if not os.path.isfile(Path(prompt)):
            raise PromptError(
                f"the prompt {quote(prompt, 60)} has no {{document}} placeholder "
                "and names no existing file; a template must say where the "
                "document goes with {document} (and may name what to extract "
                "with {target})"
            ) from None
        raise PromptError(f"cannot read prompt file {prompt} ({error})") from error
    if "{document}" not in template:
        raise PromptError(
            f"prompt file {prompt} has no {{document}} placeholder, so the model "
            "would never see the document; write {document} where the text goes "
            "(and {target}, optionally, for what to extract)"
        )
    return template


def _sample(document: SourceDocument, template: str) -> Sample:
    """The template filled in one pass, so a document's own "{target}" stays."""
    values = {"document": document.text, "target": document.target}
    kind = {"kind": document.kind} if document.kind is not None else {}
    return Sample(
        id=document.id,
        input=_PLACEHOLDER.sub(lambda found: values[found.group(1)], template),
        target=canonical_json(document.source),
        metadata={"source": document.source, **kind, "target": document.target},
    )


@task
def ordered_extraction(
    dataset: str | None = None,
    prompt: str | None = None,
    structured: bool = True,
    **kwargs: NoReturn,
) -> Task:
    """Ask a model for each document's IDs in source order; grade membership
    and order separately. The arguments are in docs/evaluate-your-own-model.md."""
    name = "tracegrade/ordered_extraction"
    with checked_task(name, ordered_extraction, kwargs):
        template = prompt_template(prompt)
        fixture = packaged_fixture("extraction_documents.jsonl")
        source = fixture if dataset is None else dataset
        samples = [_sample(doc, template) for doc in read_source_documents(source)]
        return Task(
            dataset=MemoryDataset(
                samples, name="extraction_documents", location=str(source)
            ),
            solver=generate(),
            scorer=ordered_extraction_scorer(
                structured_key=STRUCTURED_KEY if structured else None
            ),
            config=GenerateConfig(
                response_schema=RESPONSE_SCHEMA if structured else None
            ),
            epochs=Epochs(1, "mean"),
        )
