"""Whether the sample being scored ended in an error: its run failed.

Under `--score-on-error` Inspect scores a sample whose solver raised (the
model API failed, a sandbox died), with whatever state it reached: an
empty output, perhaps no recorded context. Diagnosing that state would
call an outage `generation` or `unreadable-answer`. Inspect does not put
the error on the `TaskState`, but it logs it as an `ErrorEvent` in the
sample's transcript before scoring, and that transcript is public
(`inspect_ai.log.transcript()`). Inspect logs an `ErrorEvent` only for an
error that ends the sample (a retried attempt gets a fresh transcript),
so one in the transcript is the sample's error.

`inspect score` rebuilds each sample's transcript from the log's events,
its `ErrorEvent` included, so rescoring a log gives its errored samples
the same `sample-error` score, whether or not they were scored first
(`sample.error` stays set either way, and `eval-retry` reruns them).
"""

from __future__ import annotations

from inspect_ai.event import ErrorEvent
from inspect_ai.log import TranscriptHistoryUnavailableError, transcript


def sample_error() -> str | None:
    """The error message of the sample being scored, or None if it ran."""
    history = transcript().history
    try:
        if hasattr(history, "find_last"):
            event = history.find_last(lambda event: isinstance(event, ErrorEvent))
        else:
            # Inspect before 0.3.279 has no `find_last`: the events from
            # the last error on, or every event if there was none.
            since = history.events_since_last(ErrorEvent)
            event = since[0] if since else None
    except TranscriptHistoryUnavailableError:
        # A bounded transcript with no history to read back, and no error
        # among its recent events: Inspect logs the error just before
        # scoring, so there is none.
        return None
    if not isinstance(event, ErrorEvent):
        return None
    return event.error.message


__all__ = ["sample_error"]
