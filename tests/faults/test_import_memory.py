"""Importers stream: an input ten times larger costs little more memory; the large
after the small in one fresh interpreter, its peak from the kernel."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from tests.commands import peaks_in_one_interpreter

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB")

SMALL_MB, LARGE_MB = 2, 20
TEXT = "x" * 2_000  # each record's long text: a passage, a question, an answer
DOC = "retrieval.documents.0.document"


def _write_ragas(path: Path, megabytes: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in itertools.count():
            if out.tell() >= megabytes << 20:
                break
            ids = {"retrieved_context_ids": [f"D{n}", f"E{n}"]}
            ids["reference_context_ids"] = [f"D{n}"]
            row = {"user_input": f"question {n} {TEXT}", "response": f"{n} {TEXT}"}
            out.write(json.dumps(row | ids) + "\n")


def _write_spans(path: Path, gold: Path, megabytes: int) -> None:
    """Traces of a root (key, question, answer), a retriever and an LLM; three
    traces' spans spread over three lines, as a batch exporter spreads them."""

    def span(trace: int, n: int) -> dict[str, object]:
        kind, attributes = [
            ("CHAIN", {"example.id": f"ex-{trace}", "input.value": f"q {TEXT}"}),
            ("RETRIEVER", {f"{DOC}.id": f"D{trace}", f"{DOC}.content": TEXT}),
            ("LLM", {"output.value": TEXT}),
        ][n]
        attributes = {"openinference.span.kind": kind, **attributes}
        return {
            "traceId": f"{trace + 1:032x}",
            "spanId": f"{3 * trace + n + 1:016x}",
            "parentSpanId": f"{3 * trace + 1:016x}" if n else "",
            "startTimeUnixNano": str(1_000 + n),
            "attributes": [
                {"key": key, "value": {"stringValue": value}}
                for key, value in attributes.items()
            ],
        }

    with path.open("w", encoding="utf-8") as out, gold.open("w") as keys:
        for first in itertools.count(0, 3):
            if out.tell() >= megabytes << 20:
                break
            for trace in range(first, first + 3):
                keys.write(json.dumps({"key": f"ex-{trace}", "required": ["D1"]}))
                keys.write("\n")
            for n in range(3):
                line = [span(trace, n) for trace in range(first, first + 3)]
                request = {"resourceSpans": [{"scopeSpans": [{"spans": line}]}]}
                out.write(json.dumps(request) + "\n")


IMPORTS = {
    # Records held whole, the 18 MB more raise the peak by 22 MiB; streamed, by
    # nothing.
    "ragas": (lambda d, size: _write_ragas(d / "d.jsonl", size), ["d.jsonl"], 6),
    # What grows is kept per trace (where its spans are, their ids, its gold
    # line), under 2 MiB here; spans held whole would add 30 MiB.
    "openinference": (
        lambda d, size: _write_spans(d / "spans.jsonl", d / "gold.jsonl", size),
        ["spans.jsonl", "--gold", "gold.jsonl", "--key", "example.id"],
        8,
    ),
}


@pytest.mark.parametrize("importer", IMPORTS)
def test_memory_does_not_grow_with_the_input(tmp_path: Path, importer: str) -> None:
    """Each output holds at least an eighth of what was read: records were made."""
    write, args, margin = IMPORTS[importer]
    runs = []
    for megabytes in (SMALL_MB, LARGE_MB):
        (tmp_path / str(megabytes)).mkdir()
        write(tmp_path / str(megabytes), megabytes)
        argv = ("import", importer, *args, "--output", "out.jsonl")
        runs.append((argv, tmp_path / str(megabytes)))
    small, large = peaks_in_one_interpreter(runs, tmp_path)
    for (_, folder), done in zip(runs, (small, large), strict=True):
        assert done.returncode == 0, done.stderr
        assert (folder / "out.jsonl").stat().st_size > int(folder.name) << 17
    assert large.peak_mib <= small.peak_mib + margin, (small.peak_mib, large.peak_mib)
