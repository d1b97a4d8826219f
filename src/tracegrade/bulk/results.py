"""Metrics and reductions over a whole bulk run by Inspect's own
`compute_eval_scores`, each sample keeping only what the metrics read."""

from __future__ import annotations

import contextlib
import copy
import math
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from typing import IO, Any, Final, NamedTuple

from inspect_ai.log import EvalResults, EvalSampleReductions, EvalSampleScore
from inspect_ai.scorer import Score, Scorer, mean_score

from .._inspect_internals import (
    Metrics,
    ScorerInfo,
    compute_eval_scores,
    headline_metric_ref,
    metric_scores,
    resolve_headline_metric,
    to_json_safe,
)
from ..schema import read_error, read_share
from .evallog import StreamedReductions

_NAN = math.nan


class LightScore:
    """A `SampleScore` and its `Score` in one object, holding only what
    metrics read; `shared` is metadata every sample alike has, `recall` and
    `precision` its own, put in only when a metric reads them."""

    __slots__ = ("precision", "reason", "recall", "sample_id", "shared", "value")

    def __init__(
        self,
        value: Any,
        reason: str | None,
        sample_id: str,
        shared: Any,
        recall: float | None = None,
        precision: float | None = None,
    ) -> None:
        self.value = value
        self.reason = reason
        self.sample_id = sample_id
        self.shared = shared
        self.recall = recall
        self.precision = precision

    @property
    def metadata(self) -> Any:
        if self.recall is None and self.precision is None:
            return self.shared
        metadata = dict(self.shared)
        if self.recall is not None:
            metadata["recall"] = self.recall
        if self.precision is not None:
            metadata["precision"] = self.precision
        return metadata

    # `SampleScore`'s other fields, which no metric here reads.
    sample_metadata = None
    scorer = None

    @property
    def score(self) -> LightScore:
        return self

    def __deepcopy__(self, _memo: object) -> LightScore:
        # Inspect copies a score only to replace its value: shallow will do.
        return LightScore(
            self.value,
            self.reason,
            self.sample_id,
            self.shared,
            self.recall,
            self.precision,
        )


def _shared(cache: dict[Any, Any], key: Any, make: Any) -> Any:
    found = cache.get(key)
    if found is None:
        found = cache[key] = make()
    return found


class _Views(NamedTuple):
    reduced: Metrics | None
    unreduced: Metrics | None


def _split_views(metrics: Metrics) -> _Views:
    """The scorer's metrics on reduced and on unreduced scores, as Inspect
    splits them (`scores="auto"` counts as reduced)."""

    def keep_by_key(by_key: dict[str, Any], modes: set[str]) -> dict[str, Any]:
        kept = {
            key: [item for item in listed if metric_scores(item) in modes]
            for key, listed in by_key.items()
        }
        return {key: listed for key, listed in kept.items() if listed}

    def keep(modes: set[str]) -> Metrics | None:
        if isinstance(metrics, dict):
            return keep_by_key(metrics, modes) or None
        kept: list[Any] = []
        for item in metrics:
            if isinstance(item, dict):
                if by_key := keep_by_key(item, modes):
                    kept.append(by_key)
            elif metric_scores(item) in modes:
                kept.append(item)
        return kept or None

    return _Views(keep({"auto", "reduced"}), keep({"unreduced"}))


class _Table:
    """The distinct objects of one column, each stored once."""

    __slots__ = ("_codes", "items")

    def __init__(self, items: list[Any] | None = None) -> None:
        self.items: list[Any] = items if items is not None else []
        self._codes: dict[Any, int] = {}

    def code(self, key: Any, item: Any) -> int:
        found = self._codes.get(key)
        if found is None:
            found = self._codes[key] = len(self.items)
            self.items.append(item)
        return found


class _SampleIds:
    """Sample ids as one UTF-8 text and where each ends: string objects
    would be most of a run's memory."""

    __slots__ = ("_ends", "_text")

    def __init__(self) -> None:
        self._text = bytearray()
        self._ends = array("Q")

    def append(self, sample_id: str) -> None:
        # surrogatepass: an id read from JSON may hold a lone surrogate.
        self._text += sample_id.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._text))

    def __len__(self) -> int:
        return len(self._ends)

    def __iter__(self) -> Iterator[str]:
        text, start = self._text, 0
        for end in self._ends:
            yield text[start:end].decode("utf-8", "surrogatepass")
            start = end


