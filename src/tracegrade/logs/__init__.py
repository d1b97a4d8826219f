"""Reading Inspect logs for `tracegrade report` and `tracegrade compare`.

`evals` finds logs and groups them into evals (retries, split runs);
`scores` picks out a log's tracegrade scores; `samples` reads a log's
samples one at a time, holding only what is counted.
"""
