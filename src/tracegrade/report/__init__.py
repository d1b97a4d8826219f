"""Inspect logs or Parquet results to figures, laid out as one page."""
