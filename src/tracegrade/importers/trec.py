"""TREC qrels and runs as stage-diagnosis records.

A TREC evaluation already holds what stage diagnosis needs, per query: the
qrels say which documents answer it (`required`), the run says what the
retriever returned (`context`). This module turns the two files into one
fixture-format record per query, `{"id": QUERY, "input": {"required": [...],
"context": [...], "correct": ...}}`, which `tracegrade check`, `tracegrade
score` and `inspect eval tracegrade/stage_diagnosis -T dataset=` read as
they are.

The conventions are trec_eval's, so that a record says what trec_eval (and
ir-measures, which runs trec_eval's code) would say of the same files:

- A line is read as trec_eval reads it (`get_qrels.c`, `get_trec_results.c`):
  fields separated by ASCII whitespace (C's `isspace`: space, tab, LF, VT,
  FF, CR) and nothing else, so a document id ending in an EM SPACE or a
  no-break space keeps it; a line whose first non-blank character is `#`
  is a comment. Blank lines are skipped.
- A relevance is an integer as `atol` reads one whole, `[+-]?[0-9]+`; a
  score a decimal number as `strtod` reads one whole (digits with an
  optional point and exponent, or `inf`/`infinity`). Anything else is
  refused, where Python's `int()` and `float()` would take `0_1`, `1_000`
  or the Arabic-Indic `٣`, which trec_eval reads as other numbers.
- Relevant means a judgement of at least `min_rel` (default 1): trec_eval's
  `-l` ("minimum relevance judgement value needed for a document to be
  called relevant") and ir-measures' `rel=` ("minimum relevance score to be
  considered relevant (inclusive)").
- A run is ranked by score, highest first, ties broken by document id in
  descending order (`strcmp`, so "D9" before "D10" before "D1"), as
  trec_eval's `comp_sim_docno` does. The rank column is ignored, as
  trec_eval ignores it. The top `k` are the context, and the whole ranking
  is the record's one step, `run`: a required document ranked 14th with
  k = 10 was lost at the cut that fills the context, last seen at rank 14
  (`tracegrade.core.steps`).
- A document judged twice for a query, or ranked twice, is refused, as
  trec_eval refuses it ("duplicate docs").
- With `complete` (trec_eval's `-c`), a query judged but absent from the
  run retrieved nothing: its context is empty.

What tracegrade adds is refusal where trec_eval would carry on: a query in
one file and not the other (trec_eval skips it, or under `-c` scores it
as empty; a record built from half the evidence would misdiagnose, so
only `complete` imports a judged query the run lacks), a score that is
NaN (it cannot be ranked), a NUL in a field (trec_eval's C strings end
there), more fields than the format has, and an empty file.

`correct`, the staff label, comes only from a labels file (see
`tracegrade.importers.common.read_labels`). A query without one has no
`correct`, and scores `answer-label` until labelled: labels are never
guessed. Its `recall`, a fact of `required` and `context` alone, is in
its score all the same, and is trec_eval's `R@k` for the query.

Both files are read whole before any record is built, so that a caller
writes every record or none; memory grows with the run's ranked
documents. Nothing here needs ir-measures or Inspect AI.
"""

from __future__ import annotations

import gzip
import re
import unicodedata
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.errors import quote
from .common import (
    ImportRefused,
    InputFileError,
    RecordLabels,
    check_labels_name_records,
    counted,
    label_record,
    named,
    read_labels,
)

QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
RUN_STEP = "run"
"""The name of the step that holds the whole ranked run, cut at k for the context."""
RUN_FIELDS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")

