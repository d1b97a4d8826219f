"""Python's evaluators against Node's originals on generated records (IDs from
all of Unicode, with near-copies): identical canonical JSON."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from random import Random
from typing import Any, Final, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, event, find, given, settings
from hypothesis import strategies as st

from parity.contract import REQUIRED_ABSENT_OR_NULL, EvaluatorName, Standing, standing
from parity.node import NodeEvaluator
from tracegrade.core import (
    InvalidRecord,
    canonical_json,
    diagnose_stage,
    grade_extraction,
    js_sorted,
)

pytestmark = pytest.mark.runs_long

Record = dict[str, Any]
T = TypeVar("T")

# Records an example: Hypothesis's cost and Node's round trip, once a batch.
BATCH: Final = 10


def batches(records: st.SearchStrategy[T]) -> st.SearchStrategy[list[T]]:
    return st.lists(records, min_size=BATCH, max_size=BATCH)


def in_batches(records: int) -> int:
    return -(-records // BATCH)


# As many records as the profile gives examples (tests/conftest.py).
DIFFERENTIAL: Final = settings(
    max_examples=in_batches(settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow],
)
SEARCH: Final = settings(
    max_examples=5_000, deadline=None, database=None, phases=[Phase.generate]
)

# Collisions: case, composed/decomposed/compatibility forms, whitespace
# look-alikes, astral against U+E000+ (UTF-16 order differs), lone surrogates.
# fmt: off
TRICKY_IDS: Final = (
    "D1", "d1", "D2", "doc-7", "\u00e9", "e\u0301", "\u00c5", "A\u030a", "\u212b",
    "\ufb01", "fi", "\u212a", "K", "\u00df", "SS", "\u0130", "\u01c5", "\U0001f600",
    "\U0001d49c", "\U00010000", "\U0010ffff", "\uff61", "\ue000", "\ud83d", "\ude00",
    "\ud800", "\udfff", "", " ", "\u00a0", "\u2028", "\x00", "\ufeff",
)
# fmt: on
nfc = partial(unicodedata.normalize, "NFC")
VARIANTS: Final[tuple[Callable[[str], str], ...]] = (
    *(str, str.upper, str.lower, str.swapcase, str.casefold, str.title, str.strip),
    *(partial(unicodedata.normalize, form) for form in ("NFC", "NFD", "NFKC")),
    *(lambda t: f" {t} ", lambda t: t + " ", lambda t: t + "\t"),
    *(lambda t: t + "\u00a0", lambda t: t + "\u200b"),
)
# `correct`: only JSON true and false are labels; the rest give answer-label.
ABSENT: Final = object()
LABELS: Final = (True, False, ABSENT, None, 0, 1, "true", [], "false", 0.0, {})

any_character = st.one_of(
    st.characters(exclude_categories=()),  # all of Unicode, surrogates too
    st.characters(min_codepoint=0x10000),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
)
an_id = st.one_of(st.sampled_from(TRICKY_IDS), st.text(any_character, max_size=4))
id_pools = st.lists(an_id, min_size=1, max_size=5)
# Built once (per example they cost more than the example); indices into pools.
_index = st.integers(0, 255)
_variant = st.integers(0, 2 * len(VARIANTS) - 1)
_size = st.integers(0, 5)
_label = st.one_of(st.booleans(), st.sampled_from(LABELS))
_one_in_ten = st.integers(0, 9)


def _pick(draw: st.DrawFn, items: Sequence[T]) -> T:
    return items[draw(_index) % len(items)]


def _an_id(draw: st.DrawFn, pool: list[str]) -> str:
    """An ID from the pool half the time, else a near-copy of one."""
    base, variant = _pick(draw, pool), draw(_variant)
    return VARIANTS[variant](base) if variant < len(VARIANTS) else base


def _id_list(draw: st.DrawFn, pool: list[str]) -> list[str]:
    return [_an_id(draw, pool) for _ in range(draw(_size))]


def _shuffled(draw: st.DrawFn, items: list[str]) -> list[str]:
    shuffled = list(items)
    for end in range(len(shuffled) - 1, 0, -1):
        other = draw(_index) % (end + 1)
        shuffled[end], shuffled[other] = shuffled[other], shuffled[end]
    return shuffled


def _with_note(draw: st.DrawFn, record: Record, pool: list[str]) -> Record:
    if draw(_one_in_ten) == 0:
        record["note"] = _an_id(draw, pool)  # outside the contract: ignored
    return record


@st.composite
def stage_records(draw: st.DrawFn, deviating: bool = False) -> Record:
    """With `deviating`, one in ten has no or a null `required` (docs/parity.md)."""
    pool = draw(id_pools)
    required, extras = _id_list(draw, pool), _id_list(draw, pool)[:3]
    shape = _pick(draw, ("complete", "overlap", "independent", "empty"))
    if shape == "complete":
        context = _shuffled(draw, required + extras)
    elif shape == "overlap":
        kept = [item for item in required if draw(st.booleans())]
        context = _shuffled(draw, kept + extras)
    else:
        context = _id_list(draw, pool) if shape == "independent" else []
    record: Record = {"required": required, "context": context}
    if (label := draw(_label)) is not ABSENT:
        record["correct"] = label
    if deviating and draw(_one_in_ten) == 0:
        del record["required"]
        if draw(st.booleans()):
            record["required"] = None
    return _with_note(draw, record, pool)


ANSWER_SHAPES: Final = (
    *("same", "permutation", "code-point sorted", "JavaScript sorted", "reversed"),
    *("one missing", "one extra", "one repeated", "one variant", "independent"),
)


def _answer_for(draw: st.DrawFn, source: list[str], pool: list[str]) -> list[str]:
    shape, answer = _pick(draw, ANSWER_SHAPES), list(source)
    if shape == "permutation":
        return _shuffled(draw, source)
    if shape in ("code-point sorted", "JavaScript sorted"):
        return sorted(source) if shape == "code-point sorted" else js_sorted(source)
    if shape == "reversed":
        return source[::-1]
    if shape == "one extra":
        answer.insert(draw(_index) % (len(answer) + 1), _an_id(draw, pool))
    elif shape == "independent":
        return _id_list(draw, pool)
    elif source and shape != "same":
        position = draw(_index) % len(source)
        if shape == "one missing":
            del answer[position]
        elif shape == "one repeated":
            answer.insert(draw(_index) % (len(answer) + 1), source[position])
        else:
            answer[position] = _pick(draw, VARIANTS)(source[position])
    return answer


@st.composite
def extraction_records(draw: st.DrawFn) -> Record:
    pool = draw(id_pools)
    source = _id_list(draw, pool)
    if draw(_one_in_ten) > 2:
        source = list(dict.fromkeys(source))  # mostly unique; else may repeat
    record: Record = {"source": source, "answer": _answer_for(draw, source, pool)}
    return _with_note(draw, record, pool)


def as_parsed(record: Any) -> Any:
    """The record as JSON.parse sees it: Node is sent exactly this text."""
    return json.loads(canonical_json(record))


def category(evaluator: EvaluatorName, record: Record) -> str:
    if evaluator == "stage_diagnosis":
        result = diagnose_stage(as_parsed(record))
        return str(result.get("stage") or result.get("error"))
    grade: dict[str, Any] = dict(grade_extraction(as_parsed(record)))
    if "error" in grade:
        return str(grade["error"])
    if grade["order"]:
        return "membership and order"
    return "membership only" if grade["membership"] else "neither"


RULES: Final[dict[EvaluatorName, Callable[[Any], Any]]] = {
    "stage_diagnosis": diagnose_stage,
    "ordered_extraction": grade_extraction,
}
RECORDS: Final = {
    "stage_diagnosis": stage_records(),
    "ordered_extraction": extraction_records(),
}
DIFFERENTIAL_RECORDS: Final = {**RECORDS, "stage_diagnosis": stage_records(True)}


@pytest.fixture(scope="module", params=list(RULES))
def node(request: pytest.FixtureRequest) -> Iterator[NodeEvaluator]:
    with NodeEvaluator(request.param) as evaluator:
        yield evaluator


@DIFFERENTIAL
@given(data=st.data())
def test_python_matches_the_original(node: NodeEvaluator, data: st.DataObject) -> None:
    """Byte for byte the original's answer, or a documented deviation's."""
    evaluator: EvaluatorName = node.evaluator
    records = data.draw(batches(DIFFERENTIAL_RECORDS[evaluator]))
    answers = node.evaluate_many(records)
    for record, answer in zip(records, answers, strict=True):
        python = canonical_json(RULES[evaluator](as_parsed(record)))
        if standing(evaluator, as_parsed(record)) is Standing.DEVIATION:
            deviation = REQUIRED_ABSENT_OR_NULL
            event(f"{evaluator}: {deviation.name}")
            assert python == deviation.python_result, record
            assert str(answer.threw).startswith(f"{deviation.node_throws}:"), record
            continue
        event(f"{evaluator}: {category(evaluator, record)}")
        assert answer.threw is None, record
        assert python == answer.result_json, record


scalars = st.none() | st.booleans() | st.integers()
not_lists = scalars | st.floats(allow_nan=False, allow_infinity=False)
not_lists |= st.text(max_size=3) | st.dictionaries(st.text(max_size=2), scalars)
not_strings = scalars | st.lists(st.text(max_size=2), max_size=2)
not_strings |= st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2)
FIELDS: Final = {
    "stage_diagnosis": ("required", "context"),
    "ordered_extraction": ("source", "answer"),
}


@st.composite
def broken(draw: st.DrawFn, evaluator: EvaluatorName) -> Any:
    """A record with one thing outside the contract, or an unbroken one."""
    record = dict(draw(RECORDS[evaluator]))
    field = draw(st.sampled_from(FIELDS[evaluator]))
    how = draw(st.sampled_from(["intact", "dropped", "not a list", "item", "other"]))
    if how == "dropped":
        del record[field]
    elif how == "not a list":
        record[field] = draw(not_lists)
    elif how == "item":
        items = list(record[field])
        items.insert(draw(st.integers(0, len(items))), draw(not_strings))
        record[field] = items
    elif how == "other":
        return draw(st.one_of(st.lists(st.integers(), max_size=2), not_lists))
    return record


@pytest.mark.parametrize("evaluator", list(RULES))
def test_python_refuses_just_the_out_of_contract(evaluator: EvaluatorName) -> None:
    @settings(max_examples=in_batches(1_000), deadline=None)
    @given(batch=batches(broken(evaluator)))
    def check(batch: list[Any]) -> None:
        for record in batch:
            place = standing(evaluator, parsed := as_parsed(record))
            event(f"{evaluator}: {place.value}")
            if place is Standing.OUT_OF_CONTRACT:
                with pytest.raises(InvalidRecord):
                    RULES[evaluator](parsed)
            else:
                RULES[evaluator](parsed)

    check()


def _ids(record: Record) -> list[str]:
    ids = [item for value in record.values() if type(value) is list for item in value]
    return list(as_parsed(ids))


def _points(ids: list[str]) -> list[int]:
    return [ord(character) for item in ids for character in item]


def _near_copies(same: Callable[[str], str]) -> Callable[[list[str]], bool]:
    """Two different IDs that `same` maps to one."""
    return lambda ids: len({same(item) for item in set(ids)}) < len(set(ids))


ID_FEATURES: Final[dict[str, Callable[[list[str]], bool]]] = {
    "exact duplicate": lambda ids: len(set(ids)) < len(ids),
    "case variants": _near_copies(str.casefold),
    "whitespace variants": _near_copies(str.strip),
    "NFC versus NFD": _near_copies(nfc),
    "UTF-16 order differs": lambda ids: sorted(set(ids)) != js_sorted(set(ids)),
    "lone surrogate": lambda ids: any(0xD800 <= c <= 0xDFFF for c in _points(ids)),
    "astral character": lambda ids: any(c > 0xFFFF for c in _points(ids)),
}
STAGE_OUTCOMES = ("retrieval", "generation", "pass", "unresolved", "answer-label")
EXTRACTION_OUTCOMES = ("membership and order", "membership only", "neither")
OUTCOMES: Final = {
    "stage_diagnosis": STAGE_OUTCOMES,
    "ordered_extraction": (*EXTRACTION_OUTCOMES, "duplicate-id"),
}


@pytest.mark.parametrize(
    ("evaluator", "wanted"),
    [(e, outcome) for e, outcomes in OUTCOMES.items() for outcome in outcomes]
    + [(e, feature) for e in RULES for feature in ID_FEATURES],
)
def test_the_records_reach(evaluator: EvaluatorName, wanted: str) -> None:
    def reached(record: Record) -> bool:
        if wanted in ID_FEATURES:
            return ID_FEATURES[wanted](_ids(record))
        return category(evaluator, record) == wanted

    assert reached(find(RECORDS[evaluator], reached, settings=SEARCH))


def test_sorted_missing_ids_reach_the_utf16_order_case() -> None:
    """The one place the rules sort, where JavaScript's order is not Python's;
    rare, so seeded."""

    def sorted_differently(records: list[Record]) -> bool:
        missing = [diagnose_stage(as_parsed(r)).get("missing", []) for r in records]
        return any(ids != sorted(ids) for ids in missing)

    batch = batches(stage_records())
    found = find(batch, sorted_differently, settings=SEARCH, random=Random(0))
    assert sorted_differently(found)
