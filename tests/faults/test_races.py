"""Two runs at once, and files that change under a run: nothing is lost.

What the commands promise when they race (docs/cli.md, "What happens when
things go wrong"):
- an output name taken while a command runs (another run, a user's
  `echo > out`) is never replaced without --force: the command fails in one
  line and keeps what it wrote under a name it reports;
- two `labels apply` on logs of one directory take turns, and each reads
  the log the other wrote, so neither loses labels;
- a log another program rewrites while `labels apply` works on it is not
  replaced; a log whose eval has not finished is refused without --force.

Each race is made to happen, not hoped for: the first process is frozen
(SIGSTOP) at a marker seen from outside, the other party acts, then the
first continues (see conftest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from tests.commands import CommandProcess, run_tracegrade, start_tracegrade
from tests.faults.conftest import (
    POLL_SECONDS,
    InputWatch,
    digest,
    ended_before,
    frozen,
    holds_lock,
    one_clear_line,
    write_stage_records,
)

pytestmark = pytest.mark.runs_long

APPEARED = re.compile(
    r"'(?P<name>[^']+)' appeared while the command ran and was not replaced "
    r"\(pass --force to replace it\); what was written is kept as '(?P<kept>[^']+)'"
)


def _kept_file(line: str, name: str) -> Path:
    """The file the one line says holds what was written instead of `name`."""
    found = APPEARED.search(line)
    assert found is not None, line
    assert found["name"] == name
    kept = Path(found["kept"])
    assert not kept.name.endswith(".partial"), kept
    return kept


def _results_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# --- An output name taken during the run ---------------------------------

# Records scored by the runs that race for an output name: each run reads
# them all and writes its whole log, and the file is read in buffered
# chunks of a few kilobytes, so a run frozen at 30% of it is still well
# inside its line loop.
RACE_RECORDS = 2_000


@pytest.fixture(scope="module")
def race_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`RACE_RECORDS` stage records, written once for the module."""
    path = tmp_path_factory.mktemp("race-input") / "runs.jsonl"
    write_stage_records(path, RACE_RECORDS)
    return path


def _score(race_input: Path, work: Path, *extra: str) -> CommandProcess:
    return start_tracegrade(
        "score",
        "stage_diagnosis",
        str(race_input),
        "--log-dir",
        "logs",
        "--log-format",
        "json",
        "--out",
        "results.jsonl",
        *extra,
        cwd=work,
    )


def test_with_force_the_run_replaces_a_file_that_appeared(
    tmp_path: Path, race_input: Path
) -> None:
    process = _score(race_input, tmp_path, "--force")
    watch = InputWatch(process, race_input)
    with frozen(process, once=lambda: watch.wait_until_past(0.3)):
        watch.assert_mid_input()
        (tmp_path / "results.jsonl").write_text("old\n")
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 0, stderr
    results = _results_of(tmp_path / "results.jsonl")
    assert len(results) == race_input.read_text().count("\n")
    assert json.loads(results[0])["id"] == "run-0"


def test_two_runs_with_one_out_lose_neither_result(
    tmp_path: Path, race_input: Path
) -> None:
    """The second to finish fails, keeping its results under another name;
    the first run's results stay under the name: an output name taken
    mid-run (here by another run) is never replaced without --force."""
    first = _score(race_input, tmp_path)
    watch = InputWatch(first, race_input)
    with frozen(first, once=lambda: watch.wait_until_past(0.3)):
        watch.assert_mid_input()
        second = run_tracegrade(
            "score",
            "stage_diagnosis",
            str(race_input),
            "--log-dir",
            "logs",
            "--out",
            "results.jsonl",
            cwd=tmp_path,
        )
        assert second.returncode == 0, second.stderr
        published = digest(tmp_path / "results.jsonl")
    _, stderr = first.communicate(timeout=300)

    assert first.returncode == 2, stderr
    line = one_clear_line(stderr)
    kept = _kept_file(line, "results.jsonl")
    assert digest(tmp_path / "results.jsonl") == published
    # The same input scored twice: both results whole, and equal.
    assert digest(tmp_path / kept) == published
    # A run publishes its log and results together or neither: the first
    # run's log went with its results' name.
    assert line.endswith("no log was written")
    assert [path.suffix for path in (tmp_path / "logs").iterdir()] == [".eval"]
    assert not list(tmp_path.rglob("*.partial"))


