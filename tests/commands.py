"""`inspect` and `tracegrade` as a user runs them, here or in a fresh interpreter."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NamedTuple

from click.testing import CliRunner

from tests.support import SUBPROCESS_ENV, working_in

Completed = subprocess.CompletedProcess[str]
Env = Mapping[str, str] | None


def _exit_code(program: str) -> int:
    """The console script `program` run, ending as its interpreter would."""
    (script,) = entry_points(group="console_scripts", name=program)
    try:
        script.load()()
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return (stop.code or 0) & 0xFF
        print(stop.code, file=sys.stderr)
        return 1
    except Exception:
        sys.excepthook(*sys.exc_info())  # the script's own, as it sets one
        return 1
    return 0


@contextlib.contextmanager
def _as_a_command(cwd: Path, env: Env) -> Iterator[CliRunner]:
    """A runner with a process's environment; what the command changes stays with it."""
    from tracegrade import outputs

    changes = dict.fromkeys(key for key in os.environ if key.startswith("INSPECT_"))
    changes |= {"COLUMNS": SUBPROCESS_ENV["COLUMNS"], **(env or {})}
    tempfile.tempdir = None
    try:
        with working_in(cwd):
            yield CliRunner(env=changes)
    finally:
        tempfile.tempdir = None
        outputs._outputs.clear()


def run_tracegrade(*args: str, cwd: Path, env: Env = None) -> Completed:
    """`tracegrade ARGS` in this interpreter, in `cwd`, with `env` added."""
    from tracegrade.cli import main

    argv = [str(arg) for arg in args]
    with _as_a_command(cwd, env) as runner:
        result = runner.invoke(main, argv, prog_name="tracegrade")
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(
        ["tracegrade", *argv], result.exit_code, result.stdout, stderr
    )


def run_inspect(*args: str, cwd: Path, env: Env = None) -> Completed:
    """`inspect ARGS` in this interpreter (Inspect keeps its first display)."""
    argv = [str(arg) for arg in args]
    with _as_a_command(cwd, env) as runner, runner.isolation() as (out, err, _):
        saved, sys.argv = sys.argv, ["inspect", *argv]
        try:
            code = _exit_code("inspect")
        finally:
            sys.argv = saved
            sys.stdout.flush()
            sys.stderr.flush()
        # Decoded as Popen(text=True) decodes: universal newlines.
        stdout, stderr = (
            io.TextIOWrapper(io.BytesIO(stream.getvalue()), encoding="utf-8").read()
            for stream in (out, err)
        )
    return subprocess.CompletedProcess(["inspect", *argv], code, stdout, stderr)


class CommandProcess(subprocess.Popen[bytes]):
    """A command in a fresh interpreter, printing to files (a pipe would fill
    while a test holds it frozen)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Env = None,
        stdin: int = subprocess.DEVNULL,
        stdout: Path | None = None,
    ) -> None:
        self._captured = Path(tempfile.mkdtemp(prefix="tracegrade-command-"))
        with (
            (stdout or self._captured / "stdout").open("wb") as out,
            (self._captured / "stderr").open("wb") as err,
        ):
            super().__init__(
                argv,
                cwd=cwd,
                env={**SUBPROCESS_ENV, **(env or {})},
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def stderr_so_far(self) -> str:
        return (self._captured / "stderr").read_text(encoding="utf-8")

    def communicate(  # type: ignore[override]
        self, timeout: float | None = None
    ) -> tuple[str | None, str]:
        self.wait(timeout)
        stdout = self._captured / "stdout"
        out = stdout.read_text("utf-8") if stdout.exists() else None
        err = self.stderr_so_far()
        shutil.rmtree(self._captured, ignore_errors=True)
        return out, err

    def to_its_end(self, timeout: float = 300) -> Completed:
        try:
            out, err = self.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.communicate()
            raise
        return subprocess.CompletedProcess(self.args, self.wait(), out, err)


def start_tracegrade(*args: str, cwd: Path, **options: Any) -> CommandProcess:
    """`tracegrade ARGS` started in a fresh interpreter (`CommandProcess` options)."""
    return CommandProcess(
        [sys.executable, "-m", "tracegrade", *args], cwd=cwd, **options
    )


class StreamedCommand(NamedTuple):
    """Streams a (file, "append" | "read-write" | "capture") or None to capture."""

    args: Sequence[str]
    cwd: Path
    stdout: tuple[Path, str] | None = None
    stderr: tuple[Path, str] | None = None
    soft_limits: Sequence[tuple[int, int]] = ()
    program: str = "tracegrade"
    env: Env = None


# Each command on its files, limits and env; writes its exit code and peak KiB.
_COMMANDS = """
import json, os, resource, sys, tempfile
from importlib.metadata import entry_points
from tracegrade import outputs

