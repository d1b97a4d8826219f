"""Reading the fields of a record, refusing anything outside the contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidRecord


def as_record(record: Any) -> Mapping[str, Any]:
    """The record itself must be a JSON object."""
    if not isinstance(record, Mapping):
        raise InvalidRecord("record", record, "must be an object")
    return record


def id_list(record: Mapping[str, Any], field: str) -> list[str]:
    """An array of string IDs; empty is fine, anything else is not.

    Lists only: a tuple or a bare string would be a coercion the JSON
    evaluators never see, so we say so rather than guess.
    """
    if field not in record:
        raise InvalidRecord(field, record, "is missing from the record")
    ids = record[field]
    if type(ids) is not list:
        raise InvalidRecord(field, ids, "must be an array of strings")
    for position, item in enumerate(ids):
        if type(item) is not str and not isinstance(item, str):
            raise InvalidRecord(
                f"{field}[{position}]", item, "must be a string ID"
            )
    return ids
