"""TREC qrels and a run as stage-diagnosis records, one per query, as
trec_eval counts them. Lines are read with Python's `str.split`, `int` and
`float`; a field they read otherwise than trec_eval is refused (docs/import-trec.md)."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any, NamedTuple

from ..core.errors import quote
from ..lines import undecodable
from .common import (
    ImportRefused,
    InputFileError,
    check_labels_name_records,
    counted,
    named,
    read_labels,
)

QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
RUN_FIELDS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")
C_SPACE = " \t\n\v\f\r"  # C's isspace() in trec_eval's "C" locale
# Whitespace Python splits at and C does not (NBSP, U+001C ...): trec_eval
# keeps it in the field.
_OTHER_SPACE = re.compile(r"[^\S \t\n\v\f\r]")
# Each number's field, the characters its reader and trec_eval's read alike,
# and the form a refusal names.
_NUMBERS: dict[Any, tuple[str, str, str]] = {
    int: (
        "relevance",
        "0123456789-+",
        "an integer that trec_eval's atol and Python's int() read alike: ASCII "
        "digits after an optional sign, within a C long",
    ),
    float: (
        "score",
        "0123456789-+.eEiInNfFtTyY",  # decimals, and inf or infinity
        "a number that trec_eval's strtod and Python's float() read alike: ASCII "
        "digits with an optional sign, point and e-exponent, or inf",
    ),
}

_NO_JUDGEMENTS = (
    "holds no judgements; a qrels line is `query_id iteration doc_id relevance`"
)
_NO_RANKING = (
    "holds no ranked documents; a run line is `query_id Q0 doc_id rank score tag`"
)

# A query's documents: each with its relevance or score and its line.
Documents = dict[str, tuple[Any, int]]


class _File(NamedTuple):
    path: str
    queries: dict[str, Documents]  # both in file order
    lines: dict[str, int]  # where each query first appears


class QueryMismatch(ImportRefused):
    """Queries in one file only: half the evidence would misdiagnose (unless -c)."""

    def __init__(
        self, qrels: _File, run: _File, only_qrels: list[str], only_run: list[str]
    ) -> None:
        self.only_qrels, self.only_run = only_qrels, only_run
        parts = [
            f"{counted(len(only), 'query')} in {one.path} but not in {other.path}: "
            f"{named(only, one.lines)}"
            for only, one, other in ((only_qrels, qrels, run), (only_run, run, qrels))
            if only
        ]
        advice = (
            "Every query must be both judged and run; filter both files to "
            "the queries you mean to import"
        )
        if only_qrels:
            advice += (
                ", or pass -c to import a judged query the run lacks with an "
                "empty context, as trec_eval -c counts it"
            )
        super().__init__("; ".join(parts) + ". " + advice)


def _lines(path: str, names: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """The content lines, numbered and split as trec_eval splits them, or refused."""
    number = 0
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # an editor's byte-order mark
                text = raw.decode("utf-8", "surrogateescape")
                if (problem := undecodable(text)) is not None:
                    gzipped = raw.startswith(b"\x1f\x8b")
                    problem += "; it looks gzipped: name it .gz" * gzipped
                    raise InputFileError(path, number, problem)
                content = text.strip(C_SPACE)
                if content and content[0] != "#":
                    yield number, _fields(path, number, content, names)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        problem = f"cannot be read as gzip after line {number} ({error})"
        raise InputFileError(path, None, problem) from None
    except OSError as error:
        problem = f"cannot be read ({error.strerror or error})"
        raise InputFileError(path, None, problem) from None


def _fields(path: str, number: int, content: str, names: tuple[str, ...]) -> list[str]:
    """The line's fields; refused where C would split or cut them otherwise."""
    other = _OTHER_SPACE.search(content)
    if other is not None:
        space = other.group()
        problem = (
            f"holds U+{ord(space):04X}, a space to Python's str.split() and "
            "part of the field to trec_eval"
        )
        fields = re.split(f"[{C_SPACE}]+", content)
        raise _field_error(path, number, names, fields, space, problem)
    fields = content.split()
    if len(fields) != len(names):
        problem = (
            f"expected {len(names)} fields ({' '.join(names)}), found "
            f"{len(fields)} in {quote(content, 100)}"
        )
        swapped = {4: "qrels", 6: "run"}.get(len(fields))
        if swapped is not None:
            problem += (
                f"; {len(fields)} fields is a {swapped} line: are --qrels and "
                "--run swapped?"
            )
        raise InputFileError(path, number, problem)
    if "\x00" in content:
        problem = "holds a NUL character, where trec_eval's reading of the field stops"
        raise _field_error(path, number, names, fields, "\x00", problem)
    return fields


