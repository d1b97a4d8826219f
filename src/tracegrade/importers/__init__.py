"""Other tools' files as stage-diagnosis records: `tracegrade import`.

One module per source, each writing the fixture-format records that
`tracegrade check`, `tracegrade score` and `inspect eval
tracegrade/stage_diagnosis -T dataset=` read:

- `trec`: TREC qrels and a run, one record per query;
- `ragas`: a Ragas evaluation dataset (JSONL or CSV), one record per row;
- `openinference`: OpenInference spans exported as OTLP JSON, one record
  per trace, joined to a gold file.

What they share (errors, labels, output) is in `common`, so that every
importer refuses bad input the same way, never guesses a label, and gives
every record or none. Importing this package imports no importer.
"""
