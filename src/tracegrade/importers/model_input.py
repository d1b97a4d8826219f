"""Which documents a model's input holds: by id as a whole word, or by content
unique among the trace's documents; a text with two readings is refused
(`TwoReadings`), never guessed (docs/import-openinference.md)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..core.errors import quote


class TwoReadings(ValueError):
    """A text that two readings would give different documents; says why."""


@dataclass(frozen=True)
class _Seen:
    text: int
    start: int
    end: int
    document: str
    by_id: bool


def documents_in(
    texts: Sequence[str], contents: Mapping[str, Collection[str]]
) -> list[str]:
    """The documents (ids, keys of `contents`, each with its contents) the
    texts hold, in the order they first occur."""
    owners: dict[str, list[str]] = {}
    for document, texts_of in contents.items():
        for content in texts_of:
            if content:
                owners.setdefault(content, []).append(document)
    seen: list[_Seen] = []
    for number, text in enumerate(texts):
        for document in contents:
            seen += _occurrences(text, number, document, document, by_id=True)
        for content, documents in owners.items():
            if len(documents) == 1:
                seen += _occurrences(text, number, content, documents[0], by_id=False)
    found: dict[str, tuple[int, int]] = {}
    inside: dict[str, _Seen] = {}
    for occurrence, cover in _covers(seen):
        if cover is None:
            place = (occurrence.text, occurrence.start)
            found[occurrence.document] = min(
                found.get(occurrence.document, place), place
            )
        else:
            inside.setdefault(occurrence.document, cover)
    for document, cover in inside.items():
        if document not in found:
            raise TwoReadings(
                f"document {quote(document)} shows in the model's input only "
                f"inside document {quote(cover.document)}'s "
                f"{'id' if cover.by_id else 'content'}, so whether it reached "
                "the model has two readings"
            )
    _check_shared(texts, owners, found)
    return sorted(found, key=found.__getitem__)


def _occurrences(
    text: str, number: int, mark: str, document: str, *, by_id: bool
) -> list[_Seen]:
    """Where `mark` occurs in `text`; an id only as a whole word."""
    found = []
    start = text.find(mark)
    while start >= 0:
        end = start + len(mark)
        if not by_id or not (_word(text, start - 1) or _word(text, end)):
            found.append(_Seen(number, start, end, document, by_id))
        start = text.find(mark, start + 1)
    return found


def _word(text: str, position: int) -> bool:
    return 0 <= position < len(text) and text[position].isalnum()


def _covers(seen: list[_Seen]) -> list[tuple[_Seen, _Seen | None]]:
    """Each occurrence with another document's longer one holding it, if
    any: a sweep by start, keeping the two furthest-reaching documents."""
    seen.sort(key=lambda item: (item.text, item.start, -item.end))
    covers: list[tuple[_Seen, _Seen | None]] = []
    reaching: list[_Seen] = []
    for occurrence in seen:
        if reaching and reaching[0].text != occurrence.text:
            reaching = []
        cover = next(
            (
                other
                for other in reaching
                if other.document != occurrence.document
                and occurrence.end <= other.end
                and other.end - other.start > occurrence.end - occurrence.start
            ),
            None,
        )
        covers.append((occurrence, cover))
        furthest = {other.document: other for other in reaching}
        mine = furthest.get(occurrence.document)
        if mine is None or occurrence.end > mine.end:
            furthest[occurrence.document] = occurrence
        reaching = sorted(furthest.values(), key=lambda item: -item.end)[:2]
    return covers


def _check_shared(
    texts: Sequence[str], owners: Mapping[str, list[str]], found: Collection[str]
) -> None:
    """Refuse content that documents share, held by a text, when no id
    says which of them it is."""
    for content, documents in owners.items():
        if (
            len(documents) > 1
            and not any(document in found for document in documents)
            and any(content in text for text in texts)
        ):
            shown = " and ".join(quote(document) for document in documents[:2])
            raise TwoReadings(
                f"documents {shown} have the same content, which the model's "
                "input holds, and neither id shows there: which reached the "
                "model has two readings"
            )
