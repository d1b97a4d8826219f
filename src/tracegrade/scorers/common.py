"""What both scorers share: a failed run's score before any record is read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from inspect_ai.event import ErrorEvent
from inspect_ai.log import TranscriptHistoryUnavailableError, transcript
from inspect_ai.scorer import Score, Scorer, Target
from inspect_ai.solver import TaskState

from .outcome import run_error


def record_scorer(
    score_run: Callable[[TaskState, Target], Awaitable[Score]],
    *,
    read_from: dict[str, str],
    absent: tuple[str, ...],
) -> Scorer:
    """A scorer that gives a run that failed before answering `sample-error`
    (an empty output is no answer) and every other run to `score_run`."""

    async def score(state: TaskState, target: Target) -> Score:
        failure = _sample_error()
        if failure is None:
            return await score_run(state, target)
        answer = state.output.completion
        return run_error(failure, answer=answer, read_from=read_from, absent=absent)

    return score


def _sample_error() -> str | None:
    """The sample's error message, or None: Inspect logs it as an `ErrorEvent`
    in the transcript before scoring, and `inspect score` rebuilds it."""
    history = transcript().history
    try:
        if hasattr(history, "find_last"):
            event = history.find_last(lambda event: isinstance(event, ErrorEvent))
        else:  # Inspect before 0.3.279: the events from the last error on.
            since = history.events_since_last(ErrorEvent)
            event = since[0] if since else None
    except TranscriptHistoryUnavailableError:
        return None  # a bounded transcript: no error among its recent events
    return event.error.message if isinstance(event, ErrorEvent) else None
