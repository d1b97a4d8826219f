"""Other tools' files as stage-diagnosis records (`tracegrade import`)."""
