"""Fixture files as Inspect samples; a malformed line stops the run, named."""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from inspect_ai.dataset import MemoryDataset, Sample

from ._inspect_internals import PrerequisiteError
from .core import canonical_json
from .core.errors import quote
from .lines import (
    NOT_AN_OBJECT,
    UNSUPPORTED_JSON,
    LineError,
    has_lone_surrogate,
    is_blank,
    json_object,
    read_lines,
)

if TYPE_CHECKING:  # new in Python 3.11; only the type is needed
    from importlib.resources.abc import Traversable

    Source = str | Path | Traversable

NOT_A_FIXTURE_LINE = "not-a-fixture-line"
DUPLICATE_SAMPLE_ID = "duplicate-sample-id"
DOCUMENT_FIELDS = ("id", "kind", "text", "source", "target")


class DatasetError(LineError, ValueError, PrerequisiteError):
    """A fixture file or line refused, its `kind`, and its `sample_id` if readable."""

    def __init__(self, *args: Any, sample_id: str | None = None, **kwargs: Any) -> None:
        # JSON no log can hold, or no object, is a line of the wrong shape.
        if kwargs.get("kind") in (UNSUPPORTED_JSON, NOT_AN_OBJECT):
            kwargs["kind"] = NOT_A_FIXTURE_LINE
        self.sample_id = sample_id
        super().__init__(*args, **kwargs)


class FixtureCase(NamedTuple):
    id: str
    input: dict[str, Any]
    expected: dict[str, Any] | None
    reason: str | None
    line: int


class SourceDocument(NamedTuple):
    """A documents line: `source` is the answer key, `target` what to extract."""

    id: str
    text: str
    source: list[str]
    target: str
    kind: str | None
    line: int


def packaged_fixture(name: str) -> Traversable:
    """A fixture file shipped in `tracegrade/data`."""
    return files("tracegrade") / "data" / name


def read_fixture_cases(source: Source) -> list[FixtureCase]:
    """Read and check every line of a fixture file; raises `DatasetError`."""
    return _read_items(source, parse_case_line, "case", "sample ids")


def read_source_documents(source: Source) -> list[SourceDocument]:
    """Every documents line, checked: a broken answer key would waste a model call."""
    return _read_items(source, _parse_document, "document", "document ids")


def _read_items(
    source: Source, parse: Callable[[str, int, str], Any], what: str, ids: str
) -> list[Any]:
    path = str(source)
    items: dict[str, Any] = {}
    try:
        for raw in read_lines(source):
            if is_blank(raw.text):
                continue
            item = parse(path, raw.number, raw.text)
            if (first := items.get(item.id)) is not None:
                problem = f"id {quote(item.id)} is already used on line {first.line}"
                raise DatasetError(
                    *(path, raw.number, f"{problem}; {ids} must be unique"),
                    kind=DUPLICATE_SAMPLE_ID,
                    sample_id=item.id,
                )
            items[item.id] = item
    except OSError as error:
        problem = f"cannot read the file ({error.strerror or error})"
        raise DatasetError(path, None, problem) from None
    if not items:
        raise DatasetError(path, None, f"the file holds no {what}s")
    return list(items.values())