# C's isspace() in the "C" locale, the only separators trec_eval knows.
WHITESPACE = " \t\n\v\f\r"
_SEPARATOR = re.compile("[ \t\n\v\f\r]+")
_INFORMATION_SEPARATOR = re.compile("[\x1c-\x1f]")
# The forms atol and strtod read whole; [0-9] is ASCII digits only.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# ASCII: in Unicode mode IGNORECASE lets U+0131 (dotless i) match "i".
_INFINITY = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE | re.ASCII)
_NAN = re.compile(r"[+-]?nan(?:\([0-9A-Za-z_]*\))?", re.IGNORECASE | re.ASCII)
_INTEGER_TEXT = "an integer of the form trec_eval reads, [+-]?[0-9]+"
_DECIMAL_TEXT = (
    "a number of the form trec_eval reads: [+-], digits with an optional "
    "point and e-exponent, or inf"
)


class QueryMismatch(ImportRefused):
    """Queries judged in the qrels but absent from the run, or the reverse.

    A query absent from the run would have an empty context, one absent
    from the qrels an empty required set: either record would be a
    diagnosis of evidence nobody gave, so both are refused, unless
    `complete` says that a judged query the run lacks retrieved nothing.
    """

    def __init__(
        self,
        qrels: Qrels,
        run: Run,
        only_qrels: list[str],
        only_run: list[str],
    ) -> None:
        self.only_qrels = only_qrels
        self.only_run = only_run
        parts = []
        if only_qrels:
            parts.append(
                f"{counted(len(only_qrels), 'query')} in {qrels.path} but not in "
                f"{run.path}: {named(only_qrels, qrels.lines)}"
            )
        if only_run:
            parts.append(
                f"{counted(len(only_run), 'query')} in {run.path} but not in "
                f"{qrels.path}: {named(only_run, run.lines)}"
            )
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


class InvalidCutoff(ImportRefused):
    """A k below 1: a context of no documents diagnoses nothing."""


# --- reading the files ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judgement:
    relevance: int
    line: int


@dataclass(frozen=True, slots=True)
class Ranked:
    score: float
    line: int


