"""Real signals at random points of a run leave nothing half-written.

`score`: a caught signal removes what was begun and says so in one line,
SIGKILL leaves only `.partial` names; `check`'s id database leaves no file;
`labels apply` (in Inspect's event loop) ends unchanged, and two applies in
one directory take turns. Points are seeded by the test id.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from tests.commands import CommandProcess, start_tracegrade
from tests.faults.conftest import (
    POLL_SECONDS,
    SHORT_SIGNAL_RECORDS,
    InputWatch,
    assert_no_final_outputs,
    assert_still_writing,
    digest,
    ended_before,
    frozen,
    holds_lock,
    one_clear_line,
    signal_mid_input,
    snapshot,
    wait_stopped,
    workload_too_small,
    write_labels,
    write_stage_log,
)
from tests.support import SUBPROCESS_ENV

pytestmark = pytest.mark.runs_long

# Where in the input a "loop" signal lands: past the start of the line
# loop, and far enough from its end that the freeze comes well before it.
LOOP_FRACTIONS = (0.05, 0.6)

# `eval` split into parts, so that several parts are open when the signal
# comes (all of them while the logs are finished).
EVAL_PARTS = 4
EVAL_FORMAT = (
    *("--log-format", "eval", "--max-samples-per-log"),
    str(SHORT_SIGNAL_RECORDS // EVAL_PARTS),
)


def _loop_fraction(seed: str) -> float:
    return random.Random(seed).uniform(*LOOP_FRACTIONS)


def _signal_score(
    tmp_path: Path, records: Path, signum: int, when: str, seed: str
) -> tuple[int, str, Path, dict[str, str]]:
    """Run `score`, send `signum` in the loop or while the logs are written."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "old.results.jsonl").write_text("kept\n")
    before = snapshot(work)
    input_digest = digest(records)
    logs = work / "logs"
    process = start_tracegrade(
        *("score", "stage_diagnosis", str(records), "--log-dir", str(logs)),
        *("--out", str(work / "results.jsonl"), *EVAL_FORMAT),
        cwd=work,
    )
    if when == "loop":
        signal_mid_input(process, records, signum, _loop_fraction(seed))
    else:
        watch = InputWatch(process, records)
        with frozen(process, once=watch.wait_until_closed):
            watch.assert_closed()
            assert_still_writing(work, before)
            process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)
    assert digest(records) == input_digest
    return process.returncode, stderr, work, before


@pytest.mark.parametrize(
    ("signum", "when"),
    [(signal.SIGINT, "loop"), (signal.SIGTERM, "finishing")],
    ids=lambda value: getattr(value, "name", value),
)
def test_a_caught_signal_removes_everything_begun_and_says_so(
    tmp_path: Path,
    short_signal_input: Path,
    signum: signal.Signals,
    when: str,
    request: pytest.FixtureRequest,
) -> None:
    returncode, stderr, work, before = _signal_score(
        tmp_path, short_signal_input, signum, when, request.node.nodeid
    )

    assert returncode == 128 + signum, stderr
    line = one_clear_line(stderr)
    said = (
        "interrupted (SIGINT)"
        if signum == signal.SIGINT
        else f"stopped by {signum.name}"
    )
    assert line.startswith(f"tracegrade score: {said}")
    assert "no log or results were written" in line
    # Not even a `.partial` file: cleanup ran.
    assert snapshot(work) == before


def test_sigkill_leaves_only_partial_names(
    tmp_path: Path, short_signal_input: Path, request: pytest.FixtureRequest
) -> None:
    """While finishing an `.eval` run, so that every part is open."""
    seed = request.node.nodeid
    returncode, _, work, before = _signal_score(
        tmp_path, short_signal_input, signal.SIGKILL, "finishing", seed
    )

    assert returncode == -signal.SIGKILL
    assert_no_final_outputs(work, before)
    left = set(snapshot(work)) - set(before)
    assert all(name.endswith(".partial") for name in left), left


def test_check_leaves_no_temporary_id_database(
    tmp_path: Path, signal_input: Path, request: pytest.FixtureRequest
) -> None:
    """SIGTERM; SIGKILL is met where the database has surely reached the
    disk (test_the_id_database_leaves_no_file_even_when_killed)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    where = {"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)}
    process = start_tracegrade(
        "check", "stage_diagnosis", str(signal_input), cwd=tmp_path, env=where
    )
    fraction = _loop_fraction(request.node.nodeid)
    signal_mid_input(process, signal_input, signal.SIGTERM, fraction)
    _, stderr = process.communicate(timeout=300)

    assert list(temporary.iterdir()) == []
    assert process.returncode == 143, stderr
    line = one_clear_line(stderr)
    assert line.startswith("tracegrade check: stopped by SIGTERM after line")
    assert line.endswith("the check is incomplete")


_SPILLING_IDS = """
import os, sys
from tracegrade.bulk.scoring import DiskIds

ids = DiskIds(cache_kib=64)
number = 0
while True:
    for _ in range(1_000):
        ids.first_line(f"run-{number}", number)
        number += 1
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the listing's own descriptor, closed by now
    if any(link.startswith(os.environ["TMPDIR"]) for link in links):
        print(number, flush=True)
        break
