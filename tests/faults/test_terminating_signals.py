"""Every terminating signal ends a command at once, with nothing published.

`score` is held to SIGINT and SIGTERM in test_signals.py; here one of the
other signals whose default action ends a process (SIGHUP: each of them is
handled as SIGTERM is, see `TERMINATING` in cli/_failures.py), and
`labels apply`, whose work runs inside Inspect's event loop and its worker
threads, where a signal raised as an exception can be caught by asyncio or
leave a thread that keeps the process alive. The points are random
(seeded by the test id), each checked from outside while the process is
frozen: still running, and the log not yet replaced.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.commands import CommandProcess, start_tracegrade
from tests.faults.conftest import (
    POLL_SECONDS,
    digest,
    ended_before,
    holds_lock,
    one_clear_line,
    process_state,
    signal_mid_input,
    snapshot,
    workload_too_small,
    write_labels,
    write_stage_log,
)

pytestmark = pytest.mark.runs_long


def test_score_ends_on_another_terminating_signal_leaving_nothing(
    tmp_path: Path, short_signal_input: Path, request: pytest.FixtureRequest
) -> None:
    """SIGHUP, as a closed terminal sends it: every signal of `TERMINATING`
    goes through one handler, and `labels apply` below meets SIGUSR1."""
    signum = signal.SIGHUP
    before = snapshot(tmp_path)
    input_digest = digest(short_signal_input)
    process = start_tracegrade(
        "score",
        "stage_diagnosis",
        str(short_signal_input),
        "--log-dir",
        "logs",
        "--out",
        "results.jsonl",
        cwd=tmp_path,
    )
    fraction = random.Random(request.node.nodeid).uniform(0.05, 0.6)
    signal_mid_input(process, short_signal_input, signum, fraction)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 128 + signum, stderr
    line = one_clear_line(stderr)
    name = signal.Signals(signum).name
    assert line.startswith(f"tracegrade score: stopped by {name}, at line ")
    assert line.endswith("no log or results were written")
    assert snapshot(tmp_path) == before
    assert digest(short_signal_input) == input_digest


# --- labels apply ------------------------------------------------------------

# Enough runs that reading, scoring and writing the log each last a while,
# so that a point drawn at random lands in any of them (writing the
# `.partial` log alone lasts far longer than a freeze); few enough that
# the timed run and each drawn one cost little beyond Inspect's import.
APPLY_SAMPLES = 400
# A point that lands after the log was replaced proves nothing: it is drawn
# again, from an earlier part of the run, this many times at most.
DRAWS = 6


@pytest.fixture(scope="module")
def apply_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`log.eval` of `APPLY_SAMPLES` unlabelled runs and `labels.jsonl`
    labelling every one."""
    folder = tmp_path_factory.mktemp("apply")
    write_stage_log(folder, APPLY_SAMPLES)
    (folder / "runs.jsonl").unlink()
    write_labels(folder / "labels.jsonl", APPLY_SAMPLES, every=3)
    return folder


def _start_apply(work: Path) -> tuple[CommandProcess, float]:
    """`labels apply` started, once it holds its lock; and that moment."""
    process = start_tracegrade("labels", "apply", "log.eval", "labels.jsonl", cwd=work)
    deadline = time.monotonic() + 300
    while not holds_lock(process.pid, work / "log.eval"):
        if process.poll() is not None:
            ended_before(process, "it took its lock")
        if time.monotonic() > deadline:
            pytest.fail("labels apply took no lock in 300 s")
        time.sleep(POLL_SECONDS)
    return process, time.monotonic()


@pytest.fixture(scope="module")
def apply_seconds(
    apply_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> float:
    """How long a whole `labels apply` works once it holds its lock, here."""
    work = tmp_path_factory.mktemp("apply-timed")
    shutil.copytree(apply_folder, work, dirs_exist_ok=True)
    process, locked = _start_apply(work)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return time.monotonic() - locked


def _signal_if_unpublished(
    process: CommandProcess, log: Path, original: str, signum: int
) -> bool:
    """Freeze the process; if it is still running and `log` is as it was,
    send `signum`. Then let it go on. Whether the signal was sent.

    Unlike `frozen`, a process that has already ended is no failure: the
    point drawn came too late."""
    process.send_signal(signal.SIGSTOP)  # nothing, if it has ended
    try:
        while (state := process_state(process.pid)) not in ("T", "t"):
            if state in (None, "Z", "X"):
                return False
            time.sleep(POLL_SECONDS)
        if digest(log) != original:
            return False
        process.send_signal(signum)
        return True
    finally:
        process.send_signal(signal.SIGCONT)


# One random point each for SIGTERM, SIGINT (raised as KeyboardInterrupt)
# and SIGUSR1 (one of the other terminating signals, raised as SIGTERM is):
# each drawn from its own seed, spread over reading, scoring and writing.
@pytest.mark.parametrize(
    "signum",
    [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1],
    ids=lambda signum: signal.Signals(signum).name,
)
def test_a_signal_at_a_random_point_of_labels_apply_ends_it_unchanged(
    tmp_path: Path,
    apply_folder: Path,
    apply_seconds: float,
    signum: int,
    request: pytest.FixtureRequest,
) -> None:
    shutil.copytree(apply_folder, tmp_path, dirs_exist_ok=True)
    before = snapshot(tmp_path)
    log = tmp_path / "log.eval"
    chance = random.Random(request.node.nodeid)
    window = apply_seconds
    for _ in range(DRAWS):
        process, locked = _start_apply(tmp_path)
        time.sleep(max(0.0, locked + chance.uniform(0, window) - time.monotonic()))
        if _signal_if_unpublished(process, log, before["log.eval"], signum):
            break
        # Too late: the log was replaced, or the command had ended.
        process.communicate(timeout=300)
        shutil.copytree(apply_folder, tmp_path, dirs_exist_ok=True)
        window /= 2
    else:
        workload_too_small(f"no point in {DRAWS} draws came before the log was written")

    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"labels apply hung after {signal.Signals(signum).name}")
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum, stderr
    assert one_clear_line(stderr) == (
        f"tracegrade labels apply: stopped by {name}; log.eval was not changed"
    )
    assert digest(log) == before["log.eval"]
    # Not even a `.partial` file: the command removed what it began.
    assert snapshot(tmp_path) == before