def _field_error(
    path: str,
    number: int,
    names: tuple[str, ...],
    fields: list[str],
    mark: str,
    problem: str,
) -> InputFileError:
    """The first field holding `mark`, refused by its number and name."""
    position = next(n for n, value in enumerate(fields) if mark in value)
    name = names[min(position, len(names) - 1)]
    return InputFileError(
        path,
        number,
        f"field {position + 1} ({name}) {quote(fields[position], 80)} {problem}",
        field=name,
    )


def _number(
    path: str,
    number: int,
    fields: list[str],
    position: int,
    parse: Callable[[str], Any],
) -> Any:
    """Field `position` read by `parse` where trec_eval's C reads it alike."""
    text, (name, characters, form) = fields[position - 1], _NUMBERS[parse]
    if set(text) <= set(characters):
        with suppress(ValueError):
            value = parse(text)
            if parse is float or -(2**63) <= value < 2**63:
                return value
    problem = f"field {position} ({name}) {quote(text, 80)} is not {form}"
    raise InputFileError(path, number, problem, field=name)


def _read(
    path: str,
    names: tuple[str, ...],
    position: int,
    parse: Callable[[str], Any],
    done: str,
    empty: str,
) -> _File:
    """A qrels or run file; a document `done` twice for a query is refused."""
    read = _File(path, {}, {})
    for number, fields in _lines(path, names):
        query_id, doc_id = fields[0], fields[2]
        documents = read.queries.setdefault(query_id, {})
        read.lines.setdefault(query_id, number)
        found = _number(path, number, fields, position, parse)
        if doc_id in documents:
            raise InputFileError(
                path,
                number,
                f"document {quote(doc_id)} of query {quote(query_id)} is already "
                f"{done} on line {documents[doc_id][1]}; trec_eval refuses a "
                f"document {done} twice",
                field="doc_id",
            )
        documents[doc_id] = (found, number)
    if not read.queries:
        raise InputFileError(path, None, empty)
    return read


class TrecImport(NamedTuple):
    """The records, and the judged queries the run lacked (in qrels order)."""

    records: list[dict[str, Any]]
    not_run: list[str]


def import_trec(
    qrels_path: str | Path,
    run_path: str | Path,
    *,
    k: int,
    min_rel: int = 1,
    labels_path: str | Path | None = None,
    complete: bool = False,
) -> TrecImport:
    """One record per query: required by `min_rel`, context trec_eval's top `k`."""
    qrels = _read(str(qrels_path), QRELS_FIELDS, 4, int, "judged", _NO_JUDGEMENTS)
    run = _read(str(run_path), RUN_FIELDS, 5, float, "ranked", _NO_RANKING)
    labels = None if labels_path is None else read_labels(labels_path)
    only_qrels = [query for query in qrels.queries if query not in run.queries]
    only_run = [query for query in run.queries if query not in qrels.queries]
    if only_run or (only_qrels and not complete):
        raise QueryMismatch(qrels, run, [] if complete else only_qrels, only_run)
    if labels is not None:
        check_labels_name_records(
            labels, qrels.queries.__contains__, "query", qrels.path
        )
    records: list[dict[str, Any]] = []
    for query_id, judged in qrels.queries.items():
        scored = run.queries.get(query_id, {})
        ranked = sorted(scored, key=lambda doc: (scored[doc][0], doc), reverse=True)
        record: dict[str, Any] = {
            "required": [doc for doc, (rel, _) in judged.items() if rel >= min_rel],
            "context": ranked[:k],
            "steps": [{"name": "run", "ids": ranked}],
        }
        if labels is not None and query_id in labels.labels:
            record["correct"] = labels.labels[query_id]
        records.append({"id": query_id, "input": record})
    return TrecImport(records, only_qrels)
