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

- Relevant means a judgement of at least `min_rel` (default 1): trec_eval's
  `-l` ("minimum relevance judgement value needed for a document to be
  called relevant") and ir-measures' `rel=` ("minimum relevance score to be
  considered relevant (inclusive)").
- A run is ranked by score, highest first, ties broken by document id in
  descending order (`strcmp`, so "D9" before "D10" before "D1"), as
  trec_eval's `comp_sim_docno` does. The rank column is ignored, as
  trec_eval ignores it. The top `k` are the context.
- A document judged twice for a query, or ranked twice, is refused, as
  trec_eval refuses it ("duplicate docs").

What tracegrade adds is refusal where trec_eval would carry on: a query in
one file and not the other (trec_eval skips or scores it as empty; a record
built from half the evidence would misdiagnose), a score that is not a
number (NaN cannot be ranked), and an empty file.

The files are parsed by ir-measures' own readers (`read_trec_qrels`,
`read_trec_run`), fed one line at a time so that an error names its line.
ir-measures is the `trec` extra: `pip install 'tracegrade[trec]'`.

`correct`, the staff label, comes only from a labels file, in the format
`tracegrade labels` uses: JSON Lines, one `{"id": QUERY, "correct":
true|false}` per line. A query without one has no `correct`, and scores
`answer-label` until labelled: labels are never guessed. Its `recall`, a
fact of `required` and `context` alone, is in its score all the same,
and is trec_eval's `R@k` for the query.

Both files are read whole before any record is built, so that a caller
writes every record or none; memory grows with the run (a few hundred
bytes a ranked document).

