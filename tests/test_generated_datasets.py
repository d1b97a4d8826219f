"""The packaged synthetic datasets: reproducible, with unambiguous answer keys,
and `required` documents that hold the facts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "src" / "tracegrade" / "data"

# An ID counts only as a whole run of these characters, so "TC-1" is not found
# inside "TC-10" and "INC-2093" not inside "INC-20931".
ID_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def read_jsonl(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="ascii") as handle:
        return [json.loads(line) for line in handle]


def test_extraction_generator_reproduces_the_packaged_file(tmp_path: Path) -> None:
    out = tmp_path / "documents.jsonl"
    script = REPO / "scripts" / "make_extraction_documents.py"
    subprocess.run(
        [sys.executable, str(script), "--out", str(out)],
        check=True,
        capture_output=True,
        cwd=REPO,
    )
    assert out.read_bytes() == (DATA / "extraction_documents.jsonl").read_bytes()


def test_extraction_documents_have_unambiguous_answer_keys() -> None:
    """Each source ID is one token found once in the text, in source order,
    and the source is not already sorted; every broken promise is listed."""
    problems = []
    for document in read_jsonl("extraction_documents.jsonl"):
        source: list[str] = document["source"]
        tokens = ID_TOKEN.findall(document["text"])
        found = [
            f"{identifier!r} occurs {tokens.count(identifier)} times"
            for identifier in source
            if tokens.count(identifier) != 1 or not ID_TOKEN.fullmatch(identifier)
        ]
        if source in (sorted(source), sorted(source, reverse=True)):
            found.append("source is sorted")
        if len(set(source)) != len(source):
            found.append("repeated ID")
        if not found and [tokens.index(i) for i in source] != sorted(
            tokens.index(i) for i in source
        ):
            found.append("text order differs from source")
        problems += [f"{document['id']}: {problem}" for problem in found]
    assert problems == []


def test_rag_questions_require_documents_that_hold_the_facts() -> None:
    texts = {d["id"]: d["text"] for d in read_jsonl("rag_corpus.jsonl")}
    questions = read_jsonl("rag_questions.jsonl")
    assert len({q["id"] for q in questions}) == len(questions) >= 20
    for question in questions:
        required, evidence = question["required"], question["evidence"]
        assert required and list(evidence) == required, question["id"]
        assert len(set(required)) == len(required), question["id"]
        for doc_id, quote in evidence.items():
            assert quote in texts[doc_id], (question["id"], doc_id, quote)
        assert isinstance(question["answer"], str) and question["answer"]
