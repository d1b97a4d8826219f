"""`tracegrade import trec`: TREC qrels and a run as stage-diagnosis records.

The files are small and written here. The ranking convention is checked
against trec_eval's own code (through ir-measures' pytrec_eval provider)
on generated runs full of ties, and the output is fed to `tracegrade
check`, `tracegrade score` and `inspect eval`, and once through a pipe
from one `tracegrade` process into another.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gzip
import json
import random
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import ir_measures
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.log import list_eval_logs, read_eval_log

import tracegrade
from tests.commands import run_inspect, run_tracegrade, tracegrade_shell
from tests.support import write_lines
from tracegrade.importers.common import InputFileError, LabelsRefused, record_line
from tracegrade.importers.trec import QueryMismatch
from tracegrade.importers.trec import import_trec as import_trec_files
from tracegrade.tasks.recorded import stage_input_score


def import_trec(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return import_trec_files(*args, **kwargs).records


# Graded judgements, queries in an order that is neither sorted as text
# ("301" < "42" < "7") nor as numbers (7 < 42 < 301).
QRELS = """\
42 0 D1 2
42 0 D2 1
42 0 D3 0
42 0 D4 -1
301 0 D5 3
301 0 D6 1
7 0 D7 0
"""

# More than k=3 documents a query, ties, a rank column that contradicts the
# scores (trec_eval ignores it), and queries interleaved.
RUN = """\
42 Q0 D3 1 9.5 sys
301 Q0 D6 1 2.0 sys
42 Q0 D1 2 7.0 sys
42 Q0 D10 3 7.0 sys
301 Q0 D5 2 3.0 sys
42 Q0 D9 4 7.0 sys
301 Q0 D8 3 0.5 sys
42 Q0 D2 5 1.0 sys
301 Q0 D11 4 0.5 sys
7 Q0 D7 1 1.0 sys
"""

# "42" answered correctly though D1 and D2 never reached the context (a
# lucky answer), "301" wrongly with its context complete; "7" has nothing
# relevant and no label.
LABELS = [{"id": "42", "correct": True}, {"id": "301", "correct": False}]

# Each query's whole ranking, trec_eval's: ties by document id descending.
RANKED = {
    "42": ["D3", "D9", "D10", "D1", "D2"],
    "301": ["D5", "D6", "D8", "D11"],
    "7": ["D7"],
}


def run_step(ids: list[str]) -> list[dict[str, Any]]:
    """The one step a TREC record carries: the whole ranked run."""
    return [{"name": "run", "ids": ids}]


RECORDS_K3 = [
    {
        "id": query,
        "input": {
            "required": required,
            "context": RANKED[query][:3],
            "steps": run_step(RANKED[query]),
        },
    }
    for query, required in (("42", ["D1", "D2"]), ("301", ["D5", "D6"]), ("7", []))
]

LABELLED_RESULTS = {
    "42": {"stage": "retrieval", "missing": ["D1", "D2"]},
    "301": {"stage": "generation", "missing": []},
    "7": {"stage": "unresolved"},
}
UNLABELLED_RESULTS = {
    "42": {"error": "answer-label"},
    "301": {"error": "answer-label"},
    "7": {"stage": "unresolved"},
}


def write(path: Path, text: str | bytes) -> str:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {
        "qrels": write(tmp_path / "qrels.txt", QRELS),
        "run": write(tmp_path / "run.txt", RUN),
        "labels": write_lines(tmp_path / "labels.jsonl", LABELS),
    }


ONE_QRELS = "q1 0 D1 1\n"
ONE_RUN = "q1 Q0 D1 1 1.0 tag\n"


def read_one(tmp_path: Path, which: str, text: str | bytes) -> list[dict[str, Any]]:
    """Import `text` as the qrels (or run) beside a one-line run (or qrels)."""
    path = write(tmp_path / which, text)
    if which == "qrels":
        return import_trec(path, write(tmp_path / "other", ONE_RUN), k=100)
    return import_trec(write(tmp_path / "other", ONE_QRELS), path, k=100)


def files_root() -> Path:
    return Path(tracegrade.__file__).parent / "data"


def import_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tracegrade("import", "trec", *args, cwd=Path.cwd())


def output_records(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused import prints; nothing on stdout."""
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line


# --- the records ---------------------------------------------------------------


def test_records_follow_trec_eval_relevance_and_ranking(
    files: dict[str, str],
) -> None:
    records = import_trec(files["qrels"], files["run"], k=3)
    assert records == RECORDS_K3


def test_min_rel_is_inclusive_as_trec_eval_l(files: dict[str, str]) -> None:
    def required(min_rel: int) -> dict[str, list[str]]:
        records = import_trec(files["qrels"], files["run"], k=3, min_rel=min_rel)
        return {record["id"]: record["input"]["required"] for record in records}

    # Judged 2 is relevant at level 2; a negative judgement never is at 1.
    assert required(1) == {"42": ["D1", "D2"], "301": ["D5", "D6"], "7": []}
    assert required(2) == {"42": ["D1"], "301": ["D5"], "7": []}
    assert required(3) == {"42": [], "301": ["D5"], "7": []}
    assert required(0) == {"42": ["D1", "D2", "D3"], "301": ["D5", "D6"], "7": ["D7"]}