Importing this module imports neither Inspect AI nor ir-measures.
"""

from __future__ import annotations

import gzip
import heapq
import io
import json
import math
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from .core.errors import quote
from .lines import undecodable

QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
RUN_FIELDS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")

INSTALL_HINT = "pip install 'tracegrade[trec]'"

# How many queries a mismatch names per file before it only counts.
MISMATCH_SHOWN = 10

SampleId = str | int


class TrecError(ValueError):
    """TREC files (or their labels) that cannot become records; `message`
    says which file, line and field, and quotes the value."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class TrecFileError(TrecError):
    """A malformed, empty or unreadable qrels or run file.

    `line` is None when the problem is the file as a whole; `field` names
    the TREC column at fault, when one is.
    """

    def __init__(
        self, path: str, line: int | None, problem: str, *, field: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: {problem}")


class QueryMismatch(TrecError):
    """Queries judged in the qrels but absent from the run, or the reverse.

    A query absent from the run would have an empty context, one absent
    from the qrels an empty required set: either record would be a
    diagnosis of evidence nobody gave, so both are refused.
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
                f"{_queries(only_qrels)} in {qrels.path} but not in "
                f"{run.path}: {_named(only_qrels, qrels.lines)}"
            )
        if only_run:
            parts.append(
                f"{_queries(only_run)} in {run.path} but not in "
                f"{qrels.path}: {_named(only_run, run.lines)}"
            )
        super().__init__(
            "; ".join(parts) + ". Every query must be both judged and run; "
            "filter both files to the queries you mean to import"
        )


class TrecLabelsError(TrecError):
    """A labels file that cannot label this import: unreadable, malformed,
    labelling by epoch, or naming queries the TREC files do not have."""


class InvalidCutoff(TrecError):
    """A k below 1: a context of no documents diagnoses nothing."""


class IrMeasuresMissing(ImportError):
    """ir-measures, whose readers parse the files, is not installed."""

    def __init__(self) -> None:
        self.message = (
            "tracegrade import trec reads TREC files with ir-measures, which "
            f"is not installed; install it with: {INSTALL_HINT}"
        )
        super().__init__(self.message)


def _queries(queries: list[str]) -> str:
    return "1 query" if len(queries) == 1 else f"{len(queries)} queries"


def _named(queries: list[str], lines: dict[str, int]) -> str:
    shown = ", ".join(
        f"{quote(query)} (line {lines[query]})" for query in queries[:MISMATCH_SHOWN]
    )
    more = len(queries) - MISMATCH_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


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

    def top(self, query_id: str, k: int) -> list[str]:
        """The query's first `k` documents as trec_eval ranks them: score
        descending, then document id descending."""
        docs = self.queries[query_id]
        return heapq.nlargest(k, docs, key=lambda doc_id: (docs[doc_id].score, doc_id))


class _NumberedText:
    """A text file as ir-measures' readers take one (anything with `read`,
    iterated by line), which remembers the line it gave last.

    The readers parse one line per record they yield, so when one raises,
    or yields a record to refuse, `line` and `text` are that record's. Lines
    are decoded here, strictly, so that bytes that are not UTF-8 are named
    by line and column rather than garbled or refused for the whole file.
    """

    def __init__(self, path: str, binary: IO[bytes] | gzip.GzipFile) -> None:
        self.path = path
        self.line = 0
        self.text = ""
        # "utf-8-sig": a byte-order mark is an editor's, not part of the
        # first query id.
        self._lines = io.TextIOWrapper(
            binary, encoding="utf-8-sig", errors="surrogateescape", newline=None
        )

    def __iter__(self) -> Iterator[str]:
        lines = iter(self._lines)
        while True:
            try:
                text = next(lines)
            except StopIteration:
                return
            except (EOFError, zlib.error, gzip.BadGzipFile) as error:
                # Only a `.gz` file is read through gzip.
                raise TrecFileError(
                    self.path,
                    None,
                    f"cannot be read as gzip after line {self.line} ({error})",
                ) from None
            self.line += 1
            self.text = text
            problem = undecodable(text)
            if problem is not None:
                if self.line == 1 and text.startswith("\x1f\udc8b"):
                    problem += "; it looks gzipped: name it .gz"
                raise TrecFileError(self.path, self.line, problem)
            yield text

    def read(self, size: int = -1) -> str:
        return "".join(self)


def _ir_measures() -> ModuleType:
    try:
        import ir_measures
    except ImportError:
        raise IrMeasuresMissing() from None
    return ir_measures


def _open(path: str) -> IO[bytes] | gzip.GzipFile:
    # ir-measures reads a `.gz` path through gzip; so does this.
    if path.endswith(".gz"):
        return gzip.GzipFile(path, "rb")
    return open(path, "rb")


def _malformed(
    numbered: _NumberedText,
    fields: tuple[str, ...],
    numeric: int,
    kind: str,
    error: ValueError,
) -> TrecFileError:
    """The reader's error on the current line, said with the line, the field
    and the value.

    The reader splits a line on whitespace and converts one field, so its
    error is either a wrong number of fields or a value that does not
    convert; which one is told from the line itself.
    """
    found = numbered.text.split()
    reader = f"ir-measures: {error}"
    if len(found) != len(fields):
        problem = (
            f"expected {len(fields)} fields ({' '.join(fields)}), found "
            f"{len(found)} in {quote(numbered.text.rstrip(), 100)} ({reader})"
        )
        other = {4: "qrels", 6: "run"}.get(len(found))
        if other is not None:
            problem += (
                f"; {len(found)} fields is a {other} line: are --qrels and "
                "--run swapped?"
            )
        return TrecFileError(numbered.path, numbered.line, problem)
    name = fields[numeric]
    return TrecFileError(
        numbered.path,
        numbered.line,
        f"field {numeric + 1} ({name}) {quote(found[numeric], 80)} is not {kind} "
        f"({reader})",
        field=name,
    )


def _records(
    path: str,
    read: Callable[[_NumberedText], Iterator[Any]],
    fields: tuple[str, ...],
    numeric: int,
    kind: str,
) -> Iterator[tuple[_NumberedText, Any]]:
    """Each record ir-measures' `read` makes of the file at `path`, with
    the file as read so far (its current line); a line the reader refuses
    raises `TrecFileError` (see `_malformed`)."""
    with _open(path) as binary:
        numbered = _NumberedText(path, binary)
        records = read(numbered)
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except TrecError:
                raise
            except ValueError as error:
                raise _malformed(numbered, fields, numeric, kind, error) from None
            yield numbered, record


def _first_time(
    docs: Mapping[str, Judgement | Ranked],
    record: Any,
    numbered: _NumberedText,
    done: str,
) -> None:
    """Refuse a document the file already `done` (judged, ranked) for the
    record's query, as trec_eval does."""
    earlier = docs.get(record.doc_id)
    if earlier is not None:
        raise TrecFileError(
            numbered.path,
            numbered.line,
            f"document {quote(record.doc_id)} of query "
            f"{quote(record.query_id)} is already {done} on line "
            f"{earlier.line}; trec_eval refuses a document {done} twice",
            field="doc_id",
        )


def read_qrels(path: str | Path) -> Qrels:
    """Read a qrels file (`query_id iteration doc_id relevance` per line)
    with ir-measures' reader; raises `TrecFileError` naming the line."""
    reader = _ir_measures()
    qrels = Qrels(str(path))
    for numbered, qrel in _records(
        qrels.path, reader.read_trec_qrels, QRELS_FIELDS, 3, "an integer"
    ):
        docs = qrels.queries.setdefault(qrel.query_id, {})
        qrels.lines.setdefault(qrel.query_id, numbered.line)
        _first_time(docs, qrel, numbered, "judged")
        docs[qrel.doc_id] = Judgement(qrel.relevance, numbered.line)
    if not qrels.queries:
        raise TrecFileError(
            qrels.path,
            None,
            "holds no judgements; a qrels line is "
            "`query_id iteration doc_id relevance`",
        )
    return qrels


