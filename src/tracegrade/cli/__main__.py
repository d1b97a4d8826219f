"""`python -m tracegrade.cli`, the same as the `tracegrade` command."""

from . import run

run()