@pytest.fixture(scope="module")
def large_log(tmp_path_factory: pytest.TempPathFactory, signal_input: Path) -> Path:
    """A `.json` log of the signal input: `report` reads its header (the
    first 256 KiB), then reads it again, whole, for the samples."""
    folder = tmp_path_factory.mktemp("large-log")
    done = run_tracegrade(
        "score",
        "stage_diagnosis",
        str(signal_input),
        "--log-dir",
        "logs",
        "--log-format",
        "json",
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    (log,) = (folder / "logs").glob("*.json")
    return log


def test_report_html_that_appears_mid_run_is_kept(
    tmp_path: Path, large_log: Path
) -> None:
    log = tmp_path / large_log.name
    shutil.copyfile(large_log, log)
    process = start_tracegrade(
        "report", log.name, "--html", "report.html", "--json", cwd=tmp_path
    )
    watch = InputWatch(process, log)
    # Past the header: reading the samples, after the --html check. A
    # quarter in, so that most of the samples (read a mebibyte at a time)
    # are still to be read when the freeze comes on a loaded machine.
    with frozen(process, once=lambda: watch.wait_until_past(0.25)):
        watch.assert_mid_input()
        (tmp_path / "report.html").write_text("precious\n")
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 2, stderr
    kept = _kept_file(one_clear_line(stderr), "report.html")
    assert (tmp_path / "report.html").read_text() == "precious\n"
    assert "<html" in (tmp_path / kept).read_text()


# --- labels apply --------------------------------------------------------

# Runs of the labelled log: enough that each labels file labels dozens,
# few enough that each `labels apply` (three fresh interpreters, two in
# this one) costs little more than its imports. Writing its `.partial` log
# through Inspect's writer still lasts far longer than the poll and freeze
# that the race waits for.
LABELLED_SAMPLES = 100


@pytest.fixture(scope="module")
def labelled_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of `LABELLED_SAMPLES` runs, and labels files for it: odd runs
    labelled in `odd.jsonl`, even ones in `even.jsonl`, all in `all.jsonl`."""
    folder = tmp_path_factory.mktemp("labelled")
    write_stage_records(folder / "runs.jsonl", LABELLED_SAMPLES)
    # Unlabelled input: the labels files are its only labels.
    lines = (folder / "runs.jsonl").read_text().splitlines()
    unlabelled = []
    for line in lines:
        record = json.loads(line)
        del record["input"]["correct"]
        unlabelled.append(json.dumps(record))
    (folder / "runs.jsonl").write_text("\n".join(unlabelled) + "\n")
    done = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    (log,) = (folder / "logs").glob("*.eval")
    log.rename(folder / "log.eval")
    for name, parities in (("even", {0}), ("odd", {1}), ("all", {0, 1})):
        (folder / f"{name}.jsonl").write_text(
            "".join(
                json.dumps({"id": f"run-{number}", "correct": number % 4 < 2}) + "\n"
                for number in range(LABELLED_SAMPLES)
                if number % 2 in parities
            )
        )
    return folder


@pytest.fixture()
def labelled(tmp_path: Path, labelled_folder: Path) -> Path:
    for name in ("log.eval", "even.jsonl", "odd.jsonl", "all.jsonl"):
        shutil.copyfile(labelled_folder / name, tmp_path / name)
    return tmp_path


def _apply(work: Path, labels: str, *extra: str) -> CommandProcess:
    return start_tracegrade("labels", "apply", "log.eval", labels, *extra, cwd=work)


def _wait_for(reached: object, process: CommandProcess, what: str) -> None:
    assert callable(reached)
    deadline = time.monotonic() + 300
    while not reached():
        if process.poll() is not None:
            ended_before(process, what)
        if time.monotonic() > deadline:
            pytest.fail(f"no sign of {what} after 300 s")
        time.sleep(POLL_SECONDS)


def _labelled_by(log: Path, labels: str) -> dict[str, bool]:
    """The label of each sample the score read from `labels` labelled."""
    found: dict[str, bool] = {}
    for sample in read_eval_log(str(log)).samples or []:
        for score in (sample.scores or {}).values():
            metadata = score.metadata or {}
            read_from = metadata.get("read_from") or {}
            record = metadata.get("record") or {}
            if read_from.get("correct") == f"labels file {labels}" and (
                "correct" in record
            ):
                found[str(sample.id)] = record["correct"]
    return found


def test_two_applies_take_turns_and_both_labels_stay(labelled: Path) -> None:
    first = _apply(labelled, "even.jsonl")
    with frozen(
        first,
        once=lambda: _wait_for(
            lambda: holds_lock(first.pid, labelled / "log.eval"), first, "a lock"
        ),
    ):
        second = _apply(labelled, "odd.jsonl")
        # The second waits for the first, and says so.
        _wait_for(lambda: second.stderr_so_far(), second, "a line on stderr")
        waiting = second.stderr_so_far()
        assert waiting.startswith("waiting for another tracegrade labels apply")
    _, first_stderr = first.communicate(timeout=300)
    _, second_stderr = second.communicate(timeout=300)

    assert first.returncode == 0, first_stderr
    assert second.returncode == 0, second_stderr
    log = labelled / "log.eval"
    even = _labelled_by(log, "even.jsonl")
    odd = _labelled_by(log, "odd.jsonl")
    # Each file's labels are all there, as it gave them.
    assert even == {
        f"run-{number}": number % 4 < 2 for number in range(0, LABELLED_SAMPLES, 2)
    }
    assert odd == {
        f"run-{number}": number % 4 < 2 for number in range(1, LABELLED_SAMPLES, 2)
    }


def _wait_for_partial(work: Path, process: CommandProcess) -> None:
    _wait_for(
        lambda: any(work.glob("log.eval.*.partial")), process, "the log's .partial"
    )


def test_a_log_rewritten_meanwhile_is_not_replaced(labelled: Path) -> None:
    log = labelled / "log.eval"
    process = _apply(labelled, "all.jsonl")
    with frozen(process, once=lambda: _wait_for_partial(labelled, process)):
        # Another program writes the log (an eval, another labeller).
        rewritten = read_eval_log(str(log))
        rewritten.eval.metadata = {**(rewritten.eval.metadata or {}), "by": "other"}
        write_eval_log(rewritten, str(labelled / "other.eval"))
        os.replace(labelled / "other.eval", log)
        other = digest(log)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 2, stderr
    line = one_clear_line(stderr)
    assert "'log.eval' changed while its labels were applied" in line
    assert "nothing was written" in line
    assert digest(log) == other
    assert sorted(path.name for path in labelled.iterdir()) == [
        "all.jsonl",
        "even.jsonl",
        "log.eval",
        "odd.jsonl",
    ]


def test_a_log_whose_eval_has_not_finished_is_labelled_only_with_force(
    labelled: Path,
) -> None:
    log = labelled / "log.eval"
    started = read_eval_log(str(log))
    started.status = "started"
    write_eval_log(started, str(log))
    before = digest(log)

    refused = run_tracegrade("labels", "apply", "log.eval", "all.jsonl", cwd=labelled)
    assert refused.returncode == 1, refused.stderr
    line = one_clear_line(refused.stderr)
    assert "'log.eval' has status 'started': its eval has not finished" in line
    assert "pass --force" in line
    assert digest(log) == before

    forced = run_tracegrade(
        "labels", "apply", "log.eval", "all.jsonl", "--force", cwd=labelled
    )
    assert forced.returncode == 0, forced.stderr
    assert len(_labelled_by(log, "all.jsonl")) == LABELLED_SAMPLES
