"""Real signals at random points of a run leave nothing half-written: `score`
removes what it began and says so in one line, SIGKILL leaves only `.partial`
names, `check`'s id database leaves no file, `labels apply` ends with its log
unchanged, two applies take turns, and a signal after an output was written
says so. Points are seeded by the test id."""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from tests.commands import CommandProcess, start_tracegrade
from tests.faults.conftest import (
    FINAL_SUFFIXES,
    SCORED_RECORDS,
    InputWatch,
    assert_no_final_outputs,
    digest,
    frozen,
    holds_lock,
    one_clear_line,
    process_state,
    snapshot,
    stopped,
    wait_for,
    workload_too_small,
    write_stage_records,
)

pytestmark = pytest.mark.runs_long

# Each phase a marker stands for must outlast a freeze (else `workload_too_small`);
# `score` reads at half the speed of `check`.
SIGNAL_RECORDS = 6_000
# `score`'s input in four `.eval` parts, so that several are open when the
# signal comes (all of them while the logs are finished).
EVAL_FORMAT = ("--log-format", "eval", "--max-samples-per-log")
EVAL_FORMAT += (str(SIGNAL_RECORDS // 8),)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Inputs for `score` and for `check`, which reads faster."""
    folder = tmp_path_factory.mktemp("signal-input")
    write_stage_records(folder / "score.jsonl", SIGNAL_RECORDS // 2)
    write_stage_records(folder / "check.jsonl", SIGNAL_RECORDS)
    return {"score": folder / "score.jsonl", "check": folder / "check.jsonl"}


def signal_mid_input(
    process: CommandProcess, path: Path, signum: int, seed: str
) -> None:
    """Send `signum` once `process` has read a seeded part of `path`, frozen:
    past the start of the line loop, and well before its end."""
    watch = InputWatch(process, path)
    fraction = random.Random(seed).uniform(0.05, 0.6)
    with frozen(process, once=lambda: watch.wait_until_past(fraction)):
        watch.assert_mid_input()
        process.send_signal(signum)


@pytest.mark.parametrize(
    ("signum", "when", "code", "said"),
    [
        (signal.SIGINT, "loop", 130, "tracegrade score: interrupted (SIGINT)"),
        (signal.SIGTERM, "finishing", 143, "tracegrade score: stopped by SIGTERM"),
        (signal.SIGKILL, "finishing", -signal.SIGKILL, None),
    ],
    ids=["SIGINT-loop", "SIGTERM-finishing", "SIGKILL-finishing"],
)
def test_a_signal_leaves_nothing_under_a_final_name(
    tmp_path: Path,
    records: dict[str, Path],
    signum: int,
    when: str,
    code: int,
    said: str | None,
    request: pytest.FixtureRequest,
) -> None:
    """In the line loop, or while finishing an `.eval` run in parts (every
    part open): a caught signal removes everything begun and says so in one
    line; SIGKILL leaves only `.partial` names."""
    path = records["score"]
    (tmp_path / "old.results.jsonl").write_text("kept\n")
    before, input_digest = snapshot(tmp_path), digest(path)
    process = start_tracegrade(
        *("score", "stage_diagnosis", str(path), "--log-dir", "logs"),
        *("--out", "results.jsonl", *EVAL_FORMAT),
        cwd=tmp_path,
    )
    if when == "loop":
        signal_mid_input(process, path, signum, request.node.nodeid)
    else:
        watch = InputWatch(process, path)
        with frozen(process, once=watch.wait_until_closed):
            begun = set(snapshot(tmp_path)) - set(before)
            if any(name.endswith(FINAL_SUFFIXES) for name in begun):
                workload_too_small(f"the run had finished when frozen ({begun})")
            if not any(name.endswith(".partial") for name in begun):
                workload_too_small("no output was begun when frozen")
            process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == code, stderr
    assert digest(path) == input_digest
    assert_no_final_outputs(tmp_path, before)
    new = set(snapshot(tmp_path)) - set(before)
    if said is None:
        assert all(name.endswith(".partial") for name in new), new
    else:
        line = one_clear_line(stderr)
        assert line.startswith(said) and "no log or results were written" in line
        assert new == set()  # not even a `.partial` file: cleanup ran


def test_check_leaves_no_temporary_id_database(
    tmp_path: Path, records: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    where = {"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)}
    path = records["check"]
    process = start_tracegrade(
        "check", "stage_diagnosis", str(path), cwd=tmp_path, env=where
    )
    signal_mid_input(process, path, signal.SIGTERM, request.node.nodeid)
    _, stderr = process.communicate(timeout=300)

    assert list(temporary.iterdir()) == []
    assert process.returncode == 143, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade check: stopped by SIGTERM after line")
    assert line.endswith("the check is incomplete")


def start_apply(work: Path, labels: str) -> CommandProcess:
    """`labels apply` started, returned once it holds its lock."""
    process = start_tracegrade("labels", "apply", "log.eval", labels, cwd=work)
    wait_for(lambda: holds_lock(process.pid, work / "log.eval"), process, "a lock")
    return process


def test_a_signal_at_a_random_point_of_labels_apply_ends_it_unchanged(
    tmp_path: Path, scored: Path, request: pytest.FixtureRequest
) -> None:
    """SIGINT while reading, scoring or writing: a point after the log was
    replaced proves nothing, so it is drawn again from an earlier one."""
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    before = snapshot(tmp_path)
    process = start_apply(tmp_path, "staff.jsonl")
    begun = time.monotonic()
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    window = time.monotonic() - begun
    chance = random.Random(request.node.nodeid)
    for _ in range(6):
        shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
        process = start_apply(tmp_path, "staff.jsonl")
        time.sleep(chance.uniform(0, window))
        process.send_signal(signal.SIGSTOP)
        while process_state(process.pid) not in ("T", "t", "Z", "X", None):
            time.sleep(0.0005)  # SIGSTOP cannot be ignored: stopped or ended
        log_unchanged = digest(tmp_path / "log.eval") == before["log.eval"]
        running = stopped(process) and log_unchanged
        if running:
            process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGCONT)
        if running:
            break
        process.communicate(timeout=300)
        window /= 2
    else:
        workload_too_small("no point in 6 draws came before the log was written")
    _, stderr = process.communicate(timeout=120)

    assert process.returncode == 130, stderr
    assert one_clear_line(stderr) == (
        "tracegrade labels apply: stopped by SIGINT; log.eval was not changed"
    )
    assert snapshot(tmp_path) == before


def test_two_applies_take_turns_and_both_labels_stay(
    tmp_path: Path, scored: Path
) -> None:
    shutil.copytree(scored, tmp_path, dirs_exist_ok=True)
    first = start_tracegrade("labels", "apply", "log.eval", "even.jsonl", cwd=tmp_path)
    locked = lambda: holds_lock(first.pid, tmp_path / "log.eval")  # noqa: E731
    with frozen(first, once=lambda: wait_for(locked, first, "a lock")):
        second = start_tracegrade(
            "labels", "apply", "log.eval", "odd.jsonl", cwd=tmp_path
        )
        wait_for(second.stderr_so_far, second, "a line on stderr")
        assert second.stderr_so_far().startswith(
            "waiting for another tracegrade labels apply"
        )
    for process in (first, second):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    labelled: dict[str, bool] = {}
    sources = ("labels file even.jsonl", "labels file odd.jsonl")
    for sample in read_eval_log(str(tmp_path / "log.eval")).samples or []:
        for score in (sample.scores or {}).values():
            metadata = score.metadata or {}
            record = metadata.get("record") or {}
            source = (metadata.get("read_from") or {}).get("correct")
            if source in sources and "correct" in record:
                labelled[str(sample.id)] = record["correct"]
    expected = {f"run-{n}": n % 4 < 2 for n in range(SCORED_RECORDS)}
    assert labelled == expected


def test_a_signal_after_the_output_is_written_says_so(
    tmp_path: Path, scored: Path
) -> None:
    """SIGTERM the moment `report --html` has put its page under its name:
    the page stays, whole, and the line says it was written."""
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
    assert one_clear_line(stderr) == (
        "tracegrade: stopped by SIGTERM; report.html was written"
    )
    assert html.read_text().rstrip().endswith("</html>")
