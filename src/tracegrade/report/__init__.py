"""From Inspect logs or Parquet results to figures: `aggregate` counts, `tables`
lays them out as a `page`, which the terminal, Markdown and HTML render."""
