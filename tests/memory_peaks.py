"""Peak memory of `tracegrade` commands run one after the other in one
fresh interpreter.

A memory test compares a command's peak on one input with its peak on
another: a far larger one, or one as long whose every line is malformed.
In one interpreter the imports (Inspect's, pyarrow's) are paid once, by
the first command, and the peak after each command is the interpreter's
high-water mark so far, from the kernel (VmHWM): what the second input
adds to it is what the command holds beyond what the first needed. So a
command holding its input whole shows as the rise of the second peak;
the memory the first run freed can be taken again by the second, which
hides at most what the first held (for a ten times smaller input, a
tenth of what the larger one would).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from tests.commands import CommandProcess

# Runs each command as the `tracegrade` program runs it (`tracegrade.cli.run`),
# its stdout and stderr in files of its own, in its directory; after each,
# the peak resident memory so far (KiB), of this process and of any it waited
# for. This process's is its VmHWM, not its ru_maxrss: Linux starts a program's
# ru_maxrss at the peak of the process it was started from (the test's, larger
# than a small command's), but VmHWM at nothing. What a command leaves in the
# interpreter for the program's end (the checked stdout, the outputs it
# wrote, the temporary directory) is reset before the next, as a fresh one
# has it.
_PEAKS = """
import json, os, resource, sys, tempfile
from tracegrade import outputs
from tracegrade.cli import run

results = os.dup(1)
done = []
for args, cwd, stdout, stderr in json.loads(sys.argv[1]):
    sys.stdout.flush()
    sys.stderr.flush()
    outputs._standard_output = None
    outputs._outputs.clear()
    tempfile.tempdir = None
    for descriptor, path in ((1, stdout), (2, stderr)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(opened, descriptor)
        os.close(opened)
    os.chdir(cwd)
    sys.argv = ["tracegrade", *args]
    try:
        run()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    with open("/proc/self/status") as status:
        (peak,) = (int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done.append([code, max(peak, children)])
os.write(results, json.dumps(done).encode())
"""


class MeasuredCommand(NamedTuple):
    """How a command of `peaks_in_one_interpreter` ended: its exit code,
    its stderr, and the interpreter's peak memory once it had (MiB)."""

    returncode: int
    stderr: str
    peak_mib: float


def peaks_in_one_interpreter(
    commands: Sequence[tuple[Sequence[str], Path]], folder: Path
) -> list[MeasuredCommand]:
    """Each `tracegrade ARGS` of `commands` (its arguments, its directory)
    run in turn in one fresh interpreter; how each ended, and the peak
    after it. Captured streams are kept in `folder`."""
    cases = [
        [
            [str(arg) for arg in args],
            str(cwd),
            str(folder / f"{number}.stdout"),
            str(folder / f"{number}.stderr"),
        ]
        for number, (args, cwd) in enumerate(commands)
    ]
    process = CommandProcess(
        [sys.executable, "-c", _PEAKS, json.dumps(cases)], cwd=folder
    )
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    return [
        MeasuredCommand(code, Path(case[3]).read_text(encoding="utf-8"), peak / 1024)
        for case, (code, peak) in zip(cases, json.loads(stdout), strict=True)
    ]