def test_k_cuts_the_ranking_and_a_short_run_keeps_what_it_has(
    files: dict[str, str],
) -> None:
    contexts = {
        k: {
            record["id"]: record["input"]["context"]
            for record in import_trec(files["qrels"], files["run"], k=k)
        }
        for k in (1, 2, 5, 100)
    }
    assert contexts[1] == {"42": ["D3"], "301": ["D5"], "7": ["D7"]}
    # The tie at 7.0 is broken by document id descending, as strcmp orders
    # it: "D9" > "D10" > "D1".
    assert contexts[2]["42"] == ["D3", "D9"]
    assert contexts[5]["42"] == ["D3", "D9", "D10", "D1", "D2"]
    assert contexts[5]["301"] == ["D5", "D6", "D8", "D11"]
    assert contexts[100] == contexts[5]


def test_labels_give_correct_and_an_unlabelled_query_has_none(
    files: dict[str, str],
) -> None:
    records = import_trec(
        files["qrels"], files["run"], k=3, labels_path=files["labels"]
    )
    inputs = {record["id"]: record["input"] for record in records}
    assert inputs["42"]["correct"] is True
    assert inputs["301"]["correct"] is False
    assert "correct" not in inputs["7"]
    # Without labels, no record has one: never guessed.
    assert all(
        "correct" not in record["input"]
        for record in import_trec(files["qrels"], files["run"], k=3)
    )


def test_the_records_are_the_fixture_lines_the_readers_take(
    files: dict[str, str], tmp_path: Path
) -> None:
    from tracegrade.datasets import read_fixture_cases

    records = import_trec(
        files["qrels"], files["run"], k=3, labels_path=files["labels"]
    )
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(map(record_line, records)), encoding="utf-8")
    cases = read_fixture_cases(path)
    assert [case.id for case in cases] == ["42", "301", "7"]
    assert [case.input for case in cases] == [record["input"] for record in records]
    schema = json.loads(
        (files_root() / "fixture.schema.json").read_text(encoding="utf-8")
    )
    for record in records:
        jsonschema.validate(record, schema)


# The same two files in another form: (suffix, qrels, run).
FORMS: dict[str, tuple[str, str | bytes, str | bytes]] = {
    "gzip": (".gz", gzip.compress(QRELS.encode()), gzip.compress(RUN.encode())),
    "crlf-and-blank": (
        "",
        "\r\n" + QRELS.replace("\n", "\r\n") + "\n  \n",
        RUN.replace("\n", "\r\n"),
    ),
    "byte-order-mark": (
        "",
        b"\xef\xbb\xbf" + QRELS.encode(),
        b"\xef\xbb\xbf" + RUN.encode(),
    ),
    # Skipped as trec_eval skips them.
    "comments": (
        "",
        "# judged by hand\n" + QRELS,
        "  # made by BM25\n" + RUN + "#end\n",
    ),
}


@pytest.mark.parametrize("form", FORMS)
def test_the_same_files_in_another_form_give_the_same_records(
    tmp_path: Path, form: str
) -> None:
    suffix, qrels, run = FORMS[form]
    paths = write(tmp_path / f"q{suffix}", qrels), write(tmp_path / f"r{suffix}", run)
    assert import_trec(*paths, k=3) == RECORDS_K3


# --- the ranking, against trec_eval's own code -------------------------------


def generated_run(seed: int) -> tuple[str, dict[str, dict[str, float]]]:
    """A run file full of ties, and the same run as ir-measures takes it."""
    rng = random.Random(seed)
    pool = [f"D{n}" for n in range(1, 25)] + ["d1", "D01", "Ä", "a-b", "Z"]
    scores = [0.0, -0.0, 0.5, 1.0, 1.5, -2.0, 3.25]
    lines = []
    run: dict[str, dict[str, float]] = {}
    for query in range(40):
        docs = rng.sample(pool, rng.randint(1, len(pool)))
        for rank, doc in enumerate(docs, start=1):
            score = rng.choice(scores)
            run.setdefault(f"q{query}", {})[doc] = score
            lines.append(f"q{query} Q0 {doc} {rank} {score!r} tag\n")
    return "".join(lines), run


@pytest.mark.parametrize("seed", range(3))
def test_the_ranking_is_trec_evals_on_ties(tmp_path: Path, seed: int) -> None:
    """Each document's rank as trec_eval gives it: judge only that document
    relevant, and its reciprocal rank is 1/rank."""
    text, run = generated_run(seed)
    qrels_text = "".join(f"{query} 0 D1 0\n" for query in run)
    records = import_trec(
        write(tmp_path / "qrels", qrels_text), write(tmp_path / "run", text), k=100
    )
    ranked = {record["id"]: record["input"]["context"] for record in records}
    qrels = {f"{query}|{doc}": {doc: 1} for query, docs in run.items() for doc in docs}
    copied = {f"{query}|{doc}": docs for query, docs in run.items() for doc in docs}
    ranks = {
        metric.query_id: round(1 / metric.value)
        for metric in ir_measures.pytrec_eval.iter_calc([ir_measures.RR], qrels, copied)
    }
    for query, docs in run.items():
        ours = ranked[query]
        assert [ranks[f"{query}|{doc}"] for doc in ours] == list(
            range(1, len(docs) + 1)
        ), query


