"""ID recall of a run: the share of its required IDs its context held.

Not a rule of the reference evaluators, and outside the parity claim: it
sits beside the diagnosis, and never changes it. It is a fact of the
record alone, the required IDs and the context, so a run has it whether
or not its answer was labelled: what reached the context does not depend
on how the answer was judged. With JavaScript `Set`/`includes()`
semantics, which is exact string equality:

    recall = |unique required IDs found in the context| / |unique required IDs|

That is Ragas' ID-based context recall, |set(context) & set(required)| /
|set(required)|, and TREC's recall at any cut-off k >= len(context) with
the required IDs as the relevant documents. Both count each ID once:
a required ID listed twice is required once, and a context ID supplied
twice is found once. IDs are compared exactly, as the rules compare them:
no Unicode normalisation or case folding, so "A" (Latin) and "\u0410"
(Cyrillic), NFC and NFD spellings, "ß" and "ss" are different IDs.

Where the rules diagnose a stage, the found IDs are the unique required
ones less the `missing` the rules report, so the same two integers are
divided and recall can never disagree with `missing` (`id_recall` is that
form). Undefined (None) when nothing is required, the share of nothing,
and when `required` or `context` is not a list of string IDs, since then
there is no set to take a share of (the rules refuse such a record too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any, TypeGuard


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


def stage_recall(record: Mapping[str, Any]) -> float | None:
    """The recall of a run from its record alone, or None when `required`
    is empty or absent or either list is not a list of string IDs."""
    required = record.get("required")
    context = record.get("context")
    if not _is_id_list(required) or not required or not _is_id_list(context):
        return None
    # Removing in place, as the rules find `missing`: what is left of the
    # required set is exactly the IDs the context lacks.
    absent = set(required)
    unique = len(absent)
    absent.difference_update(context)
    return (unique - len(absent)) / unique


def _is_id_list(value: Any) -> TypeGuard[list[str]]:
    return type(value) is list and all(isinstance(item, str) for item in value)


__all__ = ["id_recall", "stage_recall"]
