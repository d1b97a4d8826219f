"""`python -m tracegrade.cli`, the same as the `tracegrade` command."""

from . import main

main(prog_name="tracegrade")
