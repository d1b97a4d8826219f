"""Shared pieces of the fault tests: inputs, real runs, markers, and the checks.

Faults are caused the way they happen to users: the real `tracegrade`
command (in a fresh interpreter of its own where the fault needs a
process: a signal, a resource limit, its standard streams; commands that
end on their own, each with its own streams and limits, may share one,
`commands_in_one_interpreter`), real signals,
a real full or read-only file system, real links. After each, the same four
things are checked: the inputs are unchanged (`digest`, `snapshot`),
nothing complete-looking is left (`assert_no_final_outputs`), stderr is
one clear line, and there is no traceback (`one_clear_line`).

A signal is never sent after a guessed delay: the test waits for a
progress marker seen from outside (how far the process has read its input,
`InputWatch`), freezes the process (`frozen`), checks from /proc that it
is still where the test wants the signal to land, and only then sends it.
A machine of any speed gets the signal at the same point of the run; one
so fast that the point has passed fails the test, saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import NamedTuple, NoReturn, TypeVar

import pytest

from tests.commands import CommandProcess, Limit, run_tracegrade

Key = TypeVar("Key", bound=Hashable)

# Enough records that each phase a marker stands for (`score` and `check`
# reading the input, `score` finishing its outputs) lasts far longer than
# the time between a marker and the freeze that follows it; a machine too
# fast for that fails the test, saying so (`workload_too_small`).
SIGNAL_RECORDS = 6_000
# Half as many for the signal tests of `score` writing an `.eval` log
# (`short_signal_input`), a fresh interpreter each: what they read and
# write beyond their imports is their cost, and the writer deflating each
# record keeps their phases as long as a `.json` run's of
# `SIGNAL_RECORDS`. The input is still read in many buffered steps
# (`lines.read_lines`), and its last `TIGHT_WITHIN` in more than one.
SHORT_SIGNAL_RECORDS = SIGNAL_RECORDS // 2
# --max-samples-per-log for the `.eval` runs: 8 parts, so several are open
# when a signal comes in the line loop, and 8 to complete when it comes
# while the logs are finished.
SIGNAL_PART_SAMPLES = SIGNAL_RECORDS // 8
# Names a reader takes for a finished output. Anything else left after a
# kill must end in `.partial`.
FINAL_SUFFIXES = (".json", ".eval", ".jsonl", ".html")
# Between two looks at /proc: far shorter than any phase a marker stands
# for; less often while the command starts, before it opens its input, and
# where a watch is told its marker is still far (`tight_within`).
POLL_SECONDS = 0.0005
STARTING_POLL_SECONDS = 0.005
# The share of its input before a mark from which the signal tests watch
# tightly: a mark is still seen within `POLL_SECONDS`, and the long read
# up to it is looked at ten times less often.
TIGHT_WITHIN = 0.05


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` and its hash, links not followed."""
    found: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(directory))] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(directory))] = digest(path)
    return found


def one_clear_line(stderr: str) -> str:
    """The one line a fault prints; fails on a traceback or more lines."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def assert_no_final_outputs(directory: Path, before: dict[str, str]) -> None:
    """Nothing new under a final-looking name; old files unchanged."""
    after = snapshot(directory)
    for name, value in before.items():
        assert after.get(name) == value, f"{name} was changed or removed"
    new = set(after) - set(before)
    complete_looking = [name for name in new if name.endswith(FINAL_SUFFIXES)]
    assert not complete_looking, complete_looking


def write_stage_records(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            context = ["D1"] if number % 3 else ["D1", "D2"]
            record = {
                "required": ["D1", "D2"],
                "context": context,
                "correct": number % 2 == 0,
            }
            out.write(json.dumps({"id": f"run-{number}", "input": record}) + "\n")


def write_stage_log(folder: Path, count: int) -> Path:
    """`folder/log.eval`: `tracegrade score` of `count` records of
    `write_stage_records`, the input to the commands that read a log."""
    write_stage_records(folder / "runs.jsonl", count)
    done = run_tracegrade(
        "score", "stage_diagnosis", "runs.jsonl", "--log-dir", "logs", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    (log,) = (folder / "logs").glob("*.eval")
    shutil.move(log, folder / "log.eval")
    shutil.rmtree(folder / "logs")
    return folder / "log.eval"


def write_labels(path: Path, count: int, every: int) -> None:
    """Staff labels for the runs of `write_stage_records`: every `every`th
    one correct."""
    path.write_text(
        "".join(
            json.dumps({"id": f"run-{number}", "correct": number % every == 0}) + "\n"
            for number in range(count)
        )
    )


@pytest.fixture(scope="session")
def signal_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`SIGNAL_RECORDS` stage records, written once per session."""
    path = tmp_path_factory.mktemp("signal-input") / "runs.jsonl"
    write_stage_records(path, SIGNAL_RECORDS)
    return path


