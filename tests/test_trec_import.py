"""`tracegrade import trec`: ranking held to trec_eval's code (ir-measures'
pytrec_eval) on runs full of ties, numbers to the C library trec_eval reads with."""

from __future__ import annotations

import ctypes
import ctypes.util
import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.commands import run_tracegrade
from tests.support import write_lines
from tracegrade.core import stage_recall
from tracegrade.importers.common import ImportRefused, InputFileError, LabelsRefused
from tracegrade.importers.trec import C_SPACE, stream_trec

# Graded judgements, queries in an order sorted neither as text nor as numbers.
QRELS = (
    "42 0 D1 2\n42 0 D2 1\n42 0 D3 0\n42 0 D4 -1\n301 0 D5 3\n301 0 D6 1\n7 0 D7 0\n"
)
# Ties, a rank column that contradicts the scores (trec_eval ignores it),
# queries interleaved.
RUN = "".join(
    f"{query} Q0 {doc} {rank} {score} sys\n"
    for query, doc, rank, score in [
        *[("42", "D3", 1, 9.5), ("301", "D6", 1, 2.0), ("42", "D1", 2, 7.0)],
        *[("42", "D10", 3, 7.0), ("301", "D5", 2, 3.0), ("42", "D9", 4, 7.0)],
        *[("301", "D8", 3, 0.5), ("42", "D2", 5, 1.0), ("301", "D11", 4, 0.5)],
        ("7", "D7", 1, 1.0),
    ]
)
# Each query's whole ranking, trec_eval's: ties by document id descending.
RANKED = {"42": ["D3", "D9", "D10", "D1", "D2"], "301": ["D5", "D6", "D8", "D11"]}
RANKED["7"] = ["D7"]
REQUIRED = {"42": ["D1", "D2"], "301": ["D5", "D6"], "7": []}


# The records at k = 3: the context, each query's top 3.
RECORDS = [
    {
        "id": query,
        "input": {
            "required": REQUIRED[query],
            "context": ranked[:3],
            "steps": [{"name": "run", "ids": ranked}],
        },
    }
    for query, ranked in RANKED.items()
]


def write(path: Path, text: str | bytes) -> str:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def imported(*args: Any, **options: Any) -> list[dict[str, Any]]:
    return list(stream_trec(*args, **options))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    labels = [{"id": "42", "correct": True}, {"id": "301", "correct": False}]
    return {
        "qrels": write(tmp_path / "qrels.txt", QRELS),
        "run": write(tmp_path / "run.txt", RUN),
        "labels": write_lines(tmp_path / "labels.jsonl", labels),
    }


FORMS: dict[str, tuple[str, Any, Any]] = {
    "gzip": (".gz", gzip.compress(QRELS.encode()), gzip.compress(RUN.encode())),
    "crlf-and-blank": ("", "\r\n" + QRELS.replace("\n", "\r\n") + "\n  \n", RUN),
    "byte-order-mark": ("", "\ufeff" + QRELS, "\ufeff" + RUN),
    "comments": ("", "# judged by hand\n" + QRELS, "  # by BM25\n" + RUN + "#end\n"),
    "vt-ff-and-lone-cr": (
        "",
        QRELS.replace(" ", "\v", 1).replace(" ", "\f", 1),
        RUN.replace(" ", "\r", 1).replace(" ", "\t", 1),
    ),
}


@pytest.mark.parametrize("form", FORMS)
def test_the_same_files_in_another_form_give_the_same_records(
    tmp_path: Path, form: str
) -> None:
    suffix, qrels, run = FORMS[form]
    paths = write(tmp_path / f"q{suffix}", qrels), write(tmp_path / f"r{suffix}", run)
    assert imported(*paths, k=3) == RECORDS


