"""`inspect` and `tracegrade` run as a user runs them: in this interpreter
through click's `CliRunner` where no process is needed, else in a fresh one
(a signal, a resource limit, the standard streams, a peak of memory)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NamedTuple

from click.testing import CliRunner

from tests.support import SUBPROCESS_ENV, working_in

# A command's standard stream, in a process of its own: a file to read it
# from (stdin) or write it to, a descriptor of the test's own, or None:
# stdin from /dev/null, stdout and stderr captured for `communicate`.
Stream = Path | int | None
# (resource.RLIMIT_*, soft, hard), set in the command before it starts.
Limit = tuple[int, int, int]


# --- In the test's own interpreter ------------------------------------------


def _environment(env: Mapping[str, str] | None) -> dict[str, str | None]:
    """What `SUBPROCESS_ENV` gives a process, as changes to this one's
    environment for the length of a command (None: removed)."""
    changes: dict[str, str | None] = {
        key: None for key in os.environ if key.startswith("INSPECT_")
    }
    changes["COLUMNS"] = SUBPROCESS_ENV["COLUMNS"]
    changes.update(env or {})
    return changes


@contextlib.contextmanager
def _as_a_command(cwd: Path) -> Iterator[None]:
    """What a command changes in the interpreter stays with it: the working
    directory, the temporary directory and the outputs a signal would name
    (not Inspect's exception hook, set once per interpreter)."""
    from tracegrade import outputs

    tempfile.tempdir = None
    try:
        with working_in(cwd):
            yield
    finally:
        tempfile.tempdir = None
        # What `tracegrade.outputs.written_outputs` reports to a signal:
        # this command's, not the one before's.
        outputs._outputs.clear()


def _completed(
    argv: list[str],
    exit_code: int,
    stdout: bytes | str,
    stderr: bytes | str,
) -> subprocess.CompletedProcess[str]:
    def text(stream: bytes | str) -> str:
        if isinstance(stream, str):
            return stream
        # As Popen(text=True) decodes: universal newlines.
        return io.TextIOWrapper(io.BytesIO(stream), encoding="utf-8").read()

    return subprocess.CompletedProcess(argv, exit_code, text(stdout), text(stderr))


def run_tracegrade(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS` in this interpreter, in `cwd`, with `env` added to
    the environment tests run commands with, and nothing on stdin."""
    from tracegrade.cli import main

    argv = [str(arg) for arg in args]
    with _as_a_command(cwd):
        result = CliRunner().invoke(
            main,
            argv,
            env=_environment(env),
            prog_name="tracegrade",
        )
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        # As the interpreter prints an uncaught exception.
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return _completed(["tracegrade", *argv], result.exit_code, result.stdout, stderr)


def _console_script(name: str) -> Callable[[], Any]:
    """The function an installed console script runs."""
    (script,) = entry_points(group="console_scripts", name=name)
    function: Callable[[], Any] = script.load()
    return function


def _exit_code(stop: SystemExit) -> tuple[int, str]:
    """The exit code, and what is printed, as the interpreter ends on an
    uncaught SystemExit."""
    if stop.code is None:
        return 0, ""
    if isinstance(stop.code, int):
        return stop.code & 0xFF, ""
    return 1, f"{stop.code}\n"


def run_inspect(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` in this interpreter, through its console script. Inspect
    keeps the display of its first eval per interpreter: a test of what it
    prints runs it in a fresh one (`inspect_process`)."""
    inspect = _console_script("inspect")
    argv = [str(arg) for arg in args]
    runner = CliRunner()
    with (
        _as_a_command(cwd),
        runner.isolation(env=_environment(env)) as (stdout, stderr, _),
    ):
        saved_argv = sys.argv
        sys.argv = ["inspect", *argv]
        try:
            inspect()
            exit_code = 0
        except SystemExit as stop:
            exit_code, said = _exit_code(stop)
            sys.stderr.write(said)
        except Exception:
            # As the interpreter reports it: through `sys.excepthook`,
            # which the script replaces with Inspect's own.
            sys.excepthook(*sys.exc_info())
            exit_code = 1
        finally:
            sys.argv = saved_argv
            sys.stdout.flush()
            sys.stderr.flush()
        return _completed(
            ["inspect", *argv], exit_code, stdout.getvalue(), stderr.getvalue()
        )


# --- In a process of its own --------------------------------------------------

# Sets the limits given as JSON, then becomes the command: it starts as a
# fresh one would, under them.
_LIMITED = """
import json, os, resource, sys
for limit, soft, hard in json.loads(sys.argv[1]):
    resource.setrlimit(limit, (soft, hard))
os.execv(sys.argv[2], sys.argv[2:])
"""


class CommandProcess:
    """A command in a fresh interpreter, in a session of its own; stdout and
    stderr captured into files (a pipe nobody reads while the test holds
    the command frozen would fill)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stdin: Stream = None,
        stdout: Stream = None,
        stderr: Stream = None,
        rlimits: Sequence[Limit] = (),
        new_session: bool = True,
    ) -> None:
        self.args = list(argv)
        self._captured = Path(tempfile.mkdtemp(prefix="tracegrade-command-"))
        self._streams = {"stdout": stdout is None, "stderr": stderr is None}
        command = self.args
        if rlimits:
            limits = json.dumps([list(limit) for limit in rlimits])
            command = [sys.executable, "-c", _LIMITED, limits, *command]
        with contextlib.ExitStack() as opened:

            def stream(given: Stream, read: bool, capture: str) -> Any:
                if isinstance(given, int):
                    return given
                if given is None and read:
                    return subprocess.DEVNULL
                path = self._captured / capture if given is None else given
                return opened.enter_context(path.open("rb" if read else "wb"))

            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env={**SUBPROCESS_ENV, **(env or {})},
                stdin=stream(stdin, True, ""),
                stdout=stream(stdout, False, "stdout"),
                stderr=stream(stderr, False, "stderr"),
                start_new_session=new_session,
            )
        self.pid = self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)

    def send_signal(self, signum: int) -> None:
        """Send `signum`, unless the command has ended (as Popen does)."""
        self.process.send_signal(signum)

    def kill(self) -> None:
        self.process.kill()

    def stderr_so_far(self) -> str:
        """What the command has written to its captured stderr until now."""
        return self._read("stderr") or ""

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Wait for the command; its captured standard output and error (None
        for a stream the test gave it)."""
        self.wait(timeout)
        output = self._read("stdout"), self._read("stderr")
        shutil.rmtree(self._captured, ignore_errors=True)
        return output

    def _read(self, stream: str) -> str | None:
        if not self._streams[stream]:
            return None
        path = self._captured / stream
        # As Popen(text=True) decodes: universal newlines.
        return path.read_text(encoding="utf-8") if path.exists() else ""


def start_tracegrade(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    rlimits: Sequence[Limit] = (),
) -> CommandProcess:
    """`tracegrade ARGS` (`python -m tracegrade`) started in a fresh
    interpreter and left running, in a session of its own."""
    return CommandProcess(
        [sys.executable, "-m", "tracegrade", *args],
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        rlimits=rlimits,
    )


def _to_its_end(
    process: CommandProcess, timeout: float
) -> subprocess.CompletedProcess[str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.wait(), out, err)


def tracegrade_process(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    rlimits: Sequence[Limit] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`tracegrade ARGS` in a fresh interpreter, run to its end; `stdin`,
    `stdout` and `stderr` a file or a descriptor (else /dev/null, and
    captured)."""
    process = start_tracegrade(
        *args,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        rlimits=rlimits,
    )
    return _to_its_end(process, timeout)


