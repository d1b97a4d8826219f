"""The samples of a bulk log, built from Inspect's own shapes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessageUser, ModelOutput
from inspect_ai.scorer import Score
from pydantic import BaseModel

from .._inspect_internals import iso_now
from ..tasks.replay import REPLAY_MODEL

# The model a replayed run is logged under, as `inspect eval` logs it.
MODEL = "none/none"

# Shortuuid's alphabet and length, as Inspect's ids. Unique, not secret,
# ids, cut from OS random bytes faster than `shortuuid.uuid()`: each byte
# below 4 x 57 stands for a character (the rest dropped: all equally likely).
_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ID_LENGTH = 22
_ID_BYTE_LIMIT = 4 * len(_ID_ALPHABET)
_ID_TABLE = bytes(
    ord(_ID_ALPHABET[byte % len(_ID_ALPHABET)]) if byte < _ID_BYTE_LIMIT else 0
    for byte in range(256)
)
_ID_DROPPED = bytes(range(_ID_BYTE_LIMIT, 256))


def _id_stream() -> Iterator[str]:
    while True:
        text = os.urandom(8192).translate(_ID_TABLE, _ID_DROPPED).decode("ascii")
        for start in range(0, len(text) - _ID_LENGTH + 1, _ID_LENGTH):
            yield text[start : start + _ID_LENGTH]


_ids = _id_stream()


def uuid() -> str:
    """A fresh 22-character id in Inspect's shortuuid form."""
    return next(_ids)


class SampleParts(NamedTuple):
    """What a sample has of its own; `SampleTemplates.sample` adds the rest."""

    id: str
    input: str
    target: str | list[str]
    metadata: dict[str, Any] | None
    answer: str | None
    scores: dict[str, Score]
    store: dict[str, Any]
    started_at: str
    completed_at: str
    seconds: float


@dataclass(frozen=True)
class SampleTemplates:
    """Inspect's own serialised shapes, made once, filled in per sample."""

    sample: dict[str, Any]
    user_message: dict[str, Any]
    no_output: dict[str, Any]
    replay_output: dict[str, Any]

    @classmethod
    def make(cls) -> SampleTemplates:
        empty = EvalSample(
            id="",
            epoch=1,
            input="",
            target="",
            output=ModelOutput(model=MODEL),
            scores={},
            store={},
            started_at=iso_now(),
            completed_at=iso_now(),
            total_time=0.0,
            working_time=0.0,
            uuid="",
            error_retries=[],
            turn_count=0,
        )
        return cls(
            *(_dump(empty), _dump(ChatMessageUser(content="", source="input"))),
            _dump(ModelOutput(model=MODEL)),
            _dump(ModelOutput.from_content(model=REPLAY_MODEL, content="")),
        )

    def build(self, parts: SampleParts) -> dict[str, Any]:
        """The sample as `inspect eval` of the replay task logs it, JSON-safe
        but for its scores."""
        messages: list[dict[str, Any]] = [
            {**self.user_message, "id": uuid(), "content": parts.input}
        ]
        answer = parts.answer
        output = self.no_output
        if answer is not None:
            (choice,) = self.replay_output["choices"]
            message = {**choice["message"], "id": uuid(), "content": answer}
            messages.append(message)
            output = {
                **self.replay_output,
                "choices": [{**choice, "message": message}],
                "completion": answer,
            }
        seconds = round(parts.seconds, 3)
        return {
            **self.sample,
            "id": parts.id,
            "input": parts.input,
            "target": parts.target,
            "messages": messages,
            "output": output,
            "scores": parts.scores,
            "metadata": parts.metadata,
            "store": parts.store,
            "started_at": parts.started_at,
            "completed_at": parts.completed_at,
            "total_time": seconds,
            "working_time": seconds,
            "uuid": uuid(),
        }


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)
