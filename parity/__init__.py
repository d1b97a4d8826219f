"""Parity with the original Node evaluators: harness client, contract, diff.

Not part of the installed package: it runs from a source checkout, where the
original scripts sit in `parity/reference/` exactly as the documents give them.
"""
