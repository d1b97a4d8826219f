"""Reading Inspect logs for `report` and `compare`: evals, scores, samples."""
