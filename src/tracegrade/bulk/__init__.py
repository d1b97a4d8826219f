"""Scoring files too large for `inspect eval`: the line loop and the log writers.

- `scoring`: each line of a fixture-format file to a `Score`, exactly as
  the replay tasks would score it.
- `results`: the metrics and reductions of a whole run, in little memory.
- `log`: the Inspect log around the samples; `jsonlog` writes it, in a
  stream.
"""
