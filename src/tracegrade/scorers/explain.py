"""One plain sentence per score, its decision and reason: pure functions."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import ExtractionResult, StageResult
from ..core.itemise import dropped_ids, first_order_break, invented_ids
from ..core.steps import CONTEXT, LostDocument, Step, first_steps

_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/#-]*")
_LISTED = 5
_NO_CALL = "so the answer cannot be called correct or incorrect."
_REACHED = {
    "generation": "Every required document reached the context, so the "
    "wrong-answer label points to generation.",
    "pass": "Every required document reached the context and the answer is "
    "labelled correct: a grounded pass.",
}


def show_id(document_id: str) -> str:
    """An ID as written when plain, else JSON-quoted, so that an empty ID,
    trailing spaces or look-alike letters stay visible."""
    return document_id if _PLAIN_ID.fullmatch(document_id) else json.dumps(document_id)


def list_ids(ids: Sequence[str]) -> str:
    """ "D1", "D1 and D2", "D1, D2 and D3", cut after five."""
    shown = [show_id(document_id) for document_id in ids[:_LISTED]]
    if len(ids) > _LISTED:
        return f"{', '.join(shown)} and {len(ids) - _LISTED} more"
    return " and ".join(filter(None, [", ".join(shown[:-1]), shown[-1]]))


def _first_repeat(ids: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for document_id in ids:
        if document_id in seen:
            return document_id
        seen.add(document_id)
    return None


def explain_stage(
    record: Mapping[str, Any], result: StageResult, label_from: str
) -> str:
    """Why a run got its stage, or has none; `label_from` names where an
    absent label was looked for."""
    if "error" in result:
        if "correct" not in record:
            return f"No staff label was found in {label_from}, {_NO_CALL}"
        label = json.dumps(record["correct"], default=repr)
        return f"The staff label {label} is not true or false, {_NO_CALL}"
    missing = result.get("missing")
    if not isinstance(missing, list):
        if record.get("required") is None:
            return "No required set was declared, so there is nothing to diagnose."
        return "The required set is empty, so there is nothing to diagnose."
    if result["stage"] != "retrieval":
        return _REACHED[result["stage"]]
    tail = ", so the failure is attributed to retrieval before the answer is "
    tail += "considered."
    if record.get("correct") is True:
        tail = "; a correct label cannot erase that gap."
    return f"{list_ids(missing)} never reached the supplied context{tail}"


def explain_lost(
    lost: Sequence[LostDocument], steps: Sequence[Step], context: Sequence[str]
) -> str:
    """One sentence per missing ID, up to five, then a count, such as
    `D19: retrieved at rank 14 by retriever, dropped by reranker (which kept 5).`"""
    sizes = {step.name: len(step.ids) for step in steps}
    retrievers = [step.name for step in first_steps(steps)]
    if len(retrievers) == 1:
        never = (
            f"{retrievers[0]} did not return it (it returned {sizes[retrievers[0]]})"
        )
    else:
        returned = ", ".join(f"{name} returned {sizes[name]}" for name in retrievers)
        never = f"no retriever returned it ({returned})"
    sentences = []
    for document in lost[:_LISTED]:
        step, lost_at = document["last_step"], document["lost_at"]
        verb = "retrieved" if step in retrievers else "kept"
        at = f"{verb} at rank {document['last_rank']} by {step}"
        if step is None:
            sentence = f"never retrieved; {never}."
        elif lost_at == CONTEXT:
            sentence = f"{at} and dropped by no later step, but not among the "
            sentence += f"{len(context)} that reached the model."
        else:
            sentence = f"{at}, dropped by {lost_at} (which kept {sizes[lost_at]})."
        sentences.append(f"{show_id(document['id'])}: {sentence}")
    if len(lost) > _LISTED:
        sentences.append(f"And {len(lost) - _LISTED} more, in the score's `lost`.")
    return " ".join(sentences)


def explain_extraction(
    source: Sequence[str], answer: Sequence[str], result: ExtractionResult
) -> str:
    """Why an answer passed or failed membership and order."""
    if "error" in result:
        repeated = _first_repeat(source)
        if repeated is not None:
            return (
                f"The source repeats {show_id(repeated)}, which breaks the "
                "unique-list contract, so the sample cannot be graded."
            )
        return (
            f"The answer repeats {show_id(_first_repeat(answer) or '')}, which fails "
            "both criteria before order is graded; sorting cannot repair it."
        )
    if result["order"]:
        return "Every source ID is kept, in source order."
    if result["membership"]:
        at = first_order_break(source, answer) or 0  # the lists differ
        return (
            f"Every ID remains, but position {at} holds {show_id(answer[at - 1])} "
            f"where the source has {show_id(source[at - 1])}: the source order is "
            "lost."
        )
    missing, extra = dropped_ids(source, answer), invented_ids(source, answer)
    changes = [f"misses {list_ids(missing)}"] if missing else []
    changes += [f"adds {list_ids(extra)}"] if extra else []
    return (
        f"The answer {' and '.join(changes)}, so membership fails and order "
        "cannot pass."
    )


def explain_unrecorded_context(*, recorded_null: bool = False) -> str:
    never = "The context was never recorded (no solver set RetrievalTrace.context)"
    if recorded_null:
        never = "The recorded context is null (RetrievalTrace.context was never "
        never += "set to a list of IDs)"
    return f"{never}, so retrieval cannot be judged and the run is not graded."


def explain_unreadable(problem: str) -> str:
    return (
        f"The answer cannot be read as a list of IDs ({problem}), "
        "so it fails both criteria."
    )
