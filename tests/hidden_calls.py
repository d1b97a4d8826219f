"""`python tests/hidden_calls.py windows|macos STEPS.json`: the steps run with
the Linux-only calls hidden; prints their results as one JSON list."""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import sys
from typing import Any

# The signals Python has on Windows (and SIGBREAK, which Linux lacks).
WINDOWS_SIGNALS = {"SIGINT", "SIGTERM", "SIGABRT", "SIGFPE", "SIGILL", "SIGSEGV"}
SIGNALS = {name for name in dir(signal) if name.startswith("SIG") and "_" not in name}
HIDDEN: dict[str, dict[Any, tuple[str, ...]]] = {
    "windows": {
        "modules": ("fcntl",),
        # fchmod: Windows has it from Python 3.13 only.
        os: (
            *("fork", "forkpty", "register_at_fork", "pidfd_open"),
            *("pread", "pwrite", "fchmod"),
        ),
        socket: ("send_fds", "recv_fds"),
        signal: ("pthread_sigmask", *sorted(SIGNALS - WINDOWS_SIGNALS)),
    },
    "macos": {
        "fcntl": ("F_SETPIPE_SZ", "F_GETPIPE_SZ"),
        os: ("pidfd_open",),
        signal: ("SIGPWR",),
    },
}


def hide(platform: str) -> None:
    """Remove from the standard library the modules and names `platform` lacks."""
    for owner, names in HIDDEN[platform].items():
        if owner == "modules":
            sys.modules.update(dict.fromkeys(names))  # type: ignore[arg-type]
            continue
        if owner == "fcntl":
            import fcntl as owner
        for name in names:
            if hasattr(owner, name):
                delattr(owner, name)


def score_in_workers(platform: str) -> None:
    """Workers at any size, hiding the same calls (a `sitecustomize`)."""
    from tracegrade.bulk import workers

    workers.PARALLEL_FROM = 0  # type: ignore[misc]
    startup = os.path.abspath("child-startup")
    os.makedirs(startup, exist_ok=True)
    with open(os.path.join(startup, "sitecustomize.py"), "w") as hook:
        hook.write(
            f"import sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            f"import hidden_calls\nhidden_calls.hide({platform!r})\n"
            f"open({os.path.abspath('hidden-in-child')!r}, 'a').write('hidden\\n')\n"
        )
    paths = [startup, os.environ.get("PYTHONPATH")]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))


def one_match(pattern: str) -> str:
    (path,) = glob.glob(pattern)  # the log an earlier step wrote
    return path


def run_step(step: list[str], platform: str) -> Any:
    step = [one_match(arg) if "*" in arg else arg for arg in step]
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


if __name__ == "__main__":
    platform, steps = sys.argv[1:]  # each step sets its own sys.argv
    hide(platform)
    with open(steps, encoding="utf-8") as listed:
        results = [run_step(step, platform) for step in json.load(listed)]
    sys.stdout.flush()
    os.write(1, (json.dumps(results) + "\n").encode())