# Distinct recalls and precisions shared while reading a column.
_SHARED_SHARES: Final = 1 << 12


class _ShareColumn:
    """One float a sample (NaN for none), from the first sample with one."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: array[float] | None = None

    def append(self, share: float | None, before: int) -> None:
        """Add a sample's share; `before` is how many samples came first."""
        if share is not None and self.values is None:
            self.values = array("d", [_NAN]) * before
        if self.values is not None:
            self.values.append(_NAN if share is None else share)

    def shared(self, count: int) -> Iterator[float | None]:
        """The samples' shares, equal ones one float object: Inspect's metrics
        hold them all at once."""
        values = self.values
        if values is None:
            yield from repeat(None, count)
            return
        seen: dict[float, float] = {}
        for number in values:
            if math.isnan(number):
                yield None
            elif len(seen) < _SHARED_SHARES:
                yield seen.setdefault(number, number)
            else:
                yield seen.get(number, number)


class LightScores:
    """A run's scores as columns, a `LightScore` made as each is read: codes
    into tables of the few distinct values, reasons and metadata."""

    def __init__(self) -> None:
        self._ids = _SampleIds()
        self._codes = array("I")
        self._values = _Table()
        self._reasons = _Table()
        self._metadata = _Table()
        self._recalls = _ShareColumn()
        self._precisions = _ShareColumn()

    def append(
        self,
        value: Any,
        reason: str | None,
        sample_id: str,
        metadata: Any,
        recall: float | None = None,
        precision: float | None = None,
    ) -> None:
        # Values and metadata are shared objects (see `RunResults`), so
        # their identity is their key; reasons are keyed by their text.
        self._codes.append(self._values.code(id(value), value))
        self._codes.append(self._reasons.code(reason, reason))
        self._codes.append(self._metadata.code(id(metadata), metadata))
        self._recalls.append(recall, len(self._ids))
        self._precisions.append(precision, len(self._ids))
        self._ids.append(sample_id)

    @property
    def sample_ids(self) -> list[str]:
        """Every sample's id, in order (made anew: keep only what you need)."""
        return list(self._ids)

    def with_values(self, change: Callable[[Any], Any]) -> LightScores:
        """The same scores, each value `change`d (once per distinct value)."""
        changed = copy.copy(self)
        changed._values = _Table([change(value) for value in self._values.items])
        return changed

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[LightScore]:
        values = self._values.items
        reasons = self._reasons.items
        metadata = self._metadata.items
        codes = self._codes
        for position, (sample_id, recall, precision) in enumerate(
            zip(
                self._ids,
                self._recalls.shared(len(self)),
                self._precisions.shared(len(self)),
                strict=True,
            )
        ):
            base = 3 * position
            yield LightScore(
                values[codes[base]],
                reasons[codes[base + 1]],
                sample_id,
                metadata[codes[base + 2]],
                recall,
                precision,
            )


class _Joined:
    """Several runs' scores, uncopied: Inspect's metrics only iterate them."""

    def __init__(self, runs: Sequence[LightScores]) -> None:
        self._runs = runs

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def __iter__(self) -> Iterator[LightScore]:
        return chain.from_iterable(self._runs)


