"""`EvalArchive` writes `.eval` logs that Inspect reads like its own: a real
log of each packaged replay task written again, every public reader and the
member bytes compared. An aborted writer leaves nothing, even on a full disk
(a killed run: tests/faults/test_signals.py)."""

from __future__ import annotations

import functools
import gc
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.analysis import samples_df
from inspect_ai.log import (
    EvalLog,
    EvalSample,
    EvalSampleReductions,
    read_eval_log,
    read_eval_log_sample,
    read_eval_log_sample_summaries,
)
from inspect_ai.scorer import Score, ScoreEdit
from pydantic_core import to_json

from tests.test_inspect_internals import as_json
from tracegrade._inspect_internals import to_json_safe
from tracegrade.bulk.evallog import (
    EvalArchive,
    StreamedReductions,
    sample_json,
    sample_member,
    sample_summary,
)
from tracegrade.bulk.samples import SampleParts, SampleTemplates

pytestmark = pytest.mark.runs_long


def members(path: Path) -> dict[str, zipfile.ZipInfo]:
    """Each member's directory entry, in archive order."""
    with zipfile.ZipFile(path) as archive:
        return {info.filename: info for info in archive.infolist()}


def member_json(path: Path, name: str = "summaries.json") -> Any:
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read(name))


@pytest.fixture(scope="module", params=["stage_diagnosis", "ordered_extraction"])
def inspect_log(
    request: pytest.FixtureRequest, two_epoch_logs: dict[str, Path]
) -> Path:
    """Each task's log as Inspect writes it (conftest's, evaluated once)."""
    return two_epoch_logs[request.param]


def rewrite(inspect_log: Path, out_dir: Path, inputs: str) -> Path:
    """The reference log written again by `EvalArchive`, each sample as
    Inspect's bytes, in the order of its summaries; "suspended": suspended and
    resumed every few samples, and left suspended for `complete`."""
    log = read_eval_log(str(inspect_log))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / inspect_log.name
    archive = EvalArchive(path, log.eval, log.plan, journal_every=10)
    with zipfile.ZipFile(inspect_log) as source:
        for index, summary in enumerate(member_json(inspect_log)):
            if inputs == "suspended" and index % 3 == 2:
                archive.suspend()
                archive.resume()
            data = source.read(sample_member(summary["id"], summary["epoch"]))
            archive.add_sample(data, sample_summary(json.loads(data)))
    if inputs == "suspended":
        archive.suspend()  # `complete` resumes
    archive.complete(log, streamed(log.reductions))
    archive.partial.rename(path)
    return path


def streamed(
    reductions: list[EvalSampleReductions] | None,
) -> StreamedReductions | None:
    """One scorer's reductions as `tracegrade score` hands them over:
    sample scores serialised, joined by commas, in uneven chunks."""
    if not reductions:
        return None  # the stage scorer's metrics reduce nothing
    (reduction,) = reductions
    joined = b",".join(to_json(score, exclude_none=True) for score in reduction.samples)
    return StreamedReductions(
        head=reduction,
        samples_json=[joined[start : start + 7] for start in range(0, len(joined), 7)],
    )