@pytest.mark.parametrize("seed", range(3))
def test_relevant_in_the_top_k_is_trec_evals_precision_at_k(
    tmp_path: Path, seed: int
) -> None:
    text, run = generated_run(seed)
    rng = random.Random(seed)
    judged = {
        query: {doc: rng.choice([-1, 0, 1, 2, 3]) for doc in docs if rng.random() < 0.6}
        for query, docs in run.items()
    }
    qrels_text = "".join(
        f"{query} 0 {doc} {relevance}\n"
        for query, docs in judged.items()
        for doc, relevance in docs.items()
    )
    # A query judged on nothing has no qrels line; both files must agree.
    kept = {query for query, docs in judged.items() if docs}
    run_text = "".join(
        line for line in text.splitlines(True) if line.split()[0] in kept
    )
    qrels = write(tmp_path / "qrels", qrels_text)
    ranked = write(tmp_path / "run", run_text)
    for k in (1, 3, 10):
        for min_rel in (1, 2, 3):
            measure = ir_measures.P(rel=min_rel) @ k
            expected = {
                metric.query_id: round(metric.value * k)
                for metric in ir_measures.pytrec_eval.iter_calc(
                    [measure], judged, {q: run[q] for q in kept}
                )
            }
            for record in import_trec(qrels, ranked, k=k, min_rel=min_rel):
                found = set(record["input"]["required"]) & set(
                    record["input"]["context"]
                )
                assert len(found) == expected[record["id"]], (record, k, min_rel)


# --- refusals -------------------------------------------------------------------


def test_queries_in_one_file_only_are_refused_by_name(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels", QRELS + "99 0 D1 1\n100 0 D2 0\n")
    run = write(tmp_path / "run", RUN + "55 Q0 D1 1 1.0 sys\n")
    with pytest.raises(QueryMismatch) as caught:
        import_trec(qrels, run, k=3)
    assert caught.value.only_qrels == ["99", "100"]
    assert caught.value.only_run == ["55"]
    message = str(caught.value)
    assert f'2 queries in {qrels} but not in {run}: "99" (line 8), "100" (line 9)' in (
        message
    )
    assert f'1 query in {run} but not in {qrels}: "55" (line 11)' in message


def test_a_long_mismatch_names_ten_and_counts_all(tmp_path: Path) -> None:
    extra = "".join(f"x{n} 0 D1 1\n" for n in range(25))
    qrels = write(tmp_path / "qrels", QRELS + extra)
    run = write(tmp_path / "run", RUN)
    with pytest.raises(QueryMismatch) as caught:
        import_trec(qrels, run, k=3)
    message = str(caught.value)
    assert message.startswith(f"25 queries in {qrels} but not in {run}: ")
    assert '"x9" (line 17) and 15 more' in message
    assert '"x10"' not in message
    assert len(caught.value.only_qrels) == 25


@pytest.mark.parametrize(
    ("which", "line", "expected"),
    [
        (
            "qrels",
            "42 0 D1\n",
            "line 1: expected 4 fields (query_id iteration doc_id relevance), "
            'found 3 in "42 0 D1"',
        ),
        (
            "qrels",
            "42 0 D1 high\n",
            'line 1: field 4 (relevance) "high" is not an integer',
        ),
        ("qrels", "42 0 D1 1.5\n", 'line 1: field 4 (relevance) "1.5" is not an'),
        (
            "qrels",
            "42 Q0 D1 1 2.5 sys\n",
            'found 6 in "42 Q0 D1 1 2.5 sys"; 6 fields is a run line: are --qrels '
            "and --run swapped?",
        ),
        (
            "run",
            "42 Q0 D1 1 2.5\n",
            "line 1: expected 6 fields (query_id iteration doc_id rank score tag), "
            'found 5 in "42 Q0 D1 1 2.5"',
        ),
        ("run", "42 Q0 D1 1 high sys\n", 'field 5 (score) "high" is not a number'),
        (
            "run",
            "42 0 D1 1\n",
            "4 fields is a qrels line: are --qrels and --run swapped?",
        ),
        # Refused, not cut.
        (
            "run",
            "q1 Q0 D1 x 1 2.0 tag\n",
            "line 1: expected 6 fields (query_id iteration doc_id rank score tag), "
            'found 7 in "q1 Q0 D1 x 1 2.0 tag"',
        ),
    ],
)
def test_a_malformed_line_is_named_by_file_line_and_field(
    tmp_path: Path, which: str, line: str, expected: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, which, line)
    assert str(caught.value).startswith(f"{tmp_path / which}, line 1: ")
    assert expected in str(caught.value)
    assert caught.value.line == 1


def test_the_bad_line_is_found_after_good_and_blank_ones(tmp_path: Path) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, "run", RUN + "\n\n42 Q0 D77 6 x7 sys\n")
    assert caught.value.line == 13
    assert caught.value.field == "score"
    assert '"x7"' in str(caught.value)