class RunResults:
    """Collects a run's scores as they come; `results()` gives the log's
    results and writes its reductions."""

    def __init__(self, scorer: Scorer, scorer_name: str, spool_dir: str) -> None:
        self.scorer_name = scorer_name
        self.info = ScorerInfo.from_scorer(scorer)
        self.views = _split_views(self.info.metrics)
        self.reducer = mean_score()
        self.scores = LightScores()
        self._metadata_cache: dict[Any, Any] = {}
        self._value_cache: dict[Any, Any] = {}
        # Unnamed, so it vanishes with the process whatever happens.
        self._reductions: IO[bytes] | None = (
            tempfile.TemporaryFile(dir=spool_dir)  # noqa: SIM115
            if self.views.reduced is not None
            else None
        )
        self._separator = b""
        self.spooled = 0

    def _light_metadata(self, metadata: dict[str, Any]) -> Any:
        """The metadata keys tracegrade's metrics read, shared by content."""
        record = metadata.get("record")
        # `lucky_answers` asks only whether the label is JSON `true`.
        labelled_true = isinstance(record, dict) and record.get("correct") is True
        error = read_error(metadata)
        kind = None if error is None else error.kind
        side = None if error is None else error.side
        has_recall = "recall" in metadata
        has_precision = "precision" in metadata
        step_recall = metadata.get("step_recall")
        step_key = tuple(step_recall.items()) if isinstance(step_recall, dict) else None

        def make() -> dict[str, Any]:
            shared: dict[str, Any] = {
                "record": {"correct": True} if labelled_true else {},
                "error": None if error is None else {"kind": kind, "side": side},
            }
            if has_recall:
                shared["recall"] = None
            if has_precision:
                shared["precision"] = None
            if step_key is not None:
                shared["step_recall"] = dict(step_key)
            return shared

        return _shared(
            self._metadata_cache,
            (
                labelled_true,
                error is None,
                kind,
                side,
                has_recall,
                has_precision,
                step_key,
            ),
            make,
        )

    def _light_value(self, value: Any) -> Any:
        """Equal values as one shared object (metrics only read them)."""
        if isinstance(value, float) and math.isnan(value):
            return _NAN
        if isinstance(value, dict):
            # Type and repr, not the item: `1 == 1.0` would share an int
            # value with a float one, and NaN equals nothing, not even NaN.
            key = tuple(
                (name, type(item), repr(item)) for name, item in sorted(value.items())
            )
            return _shared(self._value_cache, ("dict", key), lambda: dict(value))
        return _shared(self._value_cache, (type(value), value), lambda: value)

    def add(self, sample_id: str, score: Score) -> None:
        metadata = score.metadata or {}
        # A share is None or a float in [0, 1], never NaN (the columns' "none").
        recall = read_share(metadata, "recall")
        precision = read_share(metadata, "precision")
        self.scores.append(
            self._light_value(score.value),
            score.reason,
            sample_id,
            self._light_metadata(metadata),
            recall,
            precision,
        )
        if self._reductions is None:
            return
        reduced = self.reducer([score])
        entry = EvalSampleScore(**reduced.__dict__, sample_id=sample_id)
        serialised = self._separator + to_json_safe(entry, indent=None)
        self._reductions.write(serialised)
        self.spooled += len(serialised)
        self._separator = b",\n"

    def reduce_value(self, value: Any) -> Any:
        """The reduced value of a score of this `value` (it alone decides)."""
        reduced = self.reducer([Score(value=value)])
        return self._light_value(reduced.value)

    def results(self, total: int) -> tuple[EvalResults, StreamedReductions | None]:
        """The run's `EvalResults` and reductions (streamed from the spool)."""
        results = pooled_results([self], total)
        if self.views.reduced is None:
            return results, None
        head = EvalSampleReductions(
            scorer=self.scorer_name, reducer=_reducer_name(self.views), samples=[]
        )
        return results, StreamedReductions(head, self.reduction_samples())

    def reduction_samples(self) -> Iterator[bytes]:
        assert self._reductions is not None
        self._reductions.flush()
        self._reductions.seek(0)
        while chunk := self._reductions.read(1 << 20):
            yield chunk

    def close(self) -> None:
        if self._reductions is not None:
            with contextlib.suppress(OSError):
                self._reductions.close()


def _reducer_name(views: _Views) -> str | None:
    # Inspect names the reducer only when a scorer has metrics of both kinds.
    return "mean" if views.reduced is not None and views.unreduced is not None else None


def pooled_results(runs: Sequence[RunResults], total: int) -> EvalResults:
    """The `EvalResults` of several runs of one scorer, as one log holding
    them all would have them."""
    first = runs[0]
    scores: list[Any] = []
    if first.views.reduced is not None:
        reduced = [run.scores.with_values(run.reduce_value) for run in runs]
        scores.extend(
            compute_eval_scores(
                reduced[0] if len(runs) == 1 else _Joined(reduced),  # type: ignore[arg-type]
                first.views.reduced,
                first.scorer_name,
                first.info,
                _reducer_name(first.views),
            )
        )
    if first.views.unreduced is not None:
        unreduced = [run.scores for run in runs]
        scores.extend(
            compute_eval_scores(
                unreduced[0] if len(runs) == 1 else _Joined(unreduced),  # type: ignore[arg-type]
                first.views.unreduced,
                first.scorer_name,
                first.info,
                None,
            )
        )
    results = EvalResults(total_samples=total, completed_samples=total, scores=scores)
    headline = resolve_headline_metric(results, None)
    if headline is not None:
        results.headline = headline_metric_ref(headline)
    return results
