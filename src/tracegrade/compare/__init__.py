"""`tracegrade compare BASE NEW`: `build` reads the logs and pairs the evals,
`pairing` the runs, `stats` tests them, `show` lays out the page."""
