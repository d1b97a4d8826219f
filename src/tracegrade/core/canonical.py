"""Canonical JSON text: the one form in which results are compared.

Comparing parsed objects with `==` would hide real differences (in Python
`True == 1` and `1 == 1.0`), so parity compares this text instead. Keys keep
their order, because the reference objects' key order is part of the output.
ASCII escapes keep lone surrogates representable, as `JSON.stringify` does.
"""

from __future__ import annotations

import json
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
"""Made once: `json.dumps` with these options builds an encoder per call,
much of the cost of a small value's text."""


def canonical_json(value: Any) -> str:
    """Serialise `value` compactly, key order kept, non-ASCII escaped."""
    return _ENCODER.encode(value)
