"""Importers stream: a file ten times larger costs little more memory (ragas holds
one sample, openinference one trace and an index of where each trace's spans are);
the large after the small in one fresh interpreter, its peak from the kernel."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import peaks_in_one_interpreter

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB")

SMALL_MB = 2
LARGE_MB = 20
TEXT = "x" * 2_000
"""Each record's long text: a retrieved passage, a question, an answer."""


def _write_ragas(path: Path, megabytes: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        number = 0
        while out.tell() < megabytes << 20:
            row = {
                "user_input": f"question {number} {TEXT}",
                "retrieved_context_ids": [f"D{number}", f"E{number}"],
                "reference_context_ids": [f"D{number}"],
                "response": f"answer {number} {TEXT}",
            }
            out.write(json.dumps(row) + "\n")
            number += 1


def _write_spans(path: Path, gold: Path, megabytes: int) -> None:
    """Traces of a root holding the key, question and answer, a retriever and
    an LLM, each trace's spans on three lines, each line holding spans of
    three traces, as a batch exporter spreads them."""

    def span(trace: int, n: int, kind: str, **attributes: str) -> Any:
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

    def trace_spans(trace: int) -> list[Any]:
        root = {"example.id": f"ex-{trace}", "input.value": f"question {trace} {TEXT}"}
        found = {"retrieval.documents.0.document.id": f"D{trace}"}
        found["retrieval.documents.0.document.content"] = TEXT
        return [
            span(trace, 0, "CHAIN", **root, **{"output.value": f"answer {trace}"}),
            span(trace, 1, "RETRIEVER", **found),
            span(trace, 2, "LLM", **{"output.value": TEXT}),
        ]

    with path.open("w", encoding="utf-8") as out, gold.open("w") as keys:
        trace, pending = 0, []
        while out.tell() < megabytes << 20 or pending:
            if out.tell() < megabytes << 20:
                pending.append(trace_spans(trace))
                keys.write(json.dumps({"key": f"ex-{trace}", "required": ["D1"]}))
                keys.write("\n")
                trace += 1
            line = [spans.pop(0) for spans in pending]
            pending = [spans for spans in pending if spans]
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
    """Each input imported small and large, checked to give records (the
    output holds at least an eighth of what was read)."""
    write, args, margin = IMPORTS[importer]
    for megabytes in (SMALL_MB, LARGE_MB):
        (tmp_path / str(megabytes)).mkdir()
        write(tmp_path / str(megabytes), megabytes)
    argv = ("import", importer, *args, "--output", "out.jsonl")
    small, large = peaks_in_one_interpreter(
        [(argv, tmp_path / str(size)) for size in (SMALL_MB, LARGE_MB)], tmp_path
    )
    peaks = {SMALL_MB: small.peak_mib, LARGE_MB: large.peak_mib}
    for megabytes, done in zip((SMALL_MB, LARGE_MB), (small, large), strict=True):
        assert done.returncode == 0, done.stderr
        out = tmp_path / str(megabytes) / "out.jsonl"
        assert out.stat().st_size > megabytes << 17
    assert peaks[LARGE_MB] <= peaks[SMALL_MB] + margin, peaks
