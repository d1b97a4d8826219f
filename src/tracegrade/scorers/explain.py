"""One plain sentence per score, the decision and its reason, as the source
documents' "Decision and reason" column gives them: pure functions of the record."""

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


def show_id(document_id: str) -> str:
    """An ID as written when it is plain, JSON-quoted when it is not, so that
    an empty ID, trailing spaces or look-alike letters stay visible."""
    return document_id if _PLAIN_ID.fullmatch(document_id) else json.dumps(document_id)


def list_ids(ids: Sequence[str]) -> str:
    """ "D1", "D1 and D2", "D1, D2 and D3", cut after five."""
    shown = [show_id(document_id) for document_id in ids[:_LISTED]]
    if len(ids) > _LISTED:
        return f"{', '.join(shown)} and {len(ids) - _LISTED} more"
    if len(shown) == 1:
        return shown[0]
    return f"{', '.join(shown[:-1])} and {shown[-1]}"


def first_repeat(ids: Sequence[str]) -> str | None:
    """The first ID seen a second time, reading left to right."""
    seen: set[str] = set()
    for document_id in ids:
        if document_id in seen:
            return document_id
        seen.add(document_id)
    return None


def explain_stage(
    record: Mapping[str, Any], result: StageResult, *, label_from: str | None = None
) -> str:
    """Why a run got its stage, or why it has none; `label_from` names where an
    absent label was looked for, the file or key to fix."""
    if "error" in result:
        if "correct" not in record:
            where = f" in {label_from}" if label_from else ""
            return (
                f"No staff label was found{where}, so the answer cannot be called "
                "correct or incorrect."
            )
        return (
            f"The staff label {json.dumps(record['correct'], default=repr)} is not "
            "true or false, "
            "so the answer cannot be called correct or incorrect."
        )
    missing_ids = result.get("missing")
    if not isinstance(missing_ids, list):
        if record.get("required") is None:
            return "No required set was declared, so there is nothing to diagnose."
        return "The required set is empty, so there is nothing to diagnose."
    stage = result["stage"]
    if stage == "retrieval":
        missing = list_ids(missing_ids)
        if record.get("correct") is True:
            return (
                f"{missing} never reached the supplied context; "
                "a correct label cannot erase that gap."
            )
        return (
            f"{missing} never reached the supplied context, so the failure is "
            "attributed to retrieval before the answer is considered."
        )
    if stage == "generation":
        return (
            "Every required document reached the context, so the wrong-answer "
            "label points to generation."
        )
    return (
        "Every required document reached the context and the answer is "
        "labelled correct: a grounded pass."
    )


def explain_lost(
    lost: Sequence[LostDocument], steps: Sequence[Step], context: Sequence[str]
) -> str:
    """One sentence per missing ID, as far as `_LISTED`, then a count, such as
    `D19: retrieved at rank 14 by retriever, dropped by reranker (which kept 5).`"""
    sizes = {step.name: len(step.ids) for step in steps}
    retrievers = [step.name for step in first_steps(steps)]
    sentences = []
    for document in lost[:_LISTED]:
        shown = show_id(document["id"])
        last_step, last_rank = document["last_step"], document["last_rank"]
        lost_at = document["lost_at"]
        if last_step is None:
            returned = ", ".join(
                f"{name} returned {sizes[name]}" for name in retrievers
            )
            sentences.append(
                f"{shown}: never retrieved; {steps[0].name} did not return it "
                f"(it returned {sizes[steps[0].name]})."
                if len(retrievers) == 1
                else f"{shown}: never retrieved; no retriever returned it ({returned})."
            )
            continue
        verb = "retrieved" if last_step in retrievers else "kept"
        if lost_at == CONTEXT:
            sentences.append(
                f"{shown}: {verb} at rank {last_rank} by {last_step} and dropped "
                f"by no later step, but not among the {len(context)} that "
                "reached the model."
            )
        else:
            sentences.append(
                f"{shown}: {verb} at rank {last_rank} by {last_step}, dropped by "
                f"{lost_at} (which kept {sizes[lost_at]})."
            )
    if len(lost) > _LISTED:
        sentences.append(f"And {len(lost) - _LISTED} more, in the score's `lost`.")
    return " ".join(sentences)


def explain_extraction(
    source: Sequence[str], answer: Sequence[str], result: ExtractionResult
) -> str:
    """Why an answer passed or failed membership and order."""
    if "error" in result:
        repeated_source = first_repeat(source)
        if repeated_source is not None:
            return (
                f"The source repeats {show_id(repeated_source)}, which breaks the "
                "unique-list contract, so the sample cannot be graded."
            )
        repeated = first_repeat(answer) or ""
        return (
            f"The answer repeats {show_id(repeated)}, which fails both criteria "
            "before order is graded; sorting cannot repair it."
        )
    if result["order"]:
        return "Every source ID is kept, in source order."
    if result["membership"]:
        # The same position as the metadata's `first_order_break`.
        position = first_order_break(source, answer)
        assert position is not None, "order failed, so the lists differ"
        return (
            f"Every ID remains, but position {position} holds "
            f"{show_id(answer[position - 1])} where the source has "
            f"{show_id(source[position - 1])}: the source order is lost."
        )
    missing = dropped_ids(source, answer)
    extra = invented_ids(source, answer)
    changes = []
    if missing:
        changes.append(f"misses {list_ids(missing)}")
    if extra:
        changes.append(f"adds {list_ids(extra)}")
    return (
        f"The answer {' and '.join(changes)}, so membership fails and order "
        "cannot pass."
    )


def explain_unrecorded_context(*, recorded_null: bool = False) -> str:
    """Why a run with no recorded context is not graded (`recorded_null`: the
    store holds `null`)."""
    if recorded_null:
        return (
            "The recorded context is null (RetrievalTrace.context was never set "
            "to a list of IDs), so retrieval cannot be judged and the run is not "
            "graded."
        )
    return (
        "The context was never recorded (no solver set RetrievalTrace.context), "
        "so retrieval cannot be judged and the run is not graded."
    )


def explain_unreadable(problem: str) -> str:
    """Why an answer that is not a list of IDs fails."""
    return (
        f"The answer cannot be read as a list of IDs ({problem}), "
        "so it fails both criteria."
    )