sys.stdin.read()
"""


def test_the_id_database_leaves_no_file_even_when_killed(tmp_path: Path) -> None:
    """`check` keeps its ids in SQLite's page cache up to 8 MiB, so the runs
    above may never write the database to disk. Here a 64 KiB cache makes
    it spill within a few thousand ids: the file is open, yet no longer in
    the directory, so SIGKILL cannot leave it."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    where = {"TMPDIR": str(temporary), "SQLITE_TMPDIR": str(temporary)}
    process = subprocess.Popen(
        [sys.executable, "-c", _SPILLING_IDS],
        env={**SUBPROCESS_ENV, **where},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    spilled_after = process.stdout.readline()
    assert spilled_after.strip().isdigit(), "the database never reached the disk"
    open_files = [os.readlink(fd) for fd in Path(f"/proc/{process.pid}/fd").iterdir()]
    assert any(
        name.startswith(str(temporary)) and name.endswith(" (deleted)")
        for name in open_files
    ), open_files
    assert list(temporary.iterdir()) == []

    process.kill()
    process.wait(timeout=60)
    assert list(temporary.iterdir()) == []


# --- labels apply ------------------------------------------------------------

APPLY_SAMPLES = 400
"""Enough runs that reading, scoring and writing the log each last a while."""


@pytest.fixture(scope="module")
def apply_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`log.eval` of unlabelled runs; `labels.jsonl` labels every third,
    `even.jsonl` and `odd.jsonl` the even and odd ones."""
    folder = tmp_path_factory.mktemp("apply")
    write_stage_log(folder, APPLY_SAMPLES)
    (folder / "runs.jsonl").unlink()
    write_labels(folder / "labels.jsonl", APPLY_SAMPLES, every=3)
    for name, parity in (("even", 0), ("odd", 1)):
        (folder / f"{name}.jsonl").write_text(
            "".join(
                json.dumps({"id": f"run-{number}", "correct": number % 4 < 2}) + "\n"
                for number in range(parity, APPLY_SAMPLES, 2)
            )
        )
    return folder


def _wait_for(
    reached: Callable[[], object], process: CommandProcess, what: str
) -> None:
    deadline = time.monotonic() + 300
    while not reached():
        if process.poll() is not None:
            ended_before(process, what)
        if time.monotonic() > deadline:
            pytest.fail(f"no sign of {what} after 300 s")
        time.sleep(POLL_SECONDS)


def _start_apply(work: Path, labels: str = "labels.jsonl") -> CommandProcess:
    """`labels apply` started, returned once it holds its lock."""
    process = start_tracegrade("labels", "apply", "log.eval", labels, cwd=work)
    log = work / "log.eval"
    _wait_for(lambda: holds_lock(process.pid, log), process, "a lock")
    return process


def test_a_signal_at_a_random_point_of_labels_apply_ends_it_unchanged(
    tmp_path: Path, apply_folder: Path, request: pytest.FixtureRequest
) -> None:
    """SIGINT while reading, scoring or writing: a point after the log was
    replaced proves nothing, so it is drawn again from an earlier one."""
    shutil.copytree(apply_folder, tmp_path, dirs_exist_ok=True)
    before = snapshot(tmp_path)
    log = tmp_path / "log.eval"
    process = _start_apply(tmp_path)
    begun = time.monotonic()
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    window = time.monotonic() - begun
    chance = random.Random(request.node.nodeid)
    for _ in range(6):
        shutil.copytree(apply_folder, tmp_path, dirs_exist_ok=True)
        process = _start_apply(tmp_path)
        time.sleep(chance.uniform(0, window))
        process.send_signal(signal.SIGSTOP)
        running = wait_stopped(process.pid) and digest(log) == before["log.eval"]
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
    tmp_path: Path, apply_folder: Path
) -> None:
    shutil.copytree(apply_folder, tmp_path, dirs_exist_ok=True)
    first = start_tracegrade("labels", "apply", "log.eval", "even.jsonl", cwd=tmp_path)
    log = tmp_path / "log.eval"
    locked = lambda: _wait_for(lambda: holds_lock(first.pid, log), first, "a lock")  # noqa: E731
    with frozen(first, once=locked):
        second = start_tracegrade(
            "labels", "apply", "log.eval", "odd.jsonl", cwd=tmp_path
        )
        _wait_for(second.stderr_so_far, second, "a line on stderr")
        assert second.stderr_so_far().startswith(
            "waiting for another tracegrade labels apply"
        )
    for process in (first, second):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    labelled: dict[str, bool] = {}
    for sample in read_eval_log(str(log)).samples or []:
        for score in (sample.scores or {}).values():
            record = (score.metadata or {}).get("record") or {}
            source = ((score.metadata or {}).get("read_from") or {}).get("correct")
            if source in ("labels file even.jsonl", "labels file odd.jsonl") and (
                "correct" in record
            ):
                labelled[str(sample.id)] = record["correct"]
    assert labelled == {
        f"run-{number}": number % 4 < 2 for number in range(APPLY_SAMPLES)
    }
