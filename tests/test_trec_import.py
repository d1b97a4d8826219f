"""`tracegrade import trec`: TREC qrels and a run as stage-diagnosis records.

The ranking is checked against trec_eval's own code (ir-measures' pytrec_eval)
on runs full of ties, the number grammar against the C library trec_eval reads
with, and the output fed to `tracegrade score`, `check` and `inspect eval`.
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
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.log import list_eval_logs, read_eval_log

from tests.commands import run_inspect, run_tracegrade, tracegrade_shell
from tests.support import write_lines
from tracegrade.core import stage_recall
from tracegrade.importers.common import ImportRefused, InputFileError, LabelsRefused
from tracegrade.importers.trec import C_SPACE
from tracegrade.importers.trec import import_trec as import_trec_files


def import_trec(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return list(import_trec_files(*args, **kwargs))


# Graded judgements, queries in an order sorted neither as text nor as numbers.
QRELS = (
    "42 0 D1 2\n42 0 D2 1\n42 0 D3 0\n42 0 D4 -1\n301 0 D5 3\n301 0 D6 1\n7 0 D7 0\n"
)
# Ties, a rank column that contradicts the scores (trec_eval ignores it),
# queries interleaved.
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
LABELS = [{"id": "42", "correct": True}, {"id": "301", "correct": False}]
# Each query's whole ranking, trec_eval's: ties by document id descending.
RANKED = {
    "42": ["D3", "D9", "D10", "D1", "D2"],
    "301": ["D5", "D6", "D8", "D11"],
    "7": ["D7"],
}
REQUIRED = {"42": ["D1", "D2"], "301": ["D5", "D6"], "7": []}


def records_at(k: int, required: dict[str, list[str]] = REQUIRED) -> list[Any]:
    return [
        {
            "id": query,
            "input": {
                "required": required[query],
                "context": ranked[:k],
                "steps": [{"name": "run", "ids": ranked}],
            },
        }
        for query, ranked in RANKED.items()
    ]


LABELLED_RESULTS = {
    "42": {"stage": "retrieval", "missing": ["D1", "D2"]},
    "301": {"stage": "generation", "missing": []},
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


def read_one(tmp_path: Path, which: str, text: str | bytes) -> list[dict[str, Any]]:
    """Import `text` as the qrels (or run) beside a one-line run (or qrels)."""
    path = write(tmp_path / which, text)
    if which == "qrels":
        return import_trec(path, write(tmp_path / "o", "q1 Q0 D1 1 1.0 t\n"), k=100)
    return import_trec(write(tmp_path / "o", "q1 0 D1 1\n"), path, k=100)


def import_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tracegrade("import", "trec", *args, cwd=Path.cwd())


def output_records(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# --- the records ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("min_rel", "required"),
    [
        (1, REQUIRED),  # judged 2 is relevant at 1; a negative judgement never is
        (2, {"42": ["D1"], "301": ["D5"], "7": []}),
        (0, {"42": ["D1", "D2", "D3"], "301": ["D5", "D6"], "7": ["D7"]}),
    ],
)
@pytest.mark.parametrize("k", [1, 3, 100])
def test_records_follow_trec_eval_relevance_ranking_and_k(
    files: dict[str, str], k: int, min_rel: int, required: dict[str, list[str]]
) -> None:
    records = import_trec(files["qrels"], files["run"], k=k, min_rel=min_rel)
    assert records == records_at(k, required)


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
    "comments": (
        "",
        "# judged by hand\n" + QRELS,
        "  # made by BM25\n" + RUN + "#end\n",
    ),
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
    assert import_trec(*paths, k=3) == records_at(3)


# --- the ranking, against trec_eval's own code -------------------------------


def generated_run(seed: int) -> tuple[str, dict[str, dict[str, float]]]:
    """A run file full of ties, and the same run as ir-measures takes it."""
    rng = random.Random(seed)
    pool = [f"D{n}" for n in range(1, 25)] + ["d1", "D01", "Ä", "a-b", "Z"]
    scores = [0.0, -0.0, 0.5, 1.0, 1.5, -2.0, 3.25]
    lines, run = [], {}
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
    qrels = {f"{query}|{doc}": {doc: 1} for query, docs in run.items() for doc in docs}
    copied = {f"{query}|{doc}": docs for query, docs in run.items() for doc in docs}
    ranks = {
        metric.query_id: round(1 / metric.value)
        for metric in ir_measures.pytrec_eval.iter_calc([ir_measures.RR], qrels, copied)
    }
    for record in records:
        query, ours = record["id"], record["input"]["context"]
        assert [ranks[f"{query}|{doc}"] for doc in ours] == list(
            range(1, len(run[query]) + 1)
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
    judged = {query: docs for query, docs in judged.items() if docs}
    qrels = write(
        tmp_path / "qrels",
        "".join(
            f"{q} 0 {d} {r}\n" for q, docs in judged.items() for d, r in docs.items()
        ),
    )
    ranked = write(
        tmp_path / "run",
        "".join(t for t in text.splitlines(True) if t.split()[0] in judged),
    )
    for k in (1, 3, 10):
        for min_rel in (1, 2, 3):
            expected = {
                metric.query_id: round(metric.value * k)
                for metric in ir_measures.pytrec_eval.iter_calc(
                    [ir_measures.P(rel=min_rel) @ k],
                    judged,
                    {q: run[q] for q in judged},
                )
            }
            for record in import_trec(qrels, ranked, k=k, min_rel=min_rel):
                found = set(record["input"]["required"]) & set(
                    record["input"]["context"]
                )
                assert len(found) == expected[record["id"]], (record, k, min_rel)


# --- refusals -------------------------------------------------------------------


def test_queries_in_one_file_only_are_refused_by_name(tmp_path: Path) -> None:
    extra = "".join(f"x{n} 0 D1 1\n" for n in range(25))
    qrels = write(tmp_path / "qrels", QRELS + extra)
    run = write(tmp_path / "run", RUN + "55 Q0 D1 1 1.0 sys\n")
    said = {}
    for complete in (False, True):
        with pytest.raises(ImportRefused) as caught:
            import_trec(qrels, run, k=3, complete=complete)
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
        (
            "run",
            "42 0 D1 1\n",
            "4 fields is a qrels line: are --qrels and --run swapped?",
        ),
        ("run", "q1 Q0 D1 x 1 2.0 tag\n", 'found 7 in "q1 Q0 D1 x 1 2.0 tag"'),
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
        (
            "qrels",
            b"42 0 D1 1\n42 0 D\xe92 1\n",
            "line 2: not valid UTF-8 text (byte 0xE9 at column 7)",
        ),
        ("run.txt", gzip.compress(RUN.encode()), "it looks gzipped: name it .gz"),
        ("run.gz", RUN, "cannot be read as gzip"),
        ("qrels", "\n  \n\t\n", "holds no judgements"),
        ("run", "", "holds no ranked documents"),
    ],
)
def test_a_malformed_file_is_named_by_file_and_line(
    tmp_path: Path, which: str, text: str | bytes, expected: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, which, text)
    assert str(caught.value).startswith(f"{tmp_path / which}")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [{"id": "42", "correct": True}, {"id": "nope", "correct": False}],
            'labels.jsonl: 1 label names no query of {qrels}: "nope" (line 2)',
        ),
        (
            [{"id": 42, "correct": True}],
            '(line 1); query ids are text, so write "42", not 42',
        ),
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
        import_trec(files["qrels"], files["run"], k=3, labels_path=labels)
    assert expected.format(qrels=files["qrels"]) in str(caught.value)


# --- the line grammar: Python's, refused where trec_eval's C differs ----------

# The C library trec_eval reads numbers with; Python sets no LC_NUMERIC, so
# its point is ".", as in the "C" locale trec_eval runs in.
LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
LIBC.strtod.restype = ctypes.c_double
LIBC.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
LIBC.strtol.restype = ctypes.c_long
LIBC.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]


def c_reads_whole(function: str, text: str) -> tuple[bool, float]:
    """Whether libc's strtod (or strtol, base 10, which atol is) reads the
    whole of `text`, and the value it reads."""
    data = text.encode()
    end = ctypes.c_char_p()
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
    run = write(directory / "run", f"q Q0 D 1 {score} t\n")
    import_trec(qrels, run, k=1)  # refused, or read with int() or float()
    return int(text) if function == "strtol" else float(text)


@pytest.mark.parametrize(
    ("function", "text"),
    [("strtol", t) for t in ["1", "-1", "+1", "007", "-0", "12"]]
    + [("strtod", t) for t in ["-2.5", "-.5", "5.", "1e+3", "1E-3", "1e999", "+1"]]
    + [("strtod", t) for t in ["inf", "-Infinity", "4.9e-325"]],
)
def test_a_number_c_and_python_read_alike_is_read(
    numbers: Path, function: str, text: str
) -> None:
    assert c_reads_whole(function, text) == (True, read_number(numbers, function, text))


# Each a deviation from trec_eval listed in docs/import-trec.md.
@pytest.mark.parametrize(
    ("function", "text"),
    [("strtol", t) for t in ["1e3", "1.5", "0x1", "1_0", "3abc", "\u0663", "\uff11"]]
    + [("strtol", t) for t in ["+", "1-", "99999999999999999999"]]
    + [("strtod", t) for t in ["nan", "NAN(abc)", "0x1p3", "1_000", "3abc"]]
    + [("strtod", t) for t in ["\u0663", "1,5", ".", "e5", "1e", "\u0131nf"]],
)
def test_a_number_c_or_python_reads_otherwise_is_refused(
    numbers: Path, function: str, text: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_number(numbers, function, text)
    name, form = (
        ("score", "a number") if function == "strtod" else ("relevance", "an integer")
    )
    position = 5 if name == "score" else 4
    shown = json.dumps(text, ensure_ascii=False)
    file = numbers / ("run" if name == "score" else "qrels")
    assert str(caught.value).startswith(
        f"{file}, line 1: field {position} ({name}) {shown} is not {form} that "
        "trec_eval's"
    )
    assert caught.value.field == name


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


@pytest.mark.parametrize(
    ("mark", "said"),
    [
        (space, f"holds U+{ord(space):04X}, a space to Python's str.split()")
        for space in "\u2003\u00a0\u3000\u0085\x1c\u2028"
    ]
    + [("\x00", "holds a NUL character")],
)
def test_a_field_python_would_split_or_c_would_cut_is_refused(
    tmp_path: Path, mark: str, said: str
) -> None:
    with pytest.raises(InputFileError) as caught:
        read_one(tmp_path, "run", f"q1 Q0 D1{mark}x 1 3.0 tag\n")
    assert (caught.value.line, caught.value.field) == (1, "doc_id")
    assert str(caught.value).startswith(
        f"{tmp_path / 'run'}, line 1: field 3 (doc_id) "
    )
    assert said in str(caught.value)


# --- the command ------------------------------------------------------------------


def test_complete_imports_a_judged_query_the_run_lacks_as_retrieving_nothing(
    files: dict[str, str], tmp_path: Path
) -> None:
    """As trec_eval -c counts it: R@k of an empty ranking, 0."""
    run = write(tmp_path / "short.run", "42 Q0 D1 1 1.0 s\n")
    base = ["--qrels", files["qrels"], "--run", run, "--k", "3"]
    for flag in ("-c", "--complete"):
        result = import_cli(*base, flag, "--labels", files["labels"])
        records = output_records(result)
        assert [record["input"]["context"] for record in records] == [["D1"], [], []]
        assert result.stderr == (
            f"note: 2 of 3 queries judged in {files['qrels']} are not in {run}; "
            'imported with an empty context (-c): "301", "7"\n'
        )
    (metric,) = ir_measures.pytrec_eval.iter_calc(
        [ir_measures.R @ 3], {"301": {"D5": 1}}, {"301": {}}
    )
    assert stage_recall(records[1]["input"]) == metric.value == 0.0


def test_the_command_writes_the_records_without_ir_measures(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files are read with trec_eval's grammar, not ir-measures' readers."""
    monkeypatch.setitem(sys.modules, "ir_measures", None)
    base = ["--qrels", files["qrels"], "--run", files["run"]]
    result = import_cli(*base, "--k", "3")
    assert output_records(result) == records_at(3)
    assert result.stderr == (
        "note: 2 of 3 queries have required documents and no label (no --labels "
        "given); they score answer-label until labelled\n"
    )
    result = import_cli(*base, "-k", "2", "--min-rel", "2", "--labels", files["labels"])
    expected = records_at(2, {"42": ["D1"], "301": ["D5"], "7": []})
    expected[0]["input"]["correct"], expected[1]["input"]["correct"] = True, False
    assert output_records(result) == expected
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--k", "0"], "Invalid value for '-k' / '--k': 0 is not in the range x>=1"),
        ([], "Missing option '-k' / '--k'"),
    ],
)
def test_usage_errors_exit_2(
    files: dict[str, str], args: list[str], expected: str
) -> None:
    result = import_cli("--qrels", files["qrels"], "--run", files["run"], *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert expected in result.stderr


# --- end to end: into score, check and inspect eval ---------------------------


def test_the_import_pipes_into_score_check_and_inspect_eval(
    files: dict[str, str], tmp_path: Path
) -> None:
    """A real pipe, a fresh `tracegrade` on each side; then the file."""
    imported = ["import", "trec", "--qrels", files["qrels"], "--run", files["run"]]
    imported += ["--k", "3", "--labels", files["labels"]]
    scored = ["score", "stage_diagnosis", "/dev/stdin", "--log-dir", "logs"]
    scored += ["--out", "results.jsonl", "--no-progress"]
    result = tracegrade_shell(
        f"tracegrade {shlex.join(imported)} | tracegrade {shlex.join(scored)}", tmp_path
    )
    assert result.returncode == 0, result.stderr
    entries = map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())
    assert {entry["id"]: entry["result"] for entry in entries} == LABELLED_RESULTS
    out = tmp_path / "runs.jsonl"
    assert run_tracegrade(*imported, "-o", str(out), cwd=tmp_path).returncode == 0
    checked = run_tracegrade("check", "stage_diagnosis", str(out), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All 3 records would be scored." in checked.stdout
    result = run_inspect(
        *("eval", "tracegrade/stage_diagnosis", "-T", f"dataset={out}"),
        *("--log-dir", "inspect-logs"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    (info,) = list_eval_logs(str(tmp_path / "inspect-logs"))
    log = read_eval_log(info.name)
    assert log.status == "success", log.error
    assert {
        sample.id: ((sample.scores or {})["stage_diagnosis"].metadata or {})["result"]
        for sample in log.samples or []
    } == LABELLED_RESULTS
