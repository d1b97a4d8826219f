"""The Python evaluators against the original Node ones on generated records
(IDs from all of Unicode, with near-copies): identical canonical JSON."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator, Sequence
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

# Records a Hypothesis example holds: each property draws a list of BATCH
# records and checks every one, over a BATCH-th of the examples, so that as
# many records as ever are checked while Hypothesis's own cost of an example
# (its engine, apart from drawing the records) and a round trip to Node are
# paid once a batch. A failing batch shrinks record by record.
BATCH: Final = 10


def batches(records: st.SearchStrategy[T]) -> st.SearchStrategy[list[T]]:
    return st.lists(records, min_size=BATCH, max_size=BATCH)


def in_batches(records: int) -> int:
    """The examples that check `records` records."""
    return -(-records // BATCH)


# As many records as the profile gives examples (tests/conftest.py): 10,000
# in CI.
DIFFERENTIAL: Final = settings(
    max_examples=in_batches(settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow],
)
# Searches only need one example, not the smallest: no shrink phase.
SEARCH: Final = settings(
    max_examples=5_000, deadline=None, database=None, phases=[Phase.generate]
)

# Collisions worth having: case pairs, composed/decomposed and compatibility
# forms, whitespace look-alikes, astral characters against U+E000 and above
# (where UTF-16 and code-point order disagree), and lone surrogates.
TRICKY_IDS: Final = (
    "D1",
    "d1",
    "D2",
    "doc-7",
    "\u00e9",
    "e\u0301",
    "\u00c5",
    "A\u030a",
    "\u212b",
    "\ufb01",
    "fi",
    "\u212a",
    "K",
    "\u00df",
    "SS",
    "\u0130",
    "\u01c5",
    "\U0001f600",
    "\U0001d49c",
    "\U00010000",
    "\U0010ffff",
    "\uff61",
    "\ue000",
    "\ud83d",
    "\ude00",
    "\ud800",
    "\udfff",
    "",
    " ",
    "\u00a0",
    "\u2028",
    "\x00",
    "\ufeff",
)


def _same(text: str) -> str:
    return text


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _padded(text: str) -> str:
    return f" {text} "


def _trailing_space(text: str) -> str:
    return text + " "


def _trailing_tab(text: str) -> str:
    return text + "\t"


def _trailing_nbsp(text: str) -> str:
    return text + "\u00a0"


def _trailing_zero_width(text: str) -> str:
    return text + "\u200b"


VARIANTS: Final[tuple[Callable[[str], str], ...]] = (
    _same,
    str.upper,
    str.lower,
    str.swapcase,
    str.casefold,
    str.title,
    str.strip,
    _nfc,
    _nfd,
    _nfkc,
    _padded,
    _trailing_space,
    _trailing_tab,
    _trailing_nbsp,
    _trailing_zero_width,
)

# `correct`: only JSON true and false are labels; everything else, absence
# included, must give answer-label on both sides.
ABSENT: Final = object()
LABELS: Final[tuple[object, ...]] = (
    True,
    False,
    ABSENT,
    None,
    0,
    1,
    "true",
    [],
    "false",
    0.0,
    {},
)

any_character = st.one_of(
    st.characters(exclude_categories=()),  # all of Unicode, surrogates too
    st.characters(min_codepoint=0x10000),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
)
base_ids = st.one_of(st.sampled_from(TRICKY_IDS), st.text(any_character, max_size=4))
id_pools = st.lists(base_ids, min_size=1, max_size=5)

# Strategies built once: building them per example (sampled_from(pool), ...)
# costs more than the example itself. Choices are indices into the pool.
_index = st.integers(0, 255)
_variant = st.integers(0, 2 * len(VARIANTS) - 1)
_size = st.integers(0, 5)
_label = st.one_of(st.booleans(), st.sampled_from(LABELS))
_one_in_ten = st.integers(0, 9)


def _pick(draw: st.DrawFn, items: Sequence[T]) -> T:
    return items[draw(_index) % len(items)]


def _an_id(draw: st.DrawFn, pool: list[str]) -> str:
    """An ID from the pool itself half the time, else a near-copy of one."""
    base = _pick(draw, pool)
    variant = draw(_variant)
    return VARIANTS[variant](base) if variant < len(VARIANTS) else base


def _id_list(draw: st.DrawFn, pool: list[str], *, at_least: int = 0) -> list[str]:
    return [_an_id(draw, pool) for _ in range(max(at_least, draw(_size)))]


def _shuffled(draw: st.DrawFn, items: list[str]) -> list[str]:
    shuffled = list(items)
    for end in range(len(shuffled) - 1, 0, -1):
        other = draw(_index) % (end + 1)
        shuffled[end], shuffled[other] = shuffled[other], shuffled[end]
    return shuffled


def _with_note(draw: st.DrawFn, record: Record, pool: list[str]) -> Record:
    if draw(_one_in_ten) == 0:
        record["note"] = _an_id(draw, pool)  # members outside the contract are ignored
    return record


STAGE_CONTEXTS: Final = ("complete", "overlap", "independent", "empty")


@st.composite
def stage_records(draw: st.DrawFn) -> Record:
    pool = draw(id_pools)
    required = _id_list(draw, pool)
    extras = _id_list(draw, pool)[:3]
    shape = _pick(draw, STAGE_CONTEXTS)
    if shape == "complete":
        context = _shuffled(draw, required + extras)
    elif shape == "overlap":
        kept = [item for item in required if draw(st.booleans())]
        context = _shuffled(draw, kept + extras)
    elif shape == "independent":
        context = _id_list(draw, pool)
    else:
        context = []
    record: Record = {"required": required, "context": context}
    label = draw(_label)
    if label is not ABSENT:
        record["correct"] = label
    return _with_note(draw, record, pool)


ANSWER_SHAPES: Final = (
    "same",
    "permutation",
    "code-point sorted",
    "JavaScript sorted",
    "reversed",
    "one missing",
    "one extra",
    "one repeated",
    "one variant",
    "independent",
)


def _answer_for(draw: st.DrawFn, source: list[str], pool: list[str]) -> list[str]:
    shape = _pick(draw, ANSWER_SHAPES)
    answer = list(source)
    if shape == "permutation":
        return _shuffled(draw, source)
    if shape == "code-point sorted":
        return sorted(source)
    if shape == "JavaScript sorted":
        return js_sorted(source)
    if shape == "reversed":
        return source[::-1]
    if shape == "one extra":
        answer.insert(draw(_index) % (len(answer) + 1), _an_id(draw, pool))
        return answer
    if shape == "independent":
        return _id_list(draw, pool)
    if not source:
        return answer
    position = draw(_index) % len(source)
    if shape == "one missing":
        del answer[position]
    elif shape == "one repeated":
        answer.insert(draw(_index) % (len(answer) + 1), source[position])
    elif shape == "one variant":
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


def stage_category(record: Record) -> str:
    result = diagnose_stage(as_parsed(record))
    return str(result.get("stage") or result.get("error"))


def extraction_category(record: Record) -> str:
    result: dict[str, Any] = dict(grade_extraction(as_parsed(record)))
    if "error" in result:
        return str(result["error"])
    if result["order"]:
        return "membership and order"
    return "membership only" if result["membership"] else "neither"


@pytest.fixture(scope="module")
def stage_node() -> Iterator[NodeEvaluator]:
    with NodeEvaluator("stage_diagnosis") as node:
        yield node


@pytest.fixture(scope="module")
def extraction_node() -> Iterator[NodeEvaluator]:
    with NodeEvaluator("ordered_extraction") as node:
        yield node


def assert_batch_matches(
    node: NodeEvaluator,
    records: list[Record],
    evaluate: Callable[[Any], Any],
    category: Callable[[Record], str],
) -> None:
    """Each record of a batch: the original answered without throwing, and
    Python's canonical JSON is byte for byte the original's."""
    answers = node.evaluate_many(records)
    for record, answer in zip(records, answers, strict=True):
        python_text = canonical_json(evaluate(as_parsed(record)))
        event(f"{node.evaluator.replace('_', ' ')}: {category(record)}")

        assert answer.threw is None, record
        assert python_text == answer.result_json, record


@DIFFERENTIAL
@given(records=batches(stage_records()))
def test_stage_diagnosis_matches_the_original(
    stage_node: NodeEvaluator, records: list[Record]
) -> None:
    assert_batch_matches(stage_node, records, diagnose_stage, stage_category)


@DIFFERENTIAL
@given(records=batches(extraction_records()))
def test_ordered_extraction_matches_the_original(
    extraction_node: NodeEvaluator, records: list[Record]
) -> None:
    assert_batch_matches(
        extraction_node, records, grade_extraction, extraction_category
    )


@st.composite
def stage_records_without_required(draw: st.DrawFn) -> Record:
    record = dict(draw(stage_records()))
    if draw(st.booleans()):
        del record["required"]
    else:
        record["required"] = None
    return record


@settings(max_examples=in_batches(500), deadline=None)
@given(records=batches(stage_records_without_required()))
def test_required_absent_or_null_is_the_documented_deviation(
    stage_node: NodeEvaluator, records: list[Record]
) -> None:
    answers = stage_node.evaluate_many(records)
    for record, node in zip(records, answers, strict=True):
        assert standing("stage_diagnosis", record) is Standing.DEVIATION, record
        assert canonical_json(diagnose_stage(as_parsed(record))) == (
            REQUIRED_ABSENT_OR_NULL.python_result
        ), record
        assert node.threw is not None, record
        assert node.threw.startswith(f"{REQUIRED_ABSENT_OR_NULL.node_throws}:")


# --- Out of contract: the independent predicate and the core must agree ---

not_lists = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
not_strings = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.lists(st.text(max_size=2), max_size=2),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2),
)


@st.composite
def broken(
    draw: st.DrawFn, records: st.SearchStrategy[Record], fields: tuple[str, ...]
) -> Any:
    """A record with one thing outside the contract, or an unbroken one."""
    record = dict(draw(records))
    field = draw(st.sampled_from(fields))
    how = draw(
        st.sampled_from(["intact", "dropped", "not a list", "item", "not an object"])
    )
    if how == "dropped":
        del record[field]
    elif how == "not a list":
        record[field] = draw(not_lists)
    elif how == "item":
        items = list(record[field])
        items.insert(draw(st.integers(0, len(items))), draw(not_strings))
        record[field] = items
    elif how == "not an object":
        return draw(
            st.one_of(st.none(), st.lists(st.integers(), max_size=2), not_lists)
        )
    return record


def _refusal(evaluate: Callable[[Any], Any], record: Any) -> InvalidRecord | None:
    try:
        evaluate(record)
    except InvalidRecord as refusal:
        return refusal
    return None


@pytest.mark.parametrize(
    ("evaluator", "records"),
    [
        ("stage_diagnosis", broken(stage_records(), ("required", "context"))),
        ("ordered_extraction", broken(extraction_records(), ("source", "answer"))),
    ],
)
def test_python_refuses_exactly_the_records_outside_the_contract(
    evaluator: EvaluatorName, records: st.SearchStrategy[Any]
) -> None:
    evaluate = diagnose_stage if evaluator == "stage_diagnosis" else grade_extraction

    @settings(max_examples=in_batches(1_000), deadline=None)
    @given(batch=batches(records))
    def check(batch: list[Any]) -> None:
        for record in batch:
            parsed = as_parsed(record)
            refusal = _refusal(evaluate, parsed)
            place = standing(evaluator, parsed)
            event(f"{evaluator}: {place.value}")
            if place is Standing.OUT_OF_CONTRACT:
                assert refusal is not None, record
            else:
                assert refusal is None, record

    check()


# --- The strategies reach every outcome and every kind of collision ---


@pytest.mark.parametrize(
    "category", ["retrieval", "generation", "pass", "unresolved", "answer-label"]
)
def test_stage_records_reach(category: str) -> None:
    found = find(
        stage_records(), lambda r: stage_category(r) == category, settings=SEARCH
    )
    assert stage_category(found) == category


@pytest.mark.parametrize(
    "category", ["membership and order", "membership only", "neither", "duplicate-id"]
)
def test_extraction_records_reach(category: str) -> None:
    found = find(
        extraction_records(),
        lambda r: extraction_category(r) == category,
        settings=SEARCH,
    )
    assert extraction_category(found) == category


def _all_ids(record: Record) -> list[str]:
    return [item for value in record.values() if type(value) is list for item in value]


def _near_copies(ids: list[str], same: Callable[[str], str]) -> bool:
    """Two different IDs that `same` maps to one: a near-duplicate pair."""
    seen: dict[str, str] = {}
    for item in as_parsed(ids):
        key = same(item)
        if key in seen and seen[key] != item:
            return True
        seen.setdefault(key, item)
    return False


def _sort_order_differs(ids: list[str]) -> bool:
    unique = list(set(as_parsed(ids)))
    return sorted(unique) != js_sorted(unique)


def _has_lone_surrogate(ids: list[str]) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for item in as_parsed(ids) for c in item)


def _has_astral(ids: list[str]) -> bool:
    return any(ord(c) > 0xFFFF for item in as_parsed(ids) for c in item)


ID_FEATURES: Final[dict[str, Callable[[list[str]], bool]]] = {
    "exact duplicate": lambda ids: len(set(ids)) < len(ids),
    "case variants": lambda ids: _near_copies(ids, str.casefold),
    "whitespace variants": lambda ids: _near_copies(ids, str.strip),
    "NFC versus NFD": lambda ids: _near_copies(ids, _nfc),
    "UTF-16 order differs from code-point order": _sort_order_differs,
    "lone surrogate": _has_lone_surrogate,
    "astral character": _has_astral,
}


@pytest.mark.parametrize("feature", list(ID_FEATURES))
@pytest.mark.parametrize(
    "records", [stage_records(), extraction_records()], ids=["stage", "extraction"]
)
def test_generated_ids_include(
    feature: str, records: st.SearchStrategy[Record]
) -> None:
    has_feature = ID_FEATURES[feature]
    found = find(records, lambda r: has_feature(_all_ids(r)), settings=SEARCH)
    assert has_feature(_all_ids(found))


def test_sorted_missing_ids_reach_the_utf16_order_case() -> None:
    # The one place the rules sort: a `missing` list whose JavaScript order
    # is not Python's default order.
    def sorted_differently(record: Record) -> bool:
        result = diagnose_stage(as_parsed(record))
        missing = result.get("missing", [])
        assert isinstance(missing, list)
        return missing != sorted(missing)

    def any_sorted_differently(records: list[Record]) -> bool:
        return any(sorted_differently(record) for record in records)

    # Seeded: the case is rare (two astral or high IDs both missing), and an
    # unseeded search of 5,000 records missed it now and then; a fixed seed
    # proves the generator reaches it, every run alike. In batches, as the
    # parity test draws its records.
    found = find(
        batches(stage_records()),
        any_sorted_differently,
        settings=SEARCH,
        random=Random(0),
    )
    assert any_sorted_differently(found)
