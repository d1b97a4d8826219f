"""Reading the fields of a record, refusing anything outside the contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from .errors import InvalidRecord

# `isinstance(item, str)` as a function `map` can call without a Python frame.
_is_string = str.__instancecheck__


def is_id_list(value: Any) -> TypeGuard[list[str]]:
    """A JSON array of strings, what every ID list of a record is; the one
    test of it that the core, the importers and the score readers share."""
    return type(value) is list and all(map(_is_string, value))


def as_record(record: Any) -> Mapping[str, Any]:
    """The record itself must be a JSON object."""
    # `type(...) is dict` first: for JSON records it saves the slower ABC check.
    if type(record) is dict or isinstance(record, Mapping):
        return record
    raise InvalidRecord("record", record, "must be an object")


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
    # A Python loop over every ID would cost more than the rules themselves,
    # so the check runs in C; the loop only runs to name a bad ID, once found.
    if not all(map(_is_string, ids)):
        for position, item in enumerate(ids):
            if not isinstance(item, str):
                raise InvalidRecord(f"{field}[{position}]", item, "must be a string ID")
    return ids
