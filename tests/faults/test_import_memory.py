"""Importers stream: a file ten times larger costs little more memory.

`import ragas` and `import openinference` hold one sample, or one trace,
at a time (and OpenInference an index of where each trace's spans are),
so their peak grows with the largest record, not with the file (for
OpenInference, with the number of traces by a few hundred bytes each). Each
command runs in a fresh interpreter, its peak taken from the kernel. And a
memory limit met while importing is one line, exit 2, nothing written.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import peak_rss_mib, tracegrade_process
from tests.faults.conftest import assert_no_final_outputs, one_clear_line, snapshot

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


def _span(trace: int, span: int, kind: str, **attributes: str) -> Any:
    attributes = {"openinference.span.kind": kind, **attributes}
    return {
        "traceId": f"{trace + 1:032x}",
        "spanId": f"{span + 1:016x}",
        "parentSpanId": "" if kind == "CHAIN" else f"{3 * trace + 1:016x}",
        "startTimeUnixNano": str(1_000 + span),
        "attributes": [
            {"key": key, "value": {"stringValue": value}}
            for key, value in attributes.items()
        ],
    }


def _trace_spans(trace: int) -> list[Any]:
    """A root holding the key, question and answer; a retriever; an LLM."""
    root = {"example.id": f"ex-{trace}", "input.value": f"question {trace} {TEXT}"}
    found = {
        "retrieval.documents.0.document.id": f"D{trace}",
        "retrieval.documents.0.document.content": TEXT,
    }
    return [
        _span(trace, 3 * trace, "CHAIN", **root, **{"output.value": f"answer {trace}"}),
        _span(trace, 3 * trace + 1, "RETRIEVER", **found),
        _span(trace, 3 * trace + 2, "LLM", **{"output.value": TEXT}),
    ]


def _write_spans(path: Path, gold: Path, megabytes: int) -> None:
    """Each trace's spans on three lines, each line holding spans of three
    traces, as a batch exporter spreads them."""
    with path.open("w", encoding="utf-8") as out, gold.open("w") as keys:
        trace, pending = 0, []
        while out.tell() < megabytes << 20 or pending:
            if out.tell() < megabytes << 20:
                pending.append(_trace_spans(trace))
                keys.write(
                    json.dumps({"key": f"ex-{trace}", "required": ["D1"]}) + "\n"
                )
                trace += 1
            line = [spans.pop(0) for spans in pending]
            pending = [spans for spans in pending if spans]
            request = {"resourceSpans": [{"scopeSpans": [{"spans": line}]}]}
            out.write(json.dumps(request) + "\n")


def _peak(tmp_path: Path, *args: str) -> float:
    return peak_rss_mib("import", *args, "--output", "out.jsonl", cwd=tmp_path)


def _peaks(tmp_path: Path, write: Any, *args: str) -> dict[int, float]:
    """The peaks importing a small and a large input, each checked to give
    records (the output holds at least an eighth of what was read)."""
    peaks = {}
    for megabytes in (SMALL_MB, LARGE_MB):
        directory = tmp_path / str(megabytes)
        directory.mkdir()
        write(directory, megabytes)
        peaks[megabytes] = _peak(directory, *args)
        assert (directory / "out.jsonl").stat().st_size > megabytes << 17
        for name in directory.iterdir():
            name.unlink()  # the machine's disk is shared
    return peaks


def test_ragas_memory_does_not_grow_with_the_dataset(tmp_path: Path) -> None:
    peaks = _peaks(
        tmp_path,
        lambda directory, size: _write_ragas(directory / "d.jsonl", size),
        *("ragas", "d.jsonl"),
    )
    # Its records held whole, the 18 MB more raise the peak by 22 MiB,
    # several times the margin; streamed, by nothing.
    assert peaks[LARGE_MB] <= peaks[SMALL_MB] + 6, peaks


def test_openinference_memory_does_not_grow_with_the_spans(tmp_path: Path) -> None:
    peaks = _peaks(
        tmp_path,
        lambda directory, size: _write_spans(
            directory / "spans.jsonl", directory / "gold.jsonl", size
        ),
        *("openinference", "spans.jsonl", "--gold", "gold.jsonl"),
        *("--key", "example.id"),
    )
    # What grows is what is kept per trace, not per byte: where its spans
    # are and their ids, and its gold line (the gold file is read whole),
    # under 2 MiB here. Its traces' spans held whole, the 18 MB more raise
    # the peak by 30 MiB, several times the margin.
    assert peaks[LARGE_MB] <= peaks[SMALL_MB] + 8, peaks


def test_a_memory_limit_while_importing_is_one_line(tmp_path: Path) -> None:
    """A limit of the address space far below what a record needs (read
    without one, the record peaks at over 200 MiB resident, more than the
    whole address space allowed): the command says it ran out of memory,
    exits 2, and writes nothing. One importer: the import commands share
    their error handling."""
    (tmp_path / "d.jsonl").write_text(
        json.dumps(
            {
                "retrieved_context_ids": ["D1"] * 2_000_000,
                "reference_context_ids": ["D1"],
            }
        )
        + "\n"
    )
    args = ["ragas", "d.jsonl"]
    before = snapshot(tmp_path)
    limit = 128 << 20
    done = tracegrade_process(
        "import",
        *args,
        "--output",
        "out.jsonl",
        cwd=tmp_path,
        rlimits=((resource.RLIMIT_AS, limit, limit),),
    )

    assert done.returncode == 2, done.stderr
    line = one_clear_line(done.stderr)
    assert "out of memory" in line, line
    assert_no_final_outputs(tmp_path, before)
