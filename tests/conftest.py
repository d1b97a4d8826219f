"""Settings for the whole suite.

Property tests draw a few thousand examples each, in every run, so that
the suite keeps within its time where it gates a change; a test that
needs fewer says so with its own `@settings(max_examples=...)`.
`HYPOTHESIS_PROFILE=deep` draws 10,000: CI's `properties` job runs the
property tests alone that way (`pytest -m hypothesis`, the marker
Hypothesis gives every `@given` test).

What a test process has imported and collected stays for the session, so
it is frozen out of the garbage collector's sight: each collection then
walks only what the tests create, not Inspect's imports, which the
commands and evals the tests run in-process would otherwise walk again
and again.
"""

from __future__ import annotations

import gc
import os
import subprocess

import pytest
from hypothesis import settings

settings.register_profile("dev", max_examples=2_500, deadline=None)
settings.register_profile("deep", max_examples=10_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Workers take whole files in this order: the long ones first, so that
    # no worker is left alone with one at the end.
    items.sort(key=lambda item: item.get_closest_marker("runs_long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture
def parity_evals_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m parity`'s `inspect eval` runs in this interpreter
    (tests/commands.py), not in a fresh one, which would import Inspect
    for each eval. `test_parity_logs` keeps one fresh run."""
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from tests.commands import run_inspect

    def in_process(
        args: Sequence[str], env: Mapping[str, str]
    ) -> subprocess.CompletedProcess[str]:
        # `env` is parity's whole environment: this one without INSPECT_*,
        # which `run_inspect` leaves out as well.
        return run_inspect(*args, cwd=Path.cwd())

    monkeypatch.setattr("parity.logs.run_inspect", in_process)