def read_run(path: str | Path) -> Run:
    """Read a run file (`query_id Q0 doc_id rank score tag` per line) with
    ir-measures' reader; raises `TrecFileError` naming the line."""
    reader = _ir_measures()
    run = Run(str(path))
    for numbered, scored in _records(
        run.path, reader.read_trec_run, RUN_FIELDS, 4, "a number"
    ):
        if math.isnan(scored.score):
            raise TrecFileError(
                run.path,
                numbered.line,
                f"field 5 (score) {quote(numbered.text.split()[4], 80)} of "
                f"document {quote(scored.doc_id)} is not a number, so it "
                "has no place in a ranking",
                field="score",
            )
        docs = run.queries.setdefault(scored.query_id, {})
        run.lines.setdefault(scored.query_id, numbered.line)
        _first_time(docs, scored, numbered, "ranked")
        docs[scored.doc_id] = Ranked(scored.score, numbered.line)
    if not run.queries:
        raise TrecFileError(
            run.path,
            None,
            "holds no ranked documents; a run line is "
            "`query_id Q0 doc_id rank score tag`",
        )
    return run


@dataclass(frozen=True)
class QueryLabels:
    """Staff labels by query id, with the line each was read from."""

    path: str
    labels: dict[SampleId, bool]
    lines: dict[SampleId, int]


def read_labels(path: str | Path) -> QueryLabels:
    """Read a labels file as `tracegrade labels` and the stage scorer read
    one; raises `TrecLabelsError` naming the line.

    A line labelling an `epoch` is refused: epochs are repeated runs of one
    sample in a log, and an imported query is one record with one label.
    """
    # Imported here: the labels module loads Inspect AI.
    from .labels import LabelsError, StaffLabels

    try:
        staff = StaffLabels.read(path)
    except LabelsError as error:
        raise TrecLabelsError(str(error)) from None
    if staff.epoch_labels:
        (sample_id, epoch), line = min(
            staff.epoch_lines.items(), key=lambda item: item[1]
        )
        raise TrecLabelsError(
            f"{staff.path}, line {line}: id {quote(sample_id)} has an 'epoch' "
            f"({epoch}); an imported query is one record with one label, so "
            "leave 'epoch' out"
        )
    return QueryLabels(staff.path, staff.labels, staff.lines)


# --- the records --------------------------------------------------------------


def trec_records(
    qrels: Qrels,
    run: Run,
    *,
    k: int,
    min_rel: int = 1,
    labels: QueryLabels | None = None,
) -> list[dict[str, Any]]:
    """One fixture-format record per query, in the qrels' order of first
    appearance.

    `required` is the query's documents judged `min_rel` or higher, in qrels
    order; `context` the run's top `k`, best first; `correct` the query's
    label, absent without one. Raises `QueryMismatch` unless both files have
    the same queries, `TrecLabelsError` if a label names no query.
    """
    if k < 1:
        raise InvalidCutoff(f"k must be 1 or more, got {quote(k)}")
    only_qrels = [query for query in qrels.queries if query not in run.queries]
    only_run = [query for query in run.queries if query not in qrels.queries]
    if only_qrels or only_run:
        raise QueryMismatch(qrels, run, only_qrels, only_run)
    if labels is not None:
        _check_labels_match(labels, qrels)
    records: list[dict[str, Any]] = []
    for query_id in qrels.queries:
        record: dict[str, Any] = {
            "required": qrels.relevant(query_id, min_rel),
            "context": run.top(query_id, k),
        }
        if labels is not None and query_id in labels.labels:
            record["correct"] = labels.labels[query_id]
        records.append({"id": query_id, "input": record})
    return records


def _check_labels_match(labels: QueryLabels, qrels: Qrels) -> None:
    unmatched = [
        sample_id for sample_id in labels.labels if sample_id not in qrels.queries
    ]
    if not unmatched:
        return
    shown = ", ".join(
        f"{quote(sample_id)} (line {labels.lines[sample_id]})"
        for sample_id in unmatched[:MISMATCH_SHOWN]
    )
    more = len(unmatched) - MISMATCH_SHOWN
    if more > 0:
        shown += f" and {more} more"
    counted = (
        "1 label names" if len(unmatched) == 1 else f"{len(unmatched)} labels name"
    )
    message = f"{labels.path}: {counted} no query of {qrels.path}: {shown}"
    numbers = [sample_id for sample_id in unmatched if isinstance(sample_id, int)]
    if numbers:
        message += (
            f"; TREC query ids are text, so write {quote(str(numbers[0]))}, "
            f"not {numbers[0]}"
        )
    raise TrecLabelsError(message)


def import_trec(
    qrels_path: str | Path,
    run_path: str | Path,
    *,
    k: int,
    min_rel: int = 1,
    labels_path: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Read the files and build the records (see `trec_records`).

    Everything is checked before anything is returned, so a caller writes
    either every record or none.
    """
    if k < 1:
        raise InvalidCutoff(f"k must be 1 or more, got {quote(k)}")
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    labels = None if labels_path is None else read_labels(labels_path)
    return trec_records(qrels, run, k=k, min_rel=min_rel, labels=labels)


def records_text(records: list[dict[str, Any]]) -> str:
    """The records as JSON Lines, one compact line each."""
    return "".join(
        json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in records
    )
