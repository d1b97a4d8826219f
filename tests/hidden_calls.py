"""Run tracegrade with the Linux-only calls hidden, as on Windows or macOS.

    python tests/hidden_calls.py windows|macos STEPS.json

Before anything else is imported, the calls a platform lacks are removed
from the standard library (`HIDDEN`), so that tracegrade and Inspect meet
them as they would there: a module that is not there fails to import, a
function or constant that is not there is an AttributeError. Then each
step of STEPS.json runs in this process, in order: `["tracegrade", ARGS...]`
as the `tracegrade` program runs it (its exit code kept; an argument with
a `*` is the one file it matches then), or
`["inspect-eval", TASK, LOG_DIR]` through `inspect_ai.eval` (the log's
status kept), or `["workers"]`: from then on `tracegrade score`
scores in worker processes whatever the input's size, and each
worker hides the same calls as it starts (a `sitecustomize` on its path),
saying so in `hidden-in-child`. The results go to stdout as one JSON list.

What it cannot hide is the kernel (paths, file locks and signals still
behave as Linux's), nor what a library does on Linux alone because
`sys.platform` says Linux (Inspect counts CPUs with `os.sched_getaffinity`
there). `.github/workflows/ci.yml` runs the suite on the real platforms.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import sys
from typing import Any

WINDOWS_SIGNALS = {"SIGINT", "SIGTERM", "SIGABRT", "SIGFPE", "SIGILL", "SIGSEGV"}
"""The signals Python has on Windows (and SIGBREAK, which Linux lacks)."""

HIDDEN: dict[str, dict[str, tuple[str, ...]]] = {
    "windows": {
        "modules": ("fcntl",),
        "os": (
            "fork",
            "forkpty",
            "register_at_fork",
            "pidfd_open",
            "pread",
            "pwrite",
            "fchmod",  # Windows has it from Python 3.13 only
        ),
        "socket": ("send_fds", "recv_fds"),
        # Every signal but Windows's few, and the mask of them.
        "signal": (
            "pthread_sigmask",
            *(
                name
                for name in dir(signal)
                if name.startswith("SIG")
                and not name.startswith("SIG_")
                and name not in WINDOWS_SIGNALS
            ),
        ),
    },
    "macos": {
        "modules": (),
        "fcntl": ("F_SETPIPE_SZ", "F_GETPIPE_SZ"),
        "os": ("pidfd_open",),
        "socket": (),
        "signal": ("SIGPWR",),
    },
}


def hide(platform: str) -> None:
    """Remove from the standard library what `platform` lacks."""
    hidden = HIDDEN[platform]
    for module in hidden["modules"]:
        sys.modules[module] = None  # type: ignore[assignment]
    if "fcntl" in hidden:
        import fcntl

        for name in hidden["fcntl"]:
            if hasattr(fcntl, name):
                delattr(fcntl, name)
    for owner, names in ((os, hidden["os"]), (socket, hidden["socket"])):
        for name in names:
            if hasattr(owner, name):
                delattr(owner, name)
    for name in hidden["signal"]:
        if hasattr(signal, name):
            delattr(signal, name)


def score_in_workers(platform: str) -> None:
    """`tracegrade score` in worker processes (`bulk.workers`) from now on,
    with `platform`'s calls hidden there too."""
    from tracegrade.bulk import workers

    workers.PARALLEL_FROM = 0  # type: ignore[misc]
    startup = os.path.abspath("child-startup")
    os.makedirs(startup, exist_ok=True)
    with open(os.path.join(startup, "sitecustomize.py"), "w") as hook:
        hook.write(
            "import sys\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import hidden_calls\n"
            f"hidden_calls.hide({platform!r})\n"
            f"open({os.path.abspath('hidden-in-child')!r}, 'a').write('hidden\\n')\n"
        )
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = (
        startup if not inherited else startup + os.pathsep + inherited
    )


def run_step(step: list[str], platform: str) -> Any:
    # A pattern stands for the one file it matches when the step runs (the
    # log an earlier step wrote, named as it was written).
    step = [_one(argument) if "*" in argument else argument for argument in step]
    if step[0] == "workers":
        score_in_workers(platform)
        return 0
    if step[0] == "inspect-eval":
        from inspect_ai import eval

        _, task, log_dir = step
        (log,) = eval(
            task, model="none/none", display="none", log_dir=log_dir, log_realtime=False
        )
        return log.status
    from tracegrade.cli import run

    sys.argv = step
    try:
        run()
    except SystemExit as stop:
        return stop.code or 0
    return 0


def _one(pattern: str) -> str:
    (path,) = glob.glob(pattern)
    return path


def main() -> None:
    platform, steps = sys.argv[1], sys.argv[2]
    hide(platform)
    with open(steps, encoding="utf-8") as listed:
        results = [run_step(step, platform) for step in json.load(listed)]
    sys.stdout.flush()
    os.write(1, (json.dumps(results) + "\n").encode())


if __name__ == "__main__":
    main()
