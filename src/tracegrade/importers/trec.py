"""TREC qrels and a run as records, one per query, as trec_eval counts them."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..core.errors import quote
from ..lines import undecodable
from .common import (
    ImportRefused,
    InputFileError,
    check_labels_name_records,
    counted,
    listed,
    named,
    read_labels,
)

QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
RUN_FIELDS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")
C_SPACE = " \t\n\v\f\r"  # C's isspace() in trec_eval's "C" locale
_C_SPLIT = re.compile(f"[{C_SPACE}]+")
# Python's whitespace that C's is not (NBSP, U+001C ...), and NUL, where C stops.
_ODD = re.compile(f"[^\\S{C_SPACE}]|\x00")
# By each file's number reader: its fields, the number's position, what a line
# does to a document, the refusal of an empty file, the characters trec_eval's
# atol (strtod) and int() (float()) read alike, and the form a refusal names.
_FILES: dict[Any, tuple[tuple[str, ...], int, str, str, str, str]] = {
    int: (
        QRELS_FIELDS,
        4,
        "judged",
        "holds no judgements; a qrels line is `query_id iteration doc_id relevance`",
        "0123456789-+",
        "an integer that trec_eval's atol and Python's int() read alike: ASCII "
        "digits after an optional sign, within a C long",
    ),
    float: (
        RUN_FIELDS,
        5,
        "ranked",
        "holds no ranked documents; a run line is `query_id Q0 doc_id rank score tag`",
        "0123456789-+.eEiInNfFtTyY",  # decimals, and inf or infinity
        "a number that trec_eval's strtod and Python's float() read alike: ASCII "
        "digits with an optional sign, point and e-exponent, or inf",
    ),
}
# A query's documents in file order: each with its relevance or score and line.
Documents = dict[str, tuple[Any, int]]


def _lines(path: str, names: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """The content lines, numbered and split as trec_eval splits them."""
    number = 0
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if number == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")  # an editor's mark
                text = raw.decode("utf-8", "surrogateescape")
                if (problem := undecodable(text)) is not None:
                    if raw.startswith(b"\x1f\x8b"):
                        problem += "; it looks gzipped: name it .gz"
                    raise InputFileError(path, number, problem)
                content = text.strip(C_SPACE)
                if content and content[0] != "#":
                    yield number, _fields(path, number, content, names)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        problem = f"cannot be read as gzip after line {number} ({error})"
        raise InputFileError(path, None, problem) from None


def _fields(path: str, number: int, content: str, names: tuple[str, ...]) -> list[str]:
    """The line's fields, refused where Python would split or C cut them otherwise."""
    fields = _C_SPLIT.split(content)
    for position, value in enumerate(fields):
        if odd := _ODD.search(value):
            name = names[min(position, len(names) - 1)]
            problem = (
                "holds a NUL character, where trec_eval's reading of the field stops"
                if odd[0] == "\x00"
                else f"holds U+{ord(odd[0]):04X}, a space to Python's str.split() "
                "and part of the field to trec_eval"
            )
            problem = f"field {position + 1} ({name}) {quote(value, 80)} {problem}"
            raise InputFileError(path, number, problem, field=name)
    if len(fields) != len(names):
        problem = f"expected {len(names)} fields ({' '.join(names)}), found "
        problem += f"{len(fields)} in {quote(content, 100)}"
        if swapped := {4: "qrels", 6: "run"}.get(len(fields)):
            problem += f"; {len(fields)} fields is a {swapped} line: are --qrels "
            problem += "and --run swapped?"
        raise InputFileError(path, number, problem)
    return fields


def _read(path: str, parse: Callable[[str], Any]) -> dict[str, Documents]:
    names, position, done, empty, characters, form = _FILES[parse]
    name = names[position - 1]
    queries: dict[str, Documents] = {}
    for number, fields in _lines(path, names):
        query_id, doc_id, text = fields[0], fields[2], fields[position - 1]
        documents = queries.setdefault(query_id, {})
        value = None
        if set(text) <= set(characters):
            with suppress(ValueError):
                value = parse(text)
        if value is None or (parse is int and not -(2**63) <= value < 2**63):
            problem = f"field {position} ({name}) {quote(text, 80)} is not {form}"
            raise InputFileError(path, number, problem, field=name)
        if doc_id in documents:
            problem = f"document {quote(doc_id)} of query {quote(query_id)} is already "
            problem += f"{done} on line {documents[doc_id][1]}; trec_eval refuses a "
            problem += f"document {done} twice"
            raise InputFileError(path, number, problem, field="doc_id")
        documents[doc_id] = (value, number)
    if not queries:
        raise InputFileError(path, None, empty)
    return queries


def stream_trec(
    qrels_path: str | Path,
    run_path: str | Path,
    *,
    k: int,
    min_rel: int = 1,
    labels_path: str | Path | None = None,
    complete: bool = False,
    notes: list[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """One record per query: required by `min_rel`, context trec_eval's top `k`."""
    qrels, run = str(qrels_path), str(run_path)
    judged, ranked = _read(qrels, int), _read(run, float)
    labels = None if labels_path is None else read_labels(labels_path)
    not_run = [query for query in judged if query not in ranked]
    only_run = [query for query in ranked if query not in judged]
    if only_run or (not_run and not complete):
        # Half the evidence would misdiagnose: a run cut short, or wrong files.
        only_qrels = [] if complete else not_run
        parts = [
            f"{counted(len(only), 'query')} in {one} but not in {other}: "
            # Each named by its first line: its first document's.
            + named(only, {q: next(iter(queries[q].values()))[1] for q in only})
            for only, one, other, queries in (
                (only_qrels, qrels, run, judged),
                (only_run, run, qrels, ranked),
            )
            if only
        ]
        advice = "Every query must be both judged and run; filter both files to "
        advice += "the queries you mean to import"
        if only_qrels:
            advice += ", or pass -c to import a judged query the run lacks with an "
            advice += "empty context, as trec_eval -c counts it"
        raise ImportRefused("; ".join(parts) + ". " + advice)
    if labels is not None:
        check_labels_name_records(labels, judged.__contains__, "query", qrels)
    if not_run and notes is not None:
        notes.append(
            f"{len(not_run)} of {len(judged)} queries judged in {qrels} are not in "
            f"{run}; imported with an empty context (-c): {listed(not_run)}"
        )
    for query_id, documents in judged.items():
        scored = ranked.get(query_id, {})
        order = sorted(scored, key=lambda doc: (scored[doc][0], doc), reverse=True)
        record: dict[str, Any] = {
            "required": [doc for doc, (rel, _) in documents.items() if rel >= min_rel],
            "context": order[:k],
            "steps": [{"name": "run", "ids": order}],
        }
        if labels is not None and query_id in labels.labels:
            record["correct"] = labels.labels[query_id]
        yield {"id": query_id, "input": record}
