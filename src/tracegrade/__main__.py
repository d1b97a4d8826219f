"""`python -m tracegrade`, the `tracegrade` program.

Ctrl-C while its commands are still being imported (seconds on a loaded
machine) is told in the one line it gets later, not as a traceback.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Import the commands, then run one (`tracegrade.cli.run`)."""
    try:
        from .cli import run as run_command

        run_command()
    except KeyboardInterrupt:
        # Only before the command: from then on `cli` tells signals itself.
        sys.stderr.write("tracegrade: interrupted (SIGINT)\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    run()
