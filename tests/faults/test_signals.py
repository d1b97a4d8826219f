"""Real signals mid-run leave nothing half-written and say so in one line; two
`labels apply` take turns."""

from __future__ import annotations

import os
import random
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from tests.commands import start_tracegrade
from tests.faults.conftest import (
    FINAL_SUFFIXES,
    SCORED_RECORDS,
    InputWatch,
    assert_no_final_outputs,
    digest,
    frozen,
    one_clear_line,
    snapshot,
    wait_for,
    workload_too_small,
    write_stage_records,
)

pytestmark = pytest.mark.runs_long

# Each phase must outlast a freeze; `score` reads at half `check`'s speed.
SIGNAL_RECORDS = 6_000
# Several `.eval` parts, all open while the logs are finished.
EVAL_PARTS = ("--log-format", "eval", "--max-samples-per-log", "750")


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Inputs for `score` and for `check`, which reads faster."""
    folder = tmp_path_factory.mktemp("signal-input")
    write_stage_records(folder / "score.jsonl", SIGNAL_RECORDS // 2)
    write_stage_records(folder / "check.jsonl", SIGNAL_RECORDS)
    return {"score": folder / "score.jsonl", "check": folder / "check.jsonl"}


APPLY = ("labels", "apply", "log.eval")
OPTIONS = {
    "score": ("--log-dir", "logs", "--out", "results.jsonl", *EVAL_PARTS),
    "check": (),
}
# "COMMAND SIGNAL WHERE": the line's start after "tracegrade COMMAND: " (SIGKILL:
# no line), and its end per command.
SIGNALLED = {
    "score SIGINT loop": "interrupted (SIGINT)",
    "score SIGTERM finishing": "stopped by SIGTERM",
    "score SIGKILL finishing": None,
    "check SIGTERM loop": "stopped by SIGTERM after line",
}
ENDS = {"score": "no log or results were written", "check": "the check is incomplete"}


@pytest.mark.parametrize("case", SIGNALLED)
def test_a_signal_leaves_nothing_under_a_final_name(
    tmp_path: Path, records: dict[str, Path], case: str, request: pytest.FixtureRequest
) -> None:
    """In the line loop or finishing the logs, a caught signal removes all it
    began (`check`'s id database too), in one line; SIGKILL leaves `.partial`s."""
    command, signame, when = case.split()
    signum, said = signal.Signals[signame], SIGNALLED[case]
    path = records[command]
    (tmp_path / "old.results.jsonl").write_text("kept\n")
    (temporary := tmp_path / "tmp").mkdir()
    before, input_digest = snapshot(tmp_path), digest(path)
    process = start_tracegrade(
        *(command, "stage_diagnosis", str(path), *OPTIONS[command]),
        cwd=tmp_path,
        env={"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)},
    )
    watch = InputWatch(process, path)
    if when == "loop":  # after a part of the input seeded by the test
        fraction = random.Random(request.node.nodeid).uniform(0.05, 0.6)
        with frozen(process, once=lambda: watch.wait_until_past(fraction)):
            if watch.position() in (None, watch.size):  # closed, or at its end
                workload_too_small(f"{path.name} was read whole when frozen")
            process.send_signal(signum)
    else:
        with frozen(process, once=watch.wait_until_closed):
            begun = set(snapshot(tmp_path)) - set(before)
            if any(name.endswith(FINAL_SUFFIXES) for name in begun):
                workload_too_small(f"the run had finished when frozen ({begun})")
            if not any(name.endswith(".partial") for name in begun):
                workload_too_small("no output was begun when frozen")
            process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == (-signum if said is None else 128 + signum), stderr
    assert digest(path) == input_digest
    assert_no_final_outputs(tmp_path, before)
    new = set(snapshot(tmp_path)) - set(before)
    if said is None:
        assert all(name.endswith(".partial") for name in new), new
    else:
        line = one_clear_line(stderr)
        assert line.startswith(f"tracegrade {command}: {said}"), line
        assert line.endswith(ENDS[command]), line
        assert new == set()  # not even a `.partial` or temporary file: cleanup ran


def writing_a_log(folder: Path) -> Callable[[], bool]:
    """Whether `labels apply` has begun its `.partial` log (holding its lock)."""
    return lambda: any(path.stat().st_size for path in folder.glob("*.partial"))


def test_a_signal_mid_labels_apply_leaves_the_log(tmp_path: Path, scored: Path) -> None:
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    before = snapshot(tmp_path)
    process = start_tracegrade(*APPLY, "staff.jsonl", cwd=tmp_path)
    writing = writing_a_log(tmp_path)
    with frozen(process, once=lambda: wait_for(writing, process, "the new log")):
        if digest(tmp_path / "log.eval") != before["log.eval"]:
            workload_too_small("the log was replaced when frozen")
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)

    assert process.returncode == 130, stderr
    said = "tracegrade labels apply: stopped by SIGINT; log.eval was not changed"
    assert one_clear_line(stderr) == said
    assert snapshot(tmp_path) == before


def test_two_applies_take_turns(tmp_path: Path, scored: Path) -> None:
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    first = start_tracegrade(*APPLY, "even.jsonl", cwd=tmp_path)
    writing = writing_a_log(tmp_path)
    with frozen(first, once=lambda: wait_for(writing, first, "a new log")):
        second = start_tracegrade(*APPLY, "odd.jsonl", cwd=tmp_path)
        wait_for(second.stderr_so_far, second, "a line on stderr")
        waiting = "waiting for another tracegrade labels apply"
        assert second.stderr_so_far().startswith(waiting)
    for process in (first, second):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    labelled = {}
    sources = ("labels file even.jsonl", "labels file odd.jsonl")
    for sample in read_eval_log(str(tmp_path / "log.eval")).samples or []:
        for score in (sample.scores or {}).values():
            metadata = score.metadata or {}
            record = metadata.get("record") or {}
            source = (metadata.get("read_from") or {}).get("correct")
            if source in sources and "correct" in record:
                labelled[str(sample.id)] = record["correct"]
    assert labelled == {f"run-{n}": n % 4 < 2 for n in range(SCORED_RECORDS)}


def test_a_late_signal_says_so(tmp_path: Path, scored: Path) -> None:
    """SIGTERM once `report --html` has put its page under its name: it stays."""
    html = tmp_path / "report.html"
    process = start_tracegrade(
        *("report", str(scored / "log.eval"), "--html", "report.html"),
        cwd=tmp_path,
        stdout=Path(os.devnull),
    )
    with frozen(process, once=lambda: wait_for(html.exists, process, "a report")):
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    said = "tracegrade: stopped by SIGTERM; report.html was written"
    assert one_clear_line(stderr) == said
    assert html.read_text().rstrip().endswith("</html>")
