"""Fixture-format files as Inspect samples.

A fixture file is JSON Lines, one case per line:
`{"id": str, "input": {...}, "expected": {...}, "reason": str}`, with
`expected` and `reason` optional. The packaged fixtures use it, and so can
your own recorded runs (`inspect eval tracegrade/stage_diagnosis
-T dataset=runs.jsonl`).

A malformed line stops everything before a sample runs, with a
`DatasetError` naming the file and the line: a run over a file with a
silently dropped line would report metrics over the wrong set of cases.
An `input` outside the evaluators' contract is not malformed, though: it
becomes a sample, and its score is the invalid-input error.

Each sample keeps the input's fields in its metadata under their own names
(`required`, `context`, `correct`, `source`, `answer`, ...), absent fields
staying absent, because absent and `null` mean different things to the
evaluators. `expected` and `reason` are kept in metadata too, so `inspect
view` shows them beside the score.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from inspect_ai.dataset import MemoryDataset, Sample

from .core import canonical_json

if TYPE_CHECKING:
    # `importlib.resources.abc` is new in Python 3.11; only the type is needed.
    from importlib.resources.abc import Traversable

FIXTURE_FIELDS = ("id", "input", "expected", "reason")


class DatasetError(ValueError):
    """A fixture file or line that cannot become samples, named by file and line.

    `line` is None when the problem is the file as a whole.
    """

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class FixtureCase:
    """One line of a fixture file, checked."""

    id: str
    input: dict[str, Any]
    expected: dict[str, Any] | None
    reason: str | None
    line: int


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def strict_json_loads(text: str) -> Any:
    """`json.loads` as `JSON.parse` reads, and without last-key-wins.

    NaN and Infinity are not JSON, so the Node evaluators could never see
    them; a repeated key would silently keep its last value. Both raise
    `ValueError`, and so does nesting too deep for Python's parser, which
    would otherwise escape as a `RecursionError` and crash the whole run.
    """
    try:
        return json.loads(
            text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant
        )
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None


def packaged_fixture(name: str) -> Traversable:
    """A fixture file shipped in `tracegrade/data`."""
    return files("tracegrade") / "data" / name


def read_fixture_cases(source: str | Path | Traversable) -> list[FixtureCase]:
    """Read and check every line of a fixture file; raises `DatasetError`."""
    return _read_lines(source, _parse_case, "case", "sample ids")


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=_Identified)


def _read_lines(
    source: str | Path | Traversable,
    parse: Callable[[str, int, str], Item],
    what: str,
    ids: str,
) -> list[Item]:
    """Parse each non-blank line, refusing a repeated id or an empty file."""
    path = str(source)
    try:
        text = (Path(source) if isinstance(source, str) else source).read_text(
            encoding="utf-8"
        )
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(path, None, f"cannot read the file ({error})") from error

    items: list[Item] = []
    first_line: dict[str, int] = {}
    # Newlines only: `splitlines` would also split inside a JSON string
    # holding U+2028, which JSON allows unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        item = parse(path, number, line)
        if item.id in first_line:
            raise DatasetError(
                path,
                number,
                f"id {item.id!r} is already used on line {first_line[item.id]}; "
                f"{ids} must be unique",
            )
        first_line[item.id] = number
        items.append(item)
    if not items:
        raise DatasetError(path, None, f"the file holds no {what}s")
    return items


def _json_object_line(
    path: str, number: int, line: str, fields: tuple[str, ...], what: str
) -> tuple[dict[str, Any], str]:
    """The line's object and its id, or a `DatasetError` naming the line."""

    def fail(problem: str) -> NoReturn:
        raise DatasetError(path, number, problem)

    try:
        value = strict_json_loads(line)
    except ValueError as error:
        fail(f"not valid JSON ({error})")
    if not isinstance(value, dict):
        fail(f"a {what} must be a JSON object, got {_quote(value)}")
    unknown = [key for key in value if key not in fields]
    if unknown:
        fail(
            f"unknown field {unknown[0]!r}; a {what} has only "
            + ", ".join(repr(key) for key in fields)
        )
    if "id" not in value:
        fail("no 'id' field")
    item_id = value["id"]
    if not isinstance(item_id, str) or item_id == "":
        fail(f"'id' must be a non-empty string, got {_quote(item_id)}")
    return value, item_id


def _parse_case(path: str, number: int, line: str) -> FixtureCase:
    def fail(problem: str) -> NoReturn:
        raise DatasetError(path, number, problem)

    case, case_id = _json_object_line(path, number, line, FIXTURE_FIELDS, "case")
    if "input" not in case:
        fail(f"case {case_id!r} has no 'input' field")
    record = case["input"]
    if not isinstance(record, dict):
        fail(f"'input' of case {case_id!r} must be an object, got {_quote(record)}")
    collision = [key for key in ("expected", "reason") if key in record]
    if collision:
        fail(
            f"'input' of case {case_id!r} has a field {collision[0]!r}, which would "
            "clash with the case's own field of that name in the sample metadata"
        )
    expected = case.get("expected")
    if "expected" in case and not isinstance(expected, dict):
        fail(
            f"'expected' of case {case_id!r} must be an object, got {_quote(expected)}"
        )
    reason = case.get("reason")
    if "reason" in case and not isinstance(reason, str):
        fail(f"'reason' of case {case_id!r} must be a string, got {_quote(reason)}")
    return FixtureCase(
        id=case_id, input=record, expected=expected, reason=reason, line=number
    )


