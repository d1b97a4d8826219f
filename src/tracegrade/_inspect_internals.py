"""Every symbol tracegrade takes from Inspect AI's private modules.

Inspect's public API does not cover these jobs; if a release moves one of
them, this module is where to follow it, and the `compat` nox session (the
newest `inspect-ai` from the index) is where it shows first.

- `PrerequisiteError` (`inspect_ai._util.error`): the error Inspect's CLI
  prints as its message alone, without a traceback. tracegrade's errors in
  a user's own input (a bad dataset line, a bad labels file) derive from
  it, so `inspect eval -T dataset=BAD` reads like Inspect's own errors.
"""

from __future__ import annotations

from inspect_ai._util.error import PrerequisiteError

__all__ = ["PrerequisiteError"]
