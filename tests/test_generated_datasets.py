"""The packaged synthetic datasets: reproducible, with unambiguous answer keys,
tempting a model to tidy, and `required` documents that hold the facts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "src" / "tracegrade" / "data"
SCRIPTS = REPO / "scripts"

# An ID counts only as a whole run of these characters, so "TC-1" is not found
# inside "TC-10" and "INC-2093" not inside "INC-20931".
ID_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
MIN_IDS, MAX_IDS = 3, 40
MAX_LINES = 60


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="ascii") as handle:
        return [json.loads(line) for line in handle]


def run_script(name: str, *args: str | Path) -> None:
    subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)],
        check=True,
        capture_output=True,
        cwd=REPO,
    )


def is_look_alike(a: str, b: str) -> bool:
    """Same length, and one character changed or two neighbours swapped."""
    if len(a) != len(b) or a == b:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    if len(diff) == 1:
        return True
    return (
        len(diff) == 2
        and diff[1] == diff[0] + 1
        and (a[diff[0]], a[diff[1]]) == (b[diff[1]], b[diff[0]])
    )


def has_look_alikes(ids: list[str]) -> bool:
    return any(is_look_alike(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :])


def natural_key(identifier: str) -> list[tuple[int, str]]:
    return [
        (1, f"{int(part):020d}") if part.isdigit() else (0, part)
        for part in re.split(r"(\d+)", identifier)
    ]


def tempts_sorting(ids: list[str]) -> bool:
    """One move from sorted either way, or in numeric order a string sort breaks."""
    for reverse in (False, True):
        for i in range(len(ids)):
            rest = ids[:i] + ids[i + 1 :]
            if rest == sorted(rest, reverse=reverse):
                return True
    return ids == sorted(ids, key=natural_key) and ids != sorted(ids)


def extraction_problems(documents: list[dict[str, Any]]) -> list[str]:
    """Every broken promise in the documents, so one run reports them all."""
    problems = []
    for document in documents:
        text: str = document["text"]
        source: list[str] = document["source"]
        found = []
        if not MIN_IDS <= len(source) <= MAX_IDS:
            found.append(f"{len(source)} IDs")
        if len(set(source)) != len(source):
            found.append("repeated ID")
        if source in (sorted(source), sorted(source, reverse=True)):
            found.append("source is sorted")
        if len(text.splitlines()) > MAX_LINES:
            found.append(f"{len(text.splitlines())} lines")
        tokens = ID_TOKEN.findall(text)
        for identifier in source:
            if not ID_TOKEN.fullmatch(identifier):
                found.append(f"{identifier!r} is not one token")
            elif tokens.count(identifier) != 1:
                found.append(f"{identifier!r} occurs {tokens.count(identifier)} times")
        if not found:
            positions = [tokens.index(identifier) for identifier in source]
            if positions != sorted(positions):
                found.append("text order differs from source")
        problems += [f"{document['id']}: {problem}" for problem in found]
    return problems


@pytest.fixture(scope="module")
def extraction_documents() -> list[dict[str, Any]]:
    return read_jsonl(DATA / "extraction_documents.jsonl")


@pytest.fixture(scope="module")
def rag_corpus() -> list[dict[str, Any]]:
    return read_jsonl(DATA / "rag_corpus.jsonl")


@pytest.fixture(scope="module")
def rag_questions() -> list[dict[str, Any]]:
    return read_jsonl(DATA / "rag_questions.jsonl")


def test_extraction_generator_reproduces_the_packaged_file(tmp_path: Path) -> None:
    out = tmp_path / "documents.jsonl"
    run_script("make_extraction_documents.py", "--out", out)
    assert out.read_bytes() == (DATA / "extraction_documents.jsonl").read_bytes()


def test_extraction_documents_have_unambiguous_answer_keys(
    extraction_documents: list[dict[str, Any]],
) -> None:
    assert extraction_problems(extraction_documents) == []


def test_extraction_documents_cover_kinds_and_lengths(
    extraction_documents: list[dict[str, Any]],
) -> None:
    assert len(extraction_documents) >= 60
    names = [d["id"] for d in extraction_documents]
    assert len(set(names)) == len(names)
    for document in extraction_documents:
        assert re.fullmatch(rf"{document['kind']}-\d{{3}}", str(document["id"]))
        assert isinstance(document["target"], str) and document["target"]
    assert len({d["kind"] for d in extraction_documents}) >= 6
    lengths = [len(d["source"]) for d in extraction_documents]
    assert min(lengths) == MIN_IDS
    assert max(lengths) == MAX_IDS
    for low, high in [(3, 9), (10, 19), (20, 29), (30, 40)]:
        in_band = sum(low <= n <= high for n in lengths)
        assert in_band >= 8, f"only {in_band} documents with {low}-{high} IDs"


def test_extraction_documents_tempt_a_model_to_tidy(
    extraction_documents: list[dict[str, Any]],
) -> None:
    sources: list[list[str]] = [d["source"] for d in extraction_documents]
    look_alike_kinds = {
        d["kind"] for d in extraction_documents if has_look_alikes(d["source"])
    }
    assert sum(has_look_alikes(s) for s in sources) >= 16
    assert len(look_alike_kinds) >= 4
    assert sum(tempts_sorting(s) for s in sources) >= 12
    # Numbered IDs that run past 9, which a string sort puts before 9.
    assert any(s == sorted(s, key=natural_key) and s != sorted(s) for s in sources)


def test_rag_corpus_is_short_documents_with_unique_ids(
    rag_corpus: list[dict[str, Any]],
) -> None:
    assert len(rag_corpus) >= 40
    ids = [d["id"] for d in rag_corpus]
    assert len(set(ids)) == len(ids)
    for document in rag_corpus:
        assert re.fullmatch(r"DOC-\d{3}", str(document["id"]))
        assert isinstance(document["title"], str) and document["title"]
        text = document["text"]
        assert isinstance(text, str)
        sentences = re.split(r"(?<=[.!?])\s+", text.strip())
        assert 2 <= len(sentences) <= 5, (document["id"], sentences)


def test_rag_questions_require_documents_that_hold_the_facts(
    rag_corpus: list[dict[str, Any]], rag_questions: list[dict[str, Any]]
) -> None:
    texts = {d["id"]: d["text"] for d in rag_corpus}
    assert len(rag_questions) >= 20
    ids = [q["id"] for q in rag_questions]
    assert len(set(ids)) == len(ids)
    for question in rag_questions:
        required, evidence = question["required"], question["evidence"]
        assert isinstance(required, list) and isinstance(evidence, dict)
        assert required, question["id"]
        assert len(set(required)) == len(required), question["id"]
        assert list(evidence) == required, question["id"]
        for doc_id, quote in evidence.items():
            assert doc_id in texts, (question["id"], doc_id)
            assert quote in texts[doc_id], (question["id"], doc_id, quote)
        assert isinstance(question["answer"], str) and question["answer"]
    sizes = [len(q["required"]) for q in rag_questions]
    assert sum(size >= 2 for size in sizes) >= 5
    assert 3 in sizes
    assert 1 in sizes
