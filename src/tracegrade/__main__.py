"""The `tracegrade` program: Ctrl-C while its commands are imported is one line too."""

import sys


def run() -> None:
    try:
        from .cli import run as run_command

        run_command()
    except KeyboardInterrupt:  # before the command: from then on `cli` tells it
        sys.stderr.write("tracegrade: interrupted (SIGINT)\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    run()