@pytest.mark.parametrize(
    ("which", "text", "expected"),
    [
        (
            "qrels",
            "42 0 D1 1\n42 0 D2 0\n42 0 D1 2\n",
            'line 3: document "D1" of query "42" is already judged on line 1',
        ),
        (
            "run",
            "42 Q0 D1 1 1.0 s\n42 Q0 D1 2 0.5 s\n",
            'line 2: document "D1" of query "42" is already ranked on line 1',
        ),
    ],
)
def test_a_document_twice_in_a_query_is_refused_as_trec_eval_does(
    tmp_path: Path, which: str, text: str, expected: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, which, text)
    assert expected in str(caught.value)
    assert caught.value.field == "doc_id"


def test_the_same_document_under_two_queries_is_fine(tmp_path: Path) -> None:
    qrels = write(tmp_path / "q", "a 0 D1 1\nb 0 D1 0\n")
    run = write(tmp_path / "r", "a Q0 D1 1 1 t\nb Q0 D1 1 1 t\n")
    records = import_trec(qrels, run, k=1)
    assert [record["input"]["required"] for record in records] == [["D1"], []]


def test_bytes_that_are_not_utf8_are_named_by_line_and_column(
    tmp_path: Path,
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, "qrels", b"42 0 D1 1\n42 0 D\xe92 1\n")
    assert str(caught.value) == (
        f"{tmp_path / 'qrels'}, line 2: not valid UTF-8 text (byte 0xE9 at column 7)"
    )


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("run.txt", gzip.compress(RUN.encode()), r"it looks gzipped: name it \.gz"),
        ("run.gz", RUN, "cannot be read as gzip"),
    ],
)
def test_a_gzip_name_and_content_that_disagree_are_refused(
    tmp_path: Path, name: str, text: str | bytes, expected: str
) -> None:
    with pytest.raises(InputFileError, match=expected):
        read_one(tmp_path, name, text)


@pytest.mark.parametrize("text", ["", "\n  \n\t\n"])
def test_an_empty_file_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(InputFileError, match="holds no judgements") as caught:
        read_one(tmp_path, "qrels", text)
    assert caught.value.line is None
    with pytest.raises(InputFileError, match="holds no ranked documents"):
        read_one(tmp_path, "run", text)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [{"id": "42", "correct": True}, {"id": "nope", "correct": False}],
            'labels.jsonl: 1 label names no query of {qrels}: "nope" (line 2)',
        ),
        (
            [{"id": 42, "correct": True}],
            '42 (line 1); query ids are text, so write "42", not 42',
        ),
        (
            [{"id": "42", "epoch": 2, "correct": True}],
            "labels.jsonl, line 1: id \"42\" has an 'epoch' (2); an imported "
            "run is one record with one label",
        ),
        (
            [{"id": "42", "correct": "yes"}],
            "labels.jsonl, line 1: 'correct' must be true or false",
        ),
        (["not json"], "labels.jsonl, line 1: not valid JSON"),
        ([], "holds no labels"),
    ],
)
def test_labels_that_cannot_label_the_import_are_refused(
    files: dict[str, str], tmp_path: Path, lines: list[Any], expected: str
) -> None:
    labels = write_lines(tmp_path / "labels.jsonl", lines)
    with pytest.raises(LabelsRefused) as caught:
        import_trec(files["qrels"], files["run"], k=3, labels_path=labels)
    assert expected.format(qrels=files["qrels"]) in str(caught.value)


# --- the line grammar: Python's, refused where trec_eval's C differs ----------

# The C library trec_eval reads numbers with (atol and strtod, through
# strtol), called directly. Python sets no LC_NUMERIC, so its decimal point
# is ".", as in the "C" locale trec_eval runs in.
LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
LIBC.strtod.restype = ctypes.c_double
LIBC.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
LIBC.strtol.restype = ctypes.c_long
LIBC.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]


def c_reads_whole(function: str, text: str) -> tuple[bool, float]:
    """Whether libc's strtod (or strtol, base 10, which atol is) reads
    the whole of `text`, and the value it reads."""
    data = text.encode()
    end = ctypes.c_char_p()
    if function == "strtod":
        value: float = LIBC.strtod(data, ctypes.byref(end))
    else:
        value = LIBC.strtol(data, ctypes.byref(end), 10)
    start = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    consumed = (ctypes.cast(end, ctypes.c_void_p).value or 0) - (start or 0)
    return bool(data) and consumed == len(data), value


def relevance_of(tmp_path: Path, relevance: str) -> int:
    (record,) = read_one(tmp_path, "qrels", f"q1 0 D1 {relevance}\n")
    return 1 if record["input"]["required"] else 0


