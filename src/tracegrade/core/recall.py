"""ID recall and precision of a run over its unique IDs (docs/scores.md holds
each to Ragas and trec_eval); no rule of the reference evaluators."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any

from .fields import is_id_list


def id_recall(required: Iterable[str], missing: Sized) -> float:
    """The share of the unique `required` IDs not in `missing`, the rules'
    `missing` of the same record; a caller's error raises `ValueError`."""
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
    """The recall of a run from its record alone; None when `required` is
    empty or either list is absent or not a list of string IDs."""
    required, context = record.get("required"), record.get("context")
    if not is_id_list(required) or not required or not is_id_list(context):
        return None
    absent = set(required)
    unique = len(absent)
    absent.difference_update(context)
    return (unique - len(absent)) / unique


def stage_precision(record: Mapping[str, Any]) -> float | None:
    """The precision of a run from its record alone; None when the context is
    empty or either list is absent or not a list of string IDs."""
    required, context = record.get("required"), record.get("context")
    if not is_id_list(required) or not is_id_list(context) or not context:
        return None
    supplied = set(context)
    return len(supplied.intersection(required)) / len(supplied)