def _line_object(
    path: str, number: int, line: str, fields: tuple[str, ...], what: str
) -> tuple[str, Callable[..., Any], Callable[[str], NoReturn], str]:
    """The line's id, a reader of its fields, a refusal, and the item's name."""
    value = json_object(path, number, line, what, DatasetError)
    item_id = value.get("id")
    readable = isinstance(item_id, str) and item_id and not has_lone_surrogate(item_id)

    def fail(problem: str) -> NoReturn:
        sample_id = item_id if readable else None
        raise DatasetError(
            path, number, problem, kind=NOT_A_FIXTURE_LINE, sample_id=sample_id
        )

    if unknown := [key for key in value if key not in fields]:
        quoted = ", ".join(map(quote, fields))
        fail(f"unknown field {quote(unknown[0])}; a {what} has only {quoted}")
    if "id" not in value:
        fail("no 'id' field")
    if not isinstance(item_id, str) or item_id == "":
        fail(f"'id' must be a non-empty string, got {quote(item_id, 80)}")
    if has_lone_surrogate(item_id):
        fail(
            f"'id' {quote(item_id, 80)} holds a lone surrogate, which no log "
            "can hold; sample ids must be valid Unicode text"
        )
    name = f"{what} {quote(item_id)}"

    def field(key: str, kind: type, must_be: str, required: bool = True) -> Any:
        """`value[key]`, a `kind` (a required string not blank); None if absent."""
        if key not in value:
            if required:
                fail(f"{name} has no {key!r} field")
            return None
        found = value[key]
        blank = required and isinstance(found, str) and not found.strip()
        if not isinstance(found, kind) or blank:
            fail(f"{key!r} of {name} must be {must_be}, got {quote(found, 80)}")
        return found

    return item_id, field, fail, name


def parse_case_line(path: str, number: int, line: str) -> FixtureCase:
    """A non-blank fixture line as a case, or a `DatasetError` (for every reader)."""
    fields = FixtureCase._fields[:4]
    case_id, field, fail, name = _line_object(path, number, line, fields, "case")
    record = field("input", dict, "an object")
    if collision := [key for key in ("expected", "reason") if key in record]:
        fail(
            f"'input' of {name} has a field {quote(collision[0])}, which would "
            "clash with the case's own field of that name in the sample metadata"
        )
    expected = field("expected", dict, "an object", False)
    reason = field("reason", str, "a string", False)
    return FixtureCase(case_id, record, expected, reason, number)


def _parse_document(path: str, number: int, line: str) -> SourceDocument:
    document_id, field, fail, name = _line_object(
        path, number, line, DOCUMENT_FIELDS, "document"
    )
    text = field("text", str, "a non-blank string")
    target = field("target", str, "a non-blank string")
    kind = field("kind", str, "a string", False)
    ids = field("source", list, "an array of ID strings")
    seen: set[str] = set()
    for index, item in enumerate(ids):
        where = f"'source[{index}]' of {name}"
        if not isinstance(item, str):
            fail(f"{where} must be a string, got {quote(item, 80)}")
        if item in seen:
            unique = "the IDs of a source must be unique"
            fail(f"{where} repeats {quote(item, 80)}; {unique}")
        seen.add(item)
    return SourceDocument(document_id, text, ids, target, kind, number)


def case_sample_fields(
    case: FixtureCase, *, target_field: str | None = None
) -> tuple[str, str, dict[str, Any]]:
    """A case's sample input, target and metadata (input fields as given)."""
    extra = {"expected": case.expected, "reason": case.reason}
    metadata = {**case.input, **{k: v for k, v in extra.items() if v is not None}}
    target = ""
    if target_field is not None and target_field in case.input:
        target = canonical_json(case.input[target_field])
    return canonical_json(case.input), target, metadata


def _fixture_dataset(
    path: Source | None, name: str, target_field: str | None
) -> MemoryDataset:
    source = path if path is not None else packaged_fixture(f"{name}.jsonl")
    samples = []
    for case in read_fixture_cases(source):
        text, target, metadata = case_sample_fields(case, target_field=target_field)
        samples.append(Sample(id=case.id, input=text, target=target, metadata=metadata))
    return MemoryDataset(samples, name=name, location=str(source))


def stage_diagnosis_dataset(path: Source | None = None) -> MemoryDataset:
    """Recorded RAG runs; by default the packaged `stage_diagnosis.jsonl`."""
    return _fixture_dataset(path, "stage_diagnosis", None)


def ordered_extraction_dataset(path: Source | None = None) -> MemoryDataset:
    """Recorded extractions; by default the packaged `ordered_extraction.jsonl`."""
    return _fixture_dataset(path, "ordered_extraction", "source")