def score_order(tmp_path: Path, score: str) -> list[str]:
    """The ranking of D1 scored `score` between D0 at 0 and D2 at 0.5."""
    run = f"q1 Q0 D0 1 0 t\nq1 Q0 D1 2 {score} t\nq1 Q0 D2 3 0.5 t\n"
    (record,) = read_one(tmp_path, "run", run)
    return list(record["input"]["context"])


@pytest.mark.parametrize("relevance", ["1", "-1", "+1", "007", "0", "-0", "12"])
def test_a_relevance_is_an_integer_atol_and_int_read_alike(
    tmp_path: Path, relevance: str
) -> None:
    assert relevance_of(tmp_path, relevance) == (int(relevance) >= 1)
    assert c_reads_whole("strtol", relevance) == (True, int(relevance))


# Each a deviation from trec_eval listed in docs/import-trec.md.
@pytest.mark.parametrize(
    "relevance",
    [
        "1e3",
        "1.5",
        "0x1",
        "1_0",
        "3abc",
        "\u0663",
        "\uff11",
        "+",
        "1-",
        "99999999999999999999",
    ],
)
def test_a_relevance_read_otherwise_by_atol_or_int_is_refused(
    tmp_path: Path, relevance: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        relevance_of(tmp_path, relevance)
    shown = json.dumps(relevance, ensure_ascii=False)
    assert str(caught.value).startswith(
        f"{tmp_path / 'qrels'}, line 1: field 4 (relevance) {shown} is not an "
        "integer that trec_eval's atol and Python's int() read alike"
    )
    assert (caught.value.line, caught.value.field) == (1, "relevance")


@pytest.mark.parametrize(
    ("score", "order"),
    [
        ("1", ["D1", "D2", "D0"]),
        ("-2.5", ["D2", "D0", "D1"]),
        ("-.5", ["D2", "D0", "D1"]),
        ("5.", ["D1", "D2", "D0"]),
        ("1e3", ["D1", "D2", "D0"]),
        ("1e+3", ["D1", "D2", "D0"]),
        ("1E-3", ["D2", "D1", "D0"]),
        ("1e999", ["D1", "D2", "D0"]),
        ("+1", ["D1", "D2", "D0"]),
        ("inf", ["D1", "D2", "D0"]),
        ("-Infinity", ["D2", "D0", "D1"]),
        ("4.9e-325", ["D2", "D1", "D0"]),
    ],
)
def test_a_score_is_a_decimal_number_strtod_and_float_read_alike(
    tmp_path: Path, score: str, order: list[str]
) -> None:
    assert score_order(tmp_path, score) == order
    assert c_reads_whole("strtod", score) == (True, float(score))


@pytest.mark.parametrize(
    "score",
    [
        "nan",
        "NAN(abc)",
        "0x1p3",
        "1_000",
        "3abc",
        "\u0663",
        "1,5",
        ".",
        "e5",
        "1e",
        "\u0131nf",
    ],
)
def test_a_score_read_otherwise_by_strtod_or_float_is_refused(
    tmp_path: Path, score: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        score_order(tmp_path, score)
    shown = json.dumps(score, ensure_ascii=False)
    assert f"line 2: field 5 (score) {shown} is not a number that trec_eval's " in (
        str(caught.value)
    )
    assert (caught.value.line, caught.value.field) == (2, "score")


NUMBER_TEXT = st.text(
    st.sampled_from(list("0123456789+-.eE_xXpPinfINFaA()\u0663\uff11,\u0131")),
    max_size=12,
)


# A thousand strings of a 27-character alphabet reach every branch; the CI
# profile's 10,000 would add 10 s and nothing else.
@settings(max_examples=1_000)
@given(NUMBER_TEXT)
def test_every_accepted_number_is_one_c_reads_whole_to_the_same_value(
    text: str,
) -> None:
    """The importer against the C library: what it accepts, strtod (a score)
    and strtol (a relevance) read whole to the same number."""
    from tracegrade.importers.trec import _relevance, _score

    for function, read in (("strtod", _score), ("strtol", _relevance)):
        whole, value = c_reads_whole(function, text)
        try:
            ours = read("f", 1, ["q", "0", "D", text, text, "t"])
        except InputFileError:
            continue
        assert whole, (function, text)
        assert ours == value, (function, text)


def test_fields_split_at_c_isspace() -> None:
    """The six bytes C's isspace() takes as space in trec_eval's locale."""
    LIBC.isspace.restype = ctypes.c_int
    c_space = {chr(byte) for byte in range(128) if LIBC.isspace(byte)}
    from tracegrade.importers.trec import C_SPACE

    assert set(C_SPACE) == c_space


@pytest.mark.parametrize(
    "space", ["\u2003", "\u00a0", "\u3000", "\u0085", "\x1c", "\u2028"]
)
def test_a_space_only_python_splits_at_is_refused(tmp_path: Path, space: str) -> None:
    """str.split() would cut there, trec_eval keeps it in the field."""
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, "run", f"q1 Q0 D1{space} 1 3.0 tag\n")
    assert (caught.value.line, caught.value.field) == (1, "doc_id")
    assert f"holds U+{ord(space):04X}, a space to Python's str.split()" in str(
        caught.value
    )


def test_vertical_tab_form_feed_and_a_lone_cr_separate_fields(
    tmp_path: Path,
) -> None:
    qrels = write(tmp_path / "qrels", "q1\v0\fD1\r1\r\n")
    run = write(tmp_path / "run", "q1 Q0\tD1 1\r2.0 tag\r\n")
    (record,) = import_trec(qrels, run, k=1)
    assert record["input"] == {
        "required": ["D1"],
        "context": ["D1"],
        "steps": run_step(["D1"]),
    }


def test_a_nul_in_a_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, "run", "q1 Q0 D1\x00x 1 2.0 tag\n")
    assert caught.value.field == "doc_id"
    assert 'field 3 (doc_id) "D1\\u0000x" holds a NUL character' in str(caught.value)