@pytest.fixture(scope="session")
def short_signal_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`SHORT_SIGNAL_RECORDS` stage records, written once per session."""
    path = tmp_path_factory.mktemp("short-signal-input") / "runs.jsonl"
    write_stage_records(path, SHORT_SIGNAL_RECORDS)
    return path


# --- Signals at a point of the run, shown by a marker ------------------------


def workload_too_small(what: str) -> NoReturn:
    """Fail a test whose signal cannot land where it must: never a pass that
    proved nothing."""
    pytest.fail(
        f"{what}: the workload is too small for this machine "
        "(raise SIGNAL_RECORDS, or SHORT_SIGNAL_RECORDS for the test's "
        "short_signal_input, in tests/faults/conftest.py)",
        pytrace=False,
    )


def ended_before(process: CommandProcess, what: str) -> NoReturn:
    """Fail a test whose process ended before `what`: too fast if it
    succeeded, else failed, with its stderr."""
    _, stderr = process.communicate()
    if process.returncode == 0:
        workload_too_small(f"the process ended before {what}")
    pytest.fail(
        f"the process failed (exit code {process.returncode}) before {what}: {stderr}"
    )


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, T, Z...); None once the
    process is gone (reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name in parentheses may hold spaces: the state follows it.
    return stat.rsplit(")", 1)[1].split()[0]


class InputWatch:
    """How far a process has read one input file, seen through /proc.

    The progress marker of the signal tests: the position of the process's
    descriptor open on the file (/proc/PID/fdinfo). It stands
    for the progress of a command that reads its input from start to end
    as it works (`score`, `check`); the file is read in buffered chunks, a
    few kilobytes ahead of the line being worked on. A file read otherwise
    (a `.eval` zip, read from its directory at the end; a log read whole
    at once) needs a marker of its own.
    """

    def __init__(self, process: CommandProcess, path: Path) -> None:
        self.process = process
        self.pid = process.pid
        self.path = path.resolve()
        self.size = path.stat().st_size
        self.opened = False
        self._fd: str | None = None  # where it was last seen open

    def position(self) -> int | None:
        """The read position in the file (of the first descriptor found, if
        the process has several), or None while the process does not have it
        open (not yet, or no longer: see `opened`)."""
        if self._fd is not None:
            position = self._position_through(self._fd)
            if position is not None:
                return position  # one look: a tight poll stays cheap
        try:
            descriptors = os.listdir(f"/proc/{self.pid}/fd")
        except OSError:
            descriptors = []  # the process is gone
        for fd in descriptors:
            position = self._position_through(fd)
            if position is not None:
                self._fd = fd
                self.opened = True
                return position
        self._fd = None
        return None

    def _position_through(self, fd: str) -> int | None:
        try:
            if os.readlink(f"/proc/{self.pid}/fd/{fd}") != str(self.path):
                return None
            with open(f"/proc/{self.pid}/fdinfo/{fd}", "rb") as info:
                return int(info.read().split(b"pos:", 1)[1].split()[0])
        except OSError:
            return None  # closed meanwhile

    def wait_until_past(
        self, fraction: float, timeout: float = 300.0, *, tight_within: float = 1.0
    ) -> None:
        """Return as soon as the process has read `fraction` of the file.

        Polls are `POLL_SECONDS` apart once the process is within
        `tight_within` of the file before the mark (by default from its
        opening on), `STARTING_POLL_SECONDS` before: a long wait for a
        distant mark costs the test's process a few hundred looks, not
        thousands, and the mark is still seen as promptly."""
        target = fraction * self.size
        self._wait(
            lambda position: position is not None and position >= target,
            f"{fraction:.0%} of {self.path.name}",
            timeout,
            tight_from=target - tight_within * self.size,
        )

    def wait_until_closed(
        self, timeout: float = 300.0, *, tight_within: float = 1.0
    ) -> None:
        """Return as soon as the process has read the file and closed it:
        it is past its line loop, writing its outputs. Polls are tight
        within `tight_within` of the file's end (see `wait_until_past`)."""
        self._wait(
            lambda position: position is None and self.opened,
            f"the closing of {self.path.name}",
            timeout,
            tight_from=(1 - tight_within) * self.size,
        )

    def _wait(
        self,
        reached: Callable[[int | None], bool],
        what: str,
        timeout: float,
        tight_from: float,
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            position = self.position()
            if reached(position):
                return
            if process_state(self.pid) in (None, "Z"):
                ended_before(self.process, what)
            if time.monotonic() > deadline:
                pytest.fail(f"no sign of {what} after {timeout:.0f} s")
            # Once read and closed the file is past any mark: tight, too.
            near = self.opened and (position is None or position >= tight_from)
            time.sleep(POLL_SECONDS if near else STARTING_POLL_SECONDS)

    def assert_mid_input(self) -> None:
        """The file still open and not read to its end: the process is in
        its line loop. Checked while it is frozen, this holds when the
        signal sent then arrives."""
        position = self.position()
        if position is None:
            workload_too_small(f"{self.path.name} was already closed when frozen")
        if position >= self.size:
            workload_too_small(f"{self.path.name} was already read whole when frozen")

    def assert_closed(self) -> None:
        """The file read and closed, not opened again."""
        assert self.opened and self.position() is None, self.path


@contextmanager
def _promptly() -> Iterator[None]:
    """This thread ahead of ordinary processes (nice -10, as root) for the
    block: on a loaded machine a watcher then sees its marker, and freezes
    the process, within a millisecond or two rather than a scheduler's
    time slice later. Without root, as it was."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except PermissionError:
        yield
        return
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)


def _wait_stopped(pid: int, timeout: float) -> bool:
    """Wait until the process shows it is stopped; False if it has ended."""
    deadline = time.monotonic() + timeout
    while (state := process_state(pid)) not in ("T", "t"):
        if state in (None, "Z", "X"):
            return False
        if time.monotonic() > deadline:
            pytest.fail(f"process {pid} did not stop (state {state})")
        time.sleep(POLL_SECONDS)
    return True


@contextmanager
def frozen(
    process: CommandProcess,
    once: Callable[[], None] = lambda: None,
    timeout: float = 60.0,
) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block, all its threads (the
    `.eval` writer's too), then continued (SIGCONT); stopped as soon as
    `once` returns, which waits for a marker (`InputWatch.wait_until_past`,
    `wait_until_closed`).

    What the block checks from outside cannot change before a signal sent
    inside it arrives: a caught signal waits, pending, until the process
    continues, and SIGKILL ends it at once. The process shows state T.
    """
    pid = process.pid
    with _promptly():
        once()
        process.send_signal(signal.SIGSTOP)
    try:
        if not _wait_stopped(pid, timeout):
            ended_before(process, "it could be frozen")
        yield
    finally:
        process.send_signal(signal.SIGCONT)


def signal_mid_input(
    process: CommandProcess, path: Path, signum: int, fraction: float
) -> None:
    """Send `signum` to `process` once it has read `fraction` of `path`, while
    it is still reading it: frozen at the marker, checked, signalled,
    continued."""
    watch = InputWatch(process, path)
    wait = partial(watch.wait_until_past, fraction, tight_within=TIGHT_WITHIN)
    with frozen(process, once=wait):
        watch.assert_mid_input()
        process.send_signal(signum)


def assert_still_writing(directory: Path, before: dict[str, str]) -> None:
    """Outputs begun under `.partial` names and none under its final name
    yet: the run has not finished. For a frozen process."""
    names = {str(path.relative_to(directory)) for path in directory.rglob("*")}
    new = names - set(before)
    final = sorted(name for name in new if name.endswith(FINAL_SUFFIXES))
    if final:
        workload_too_small(f"the run had finished when frozen ({final})")
    if not any(name.endswith(".partial") for name in new):
        workload_too_small("no output was begun when frozen")


# --- Several commands in one fresh interpreter --------------------------------


class StreamedCommand(NamedTuple):
    """One command of `commands_in_one_interpreter`: its program
    (`tracegrade` or `inspect`), its arguments, its directory, its standard
    output and error (a file and how it is opened: `append` as `>>`,
    `read-write` as `1<>`; or None to capture the stream), and soft
    resource limits for it alone: (resource.RLIMIT_*, soft), as `ulimit -f`
    sets one."""

    args: Sequence[str]
    cwd: Path
    stdout: tuple[Path, str] | None = None
    stderr: tuple[Path, str] | None = None
    soft_limits: Sequence[tuple[int, int]] = ()
    program: str = "tracegrade"


# Runs each command as its program runs (`tracegrade.cli.run`, which checks
# the standard streams first; the `inspect` console script's function, and
# an exception it lets out told through the exception hook as the
# interpreter tells it, by Inspect's hook once Inspect has set it), with
# descriptors 1 and 2 opened
# anew on its files, in its directory, under its own soft limits; writes
# each exit code beside it. What a command leaves in the interpreter for
# the program's end (the checked stdout it set, the outputs it wrote, the
# temporary directory) is reset before the next, as a fresh one has it.
_COMMANDS = """
import json, os, resource, sys, tempfile
from importlib.metadata import entry_points
from tracegrade import outputs
from tracegrade.cli import run


def program(name):
    if name == "tracegrade":
        return run
    (script,) = entry_points(group="console_scripts", name=name)
    return script.load()


FLAGS = {
    "append": os.O_WRONLY | os.O_APPEND,
    "read-write": os.O_RDWR,
    "capture": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
}
stdout = sys.stdout
for case in json.loads(sys.argv[1]):
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout = stdout
    outputs._standard_output = None
    outputs._outputs.clear()
    tempfile.tempdir = None
    for descriptor, (path, how) in ((1, case["stdout"]), (2, case["stderr"])):
        opened = os.open(path, FLAGS[how])
        os.dup2(opened, descriptor)
        os.close(opened)
    os.chdir(case["cwd"])
    limits = {}
    for limit, soft in case["soft_limits"]:
        limits[limit] = resource.getrlimit(limit)
        resource.setrlimit(limit, (soft, limits[limit][1]))
    sys.argv = [case["program"], *case["args"]]
    try:
        program(case["program"])()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        sys.excepthook(*sys.exc_info())  # as the interpreter ends on it
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    for limit, before in limits.items():
        resource.setrlimit(limit, before)
    with open(case["exit"], "w") as out:
        out.write(str(code))
"""


def commands_in_one_interpreter(
    commands: Sequence[StreamedCommand],
    folder: Path,
    rlimits: Sequence[Limit] = (),
    env: Mapping[str, str] | None = None,
) -> list[subprocess.CompletedProcess[str]]:
    """`commands` run one after the other in one fresh interpreter, under
    `rlimits`, with `env` added to its environment: for commands whose
    standard streams or resource limit are the point, that the
    interpreter's imports need not be paid for each. Captured streams and
    exit codes are kept in `folder`."""
    cases = []
    for number, command in enumerate(commands):
        streams = {}
        for name, given in (("stdout", command.stdout), ("stderr", command.stderr)):
            streams[name] = (
                [str(given[0]), given[1]]
                if given is not None
                else [str(folder / f"{number}.{name}"), "capture"]
            )
        cases.append(
            {
                "program": command.program,
                "args": [str(arg) for arg in command.args],
                "cwd": str(command.cwd),
                **streams,
                "soft_limits": [list(limit) for limit in command.soft_limits],
                "exit": str(folder / f"{number}.exit"),
            }
        )
    process = CommandProcess(
        [sys.executable, "-c", _COMMANDS, json.dumps(cases)],
        cwd=folder,
        env=env,
        rlimits=rlimits,
    )
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    done = []
    for case in cases:
        captured = {
            name: Path(case[name][0]).read_text(encoding="utf-8")
            if case[name][1] == "capture"
            else ""
            for name in ("stdout", "stderr")
        }
        done.append(
            subprocess.CompletedProcess(
                [case["program"], *case["args"]],
                int(Path(case["exit"]).read_text()),
                captured["stdout"],
                captured["stderr"],
            )
        )
    return done


class CommandRun(NamedTuple):
    """A command of `runs_in_one_interpreter`: its directory, what the
    directory held before the command ran (`snapshot`), how it ended."""

    work: Path
    before: dict[str, str]
    done: subprocess.CompletedProcess[str]


def runs_in_one_interpreter(
    commands: Mapping[Key, StreamedCommand], folder: Path
) -> dict[Key, CommandRun]:
    """`commands_in_one_interpreter` of `commands`, keyed as they are, each
    command's directory snapshotted first: for a test that the command
    left its directory as it found it."""
    befores = {key: snapshot(command.cwd) for key, command in commands.items()}
    done = commands_in_one_interpreter(list(commands.values()), folder)
    return {
        key: CommandRun(command.cwd, befores[key], result)
        for (key, command), result in zip(commands.items(), done, strict=True)
    }


# --- File systems ------------------------------------------------------------


def _can_mount() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0


@contextmanager
def mounted_tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A real tmpfs at `where` (root only): a small or read-only file system."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
        check=True,
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


CAN_MOUNT = _can_mount()
"""Whether a tmpfs can be mounted here: the full-disk tests need one."""
needs_mount = pytest.mark.skipif(
    not CAN_MOUNT, reason="mounting a tmpfs needs root on Linux"
)