def inspect_process(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` (`python -m inspect_ai`) in a fresh interpreter, run to
    its end: for a test of what Inspect sets once per process, such as its
    display, which it keeps from the first eval on."""
    process = CommandProcess(
        [sys.executable, "-m", "inspect_ai", *args], cwd=cwd, env=env, new_session=False
    )
    return _to_its_end(process, timeout)


class StreamedCommand(NamedTuple):
    """A command of `commands_in_one_interpreter`: its streams a file and how
    it is opened (`append` as `>>`, `read-write` as `1<>`) or None to
    capture; soft limits (RLIMIT_*, soft) and environment of its own."""

    args: Sequence[str]
    cwd: Path
    stdout: tuple[Path, str] | None = None
    stderr: tuple[Path, str] | None = None
    soft_limits: Sequence[tuple[int, int]] = ()
    program: str = "tracegrade"
    env: Mapping[str, str] | None = None


# Runs each command as its program does, an uncaught exception told
# through the exception hook, its descriptors 1 and 2 opened on its files,
# under its own limits and environment; writes its exit code and the peak so
# far (KiB: VmHWM, since Linux starts ru_maxrss at the parent's peak).
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


def peak():
    with open("/proc/self/status") as status:
        (own,) = (int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


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
    environment = dict(os.environ)
    os.environ.update(case["env"])
    limits = {}
    for limit, soft in case["soft_limits"]:
        limits[limit] = resource.getrlimit(limit)
        resource.setrlimit(limit, (soft, limits[limit][1]))
    sys.argv = [case["program"], *case["args"]]
    try:
        program(case["program"])()
        code = 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = (stop.code or 0) & 0xFF
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())  # as the interpreter ends on it
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    for limit, before in limits.items():
        resource.setrlimit(limit, before)
    os.environ.clear()
    os.environ.update(environment)
    with open(case["exit"], "w") as out:
        json.dump([code, peak()], out)
"""


class RanInOne(subprocess.CompletedProcess[str]):
    """How a command of `commands_in_one_interpreter` ended, and the
    interpreter's peak resident memory once it had (MiB)."""

    def __init__(
        self, args: list[str], returncode: int, stdout: str, stderr: str, peak: float
    ) -> None:
        super().__init__(args, returncode, stdout, stderr)
        self.peak_mib = peak


def commands_in_one_interpreter(
    commands: Sequence[StreamedCommand],
    folder: Path,
    rlimits: Sequence[Limit] = (),
    env: Mapping[str, str] | None = None,
) -> list[RanInOne]:
    """`commands` run in turn in one fresh interpreter (one import of
    Inspect), under `rlimits` and with `env`; captured streams kept in
    `folder`. A peak is the interpreter's high-water mark so far."""
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
                "env": dict(command.env or {}),
                "exit": str(folder / f"{number}.exit"),
            }
        )
    process = CommandProcess(
        [sys.executable, "-c", _COMMANDS, json.dumps(cases)],
        cwd=folder,
        env=env,
        rlimits=rlimits,
    )
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    done = []
    for case in cases:
        captured = {
            name: Path(case[name][0]).read_text(encoding="utf-8")
            if case[name][1] == "capture"
            else ""
            for name in ("stdout", "stderr")
        }
        code, peak = json.loads(Path(case["exit"]).read_text())
        done.append(
            RanInOne(
                [case["program"], *case["args"]],
                code,
                captured["stdout"],
                captured["stderr"],
                peak / 1024,
            )
        )
    return done


def peaks_in_one_interpreter(
    commands: Sequence[tuple[Sequence[str], Path]], folder: Path
) -> list[RanInOne]:
    """`tracegrade ARGS` of each (arguments, directory) in one interpreter:
    what a second input adds to the peak is what the command holds."""
    return commands_in_one_interpreter(
        [StreamedCommand(args, cwd) for args, cwd in commands], folder
    )


class InspectCommand(NamedTuple):
    """`inspect ARGS` in `cwd`, with `env` added to the environment tests
    run commands with."""

    args: list[str]
    cwd: Path
    env: dict[str, str] | None = None


def inspect_in_one_fresh_process(
    commands: list[InspectCommand],
) -> list[RanInOne]:
    """`inspect` commands in turn in one interpreter where no test ran before:
    the first sets Inspect's exception hook and display as the script does."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-inspect-") as folder:
        return commands_in_one_interpreter(
            [
                StreamedCommand(
                    command.args, command.cwd, program="inspect", env=command.env
                )
                for command in commands
            ],
            Path(folder),
        )


def tracegrade_shell(
    script: str, cwd: Path, *, errexit: bool = False
) -> subprocess.CompletedProcess[str]:
    """A bash script, as in the docs, in which `tracegrade` and `python` are
    this interpreter's; a pipeline fails if any command in it fails, and
    with `errexit` the script stops at the first that does."""
    interpreter = shlex.quote(sys.executable)
    define = (
        f'tracegrade() {{ {interpreter} -m tracegrade "$@"; }}\n'
        f'python() {{ {interpreter} "$@"; }}\n'
    )
    return subprocess.run(
        ["bash", *(["-e"] if errexit else []), "-o", "pipefail", "-c", define + script],
        cwd=cwd,
        env=SUBPROCESS_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


# Runs the command given as its arguments and writes the largest peak
# resident memory of the processes it waited for (only that command, and
# what it started) to the file named first.
_MEASURED = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def peak_rss_mib_of(
    argv: Sequence[str], *, cwd: Path, exit_codes: tuple[int, ...] = (0,)
) -> float:
    """The program `argv` run to its end; its peak resident memory in MiB,
    from the kernel (ru_maxrss, KiB on Linux): the largest of its
    processes', start-up and imports included."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-peak-") as measured:
        peak = Path(measured) / "peak"
        process = CommandProcess(
            [sys.executable, "-c", _MEASURED, str(peak), *argv],
            cwd=cwd,
            new_session=False,
        )
        _, stderr = process.communicate(timeout=300)
        assert process.returncode in exit_codes, stderr
        return int(peak.read_text()) / 1024


def peak_rss_mib(*args: str, cwd: Path, exit_codes: tuple[int, ...] = (0,)) -> float:
    """`tracegrade ARGS` in a fresh interpreter: its peak resident memory in
    MiB (`peak_rss_mib_of`). Inspect's import is in it: compare two
    commands' peaks."""
    return peak_rss_mib_of(
        [sys.executable, "-m", "tracegrade", *args], cwd=cwd, exit_codes=exit_codes
    )


__all__ = [
    "CommandProcess",
    "InspectCommand",
    "Limit",
    "RanInOne",
    "Stream",
    "StreamedCommand",
    "commands_in_one_interpreter",
    "inspect_in_one_fresh_process",
    "inspect_process",
    "peak_rss_mib",
    "peak_rss_mib_of",
    "peaks_in_one_interpreter",
    "run_inspect",
    "run_tracegrade",
    "start_tracegrade",
    "tracegrade_process",
    "tracegrade_shell",
]
