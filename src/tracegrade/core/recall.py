"""ID recall and ID precision of a run: the share of its required IDs its
context held, and the share of its context that was required.

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

Precision is the other side of the same intersection:

    precision = |unique context IDs that are required| / |unique context IDs|

A context ID supplied twice is one document, counted once in both
numerator and denominator, as trec_eval and ir-measures count it: a TREC
ranking holds a document once (trec_eval refuses a run that ranks one
twice, "duplicate docs"), and ir-measures, given a ranking that repeats a
document, keeps one entry for it (its runs are a dict of documents by
query, the later score replacing the earlier). So precision is trec_eval's
`P@k` of the context's unique IDs at k = their number, whichever of a
repeated ID's ranks is kept: the context ["A", "A", "B"] with "A"
required is 1/2, not 2/3 (a count of positions) nor 1/3 (`P@3`, which
divides by a cut-off the two documents never fill). It is also Ragas'
`IDBasedContextPrecision`, |set(retrieved) & set(reference)| /
|set(retrieved)|, for string IDs (Ragas first turns every ID into a string
with `str`, so the integer 1 and "1" are one ID there; here an ID list
holds strings only).

Precision is defined whenever the context holds an ID and both lists are
ID lists, an empty `required` included: nothing in the context was
required, so it is 0.0, as trec_eval gives `P@k` = 0 for a judged query
with nothing relevant and Ragas 0.0 for an empty reference. It is None
for an empty context (a share of nothing: Ragas gives NaN), and when
`required` is absent or null or either value is not a list of string IDs,
as for recall: no judgement of the context was recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sized
from typing import Any

from .fields import is_id_list


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
    if not is_id_list(required) or not required or not is_id_list(context):
        return None
    # Removing in place, as the rules find `missing`: what is left of the
    # required set is exactly the IDs the context lacks.
    absent = set(required)
    unique = len(absent)
    absent.difference_update(context)
    return (unique - len(absent)) / unique


def stage_precision(record: Mapping[str, Any]) -> float | None:
    """The precision of a run from its record alone, or None when the
    context is empty or absent, or either value is not a list of string
    IDs (`required` absent or null included); an empty `required` is 0.0."""
    required = record.get("required")
    context = record.get("context")
    if not is_id_list(required) or not is_id_list(context) or not context:
        return None
    supplied = set(context)
    # One division of two integers, as trec_eval and Ragas divide.
    return len(supplied.intersection(required)) / len(supplied)


__all__ = ["id_recall", "stage_precision", "stage_recall"]
