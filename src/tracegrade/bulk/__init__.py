"""`tracegrade score` and `check`: files too large for `inspect eval` scored
line by line as the replay tasks score them, into logs Inspect reads."""