@pytest.fixture(scope="module", params=["serialised", "suspended"])
def rewritten(
    request: pytest.FixtureRequest,
    inspect_log: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    return rewrite(inspect_log, tmp_path_factory.mktemp("ours"), request.param)


def without_location(log: EvalLog) -> EvalLog:
    return log.model_copy(update={"location": ""})


@functools.cache
def inspects(inspect_log: Path) -> dict[str, Any]:
    """What each reader gives of Inspect's own log, read once for the three
    rewrites compared with it."""
    path = str(inspect_log)
    return {
        "log": as_json(without_location(read_eval_log(path))),
        "header": as_json(without_location(read_eval_log(path, header_only=True))),
        "summaries": as_json(read_eval_log_sample_summaries(path)),
        "frame": samples_df(path, quiet=True).drop(columns="log"),
    }


def test_every_reader_gives_inspects_content(
    inspect_log: Path, rewritten: Path
) -> None:
    inspects_summaries = member_json(inspect_log)
    count = len(inspects_summaries)
    ours = read_eval_log(str(rewritten))
    assert ours.samples is not None and len(ours.samples) == count
    assert as_json(without_location(ours)) == inspects(inspect_log)["log"]
    header = read_eval_log(str(rewritten), header_only=True)
    assert header.samples is None and header.status == "success"
    assert as_json(without_location(header)) == inspects(inspect_log)["header"]
    for summary in inspects_summaries:
        ids = {"id": summary["id"], "epoch": summary["epoch"]}
        theirs = read_eval_log_sample(str(inspect_log), **ids)
        ours_sample = read_eval_log_sample(str(rewritten), **ids)
        assert as_json(ours_sample) == as_json(theirs), ids
    by_uuid = read_eval_log_sample(str(rewritten), uuid=summary["uuid"])
    assert (by_uuid.id, by_uuid.epoch) == (summary["id"], summary["epoch"])
    summaries = read_eval_log_sample_summaries(str(rewritten))
    assert as_json(summaries) == inspects(inspect_log)["summaries"]
    # `sample_summary` rebuilds the very JSON Inspect wrote; the journal
    # (read while a log is written) holds the same list.
    assert member_json(rewritten) == inspects_summaries
    journal = sorted(
        (name for name in members(rewritten) if name.startswith("_journal/summaries/")),
        key=lambda name: int(name.rsplit("/", 1)[1].removesuffix(".json")),
    )
    journaled = [s for name in journal for s in member_json(rewritten, name)]
    assert journaled == inspects_summaries
    frame = samples_df(str(rewritten), quiet=True)
    assert len(frame) == count and set(frame["log"]) == {str(rewritten)}
    pd.testing.assert_frame_equal(
        frame.drop(columns="log"), inspects(inspect_log)["frame"], check_exact=True
    )


def test_zip64_structures_read_everywhere(
    inspect_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log past 2 GiB or 65,535 members gets zipfile's ZIP64 extras and end
    records. Too big to write in a test, so zipfile's limits are lowered:
    every member then has them."""
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 64)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 4)
    ours = rewrite(inspect_log, tmp_path, "serialised")
    monkeypatch.undo()
    data = ours.read_bytes()
    assert b"PK\x06\x06" in data[-200:] and b"PK\x06\x07" in data[-100:]
    assert members(ours)["header.json"].create_version == 45
    assert (
        as_json(without_location(read_eval_log(str(ours))))
        == (inspects(inspect_log)["log"])
    )
    assert len(read_eval_log_sample_summaries(str(ours))) == len(
        member_json(inspect_log)
    )


# --- Summaries of any sample ---------------------------------------------------------

TEXT = st.text(
    alphabet=st.sampled_from(
        ["a", "é", "运", " ", "\n", "\t", "\r", "\xa0", "\u3000", "-"]
    ),
    max_size=1300,
)
JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda children: st.one_of(
        st.lists(children, max_size=40),
        st.dictionaries(st.text(max_size=5), children, max_size=8),
    ),
    max_leaves=60,
)


@settings(max_examples=100, deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=True),
        st.sampled_from(["pass", "retrieval"]),
        st.dictionaries(st.text(max_size=4), st.booleans(), max_size=2),
    ),
    answer=st.one_of(st.none(), TEXT),
    explanation=st.one_of(st.none(), TEXT),
    reason=st.one_of(st.none(), st.just("grader_failed")),
    metadata=st.one_of(
        st.none(), st.dictionaries(st.text(max_size=6), JSON_VALUE, max_size=4)
    ),
    edited=st.booleans(),
)
def test_a_sample_built_from_its_scores_serialises_as_inspect_does(
    value: Any,
    answer: str | None,
    explanation: str | None,
    reason: str | None,
    metadata: dict[str, Any] | None,
    edited: bool,
) -> None:
    """The writer thread builds each sample from its parts, the `Score`s
    themselves among them: serialised in one pass, it must be what
    Inspect's `to_json_safe` writes, and its summary what the summary of
    Inspect's own `EvalSample` holds."""
    score = Score(value=value, answer=answer, explanation=explanation, reason=reason,
                  metadata=metadata)  # fmt: skip
    if edited:
        score.history.append(ScoreEdit(value="pass", explanation="staff"))
    parts = SampleParts(
        id="s", input="in", target="", metadata={}, answer=answer,
        scores={"scorer": score, "other": Score(value=1.0)}, store={},
        started_at="2026-01-01T00:00:00+00:00",
        completed_at="2026-01-01T00:00:01+00:00", seconds=1.0,
    )  # fmt: skip
    built = SampleTemplates.make().build(parts)
    assert sample_json(built) == to_json_safe(built, indent=None)
    inspects = EvalSample.model_validate_json(to_json_safe(built, indent=None))
    assert as_json(sample_summary(built)) == as_json(inspects.summary())


# --- Memory and faults -------------------------------------------------------


def add_one(archive: EvalArchive, index: int) -> None:
    sample = {"id": f"s{index}", "epoch": 1, "input": "in", "target": ""}
    archive.add_sample(sample_json(sample), sample_summary(sample))


def _live_member_records() -> int:
    return sum(isinstance(item, zipfile.ZipInfo) for item in gc.get_objects())


def test_suspended_and_completed_archives_keep_no_member_records(
    tmp_path: Path, inspect_log: Path
) -> None:
    """zipfile keeps a `ZipInfo` per member: a million-sample run keeps
    its parts suspended, then complete, until it publishes them all, so
    neither may hold them, or memory grows with every sample."""
    log = read_eval_log(str(inspect_log), header_only=True)
    before = _live_member_records()
    archive = EvalArchive(tmp_path / "parked.eval", log.eval, log.plan)
    for index in range(300):
        add_one(archive, index)
    assert _live_member_records() >= before + 300
    archive.suspend()
    assert _live_member_records() == before
    archive.complete(log, None)
    assert _live_member_records() == before
    path = archive.partial.rename(tmp_path / "parked.eval")
    assert len(read_eval_log_sample_summaries(str(path))) == 300


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_abort_after_a_full_disk_raises_nothing(
    tmp_path: Path, inspect_log: Path
) -> None:
    """On a full disk the writes fail, and so would writing the directory on
    closing; abort must still remove the partial file without raising."""
    log = read_eval_log(str(inspect_log), header_only=True)
    archive = EvalArchive(tmp_path / "full.eval", log.eval, log.plan)
    assert archive.partial == tmp_path / "full.eval.partial"
    # Every byte written from here on fails with ENOSPC, as on a full disk.
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, archive._file.fileno())
    os.close(full)
    with pytest.raises(OSError, match="No space left"):
        for index in range(100):
            add_one(archive, index)
    archive.abort()
    archive.abort()
    assert list(tmp_path.iterdir()) == []
