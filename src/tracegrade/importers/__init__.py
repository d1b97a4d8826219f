"""Other tools' files as stage-diagnosis records (`tracegrade import`): `trec`,
`ragas` and `openinference`, each one streaming function the command calls;
`common` holds what they share. Importing this package imports no importer."""
