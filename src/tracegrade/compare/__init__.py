"""`tracegrade compare BASE NEW`: which samples got better or worse, and is
it real?

`pairing.py` pairs two runs' scores and counts what changed, and
`stats.py` holds the exact McNemar test; both are pure. `reading.py` reads
the logs into them, `tables.py` lays the result out for the terminal and
HTML (`html.py`).
"""
