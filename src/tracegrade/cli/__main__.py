"""`python -m tracegrade.cli`, the `tracegrade` command once its imports are
done (`python -m tracegrade` is the whole program)."""

from . import run

run()
