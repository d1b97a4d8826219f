"""Reading the fields of a record, refusing anything outside the contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from .errors import InvalidRecord

# `isinstance(item, str)` as a function `map` calls without a Python frame.
_is_string = str.__instancecheck__


def is_id_list(value: Any) -> TypeGuard[list[str]]:
    """A JSON array of strings, as every ID list of a record is."""
    return type(value) is list and all(map(_is_string, value))


def as_record(record: Any) -> Mapping[str, Any]:
    if type(record) is dict or isinstance(record, Mapping):
        return record
    raise InvalidRecord("record", record, "must be an object")


def id_list(record: Mapping[str, Any], field: str) -> list[str]:
    """An array of string IDs, possibly empty; never a tuple or string."""
    if field not in record:
        raise InvalidRecord(field, record, "is missing from the record")
    ids = record[field]
    if type(ids) is not list:
        raise InvalidRecord(field, ids, "must be an array of strings")
    if not all(map(_is_string, ids)):  # in C; the loop only names the bad ID
        for position, item in enumerate(ids):
            if not isinstance(item, str):
                raise InvalidRecord(f"{field}[{position}]", item, "must be a string ID")
    return ids
