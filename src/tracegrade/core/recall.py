"""ID recall and precision over unique IDs, as Ragas and trec_eval (docs/scores.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any

from .fields import is_id_list


def id_recall(required: Iterable[str], missing: Sized) -> float:
    """The share of the unique `required` IDs not in the rules' `missing`."""
    unique = len(set(required))
    if unique == 0:
        raise ValueError("recall needs at least one required ID")
    if len(missing) > unique:
        raise ValueError(
            f"{len(missing)} missing IDs cannot come from {unique} required ones"
        )
    # One division, as trec_eval and Ragas divide: the same double.
    return (unique - len(missing)) / unique


def stage_recall(record: Mapping[str, Any]) -> float | None:
    """A record's recall; None without a non-empty `required` and a `context`."""
    required, context = record.get("required"), record.get("context")
    if not is_id_list(required) or not required or not is_id_list(context):
        return None
    absent = set(required)
    unique = len(absent)
    absent.difference_update(context)
    return (unique - len(absent)) / unique


def stage_precision(record: Mapping[str, Any]) -> float | None:
    """A record's precision; None without a `required` and a non-empty `context`."""
    required, context = record.get("required"), record.get("context")
    if not is_id_list(required) or not is_id_list(context) or not context:
        return None
    supplied = set(context)
    return len(supplied.intersection(required)) / len(supplied)
