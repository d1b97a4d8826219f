"""Metrics and reductions over a whole bulk run by Inspect's own
`compute_eval_scores`, each sample keeping only what the metrics read."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from typing import IO, Any, NamedTuple

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

# Distinct recalls and precisions shared while reading a column.
_SHARED_SHARES = 1 << 12


class LightScore:
    """A `SampleScore` and its `Score` in one object, holding only what
    metrics read; `recall` and `precision` join the `shared` metadata."""

    __slots__ = ("precision", "reason", "recall", "sample_id", "shared", "value")
    # `SampleScore`'s other fields, which no metric here reads.
    sample_metadata = None
    scorer = None

    def __init__(
        self,
        value: Any,
        reason: Any,
        sample_id: str,
        shared: Any,
        recall: float | None = None,
        precision: float | None = None,
    ) -> None:
        self.value, self.reason, self.sample_id = value, reason, sample_id
        self.shared, self.recall, self.precision = shared, recall, precision

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

    @property
    def score(self) -> LightScore:
        return self

    def __deepcopy__(self, _memo: object) -> LightScore:
        # Inspect copies a score only to replace its value: shallow will do.
        return copy.copy(self)


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
        kept = [
            keep_by_key(item, modes) if isinstance(item, dict) else item
            for item in metrics
            if isinstance(item, dict) or metric_scores(item) in modes
        ]
        return [item for item in kept if item] or None

    return _Views(keep({"auto", "reduced"}), keep({"unreduced"}))


class _ShareColumn:
    """One float a sample (NaN for none), stored from the first sample with one."""

    def __init__(self) -> None:
        self.values: array[float] | None = None

    def append(self, share: float | None, before: int) -> None:
        if share is not None and self.values is None:
            self.values = array("d", [math.nan]) * before
        if self.values is not None:
            self.values.append(math.nan if share is None else share)

    def shared(self, count: int) -> Iterator[float | None]:
        """Equal shares as one float object: Inspect's metrics hold them all."""
        if self.values is None:
            yield from repeat(None, count)
            return
        seen: dict[float, float] = {}
        for number in self.values:
            if math.isnan(number):
                yield None
            elif len(seen) < _SHARED_SHARES:
                yield seen.setdefault(number, number)
            else:
                yield seen.get(number, number)