@pytest.mark.parametrize("seed", range(3))
def test_rank_and_precision_at_k_are_trec_evals_on_ties(
    tmp_path: Path, seed: int
) -> None:
    """Each document's rank (judged alone relevant, its reciprocal rank is
    1/rank) and the relevant in the top k (P@k) at each --min-rel, as trec_eval's."""
    rng = random.Random(seed)
    pool = [f"D{n}" for n in range(1, 25)] + ["d1", "D01", "Ä", "a-b", "Z"]
    run: dict[str, dict[str, float]] = {}
    for query in range(40):
        for doc in rng.sample(pool, rng.randint(1, len(pool))):
            run.setdefault(f"q{query}", {})[doc] = rng.choice([0.0, -0.0, 0.5, 1.0])
    lines = [
        f"{q} Q0 {d} 1 {s!r} tag\n" for q, docs in run.items() for d, s in docs.items()
    ]
    ranked = write(tmp_path / "run", "".join(lines))
    alone = write(tmp_path / "alone", "".join(f"{query} 0 D1 0\n" for query in run))
    one_each = {f"{q}|{d}": {d: 1} for q, docs in run.items() for d in docs}
    copied = {f"{q}|{d}": docs for q, docs in run.items() for d in docs}
    calc = ir_measures.pytrec_eval.iter_calc
    ranks = {
        m.query_id: round(1 / m.value) for m in calc([ir_measures.RR], one_each, copied)
    }
    for record in imported(alone, ranked, k=100):
        query, ours = record["id"], record["input"]["context"]
        assert [ranks[f"{query}|{doc}"] for doc in ours] == [*range(1, len(ours) + 1)]
    judged = {
        q: {d: rng.choice([-1, 0, 1, 2, 3]) for d in docs} for q, docs in run.items()
    }
    lines = [f"{q} 0 {d} {r}\n" for q, docs in judged.items() for d, r in docs.items()]
    qrels = write(tmp_path / "qrels", "".join(lines))
    for k, min_rel in [(1, 1), (3, 2), (10, 3)]:
        measure = ir_measures.P(rel=min_rel) @ k
        expected = {
            m.query_id: round(m.value * k) for m in calc([measure], judged, run)
        }
        for record in imported(qrels, ranked, k=k, min_rel=min_rel):
            found = set(record["input"]["required"]) & set(record["input"]["context"])
            assert len(found) == expected[record["id"]], (record, k, min_rel)


def test_queries_in_one_file_only_are_refused_by_name(tmp_path: Path) -> None:
    extra = "".join(f"x{n} 0 D1 1\n" for n in range(25))
    qrels = write(tmp_path / "qrels", QRELS + extra)
    run = write(tmp_path / "run", RUN + "55 Q0 D1 1 1.0 sys\n")
    said = {}
    for complete in (False, True):
        with pytest.raises(ImportRefused) as caught:
            imported(qrels, run, k=3, complete=complete)
        said[complete] = str(caught.value)
        assert f'1 query in {run} but not in {qrels}: "55" (line 11)' in said[complete]
    # Under -c, a query only the run has is still refused, and -c not offered.
    assert "25 queries" not in said[True] and "pass -c" not in said[True]
    assert said[False].startswith(f"25 queries in {qrels} but not in {run}: ")
    assert '"x9" (line 17) and 15 more; 1 query in' in said[False]
    assert "or pass -c to import a judged query the run lacks" in said[False]