stdout, environment = sys.stdout, dict(os.environ)
for case in json.loads(sys.argv[1]):
    sys.stdout = stdout
    outputs._standard_output = None
    outputs._outputs.clear()
    tempfile.tempdir = None
    for descriptor, (path, how) in ((1, case["stdout"]), (2, case["stderr"])):
        flags = os.O_RDWR if how == "read-write" else os.O_WRONLY | os.O_APPEND
        os.dup2(opened := os.open(path, flags), descriptor)
        os.close(opened)
    os.chdir(case["cwd"])
    os.environ.clear()
    os.environ.update(environment, **case["env"])
    limits = {limit: resource.getrlimit(limit) for limit, _ in case["soft_limits"]}
    for limit, soft in case["soft_limits"]:
        resource.setrlimit(limit, (soft, limits[limit][1]))
    sys.argv = [case["program"], *case["args"]]
    code = _exit_code(case["program"])
    sys.stdout.flush()
    sys.stderr.flush()
    for limit, before in limits.items():
        resource.setrlimit(limit, before)
    with open("/proc/self/status") as status:
        (own,) = (int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    peak = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    with open(case["exit"], "w") as out:
        json.dump([code, peak], out)
"""


class RanInOne(subprocess.CompletedProcess[str]):
    """A command's end and the interpreter's peak RSS then (MiB)."""

    peak_mib: float


def commands_in_one_interpreter(
    commands: Sequence[StreamedCommand],
    folder: Path,
    env: Env = None,
) -> list[RanInOne]:
    """`commands` in turn in one fresh interpreter; captures kept in `folder`."""
    cases = [command._asdict() for command in commands]
    for number, case in enumerate(cases):
        case["env"] = dict(case["env"] or {})
        case["exit"] = folder / f"{number}.exit"
        for name in ("stdout", "stderr"):
            case[name] = case[name] or (folder / f"{number}.{name}", "capture")
            if case[name][1] == "capture":
                case[name][0].write_bytes(b"")  # appended to, empty
    script = inspect.getsource(_exit_code) + _COMMANDS
    argv = [sys.executable, "-c", script, json.dumps(cases, default=str)]
    _, stderr = (process := CommandProcess(argv, cwd=folder, env=env)).communicate(600)
    assert process.returncode == 0, stderr
    done = []
    for case in cases:
        out, err = (
            Path(path).read_text(encoding="utf-8") if how == "capture" else ""
            for path, how in (case["stdout"], case["stderr"])
        )
        code, peak = json.loads(case["exit"].read_text())
        ran = RanInOne([case["program"], *map(str, case["args"])], code, out, err)
        ran.peak_mib = peak / 1024
        done.append(ran)
    return done


def peaks_in_one_interpreter(
    commands: Sequence[tuple[Sequence[str], Path]], folder: Path
) -> list[RanInOne]:
    """`tracegrade ARGS` in each directory, in turn in one interpreter."""
    streamed = [StreamedCommand(args, cwd) for args, cwd in commands]
    return commands_in_one_interpreter(streamed, folder)


def inspect_in_one_fresh_process(
    commands: Sequence[tuple[Sequence[str], Path]],
) -> list[RanInOne]:
    """`inspect ARGS` in each directory, in turn in one fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-inspect-") as folder:
        streamed = [StreamedCommand(a, cwd, program="inspect") for a, cwd in commands]
        return commands_in_one_interpreter(streamed, Path(folder))


def tracegrade_shell(script: str, cwd: Path, *, errexit: bool = False) -> Completed:
    """A bash script as in the docs, with this interpreter's `tracegrade`."""
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
