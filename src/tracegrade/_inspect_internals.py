"""Every coupling of tracegrade to Inspect AI's private code, imported or mirrored.

Inspect's public API does not cover these jobs; if a release moves one of
them, this module is the one place to follow it, and the `compat` nox
session (the newest `inspect-ai` from the package index) is where a break
shows first. Nothing else in `src/` imports from `inspect_ai._*` or a
private submodule (a test keeps it so). What is mirrored (copied rather
than imported, for speed) is listed at the end, each with the test that
compares the copy with Inspect's own output and so fails the day Inspect
changes; `tests/test_inspect_internals.py` loads every imported name, and
fails the day a release moves one.

The plugin (`inspect eval tracegrade/...`, the scorers in a user's own
task, `inspect score`) needs one name, `PrerequisiteError`, which every
supported Inspect has (`inspect-ai` 0.3.250 on; `nox -s oldest` runs the
plugin's tests on it). Everything else is loaded only when first used
(`__getattr__`), by `tracegrade score`'s writer (`bulk/`) and the log
reader (`logs/`): a team that pins an older Inspect keeps the plugin, and
`tracegrade score` says in one line which release it needs
(`InspectTooOld`, `SCORE_NEEDS`).

Errors a user can cause:

- `PrerequisiteError` (`_util.error`): the error Inspect's CLI prints as
  its message alone, without a traceback. tracegrade's errors in a user's
  own input (a bad dataset line, a bad labels file, a `label_scorer` that
  is no scorer) derive from it.

The header of a log written without Inspect's runner (`bulk/`), made by
the functions `inspect eval` makes it with, so the two cannot drift:

- `plan_to_eval_plan`, `resolve_eval_scorers`, `resolve_package_revision`,
  `resolve_revision`, `resolve_task_distribution` (`_eval.task.log`);
- `eval_config_defaults` (`log._log`), `as_scorer_spec` (`scorer._scorer`),
  `Plan` (`solver._plan`);
- `iso_now` (`_util.dateutil`), `eval_log_name` (`_util.log_layout`),
  `cwd_relative_path` (`_util.path`), `registry_unqualified_name`
  (`_util.registry`);
- `to_json_safe` (`_util.json`): the serialiser behind every log Inspect
  writes, so values (NaN, lone surrogates) are written as Inspect writes
  them.

A run's results from scores that are not pydantic objects (`bulk/results.py`),
computed by the code `eval_results` uses, so names and NaN handling agree:

- `ScorerInfo`, `compute_eval_scores`, `Metrics` (`_eval.task.results`);
- `resolve_headline_metric`, `headline_metric_ref` (`log._headline`): the
  metric `inspect view` shows first, chosen as `eval_results` chooses it;
- `metric_scores` (`scorer._metric`): whether a metric reads reduced or
  unreduced scores.

How a sample summary is trimmed (`log._util`), used by the `.eval` writer
(`bulk/evallog.py`), which builds summaries as `EvalSample.summary()` would
without validating an `EvalSample` per sample:

- `MAX_TEXT_LENGTH`, `THIN_TEXT_WIDTH`, `THIN_TEXT_SCAN`: Inspect's own
  limits, imported;
- `METADATA_VALUE_LIMIT` and `METADATA_VALUE_REMOVED`: mirrored, being
  literals in `thin_metadata` (a metadata value over 1024 characters of
  JSON is replaced by "Key removed from summary (> 1k)"); `analysis.py`
  reads the placeholder too.

Mirrored, with the test that holds each copy to Inspect's output:

- the rules of `truncate_text`, `thin_text`, `thin_metadata` and
  `EvalSample.summary()` (which fields a summary copies, and how), in
  `evallog.sample_summary`: `tests/test_inspect_internals.py` compares
  it with `EvalSample.summary()` at every limit and with every field set,
  and fails on a field Inspect adds to `EvalSampleSummary`;
  `tests/test_evalarchive.py` on real logs and random samples;
- `to_json_safe`'s output (`evallog._json_bytes`, `evallog.sample_json`):
  `tests/test_evalarchive.py` and `tests/test_cli_score.py` compare the
  members with the bytes Inspect wrote;
- the member names and the header's fields of `EvalRecorder.log_finish`
  (`evallog._header`): `tests/test_evalarchive.py` compares them with a
  log `inspect eval` wrote;
- the names `list_eval_logs` lists as logs (`is_log_file`), in
  `logs.evals.is_log_name`, which lists linked files too, as Inspect does
  not: `tests/test_inspect_internals.py` compares the two over a
  directory of names;
- the `SampleScore` that `compute_eval_scores` reads, stood in for by
  `bulk.results.LightScore`: `tests/test_inspect_internals.py` compares
  the results of the packaged scorers' metrics over both, and fails on a
  field Inspect adds to `SampleScore` or `Score`.

- the text `truncate_tool_output` (`model._call_tools`) wraps a tool
  result cut at `max_tool_output` in, and its rule (the first half of the
  bytes, then the last), in `truncated_tool_body`, which the transcript
  reader (`scorers/transcript.py`) uses: `tests/test_agents.py` reads
  Inspect's own truncations back.

Not Inspect's, but private all the same: the standard library's
`zipfile._get_compressor`, which `bulk.evallog.deflating_with_isal` wraps
while `tracegrade score` writes `.eval` (as `zipfile_zstd` wraps it for Inspect);
`tests/test_evalarchive.py` fails the day zipfile stops calling it.
"""

from __future__ import annotations

import importlib
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Final

from inspect_ai._util.error import PrerequisiteError

