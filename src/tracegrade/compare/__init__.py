"""`tracegrade compare`: build reads and pairs, pairing and stats test, show shows."""