@pytest.mark.parametrize(
    ("which", "text", "expected"),
    [
        (
            "qrels",
            "42 0 D1\n",
            "line 1: expected 4 fields (query_id iteration doc_id relevance), "
            'found 3 in "42 0 D1"',
        ),
        ("qrels", "42 Q0 D1 1 2.5 sys\n", "6 fields is a run line: are --qrels and"),
        ("run", "42 0 D1 1\n", "4 fields is a qrels line: are --qrels and --run swap"),
        ("run", "q1 Q0 D1 x 1 2.0 tag\n", 'found 7 in "q1 Q0 D1 x 1 2.0 tag"'),
        (
            "qrels",
            "4 0 D 1\n4 0 E 0\n4 0 D 2\n",
            'line 3: document "D" of query "4" is already judged on line 1',
        ),
        (
            "run",
            "4 Q0 D 1 1 s\n4 Q0 D 2 0 s\n",
            'line 2: document "D" of query "4" is already ranked on line 1',
        ),
        ("qrels", b"42 0 D1 1\n42 0 D\xe92 1\n", "line 2: not valid UTF-8 text"),
        ("run.txt", gzip.compress(RUN.encode()), "it looks gzipped: name it .gz"),
        ("run.gz", RUN, "cannot be read as gzip"),
        ("qrels", "\n  \n\t\n", "holds no judgements"),
        ("run", "", "holds no ranked documents"),
        # Python would split at these, or C cut the field at NUL: refused.
        ("run", "q1 Q0 D\x00 1 3.0 t\n", 'line 1: field 3 (doc_id) "D\\u0000" holds'),
    ]
    + [
        ("run", f"q1 Q0 D1{mark}x 1 3.0 tag\n", f"holds U+{ord(mark):04X}, a space to")
        for mark in "\u2003\u00a0\u3000\u0085\x1c\u2028"
    ],
)
def test_a_malformed_file_is_named_by_file_and_line(
    tmp_path: Path, which: str, text: str | bytes, expected: str
) -> None:
    path = write(tmp_path / which, text)
    qrels, run = "q1 0 D1 1\n", "q1 Q0 D1 1 1.0 t\n"
    other = write(tmp_path / "other", run if which == "qrels" else qrels)
    with pytest.raises(InputFileError) as caught:
        imported(*((path, other) if which == "qrels" else (other, path)), k=100)
    assert str(caught.value).startswith(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [{"id": "42", "correct": True}, {"id": "nope", "correct": False}],
            'labels.jsonl: 1 label names no query of {qrels}: "nope" (line 2)',
        ),
        ([{"id": 42, "correct": True}], '(line 1); query ids are text, so write "42"'),
        (
            [{"id": "42", "epoch": 2, "correct": True}],
            "labels.jsonl, line 1: id \"42\" has an 'epoch' (2); an imported "
            "run is one record with one label",
        ),
        ([], "holds no labels"),
    ],
)
def test_labels_that_cannot_label_the_import_are_refused(
    files: dict[str, str], tmp_path: Path, lines: list[Any], expected: str
) -> None:
    labels = write_lines(tmp_path / "labels.jsonl", lines)
    with pytest.raises(LabelsRefused) as caught:
        imported(files["qrels"], files["run"], k=3, labels_path=labels)
    assert expected.format(qrels=files["qrels"]) in str(caught.value)


# The C library trec_eval reads numbers with; Python sets no LC_NUMERIC, so
# its point is ".", as in the "C" locale trec_eval runs in.
LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
LIBC.strtod.restype = ctypes.c_double
LIBC.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
LIBC.strtol.restype = ctypes.c_long
LIBC.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]


def c_reads_whole(function: str, text: str) -> tuple[bool, float]:
    """Whether libc's strtod (or strtol base 10, atol) reads all `text`, and to what."""
    data, end = text.encode(), ctypes.c_char_p()
    if function == "strtod":
        value: float = LIBC.strtod(data, ctypes.byref(end))
    else:
        value = LIBC.strtol(data, ctypes.byref(end), 10)
    start = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    consumed = (ctypes.cast(end, ctypes.c_void_p).value or 0) - (start or 0)
    return bool(data) and consumed == len(data), value


@pytest.fixture(scope="module")
def numbers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("numbers")


def read_number(directory: Path, function: str, text: str) -> float:
    """`text` as the importer reads a relevance (strtol) or a score (strtod)."""
    relevance, score = (text, "1") if function == "strtol" else ("1", text)
    qrels = write(directory / "qrels", f"q 0 D {relevance}\n")
    imported(qrels, write(directory / "run", f"q Q0 D 1 {score} t\n"), k=1)
    return int(text) if function == "strtol" else float(text)  # as the importer


