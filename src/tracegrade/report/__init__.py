"""From Inspect logs to figures: `build` aggregates, `html` renders a page."""
