"""`tracegrade compare BASE NEW`: which samples got better or worse, and is
it real? `build.py` reads the logs into `pairing.py`'s pure counts and
`stats.py`'s exact tests; the renderers lay them out."""