def _quote(value: Any, limit: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def case_sample(case: FixtureCase, *, target_field: str | None = None) -> Sample:
    """The sample for one case; `target_field` becomes the target as JSON."""
    metadata: dict[str, Any] = dict(case.input)
    if case.expected is not None:
        metadata["expected"] = case.expected
    if case.reason is not None:
        metadata["reason"] = case.reason
    target = ""
    if target_field is not None and target_field in case.input:
        target = canonical_json(case.input[target_field])
    return Sample(
        id=case.id,
        input=canonical_json(case.input),
        target=target,
        metadata=metadata,
    )


def stage_diagnosis_dataset(path: str | Path | None = None) -> MemoryDataset:
    """Recorded RAG runs: `input` holds `required`, `context`, `correct`.

    With no path, the packaged `stage_diagnosis.jsonl`. An `answer` text in
    the input is replayed as the run's output, for display.
    """
    source = path if path is not None else packaged_fixture("stage_diagnosis.jsonl")
    cases = read_fixture_cases(source)
    return MemoryDataset(
        [case_sample(case) for case in cases],
        name="stage_diagnosis",
        location=str(source),
    )


def ordered_extraction_dataset(path: str | Path | None = None) -> MemoryDataset:
    """Recorded extractions: `input` holds `source` and the recorded `answer`.

    With no path, the packaged `ordered_extraction.jsonl`. The source is
    also the sample's target, as JSON, for display and for scorers that
    read the source from the target.
    """
    source = path if path is not None else packaged_fixture("ordered_extraction.jsonl")
    cases = read_fixture_cases(source)
    return MemoryDataset(
        [case_sample(case, target_field="source") for case in cases],
        name="ordered_extraction",
        location=str(source),
    )


# --- source documents for the live ordered-extraction task ---------------------

DOCUMENT_FIELDS = ("id", "kind", "text", "source", "target")


@dataclass(frozen=True)
class SourceDocument:
    """One line of a documents file, checked.

    `source` is the answer key: the document's IDs in the order the text
    gives them. `target` names what to extract ("container numbers").
    """

    id: str
    text: str
    source: list[str]
    target: str
    kind: str | None
    line: int


def read_source_documents(source: str | Path | Traversable) -> list[SourceDocument]:
    """Read and check every line of a documents file; raises `DatasetError`.

    A documents file is JSON Lines, one
    `{"id", "text", "source", "target", "kind"?}` per line, like the
    packaged `extraction_documents.jsonl`. Unlike a fixture's recorded
    input, a document's `source` must be within the contract (an array of
    unique strings): it is the answer key of a live run, and a broken key
    would spend a model call on a sample that can only be a data error.
    """
    return _read_lines(source, _parse_document, "document", "document ids")


def _parse_document(path: str, number: int, line: str) -> SourceDocument:
    def fail(problem: str) -> NoReturn:
        raise DatasetError(path, number, problem)

    document, document_id = _json_object_line(
        path, number, line, DOCUMENT_FIELDS, "document"
    )
    for key in ("text", "target"):
        if key not in document:
            fail(f"document {document_id!r} has no {key!r} field")
        value = document[key]
        if not isinstance(value, str) or not value.strip():
            fail(
                f"{key!r} of document {document_id!r} must be a non-blank string, "
                f"got {_quote(value)}"
            )
    kind = document.get("kind")
    if "kind" in document and not isinstance(kind, str):
        fail(f"'kind' of document {document_id!r} must be a string, got {_quote(kind)}")
    if "source" not in document:
        fail(f"document {document_id!r} has no 'source' field")
    ids = document["source"]
    if not isinstance(ids, list):
        fail(
            f"'source' of document {document_id!r} must be an array of ID strings, "
            f"got {_quote(ids)}"
        )
    seen: set[str] = set()
    for index, item in enumerate(ids):
        if not isinstance(item, str):
            fail(
                f"'source[{index}]' of document {document_id!r} must be a string, "
                f"got {_quote(item)}"
            )
        if item in seen:
            fail(
                f"'source[{index}]' of document {document_id!r} repeats "
                f"{_quote(item)}; the IDs of a source must be unique"
            )
        seen.add(item)
    return SourceDocument(
        id=document_id,
        text=document["text"],
        source=ids,
        target=document["target"],
        kind=kind,
        line=number,
    )