if TYPE_CHECKING:  # loaded on first use, by `__getattr__`
    from inspect_ai._eval.task.log import (
        plan_to_eval_plan,
        resolve_eval_scorers,
        resolve_package_revision,
        resolve_revision,
        resolve_task_distribution,
    )
    from inspect_ai._eval.task.results import (
        Metrics,
        ScorerInfo,
        compute_eval_scores,
    )
    from inspect_ai._util.dateutil import iso_now
    from inspect_ai._util.json import to_json_safe
    from inspect_ai._util.log_layout import eval_log_name
    from inspect_ai._util.path import cwd_relative_path
    from inspect_ai._util.registry import registry_unqualified_name
    from inspect_ai.log._headline import headline_metric_ref, resolve_headline_metric
    from inspect_ai.log._log import eval_config_defaults
    from inspect_ai.log._util import MAX_TEXT_LENGTH, THIN_TEXT_SCAN, THIN_TEXT_WIDTH
    from inspect_ai.scorer._metric import metric_scores
    from inspect_ai.scorer._scorer import as_scorer_spec
    from inspect_ai.solver._plan import Plan

METADATA_VALUE_LIMIT: Final = 1024
"""Characters of indented JSON a metadata value may have in a summary."""
METADATA_VALUE_REMOVED: Final = "Key removed from summary (> 1k)"
"""What a summary holds instead of a longer metadata value."""

_TRUNCATED_HEAD: Final = (
    "\nThe output of your call to {function} was too long to be displayed.\n"
    "Here is a truncated version:\n<START_TOOL_OUTPUT>\n"
)
_TRUNCATED_TAIL: Final = "\n<END_TOOL_OUTPUT>\n"


def truncated_tool_body(function: str, content: str) -> str | None:
    """What is left of a tool result Inspect truncated (its first half of
    the bytes, then its last, with the middle cut), or None when `content`
    is not wrapped as Inspect wraps a truncated result."""
    head = _TRUNCATED_HEAD.format(function=function)
    if content.startswith(head) and content.endswith(_TRUNCATED_TAIL):
        return content[len(head) : len(content) - len(_TRUNCATED_TAIL)]
    return None


SCORE_NEEDS: Final = "0.3.269"
"""The first `inspect-ai` with every name `tracegrade score` loads from here
(`eval_log_name`, the last to come)."""

_LOADED_WHEN_USED: Final = {
    "plan_to_eval_plan": "inspect_ai._eval.task.log",
    "resolve_eval_scorers": "inspect_ai._eval.task.log",
    "resolve_package_revision": "inspect_ai._eval.task.log",
    "resolve_revision": "inspect_ai._eval.task.log",
    "resolve_task_distribution": "inspect_ai._eval.task.log",
    "Metrics": "inspect_ai._eval.task.results",
    "ScorerInfo": "inspect_ai._eval.task.results",
    "compute_eval_scores": "inspect_ai._eval.task.results",
    "iso_now": "inspect_ai._util.dateutil",
    "to_json_safe": "inspect_ai._util.json",
    "eval_log_name": "inspect_ai._util.log_layout",
    "cwd_relative_path": "inspect_ai._util.path",
    "registry_unqualified_name": "inspect_ai._util.registry",
    "headline_metric_ref": "inspect_ai.log._headline",
    "resolve_headline_metric": "inspect_ai.log._headline",
    "eval_config_defaults": "inspect_ai.log._log",
    "MAX_TEXT_LENGTH": "inspect_ai.log._util",
    "THIN_TEXT_SCAN": "inspect_ai.log._util",
    "THIN_TEXT_WIDTH": "inspect_ai.log._util",
    "metric_scores": "inspect_ai.scorer._metric",
    "as_scorer_spec": "inspect_ai.scorer._scorer",
    "Plan": "inspect_ai.solver._plan",
}
"""Every name `tracegrade score` takes from here, and Inspect's module of it."""


class InspectTooOld(ImportError):
    """The installed `inspect-ai` lacks a name a command needs; the message
    says which release to install, in one line."""


def __getattr__(name: str) -> Any:
    """Load one of `_LOADED_WHEN_USED` from Inspect when it is first asked
    for (`from tracegrade._inspect_internals import NAME`), so that the
    plugin, which needs only `PrerequisiteError`, loads with any Inspect
    tracegrade supports."""
    module = _LOADED_WHEN_USED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise InspectTooOld(
            f"tracegrade score needs inspect-ai {SCORE_NEEDS} or newer "
            f"({version('inspect_ai')} is installed): "
            f"pip install --upgrade 'inspect-ai>={SCORE_NEEDS}'"
        ) from None
    globals()[name] = value  # found at once from now on
    return value


__all__ = [
    "MAX_TEXT_LENGTH",
    "METADATA_VALUE_LIMIT",
    "METADATA_VALUE_REMOVED",
    "SCORE_NEEDS",
    "THIN_TEXT_SCAN",
    "THIN_TEXT_WIDTH",
    "InspectTooOld",
    "Metrics",
    "Plan",
    "PrerequisiteError",
    "ScorerInfo",
    "as_scorer_spec",
    "compute_eval_scores",
    "cwd_relative_path",
    "eval_config_defaults",
    "eval_log_name",
    "headline_metric_ref",
    "iso_now",
    "metric_scores",
    "plan_to_eval_plan",
    "registry_unqualified_name",
    "resolve_eval_scorers",
    "resolve_headline_metric",
    "resolve_package_revision",
    "resolve_revision",
    "resolve_task_distribution",
    "to_json_safe",
    "truncated_tool_body",
]
