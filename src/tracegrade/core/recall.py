"""ID recall of a diagnosed run: the share of the required IDs the context held.

Not a rule of the reference evaluators, and outside the parity claim: it
sits beside the diagnosis and is derived from it, so it can never disagree
with the `missing` the rules report. With `missing` the unique required IDs
absent from the context (JavaScript `Set`/`includes()` semantics, which is
exact string equality):

    recall = (unique required - len(missing)) / unique required

That is Ragas' ID-based context recall, |set(context) & set(required)| /
|set(required)|, and TREC's recall at any cut-off k >= len(context) with
the required IDs as the relevant documents. Both count each ID once:
a required ID listed twice is required once, and a context ID supplied
twice is found once. IDs are compared exactly, as the rules compare them:
no Unicode normalisation or case folding, so "A" (Latin) and "\u0410"
(Cyrillic), NFC and NFD spellings, "ß" and "ss" are different IDs.

Defined only where the rules diagnose a stage (`retrieval`, `generation`,
`pass`): with nothing required (`unresolved`) there is no share to take,
and where the rules refused the record (`answer-label`, invalid input) it
has no `missing` to be consistent with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any


def id_recall(required: Iterable[str], missing: Sized) -> float:
    """The share of the unique `required` IDs not in `missing`.

    `missing` must be what the rules report for the same record, the
    unique required IDs absent from the context; a missing list longer
    than the required set, or an empty required set, is a caller's error.
    """
    unique = len(set(required))
    if unique == 0:
        raise ValueError("recall needs at least one required ID")
    if len(missing) > unique:
        raise ValueError(
            f"{len(missing)} missing IDs cannot come from {unique} required ones"
        )
    # One integer division, as trec_eval and Ragas divide: the same double.
    return (unique - len(missing)) / unique


def stage_recall(record: Mapping[str, Any], result: Mapping[str, Any]) -> float | None:
    """The recall of a run from its record and the rules' result, or None
    when the result is no diagnosis (no `missing`): `unresolved` and the
    data errors."""
    missing = result.get("missing")
    if missing is None:
        return None
    return id_recall(record["required"], missing)


__all__ = ["id_recall", "stage_recall"]