# --- -c: a judged query the run lacks retrieved nothing ------------------------


def test_complete_imports_a_judged_query_without_a_run_as_retrieving_nothing(
    tmp_path: Path,
) -> None:
    """As trec_eval -c counts it: R@k of an empty ranking, 0."""
    qrels = write(tmp_path / "qrels", QRELS + "99 0 D1 1\n100 0 D2 0\n")
    run = write(tmp_path / "run", RUN)
    with pytest.raises(QueryMismatch, match="or pass -c to import"):
        import_trec(qrels, run, k=3)
    imported = import_trec_files(qrels, run, k=3, complete=True)
    assert imported.not_run == ["99", "100"]
    assert imported.records == [
        *RECORDS_K3,
        {
            "id": "99",
            "input": {"required": ["D1"], "context": [], "steps": run_step([])},
        },
        {"id": "100", "input": {"required": [], "context": [], "steps": run_step([])}},
    ]
    from tracegrade.core import diagnose_stage, stage_recall

    record = imported.records[3]["input"]
    assert diagnose_stage({**record, "correct": True}) == {
        "stage": "retrieval",
        "missing": ["D1"],
    }
    judged = {"99": {"D1": 1}}
    (metric,) = ir_measures.pytrec_eval.iter_calc(
        [ir_measures.R @ 3], judged, {"99": {}}
    )
    assert stage_recall(record) == metric.value == 0.0


def test_complete_still_refuses_a_query_only_the_run_has(tmp_path: Path) -> None:
    """trec_eval -c ignores a run's unjudged query too; it is refused."""
    qrels = write(tmp_path / "qrels", QRELS)
    run = write(tmp_path / "run", RUN + "55 Q0 D1 1 1.0 sys\n")
    with pytest.raises(QueryMismatch) as caught:
        import_trec(qrels, run, k=3, complete=True)
    assert caught.value.only_run == ["55"]
    assert "pass -c" not in str(caught.value)


def test_the_command_takes_c_and_names_the_queries_it_imported_empty(
    files: dict[str, str], tmp_path: Path
) -> None:
    run = write(tmp_path / "short.run", "42 Q0 D1 1 1.0 s\n")
    base = ["--qrels", files["qrels"], "--run", run, "--k", "3"]
    refused = refusal(import_cli(*base))
    assert (
        f'2 queries in {files["qrels"]} but not in {run}: "301" (line 5), "7" (line 7)'
    ) in refused
    assert "or pass -c to import a judged query the run lacks" in refused
    for flag in ("-c", "--complete"):
        result = import_cli(*base, flag, "--labels", files["labels"])
        assert result.returncode == 0, result.stderr
        assert [record["input"]["context"] for record in output_records(result)] == [
            ["D1"],
            [],
            [],
        ]
        assert result.stderr == (
            f"note: 2 of 3 queries judged in {files['qrels']} are not in {run}; "
            'imported with an empty context (-c): "301", "7"\n'
        )


# --- the command ------------------------------------------------------------------