class LightScores:
    """A run's scores as columns: ids as one UTF-8 text (string objects would
    be most of a run's memory), and a code a sample into a table of the few
    distinct (value, reason, metadata) triples."""

    def __init__(self) -> None:
        self._text = bytearray()
        self._ends = array("Q")
        self._codes = array("I")
        self._triples: list[tuple[Any, Any, Any]] = []
        self._coded: dict[tuple[int, Any, int], int] = {}
        self._recalls = _ShareColumn()
        self._precisions = _ShareColumn()

    def append(
        self,
        value: Any,
        reason: Any,
        sample_id: str,
        metadata: Any,
        recall: float | None = None,
        precision: float | None = None,
    ) -> None:
        # Values and metadata are shared objects (`RunResults`): their
        # identity is their key.
        key = (id(value), reason, id(metadata))
        code = self._coded.get(key)
        if code is None:
            code = self._coded[key] = len(self._triples)
            self._triples.append((value, reason, metadata))
        self._codes.append(code)
        self._recalls.append(recall, len(self))
        self._precisions.append(precision, len(self))
        # surrogatepass: an id read from JSON may hold a lone surrogate.
        self._text += sample_id.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._text))

    def _ids(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield self._text[start:end].decode("utf-8", "surrogatepass")
            start = end

    @property
    def sample_ids(self) -> list[str]:
        """Every sample's id, in order (made anew: keep only what you need)."""
        return list(self._ids())

    def with_values(self, change: Callable[[Any], Any]) -> LightScores:
        """The same scores, each value `change`d (once per distinct triple)."""
        changed = copy.copy(self)
        changed._triples = [(change(v), r, m) for v, r, m in self._triples]
        return changed

    def __len__(self) -> int:
        return len(self._ends)

    def __iter__(self) -> Iterator[LightScore]:
        triples = self._triples
        for code, sample_id, recall, precision in zip(
            self._codes,
            self._ids(),
            self._recalls.shared(len(self)),
            self._precisions.shared(len(self)),
            strict=True,
        ):
            value, reason, metadata = triples[code]
            yield LightScore(value, reason, sample_id, metadata, recall, precision)


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
        self._shared: dict[Any, Any] = {}
        # Unnamed, so it vanishes with the process whatever happens.
        self._reductions: IO[bytes] | None = None
        if self.views.reduced is not None:
            self._reductions = tempfile.TemporaryFile(dir=spool_dir)  # noqa: SIM115
        self._separator = b""
        self.spooled = 0

    def _light_metadata(self, metadata: dict[str, Any]) -> Any:
        """The metadata keys tracegrade's metrics read, shared by content."""
        record = metadata.get("record")
        error = read_error(metadata)
        step_recall = metadata.get("step_recall")
        key = (
            # `lucky_answers` asks only whether the label is JSON `true`.
            isinstance(record, dict) and record.get("correct") is True,
            None if error is None else (error.kind, error.side),
            "recall" in metadata,
            "precision" in metadata,
            tuple(step_recall.items()) if isinstance(step_recall, dict) else None,
        )
        shared = self._shared.get(("metadata", key))
        if shared is None:
            labelled, kind_side, has_recall, has_precision, steps = key
            shared = {"record": {"correct": True} if labelled else {}, "error": None}
            if kind_side is not None:
                shared["error"] = {"kind": kind_side[0], "side": kind_side[1]}
            figures = {"recall": has_recall, "precision": has_precision}
            shared |= {name: None for name, has in figures.items() if has}
            if steps is not None:
                shared["step_recall"] = dict(steps)
            self._shared["metadata", key] = shared
        return shared

    def _light_value(self, value: Any) -> Any:
        """Equal values as one shared object (metrics only read them)."""
        if isinstance(value, float) and math.isnan(value):
            return math.nan
        # Type and repr: `1 == 1.0` would share an int value with a float
        # one, and NaN equals nothing, not even NaN.
        if isinstance(value, dict):
            key: Any = tuple((k, type(v), repr(v)) for k, v in sorted(value.items()))
        else:
            key = (type(value), value)
        return self._shared.setdefault(("value", key), value)

    def add(self, sample_id: str, score: Score) -> None:
        metadata = score.metadata or {}
        # A share is None or a float in [0, 1], never NaN (the columns' "none").
        self.scores.append(
            self._light_value(score.value),
            score.reason,
            sample_id,
            self._light_metadata(metadata),
            read_share(metadata, "recall"),
            read_share(metadata, "precision"),
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
        return self._light_value(self.reducer([Score(value=value)]).value)

    def results(self, total: int) -> tuple[EvalResults, StreamedReductions | None]:
        """The run's `EvalResults` and reductions (streamed from the spool)."""
        results = pooled_results([self], total)
        if self._reductions is None:
            return results, None
        head = EvalSampleReductions(
            scorer=self.scorer_name, reducer=_reducer_name(self.views), samples=[]
        )
        spool = self._reductions
        spool.flush()
        spool.seek(0)
        chunks = iter(functools.partial(spool.read, 1 << 20), b"")
        return results, StreamedReductions(head, chunks)

    def close(self) -> None:
        if self._reductions is not None:
            with contextlib.suppress(OSError):
                self._reductions.close()


def _reducer_name(views: _Views) -> str | None:
    # Inspect names the reducer only when a scorer has metrics of both kinds.
    return "mean" if views.reduced is not None and views.unreduced is not None else None


def pooled_results(
    runs: Sequence[RunResults],
    total: int,
    scores: Sequence[LightScores] | None = None,
) -> EvalResults:
    """The `EvalResults` of several runs of one scorer (or of `scores`, read
    by `runs[0]`), as one log holding them all would have them."""
    first = runs[0]
    if scores is None:
        scores = [run.scores for run in runs]
    eval_scores: list[Any] = []
    for view, reducer in (
        (first.views.reduced, _reducer_name(first.views)),
        (first.views.unreduced, None),
    ):
        if view is not None:
            listed = scores
            if view is first.views.reduced:
                listed = [part.with_values(first.reduce_value) for part in scores]
            joined = listed[0] if len(listed) == 1 else _Joined(listed)
            eval_scores += compute_eval_scores(
                joined,  # type: ignore[arg-type]
                view,
                first.scorer_name,
                first.info,
                reducer,
            )
    results = EvalResults(
        total_samples=total, completed_samples=total, scores=eval_scores
    )
    headline = resolve_headline_metric(results, None)
    if headline is not None:
        results.headline = headline_metric_ref(headline)
    return results
