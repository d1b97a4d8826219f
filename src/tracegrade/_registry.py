"""Everything Inspect AI finds under the `tracegrade/` prefix.

Inspect imports this module through the `inspect_ai` entry point; importing
the decorated functions is what registers them.
"""
