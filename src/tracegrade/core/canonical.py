"""Canonical JSON, the form results are compared in (`==` hides `True == 1`)."""

from __future__ import annotations

import json
from typing import Any

# Made once; ASCII escapes keep lone surrogates, as `JSON.stringify` does.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)
