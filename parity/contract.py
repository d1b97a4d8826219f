"""Which inputs the reference evaluators are defined for, decided on its own.

The parity check trusts a difference only on input inside the contract, so
the contract must not be taken from the code under test: if the Python core
wrongly refused an in-contract record with `InvalidRecord`, asking the core
would call that record out of contract and hide the difference. This module
therefore restates the contract from the issue without importing the core.

The contract: the record is a JSON object; `required`, `context` (stage
diagnosis) and `source`, `answer` (ordered extraction) are arrays of strings,
possibly empty, possibly repeating IDs; `correct` may be any JSON value or
absent; other members are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Literal

EvaluatorName = Literal["stage_diagnosis", "ordered_extraction"]
EVALUATORS: Final[tuple[EvaluatorName, ...]] = ("stage_diagnosis", "ordered_extraction")

_ID_LIST_FIELDS: Final[dict[EvaluatorName, tuple[str, ...]]] = {
    "stage_diagnosis": ("required", "context"),
    "ordered_extraction": ("source", "answer"),
}


class Standing(Enum):
    """Where an input stands relative to the reference's contract."""

    IN_CONTRACT = "in-contract"
    DEVIATION = "deviation"
    OUT_OF_CONTRACT = "out-of-contract"


@dataclass(frozen=True)
class Deviation:
    """A documented place where Python answers and the reference does not.

    `name` is the row of `parity/DEVIATIONS.md` that explains it;
    `python_result` is the exact canonical JSON Python must give there, and
    `node_throws` the error class the reference must throw, so a deviation is
    checked as strictly as agreement is.
    """

    name: str
    python_result: str
    node_throws: str


REQUIRED_ABSENT_OR_NULL: Final = Deviation(
    name="required-absent-or-null",
    python_result='{"stage":"unresolved"}',
    node_throws="TypeError",
)

DEVIATIONS: Final[tuple[Deviation, ...]] = (REQUIRED_ABSENT_OR_NULL,)


def _is_id_list(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def in_contract(evaluator: EvaluatorName, record: Any) -> bool:
    """True when the reference `evaluate` is defined for `record`.

    Strictly the reference's own contract: a stage record without a
    `required` array is outside it (the reference throws), even though
    Python answers it; see `deviation`.
    """
    if not isinstance(record, Mapping):
        return False
    return all(
        field in record and _is_id_list(record[field])
        for field in _ID_LIST_FIELDS[evaluator]
    )


def deviation(evaluator: EvaluatorName, record: Any) -> Deviation | None:
    """The deliberate deviation `record` falls under, if any.

    Only `required` absent or null with the rest of the record in contract:
    with `context` broken as well, Python refuses the record like any other.
    """
    if evaluator != "stage_diagnosis" or not isinstance(record, Mapping):
        return None
    if record.get("required") is not None:
        return None
    if "context" not in record or not _is_id_list(record["context"]):
        return None
    return REQUIRED_ABSENT_OR_NULL


def standing(evaluator: EvaluatorName, record: Any) -> Standing:
    """Classify `record` as in contract, a documented deviation, or outside."""
    if in_contract(evaluator, record):
        return Standing.IN_CONTRACT
    if deviation(evaluator, record) is not None:
        return Standing.DEVIATION
    return Standing.OUT_OF_CONTRACT