# Read where C and Python read alike; else refused, each a deviation from
# trec_eval listed in docs/import-trec.md.
@pytest.mark.parametrize(
    ("function", "text", "read"),
    [("strtol", t, True) for t in ["1", "-1", "+1", "007", "-0", "12"]]
    + [("strtod", t, True) for t in ["-2.5", "-.5", "5.", "1e+3", "1E-3", "1e999"]]
    + [("strtod", t, True) for t in ["+1", "inf", "-Infinity", "4.9e-325"]]
    + [("strtol", t, False) for t in ["1e3", "1.5", "0x1", "1_0", "3abc", "\u0663"]]
    + [("strtol", t, False) for t in ["\uff11", "+", "1-", "99999999999999999999"]]
    + [("strtod", t, False) for t in ["nan", "NAN(abc)", "0x1p3", "1_000", "3abc"]]
    + [("strtod", t, False) for t in ["\u0663", "1,5", ".", "e5", "1e", "\u0131nf"]],
)
def test_a_number_is_read_as_c_reads_it_or_refused(
    numbers: Path, function: str, text: str, read: bool
) -> None:
    if read:
        assert c_reads_whole(function, text) == (
            True,
            read_number(numbers, function, text),
        )
        return
    with pytest.raises(InputFileError) as caught:
        read_number(numbers, function, text)
    file, field = (
        ("run", "5 (score)") if function == "strtod" else ("qrels", "4 (relevance)")
    )
    form = "a number" if function == "strtod" else "an integer"
    shown = json.dumps(text, ensure_ascii=False)
    said = f"{numbers / file}, line 1: field {field} {shown} is not {form} that "
    assert str(caught.value).startswith(said + "trec_eval's")
    assert caught.value.field == field.split("(")[1][:-1]


@settings(max_examples=1_000)
@given(
    st.text(
        st.sampled_from(list("0123456789+-.eE_xXpPinfINFaA()\u0663\uff11,\u0131")),
        max_size=12,
    )
)
def test_every_accepted_number_is_one_c_reads_whole_to_the_same_value(
    numbers: Path, text: str
) -> None:
    for function in ("strtod", "strtol"):
        try:
            ours = read_number(numbers, function, text)
        except InputFileError:
            continue
        assert c_reads_whole(function, text) == (True, ours), (function, text)


def test_fields_split_at_c_isspace() -> None:
    LIBC.isspace.restype = ctypes.c_int
    assert set(C_SPACE) == {chr(byte) for byte in range(128) if LIBC.isspace(byte)}


def test_the_command_writes_the_records_and_notes_without_ir_measures(
    files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read with trec_eval's grammar, not ir-measures' readers; -c imports a judged
    query the run lacks as retrieving nothing, as trec_eval -c: R@k 0."""
    monkeypatch.setitem(sys.modules, "ir_measures", None)
    base = ["import", "trec", "--qrels", files["qrels"], "--run", files["run"]]
    result = run_tracegrade(*base, "--k", "3", cwd=tmp_path)
    assert [json.loads(line) for line in result.stdout.splitlines()] == RECORDS
    assert result.stderr == (
        "note: 2 of 3 queries have required documents and no label (no --labels "
        "given); they score answer-label until labelled\n"
    )
    run = write(tmp_path / "short.run", "42 Q0 D1 1 1.0 s\n")
    base[-1] = run
    options = ["-k", "3", "-c", "--min-rel", "0", "--labels", files["labels"]]
    result = run_tracegrade(*base, *options, cwd=tmp_path)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["input"]["context"] for record in records] == [["D1"], [], []]
    # At --min-rel 0 a judgement of 0 is relevant, a negative one never.
    required = [record["input"]["required"] for record in records]
    assert required == [["D1", "D2", "D3"], ["D5", "D6"], ["D7"]]
    correct = [record["input"].get("correct") for record in records]
    assert correct == [True, False, None]
    assert result.stderr == (
        f"note: 2 of 3 queries judged in {files['qrels']} are not in {run}; "
        'imported with an empty context (-c): "301", "7"\n'
        "note: 1 of 3 queries have required documents and no label in "
        f"{files['labels']}; they score answer-label until labelled\n"
    )
    assert stage_recall(records[1]["input"]) == 0.0
    usage = run_tracegrade(*base, "--k", "0", cwd=tmp_path)
    assert (usage.returncode, usage.stdout) == (2, "")
    assert "Invalid value for '-k' / '--k': 0 is not in the range x>=1" in usage.stderr
