"""What the benchmarks share: one measured subprocess (wall and CPU time, and
its own peak memory), the commands they run and the records they score.

A child's peak RSS on Linux starts at its spawner's size, so each command is
started by `LAUNCHER`, a bare interpreter, which also sums the PSS of the
command's processes every 50 ms (a run can be several processes).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent

TRACEGRADE = "import tracegrade.cli as cli; getattr(cli, 'run', cli.main)()"
"""`python -c` code that runs `tracegrade` as its console script does
(`main` in revisions from before `run`, which `--baseline` may measure)."""


CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
"""This environment without INSPECT_* settings (a default model or log dir)."""


def tracegrade(*arguments: str | Path) -> list[str]:
    """The command running `tracegrade ARGUMENTS` as its console script does."""
    return [sys.executable, "-c", TRACEGRADE, *map(str, arguments)]


def machine() -> dict[str, Any]:
    """Where a benchmark ran, for its report."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def revision_env(
    revision: str, scratch: Path, env: Mapping[str, str]
) -> dict[str, str]:
    """`env` with the `tracegrade` of git `revision` first on PYTHONPATH:
    its `src/`, exported under `scratch` (to measure what a change saved)."""
    target = scratch / f"revision-{revision}"
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "src"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return {**env, "PYTHONPATH": str(target / "src")}


def write_stage_records(path: Path, count: int) -> None:
    """`count` stage runs `stage-0000000`, ... as `tracegrade score` reads them:
    complete, gappy or repeating contexts, either label, every stage."""
    with path.open("w", encoding="utf-8") as out:
        for index in range(count):
            shape = index % 6
            required = [
                f"D{(index * 7 + step) % 9973}" for step in range(1 + index % 4)
            ]
            context = required[1:] if shape in (1, 4) else list(required)
            if shape == 5:
                context += [*context[:1], f"X{index % 101}"]
            record = {
                "required": required,
                "context": context,
                "correct": shape % 3 != 0,
            }
            out.write(json.dumps({"id": f"stage-{index:07d}", "input": record}) + "\n")


LAUNCHER = """
import json, os, subprocess, sys, threading, time

def tree(pid):
    found = [pid]
    for each in found:
        try:
            with open(f"/proc/{each}/task/{each}/children") as listed:
                found += [int(child) for child in listed.read().split()]
        except OSError:
            pass
    return found

def sizes(pid):
    rss = pss = 0
    for each in tree(pid):
        try:
            with open(f"/proc/{each}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return rss, pss

peaks = {"rss_sum_kib": 0, "pss_sum_kib": 0}
done = threading.Event()

def sample(pid):
    while not done.wait(0.05):
        rss, pss = sizes(pid)
        peaks["rss_sum_kib"] = max(peaks["rss_sum_kib"], rss)
        peaks["pss_sum_kib"] = max(peaks["pss_sum_kib"], pss)

started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
sampler = threading.Thread(target=sample, args=(child.pid,), daemon=True)
sampler.start()
_, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - started
done.set()
sampler.join()
with open(sys.argv[1], "w") as out:
    json.dump({
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
        **peaks,
        "exit_code": os.waitstatus_to_exitcode(status),
    }, out)
"""


@dataclass
class Measured:
    seconds: float
    cpu_seconds: float
    """User and system time: less moved than wall time by other load."""
    peak_mib: float
    """The run's peak memory: its processes' summed PSS, sampled, and at
    least the largest process's peak RSS."""
    stdout: str
    """Empty when it went to a file (`stdout_to`)."""
    stderr: str
    exit_code: int
    largest_process_mib: float = 0.0
    """Peak RSS of the largest process of the run (wait4)."""
    rss_sum_mib: float = 0.0
    """Peak of the processes' summed RSS (shared pages counted twice)."""


def run_measured(
    command: Sequence[str],
    cwd: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout_to: Path | None = None,
    exit_codes: Collection[int] = (0,),
) -> Measured:
    """Run `command` through `LAUNCHER` so that its peak is its own; raise
    if it exits with a code not in `exit_codes`. `stdout_to` sends its
    output to a file rather than into memory."""
    with (
        tempfile.TemporaryFile() as captured,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as scratch,
    ):
        usage_file = Path(scratch) / "usage.json"
        with contextlib.ExitStack() as stack:
            out: IO[bytes] = captured
            if stdout_to is not None:
                out = stack.enter_context(stdout_to.open("wb"))
            launcher = subprocess.run(
                [sys.executable, "-I", "-S", "-c", LAUNCHER, str(usage_file), *command],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                check=False,
            )
        captured.seek(0)
        err.seek(0)
        stdout = captured.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        if not usage_file.exists():
            raise RuntimeError(
                f"the launcher exited {launcher.returncode}:\n{stderr[-3000:]}"
            )
        usage = json.loads(usage_file.read_text(encoding="utf-8"))
    if usage["exit_code"] not in exit_codes:
        raise RuntimeError(
            f"{list(command)[:6]} exited {usage['exit_code']}:\n{stderr[-3000:]}"
        )
    return Measured(
        usage["seconds"],
        usage["cpu_seconds"],
        max(usage["pss_sum_kib"], usage["maxrss_kib"]) / 1024,
        stdout,
        stderr,
        usage["exit_code"],
        largest_process_mib=usage["maxrss_kib"] / 1024,
        rss_sum_mib=usage["rss_sum_kib"] / 1024,
    )


__all__ = [
    "CLEAN_ENV",
    "LAUNCHER",
    "Measured",
    "machine",
    "run_measured",
    "tracegrade",
    "write_stage_records",
]
