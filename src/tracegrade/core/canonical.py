"""Canonical JSON text, the one form results are compared in: `==` on parsed
objects hides real differences (`True == 1`), and key order is part of the
output. ASCII escapes keep lone surrogates, as `JSON.stringify` does."""

from __future__ import annotations

import json
from typing import Any

# Made once: `json.dumps` with options builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)