def test_the_command_writes_the_records_to_stdout_without_ir_measures(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files are read here, with trec_eval's grammar, not by ir-measures'
    readers (Python's int() and float() are more lenient than the format)."""
    # A None entry makes `import ir_measures` raise ImportError.
    monkeypatch.setitem(sys.modules, "ir_measures", None)
    result = import_cli("--qrels", files["qrels"], "--run", files["run"], "--k", "3")
    assert result.returncode == 0, result.stderr
    assert output_records(result) == RECORDS_K3
    assert result.stderr == (
        "note: 2 of 3 queries have required documents and no label (no --labels "
        "given); they score answer-label until labelled\n"
    )


def test_the_command_takes_labels_and_min_rel(files: dict[str, str]) -> None:
    result = import_cli(
        "--qrels",
        files["qrels"],
        "--run",
        files["run"],
        "-k",
        "2",
        "--min-rel",
        "2",
        "--labels",
        files["labels"],
    )
    assert result.returncode == 0, result.stderr
    # (query, required, context, label): None is no label.
    expected = [
        ("42", ["D1"], ["D3", "D9"], True),
        ("301", ["D5"], ["D5", "D6"], False),
        ("7", [], ["D7"], None),
    ]
    assert output_records(result) == [
        {
            "id": query,
            "input": {
                "required": required,
                "context": context,
                "steps": run_step(RANKED[query]),
                **({} if label is None else {"correct": label}),
            },
        }
        for query, required, context, label in expected
    ]
    assert result.stderr == ""


def test_output_is_written_whole_and_never_over_an_input_or_a_file(
    files: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "runs.jsonl"
    base = ["--qrels", files["qrels"], "--run", files["run"], "--k", "3"]
    result = import_cli(*base, "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.endswith(f"3 records written to {out}\n")
    first = out.read_text(encoding="utf-8")
    assert [json.loads(line) for line in first.splitlines()] == RECORDS_K3

    again = import_cli(*base, "--output", str(out), "--min-rel", "2")
    assert again.returncode == 2
    assert "already exists; pass --force" in again.stderr
    assert out.read_text(encoding="utf-8") == first

    forced = import_cli(*base, "-o", str(out), "--min-rel", "2", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(out.read_text().splitlines()[0])["input"]["required"] == ["D1"]

    before = Path(files["qrels"]).read_bytes()
    onto_input = import_cli(*base, "--out", files["qrels"], "--force")
    assert onto_input.returncode == 2
    assert "would destroy the input" in onto_input.stderr
    assert Path(files["qrels"]).read_bytes() == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--k", "0"], "Invalid value for '-k' / '--k': 0 is not in the range x>=1"),
        ([], "Missing option '-k' / '--k'"),
        (["--k", "three"], "'three' is not a valid integer"),
    ],
)
def test_usage_errors_exit_2(
    files: dict[str, str], args: list[str], expected: str
) -> None:
    result = import_cli("--qrels", files["qrels"], "--run", files["run"], *args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert result.stdout == ""


# --- end to end: into check, score and inspect eval --------------------------


@pytest.mark.parametrize(
    ("labelled", "piped"), [(True, True), (False, False)], ids=["labelled", "bare"]
)
def test_the_import_pipes_into_tracegrade_score(
    files: dict[str, str], tmp_path: Path, labelled: bool, piped: bool
) -> None:
    """The labelled import through a real pipe, a fresh `tracegrade` on each
    side; the unlabelled one, whose records differ only in their labels,
    through a file, both commands in this interpreter."""
    labels = ["--labels", files["labels"]] if labelled else []
    imported = ["import", "trec", "--qrels", files["qrels"], "--run", files["run"]]
    imported += ["--k", "3", *labels]
    scored = ["score", "stage_diagnosis", "/dev/stdin", "--log-dir", "logs"]
    scored += ["--out", "results.jsonl", "--no-progress"]
    if piped:
        result = tracegrade_shell(
            f"tracegrade {shlex.join(imported)} | tracegrade {shlex.join(scored)}",
            tmp_path,
        )
    else:
        result = run_tracegrade(*imported, "-o", "runs.jsonl", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        scored[2] = "runs.jsonl"
        result = run_tracegrade(*scored, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    entries = [
        json.loads(line)
        for line in (tmp_path / "results.jsonl").read_text().splitlines()
    ]
    assert {entry["id"]: entry["result"] for entry in entries} == (
        LABELLED_RESULTS if labelled else UNLABELLED_RESULTS
    )
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    assert log.status == "success"
    assert [entry["id"] for entry in entries] == ["42", "301", "7"]
    assert {sample.id for sample in log.samples or []} == {"42", "301", "7"}


# Judged and ranked simply (no ties, one cut-off) for the comparison with
# trec_eval below: q1 finds one of its two relevant documents in the top 3,
# q2 all three, q3 none, and q4 has none relevant.
SIMPLE_QRELS = {
    "q1": {"A": 1, "B": 2, "C": 0},
    "q2": {"D": 1, "E": 1, "F": 1},
    "q3": {"G": 1},
    "q4": {"H": 0},
}
SIMPLE_RUN = {
    "q1": {"A": 5.0, "X": 4.0, "C": 3.0, "B": 2.0},
    "q2": {"D": 3.0, "E": 2.0, "F": 1.0},
    "q3": {"Y": 2.0, "Z": 1.0},
    "q4": {"H": 1.0},
}


def test_an_unlabelled_import_scores_recall_for_every_query_as_trec_eval(
    tmp_path: Path,
) -> None:
    """No labels: every query is answer-label, and yet each has its recall,
    trec_eval's R@k for the import's k."""
    qrels = write(
        tmp_path / "qrels.txt",
        "".join(
            f"{query} 0 {doc} {relevance}\n"
            for query, docs in SIMPLE_QRELS.items()
            for doc, relevance in docs.items()
        ),
    )
    run = write(
        tmp_path / "run.txt",
        "".join(
            f"{query} Q0 {doc} {rank} {score} sys\n"
            for query, docs in SIMPLE_RUN.items()
            for rank, (doc, score) in enumerate(docs.items(), start=1)
        ),
    )
    k = 3
    imported = run_tracegrade(
        *("import", "trec", "--qrels", qrels, "--run", run, "--k", str(k)),
        *("--output", "runs.jsonl"),
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    scored = run_tracegrade(
        *("score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs"),
        *("--out", "results.jsonl", "--no-progress", "--json"),
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    # The summary's recall is over every query with something relevant,
    # labelled or not; the logged metric sees no unscored query.
    summary = json.loads(scored.stdout)
    assert summary["recall"] == {"mean": (0.5 + 1.0 + 0.0) / 3, "runs": 3}
    assert summary["metrics"]["stage_diagnosis"]["context_recall"] is None
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    assert log.samples is not None
    scores = {
        sample.id: (sample.scores or {})["stage_diagnosis"] for sample in log.samples
    }
    assert {key: score.reason for key, score in scores.items()} == {
        "q1": "answer-label",
        "q2": "answer-label",
        "q3": "answer-label",
        "q4": None,  # nothing relevant: unresolved, which needs no label
    }
    recalls = {key: (score.metadata or {})["recall"] for key, score in scores.items()}
    trec_eval = {
        metric.query_id: metric.value
        for metric in ir_measures.pytrec_eval.iter_calc(
            [ir_measures.R @ k], SIMPLE_QRELS, SIMPLE_RUN
        )
    }
    # Exactly: both divide the same two integers.
    assert {key: recalls[key] for key in ("q1", "q2", "q3")} == {
        key: trec_eval[key] for key in ("q1", "q2", "q3")
    }
    assert (recalls["q1"], recalls["q2"], recalls["q3"]) == (0.5, 1.0, 0.0)
    assert recalls["q4"] is None
    # Precision too, over every query whose context held an ID.
    precisions = {
        key: (score.metadata or {})["precision"] for key, score in scores.items()
    }
    assert precisions == {"q1": 1 / 3, "q2": 1.0, "q3": 0.0, "q4": 0.0}
    assert summary["precision"] == {"mean": (1 / 3 + 1.0) / 4, "runs": 4}


def test_tracegrade_check_passes_the_labelled_import_and_lists_the_rest(
    files: dict[str, str], tmp_path: Path
) -> None:
    base = ["import", "trec", "--qrels", files["qrels"], "--run", files["run"]]
    base += ["--k", "3"]
    imported = run_tracegrade(
        *base, "--labels", files["labels"], "-o", "runs.jsonl", cwd=tmp_path
    )
    assert imported.returncode == 0, imported.stderr
    labelled = run_tracegrade("check", "stage_diagnosis", "runs.jsonl", cwd=tmp_path)
    assert labelled.returncode == 0, labelled.stdout + labelled.stderr
    assert "All 3 records would be scored." in labelled.stdout

    imported = run_tracegrade(*base, "-o", "bare.jsonl", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    unlabelled = run_tracegrade("check", "stage_diagnosis", "bare.jsonl", cwd=tmp_path)
    assert unlabelled.returncode == 1
    assert 'bare.jsonl:1: "42": answer-label' in unlabelled.stdout
    assert 'bare.jsonl:2: "301": answer-label' in unlabelled.stdout


def test_inspect_eval_runs_the_imported_file(
    files: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "runs.jsonl"
    imported = import_cli(
        *("--qrels", files["qrels"], "--run", files["run"], "--k", "3"),
        *("--labels", files["labels"], "--output", str(out)),
    )
    assert imported.returncode == 0, imported.stderr
    result = run_inspect(
        *("eval", "tracegrade/stage_diagnosis", "-T", f"dataset={out}"),
        *("--log-dir", "logs"),
        cwd=tmp_path,
    )
    # `inspect eval` exits 0 even when the eval fails: the log says.
    assert result.returncode == 0, result.stderr
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    assert log.status == "success", log.error
    assert log.samples is not None
    scores = {
        sample.id: (sample.scores or {})["stage_diagnosis"] for sample in log.samples
    }
    assert {
        sample_id: (score.metadata or {})["result"]
        for sample_id, score in scores.items()
    } == LABELLED_RESULTS


def test_a_document_ranked_below_k_was_lost_at_the_cut(tmp_path: Path) -> None:
    """The whole ranking is the record's one step, so a required document
    at rank 14 with k = 10 was lost at the cut that fills the context."""
    qrels = write(tmp_path / "qrels", "q1 0 D14 1\nq1 0 D99 1\n")
    run = write(
        tmp_path / "run",
        "".join(f"q1 Q0 D{rank} {rank} {100 - rank}.0 tag\n" for rank in range(1, 21)),
    )
    (record,) = import_trec(qrels, run, k=10)
    score = stage_input_score({**record["input"], "correct": True})
    assert (score.metadata or {})["lost"] == [
        {"id": "D14", "lost_at": "context", "last_step": "run", "last_rank": 14},
        {"id": "D99", "lost_at": "run", "last_step": None, "last_rank": None},
    ]
    assert (score.metadata or {})["step_recall"] == {"run": 0.5}
    assert (
        "D14: retrieved at rank 14 by run and dropped by no later step, but not "
        "among the 10" in (score.explanation or "")
    )
