"""Every coupling to Inspect AI's private code, each held by a test, as is what is
mirrored (tests/test_inspect_internals.py)."""

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
    from inspect_ai._eval.task.results import Metrics, ScorerInfo, compute_eval_scores
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

# What a summary holds for a metadata value over 1,024 characters of indented JSON.
METADATA_VALUE_LIMIT: Final = 1024
METADATA_VALUE_REMOVED: Final = "Key removed from summary (> 1k)"

_TRUNCATED_HEAD: Final = (
    "\nThe output of your call to {function} was too long to be displayed.\n"
    "Here is a truncated version:\n<START_TOOL_OUTPUT>\n"
)
_TRUNCATED_TAIL: Final = "\n<END_TOOL_OUTPUT>\n"


def truncated_tool_body(function: str, content: str) -> str | None:
    """What is left of a tool result Inspect truncated, else None."""
    head = _TRUNCATED_HEAD.format(function=function)
    if content.startswith(head) and content.endswith(_TRUNCATED_TAIL):
        return content[len(head) : len(content) - len(_TRUNCATED_TAIL)]
    return None


SCORE_NEEDS: Final = "0.3.269"  # the first with every name below

_LOADED_WHEN_USED: Final = {
    name: module
    for module, names in {
        "inspect_ai._eval.task.log": "plan_to_eval_plan resolve_eval_scorers "
        "resolve_package_revision resolve_revision resolve_task_distribution",
        "inspect_ai._eval.task.results": "Metrics ScorerInfo compute_eval_scores",
        "inspect_ai._util.dateutil": "iso_now",
        "inspect_ai._util.json": "to_json_safe",
        "inspect_ai._util.log_layout": "eval_log_name",
        "inspect_ai._util.path": "cwd_relative_path",
        "inspect_ai._util.registry": "registry_unqualified_name",
        "inspect_ai.log._headline": "headline_metric_ref resolve_headline_metric",
        "inspect_ai.log._log": "eval_config_defaults",
        "inspect_ai.log._util": "MAX_TEXT_LENGTH THIN_TEXT_SCAN THIN_TEXT_WIDTH",
        "inspect_ai.scorer._metric": "metric_scores",
        "inspect_ai.scorer._scorer": "as_scorer_spec",
        "inspect_ai.solver._plan": "Plan",
    }.items()
    for name in names.split()
}


class InspectTooOld(ImportError):
    """The installed `inspect-ai` lacks a name a command needs."""


def __getattr__(name: str) -> Any:
    """A name loaded when first used: the plugin loads with any Inspect."""
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
    "MAX_TEXT_LENGTH", "METADATA_VALUE_LIMIT", "METADATA_VALUE_REMOVED", "SCORE_NEEDS",
    "THIN_TEXT_SCAN", "THIN_TEXT_WIDTH", "InspectTooOld", "Metrics", "Plan",
    "PrerequisiteError", "ScorerInfo", "as_scorer_spec", "compute_eval_scores",
    "cwd_relative_path", "eval_config_defaults", "eval_log_name", "headline_metric_ref",
    "iso_now", "metric_scores", "plan_to_eval_plan", "registry_unqualified_name",
    "resolve_eval_scorers", "resolve_headline_metric", "resolve_package_revision",
    "resolve_revision", "resolve_task_distribution", "to_json_safe",
    "truncated_tool_body",
]  # fmt: skip