@dataclass
class Qrels:
    """Judgements by query, then document, both in file order; `lines`
    holds the line where each query first appears."""

    path: str
    queries: dict[str, dict[str, Judgement]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def relevant(self, query_id: str, min_rel: int) -> list[str]:
        """The query's documents judged `min_rel` or higher, in file order."""
        return [
            doc_id
            for doc_id, judgement in self.queries[query_id].items()
            if judgement.relevance >= min_rel
        ]


@dataclass
class Run:
    """Scored documents by query; `lines` as for `Qrels`."""

    path: str
    queries: dict[str, dict[str, Ranked]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def ranked(self, query_id: str) -> list[str]:
        """The query's documents as trec_eval ranks them: score descending,
        then document id descending. Code point order is the byte order of
        UTF-8, so this is `strcmp`'s order too."""
        docs = self.queries.get(query_id, {})
        return sorted(
            docs, key=lambda doc_id: (docs[doc_id].score, doc_id), reverse=True
        )


def _open(path: str) -> IO[bytes] | gzip.GzipFile:
    # A `.gz` path is read through gzip, as ir-measures and most TREC
    # tools read one.
    if path.endswith(".gz"):
        return gzip.GzipFile(path, "rb")
    return open(path, "rb")


def _lines(path: str, names: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """The content lines of a TREC file, numbered, each split into
    `len(names)` fields, or an `InputFileError` naming the line.

    Lines end at LF only, as trec_eval's do; a CR before it, or anywhere,
    is whitespace. Bytes that are not UTF-8 are named by line and column.
    """
    try:
        binary = _open(path)
    except OSError as error:
        raise InputFileError(
            path, None, f"cannot be read ({error.strerror or error})"
        ) from None
    with binary:
        number = 0
        while True:
            try:
                raw = binary.readline()
            except (EOFError, zlib.error, gzip.BadGzipFile) as error:
                raise InputFileError(
                    path, None, f"cannot be read as gzip after line {number} ({error})"
                ) from None
            except OSError as error:
                raise InputFileError(
                    path, None, f"cannot be read ({error.strerror or error})"
                ) from None
            if not raw:
                return
            number += 1
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                # A byte-order mark is an editor's, not part of the first
                # query id.
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputFileError(path, number, _undecodable(raw, error)) from None
            content = line.strip(WHITESPACE)
            if not content or content[0] == "#":
                continue
            yield number, _split(path, number, content, names)


def _undecodable(raw: bytes, error: UnicodeDecodeError) -> str:
    """Where a line stops being UTF-8, as `tracegrade.lines` says it."""
    column = len(raw[: error.start].decode("utf-8")) + 1
    problem = f"not valid UTF-8 text (byte 0x{raw[error.start]:02X} at column {column})"
    if raw.startswith(b"\x1f\x8b"):
        problem += "; it looks gzipped: name it .gz"
    return problem


def _split(path: str, number: int, content: str, names: tuple[str, ...]) -> list[str]:
    # On an ASCII line C's isspace() and str.split() differ only on
    # U+001C..U+001F, which Python splits at; str.split() is the faster.
    if content.isascii() and _INFORMATION_SEPARATOR.search(content) is None:
        found = content.split()
    else:
        found = _SEPARATOR.split(content)
    if len(found) != len(names):
        problem = (
            f"expected {len(names)} fields ({' '.join(names)}), found "
            f"{len(found)} in {quote(content, 100)}"
        )
        other = {4: "qrels", 6: "run"}.get(len(found))
        if other is not None:
            problem += (
                f"; {len(found)} fields is a {other} line: are --qrels and "
                "--run swapped?"
            )
        raise InputFileError(path, number, problem)
    if "\x00" in content:
        position = next(n for n, value in enumerate(found) if "\x00" in value)
        raise InputFileError(
            path,
            number,
            f"field {position + 1} ({names[position]}) {quote(found[position], 80)} "
            "holds a NUL character, where trec_eval's reading of the field stops",
            field=names[position],
        )
    return found


def _why_not(value: str, allowed: str) -> str:
    """The first character of `value` outside `allowed`, said plainly."""
    for character in value:
        if character not in allowed:
            if character == "_":
                return '"_" is no digit separator to trec_eval'
            if not character.isascii():
                name = unicodedata.name(character, "a character with no name")
                return f"U+{ord(character):04X} ({name}) is not an ASCII digit"
            return f"{quote(character)} cannot be part of it"
    return "its characters are out of order"


def _relevance(path: str, number: int, fields: list[str]) -> int:
    text = fields[3]
    if _INTEGER.fullmatch(text) is None:
        raise InputFileError(
            path,
            number,
            f"field 4 (relevance) {quote(text, 80)} is not {_INTEGER_TEXT} "
            f"({_why_not(text, '+-0123456789')})",
            field="relevance",
        )
    return int(text)


def _score(path: str, number: int, fields: list[str]) -> float:
    text = fields[4]
    if _DECIMAL.fullmatch(text) is not None:
        # Python's float() and C's strtod() both round correctly, so this
        # is trec_eval's double; a value past the range is infinite.
        return float(text)
    if _NAN.fullmatch(text) is not None:
        raise InputFileError(
            path,
            number,
            f"field 5 (score) {quote(text, 80)} of document "
            f"{quote(fields[2])} is not a number, so it has no place in "
            "a ranking",
            field="score",
        )
    if _INFINITY.fullmatch(text) is None:
        raise InputFileError(
            path,
            number,
            f"field 5 (score) {quote(text, 80)} is not {_DECIMAL_TEXT} "
            f"({_why_not(text, '+-0123456789.eE')})",
            field="score",
        )
    return float(text)


def _first_time(
    docs: Mapping[str, Judgement | Ranked],
    path: str,
    number: int,
    fields: list[str],
    done: str,
) -> None:
    """Refuse a document the file already `done` (judged, ranked) for the
    line's query, as trec_eval does."""
    query_id, doc_id = fields[0], fields[2]
    earlier = docs.get(doc_id)
    if earlier is not None:
        raise InputFileError(
            path,
            number,
            f"document {quote(doc_id)} of query {quote(query_id)} is already "
            f"{done} on line {earlier.line}; trec_eval refuses a document "
            f"{done} twice",
            field="doc_id",
        )


def read_qrels(path: str | Path) -> Qrels:
    """Read a qrels file (`query_id iteration doc_id relevance` per line);
    raises `InputFileError` naming the line and field."""
    qrels = Qrels(str(path))
    for number, fields in _lines(qrels.path, QRELS_FIELDS):
        relevance = _relevance(qrels.path, number, fields)
        query_id = fields[0]
        docs = qrels.queries.setdefault(query_id, {})
        qrels.lines.setdefault(query_id, number)
        _first_time(docs, qrels.path, number, fields, "judged")
        docs[fields[2]] = Judgement(relevance, number)
    if not qrels.queries:
        raise InputFileError(
            qrels.path,
            None,
            "holds no judgements; a qrels line is "
            "`query_id iteration doc_id relevance`",
        )
    return qrels


def read_run(path: str | Path) -> Run:
    """Read a run file (`query_id Q0 doc_id rank score tag` per line);
    raises `InputFileError` naming the line and field."""
    run = Run(str(path))
    for number, fields in _lines(run.path, RUN_FIELDS):
        score = _score(run.path, number, fields)
        query_id = fields[0]
        docs = run.queries.setdefault(query_id, {})
        run.lines.setdefault(query_id, number)
        _first_time(docs, run.path, number, fields, "ranked")
        docs[fields[2]] = Ranked(score, number)
    if not run.queries:
        raise InputFileError(
            run.path,
            None,
            "holds no ranked documents; a run line is "
            "`query_id Q0 doc_id rank score tag`",
        )
    return run


# --- the records --------------------------------------------------------------


@dataclass
class TrecImport:
    """The records, and the judged queries the run lacked (imported with
    an empty context under `complete`, in qrels order)."""

    records: list[dict[str, Any]]
    not_run: list[str]


def trec_records(
    qrels: Qrels,
    run: Run,
    *,
    k: int,
    min_rel: int = 1,
    labels: RecordLabels | None = None,
    complete: bool = False,
) -> TrecImport:
    """One fixture-format record per query, in the qrels' order of first
    appearance.

    `required` is the query's documents judged `min_rel` or higher, in qrels
    order; `context` the run's top `k`, best first; `steps` the whole
    ranking, as the one step `run`; `correct` the query's
    label, absent without one. Raises `QueryMismatch` unless both files have
    the same queries (with `complete`, a judged query the run lacks is
    imported with an empty context), and `LabelsRefused` if a label names
    no query.
    """
    if k < 1:
        raise InvalidCutoff(f"k must be 1 or more, got {quote(k)}")
    only_qrels = [query for query in qrels.queries if query not in run.queries]
    only_run = [query for query in run.queries if query not in qrels.queries]
    if only_run or (only_qrels and not complete):
        raise QueryMismatch(qrels, run, [] if complete else only_qrels, only_run)
    if labels is not None:
        check_labels_name_records(labels, qrels.queries, "query", qrels.path)
    records: list[dict[str, Any]] = []
    for query_id in qrels.queries:
        ranked = run.ranked(query_id)
        record: dict[str, Any] = {
            "required": qrels.relevant(query_id, min_rel),
            "context": ranked[:k],
            "steps": [{"name": RUN_STEP, "ids": ranked}],
        }
        label_record(record, query_id, labels)
        records.append({"id": query_id, "input": record})
    return TrecImport(records, only_qrels)


def import_trec(
    qrels_path: str | Path,
    run_path: str | Path,
    *,
    k: int,
    min_rel: int = 1,
    labels_path: str | Path | None = None,
    complete: bool = False,
) -> TrecImport:
    """Read the files and build the records (see `trec_records`).

    Everything is checked before anything is returned, so a caller writes
    either every record or none.
    """
    if k < 1:
        raise InvalidCutoff(f"k must be 1 or more, got {quote(k)}")
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    labels = None if labels_path is None else read_labels(labels_path)
    return trec_records(
        qrels, run, k=k, min_rel=min_rel, labels=labels, complete=complete
    )
