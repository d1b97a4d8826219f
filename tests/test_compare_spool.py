"""`tracegrade compare` holds no list of changed pairs: structure, not timing.

Checked without measuring memory (which depends on the machine):

- a `SortedSpool` keeps at most `chunk` items in memory, spills the rest
  to disk in sorted runs, and reads them back merged in key order, as
  often as asked, with strings JSON cannot carry plainly (lone
  surrogates, newlines) and integers past 2**53 intact;
- `pair_runs` puts every changed pair and every sample in one run only
  into spools as it finds them: after pairing, no `Change` or `Side`
  object is alive, and each spool's memory is one chunk at most;
- `Comparison.write_json` writes the document in pieces, and what it
  writes is `to_json()`, the lists in order;
- the HTML page and the tables read only the rows they show.

`benchmarks/compare_scale.py` measures the memory itself;
`tests/faults/test_compare_outputs.py` runs the command.
"""

from __future__ import annotations

import gc
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tracegrade.compare.build import compare_logs
from tracegrade.compare.html import render_html
from tracegrade.compare.pairing import (
    STAGE,
    Change,
    Observation,
    Run,
    Side,
    pair_runs,
)
from tracegrade.compare.spool import CHUNK_ENVIRONMENT, SortedSpool, default_chunk


def spool(chunk: int) -> SortedSpool[dict[str, Any]]:
    return SortedSpool(lambda item: item, lambda data: data, chunk=chunk)


def test_a_spool_sorts_across_runs_on_disk_and_reads_again() -> None:
    items = [
        {"n": n, "text": f"line\n{n}\udc80\t", "big": 2**70 + n} for n in range(50)
    ]
    shuffled = list(items)
    random.Random(1).shuffle(shuffled)
    listed = spool(chunk=7)
    for item in shuffled:
        listed.add((item["n"] % 2, item["n"]), item)
        assert len(listed._buffer) < 7  # never more than a chunk in memory
    assert len(listed) == 50 and listed.spilled == 7
    expected = sorted(items, key=lambda item: (item["n"] % 2, item["n"]))
    assert list(listed) == expected
    assert list(listed) == expected  # again: reading does not consume
    assert [json.loads(text) for text in listed.json_items()] == expected
    assert all("\n" not in text and text.isascii() for text in listed.json_items())
    assert listed == expected
    listed.close()
    assert len(listed) == 0 and list(listed) == []


def test_a_small_spool_stays_in_memory() -> None:
    listed = spool(chunk=100)
    for n in (3, 1, 2):
        listed.add((n,), {"n": n})
    assert listed.spilled == 0 and listed._file is None
    assert [item["n"] for item in listed] == [1, 2, 3]


def test_the_chunk_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHUNK_ENVIRONMENT, "5")
    assert default_chunk() == 5
    for bad in ("0", "-1", "many"):
        monkeypatch.setenv(CHUNK_ENVIRONMENT, bad)
        with pytest.raises(ValueError, match=CHUNK_ENVIRONMENT):
            default_chunk()


def stage(sample: Any, state: str, epoch: int = 1) -> Observation:
    missing = ("D1",) if state == "retrieval" else ()
    run = Run(state, missing, f"{state} because", "log", recall=1.0, precision=0.5)
    return Observation(STAGE, STAGE, sample, epoch, run)


def live(kind: type) -> int:
    return sum(1 for item in gc.get_objects() if type(item) is kind)


def test_pairing_keeps_no_changed_pair_in_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CHUNK_ENVIRONMENT, "16")
    count = 500
    ids: list[Any] = [*range(count // 2), *(f"s{n}" for n in range(count // 2))]
    random.Random(2).shuffle(ids)
    base = [stage(sample, "pass") for sample in ids]
    # Every pair regresses; NEW has 40 samples BASE lacks, and lacks 30.
    new = [stage(sample, "retrieval") for sample in ids[30:]]
    new += [stage(f"extra{n}", "pass") for n in range(40)]
    gc.collect()
    before = (live(Change), live(Side))
    paired = pair_runs(base, new)
    gc.collect()
    assert (live(Change), live(Side)) == before
    (compared,) = paired.stage_diagnosis
    assert compared.worse == len(compared.regressions) == count - 30
    for listed in (compared.regressions, compared.only_in_base, compared.only_in_new):
        assert listed.spilled > 0 and len(listed._buffer) < 16
    # In sample order: integer ids first, then strings; epochs after.
    order = [change.id for change in compared.regressions]
    assert order == sorted(
        order,
        key=lambda i: (isinstance(i, str), i if isinstance(i, int) else 0, str(i)),
    )
    assert len(compared.only_in_base) == 30 and len(compared.only_in_new) == 40
    assert paired.gate.regressions == count - 30


class CountingWriter(io.StringIO):
    """A text stream that counts how often it was written to."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def stage_log(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> str:
    from inspect_ai import eval as inspect_eval

    from tests.support import write_lines
    from tracegrade import stage_diagnosis

    dataset = write_lines(
        tmp_path / f"{name}.jsonl",
        [{"id": f"r{i:04d}", "input": record} for i, record in enumerate(records)],
    )
    (log,) = inspect_eval(
        stage_diagnosis(dataset=dataset),
        display="none",
        log_dir=str(tmp_path / name),
    )
    assert log.status == "success"
    return log.location


def test_the_json_is_written_in_pieces_and_the_html_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHUNK_ENVIRONMENT, "8")
    count = 44  # five runs on disk, merged with four items still in memory
    explanation = "x" * 6000  # long items: the JSON takes several 64 KiB writes
    base = stage_log(
        tmp_path,
        "base",
        [{"required": ["D1"], "context": ["D1"], "correct": True}] * count,
    )
    new = stage_log(
        tmp_path,
        "new",
        [
            {"required": ["D1", explanation], "context": ["D1"], "correct": True}
            for _ in range(count)
        ],
    )
    comparison = compare_logs(base, new)
    (pair,) = comparison.pairs
    (compared,) = pair.stage_diagnosis
    assert len(compared.regressions) == count and compared.regressions.spilled == 5
    out = CountingWriter()
    comparison.write_json(out)
    written = out.getvalue()
    assert out.writes > 3  # in pieces, not one string of the whole
    assert json.loads(written) == comparison.to_json()
    stage_json = json.loads(written)["pairs"][0]["stage_diagnosis"][0]
    assert [change["id"] for change in stage_json["regressions"]] == [
        f"r{i:04d}" for i in range(count)
    ]
    recall, precision = stage_json["figures"]
    assert (recall["base_mean"], recall["new_mean"], recall["fell"]) == (
        1.0,
        0.5,
        count,
    )
    assert (precision["base_mean"], precision["new_mean"]) == (1.0, 1.0)
    # The page: 5 rows of the regressions, and the count of all.
    page = render_html(comparison, show=5)
    regressions = page[page.index("Regressions: stage_diagnosis") :]
    regressions = regressions[: regressions.index("</table>")]
    assert regressions.count("<tr>") == 1 + 5  # the header and five rows
    assert f"{count} pairs. The first 5 are shown (--html-show)" in page
    comparison.close()
